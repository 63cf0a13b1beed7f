"""predict --estimate (issue 26): a whole model predicted where the database has none of its
signatures, every countable one estimated by a cost model fitted from this CPU's own rows. The
estimates are marked in the result (JSON, text, Python), enter the step's interval, are never
stored, and a call the model cannot answer stays missing (validate measures it). Run on the CPU:
the rows are measured here, so their device name is this machine's, as the model must know it.
Accuracy is not asserted (CPU loops of a few ms on a shared CI machine); the plumbing is.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("sklearn", reason="the cost model's fit needs scikit-learn (pip install 'opcost[fit]')")

import torch  # noqa: E402

import opcost  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
OPCOST_BIN = os.environ.get("OPCOST_BIN", str(REPO / "build" / "opcost"))
# Two small grids, 9 and 12 configurations (a family needs 8): the linear layers and ReLUs of
# the model below, at other sizes than its own, so that none of its signatures is measured.
GRIDS = {
    "linear.yaml": """name: cpu-linear
op: aten::linear
args: {input: "f32[{b},{k}]", weight: "f32[{n},{k}]", bias: "f32[{n}]"}
axes: {b: [1, 8, 32], k: [64, 256, 512], n: [32, 128, 256]}
where: "b * k * n <= 2000000"
""",
    "relu.yaml": """name: cpu-relu
op: aten::relu
args: {self: "f32[{b},{n}]"}
axes: {b: [1, 8, 32], n: [128, 512, 1024, 4096]}
""",
}


def _run(args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)


def _count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as c:
        return c.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(200, 100), torch.nn.ReLU(), torch.nn.Linear(100, 50)).eval()


@pytest.fixture(scope="module")
def fitted_db(tmp_path_factory):
    folder = tmp_path_factory.mktemp("estimate")
    db = folder / "cpu.db"
    env = dict(os.environ, OPCOST_DB=str(db))
    for name, text in GRIDS.items():
        (folder / name).write_text(text)
        swept = _run([OPCOST_BIN, "sweep", folder / name, "--device", "cpu", "--no-energy", "--max-time", "0.02"],
                     env=env)
        assert swept.returncode == 0, swept.stderr
    fit = opcost.fit(db=str(db))
    assert {f.family for f in fit.families} == {"matmul", "elementwise"}
    return db


def test_a_model_none_of_whose_signatures_is_measured_is_predicted_from_estimates(fitted_db):
    rows_before, models_before = _count(fitted_db, "measurements"), _count(fitted_db, "cost_models")
    x = torch.randn(4, 200)
    without = opcost.predict(_model(), x, db=str(fitted_db))
    assert not without.complete and without.estimated == []

    p = opcost.predict(_model(), x, db=str(fitted_db), estimate=True)
    assert p.complete, p.missing
    # The two linear layers and the ReLU, none of them measured at these sizes.
    assert len(p.estimated) == 3, p.estimated
    assert all(s.startswith(("aten::linear", "aten::relu")) for s in p.estimated)
    assert p.time_us > 0 and p.time_ci95_us > 0  # the estimates' intervals enter the step's
    assert p._doc["estimated"]["count"] == 3
    # Each operator row says how many of its calls were estimated; the step counts them apart.
    ops = {row["name"]: row for row in p._doc["ops"]}
    assert all(ops[s]["estimated_calls"] == ops[s]["calls"] for s in p.estimated)
    assert p._doc["estimated_calls"] == 3
    # Estimates are never stored: no row, and the model is the one fitted.
    assert _count(fitted_db, "measurements") == rows_before
    assert _count(fitted_db, "cost_models") == models_before


class _Mixed(torch.nn.Module):
    """Operators the fit's grids never had, of the families it has: matmul, hardswish, eq, masked_fill."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.fc = torch.nn.Linear(200, 100)
        self.w = torch.nn.Parameter(torch.randn(100, 50))

    def forward(self, x):
        y = torch.nn.functional.hardswish(self.fc(x)).matmul(self.w)
        return y.masked_fill(y.eq(0), 1.0)


def test_operators_the_fit_never_saw_are_estimated_by_their_family_and_flagged(fitted_db):
    p = opcost.predict(_Mixed().eval(), torch.randn(4, 200), db=str(fitted_db), estimate=True)
    assert p.complete, p.missing
    ops = {s.split(" ")[0].split(".")[0] for s in p.estimated}  # without the overload
    assert {"aten::matmul", "aten::hardswish", "aten::eq", "aten::masked_fill"} <= ops, p.estimated
    assert p._doc["estimated"]["outside_fit"] >= 4, p._doc["estimated"]
    # Each of the four says that its operator is not among those its family's rows had.
    for signature in p.estimated:
        op, _, args = signature.partition(" ")
        if op.split(".")[0] in ("aten::linear", "aten::relu"):
            continue
        flags = opcost.estimate(op.split(".")[0], args, db=str(fitted_db))["out_of_range"]
        assert any("is not among the operators its" in f for f in flags), (signature, flags)


def test_the_command_line_marks_the_estimates_and_refuses_without_a_model(fitted_db, tmp_path):
    model = torch.jit.trace(_model(), torch.randn(2, 200))
    path = tmp_path / "mlp.pt"
    model.save(str(path))
    args = [OPCOST_BIN, "predict", path, "--input", "f32[2,200]", "--device", "cpu", "--db", fitted_db]
    text = _run([*args, "--estimate"])
    assert text.returncode == 0, text.stderr
    assert "3 signatures were estimated by the cost model, not measured" in text.stdout
    assert "calls estimated)" in text.stdout  # the operator rows mark them
    as_json = json.loads(_run([*args, "--estimate", "--json"]).stdout)
    assert as_json["estimated"]["count"] == 3 and as_json["complete"]
    assert as_json["settings"]["estimate"] in (True, "true", "True")

    empty = tmp_path / "empty.db"
    assert _run([OPCOST_BIN, "measure", "aten::relu", "self=f32[8]", "--device", "cpu", "--no-energy",
                 "--max-time", "0.01", "--db", empty]).returncode == 0
    refused = _run([OPCOST_BIN, "predict", path, "--input", "f32[2,200]", "--device", "cpu", "--db", empty,
                    "--estimate"])
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "--estimate" in lines[0] and "opcost fit" in lines[0], refused.stderr


def test_validate_measures_only_what_the_model_cannot_estimate(fitted_db):
    # A softmax is in no family the model has: validate measures it; the rest are estimated.
    model = torch.nn.Sequential(torch.nn.Linear(200, 100), torch.nn.Softmax(dim=-1)).eval()
    with sqlite3.connect(fitted_db) as c:
        rows_before = c.execute("SELECT MAX(id) FROM measurements").fetchone()[0]
    v = opcost.validate(model, torch.randn(4, 200), db=str(fitted_db), estimate=True, max_time=0.02,
                        step_max_time=0.05, energy=False)
    assert v.complete
    assert len(v.estimated) == 1 and v.estimated[0].startswith("aten::linear")
    # Stored: the measured softmax and the whole step's measurements; never an estimate.
    with sqlite3.connect(fitted_db) as c:
        new = [op for (op,) in c.execute("SELECT op FROM measurements WHERE id > ?", (rows_before,))]
    assert "aten::softmax" in new and "aten::linear" not in new, new
    assert all(op in ("aten::softmax", "model::Sequential") for op in new), new


def test_a_row_at_another_batch_size_anchors_the_estimate(fitted_db, tmp_path):
    # The model's first linear layer measured at batch 2; the model runs at batch 4. Its estimate
    # is scaled from that row (the row's figures times the ratio of the two calls' roofline times:
    # the arithmetic is tests/unit/predict_estimates_test.cpp's), and the result says so.
    db = tmp_path / "anchored.db"
    shutil.copy(fitted_db, db)
    measured = _run([OPCOST_BIN, "measure", "aten::linear", "input=f32[2,200]", "weight=f32[100,200]",
                     "bias=f32[100]", "--device", "cpu", "--no-energy", "--max-time", "0.02", "--db", db])
    assert measured.returncode == 0, measured.stderr

    p = opcost.predict(_model(), torch.randn(4, 200), db=str(db), estimate=True)
    assert p.complete and len(p.estimated) == 3
    # The other linear layer and the ReLU have no row at another batch size.
    assert p._doc["estimated"]["anchored"] == 1
    assert "1 of them scaled from a row measured at another size" in p.table()
    # A single call's estimate is scaled likewise, and says from which row, by how much.
    call_args = "input=f32[4,200] weight=f32[100,200] bias=f32[100]"
    with sqlite3.connect(db) as c:
        (row_us,) = c.execute("SELECT time_median_us FROM measurements WHERE op = 'aten::linear' AND args = ?",
                              ("input=f32[2,200] weight=f32[100,200] bias=f32[100]",)).fetchone()
    one = opcost.estimate("aten::linear", call_args, db=str(db))
    anchor = one["anchor"]
    assert anchor["row_args"] == "input=f32[2,200] weight=f32[100,200] bias=f32[100]"
    row_time = anchor["row_time_us"]  # the row's median, with its interval
    assert (anchor["row_extent"], anchor["call_extent"]) == (2, 4) and row_time["estimate"] == pytest.approx(row_us)
    assert row_time["low"] <= row_time["estimate"] <= row_time["high"]
    assert 1 < anchor["time_ratio"] <= 2  # the roofline's ratio of twice the rows (with its launch floor)
    assert one["time_us"]["estimate"] == pytest.approx(row_us * anchor["time_ratio"])
    assert opcost.estimate("aten::linear", call_args, db=str(fitted_db))["anchor"] is None
    text = _run([OPCOST_BIN, "estimate", "aten::linear", *call_args.split(), "--db", db])
    assert text.returncode == 0, text.stderr
    assert "scaled from the row measured at 2 where this call has 4" in text.stdout

    # A row whose input is the call's (only the layer's width differs) is no anchor.
    other = tmp_path / "other.db"
    shutil.copy(fitted_db, other)
    assert _run([OPCOST_BIN, "measure", "aten::linear", "input=f32[4,100]", "weight=f32[64,100]",
                 "bias=f32[64]", "--device", "cpu", "--no-energy", "--max-time", "0.02", "--db", other]).returncode == 0
    assert opcost.predict(_model(), torch.randn(4, 200), db=str(other), estimate=True)._doc["estimated"]["anchored"] == 0


def test_a_database_that_cannot_be_read_leaves_the_models_estimate_with_a_note(fitted_db, tmp_path):
    model = tmp_path / "model.json"
    model.write_text(opcost._core.latest_cost_model(str(fitted_db))["model_json"])
    broken = tmp_path / "broken.db"
    broken.write_text("not a database\n" * 100)
    call_args = "input=f32[4,200] weight=f32[100,200] bias=f32[100]"
    one = opcost.estimate("aten::linear", call_args, db=str(broken), cost_model=str(model))
    assert one["anchor"] is None and one["time_us"]["estimate"] > 0
    assert any("not scaled from" in note and "could not be" in note for note in one["notes"]), one["notes"]
    text = _run([OPCOST_BIN, "estimate", "aten::linear", *call_args.split(), "--cost-model", model, "--db", broken])
    assert text.returncode == 0, text.stderr
    assert "note: not scaled from" in text.stdout
