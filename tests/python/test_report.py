"""opcost.report: a result file, a result object or its JSON as one HTML page, through the
command line's own report (src/workflow/report_html.cpp): the page embeds the result, a file
that is not one is refused naming it, and the page never lands on its input."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch

import opcost

DATA = Path(__file__).resolve().parents[1] / "data" / "report"


def embedded(page: Path) -> dict:
    m = re.search(r'<script id="opcost-data" type="application/json">(.*?)</script', page.read_text("utf-8"), re.S)
    assert m, "no data element"
    return json.loads(m.group(1))


def test_a_result_file_becomes_a_page_embedding_it(tmp_path):
    out = opcost.report(DATA / "validate.json", tmp_path / "v.html")
    assert out == tmp_path / "v.html"
    env = embedded(out)
    assert env["kind"] == "validate" and env["source"] == "validate.json"
    assert env["data"] == json.loads((DATA / "validate.json").read_text())


def test_a_dict_or_list_is_reported_as_its_kind(tmp_path):
    rows = json.loads((DATA / "sweep.json").read_text())
    env = embedded(opcost.report(rows, tmp_path / "s.html"))
    assert env["kind"] == "sweep" and env["aggregated"]["rows"] == len(rows)
    trace = json.loads((DATA / "trace.json").read_text())
    assert embedded(opcost.report(trace, tmp_path / "t.html"))["data"] == trace


def test_a_prediction_object_is_reported(tmp_path):
    net = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())
    pred = opcost.predict(net, torch.randn(4, 16), db=tmp_path / "ops.db")  # nothing measured: incomplete
    env = embedded(opcost.report(pred, tmp_path / "p.html"))
    assert env["kind"] == "predict" and env["data"] == json.loads(pred.to_json())


def test_what_is_not_a_result_is_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match="other.json: not a result opcost writes"):
        opcost.report(other, tmp_path / "x.html")
    with pytest.raises(ValueError, match="not a result opcost writes"):
        opcost.report({"hello": 1}, tmp_path / "x.html")
    with pytest.raises(TypeError, match="cannot report a object"):
        opcost.report(object(), tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()
    copy = tmp_path / "in.json"
    shutil.copy(DATA / "trace.json", copy)
    with pytest.raises(ValueError, match="-o"):
        opcost.report(copy, copy)
    assert copy.read_bytes() == (DATA / "trace.json").read_bytes()
