"""``opcost.report``: a result as one self-contained HTML page, as ``opcost report`` writes it
(src/workflow/report_html.cpp does the work, for both faces)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from . import _core


def _json_text(result: Any) -> str:
    """The JSON the command line would have written for ``result``."""
    if isinstance(result, (dict, list)):
        return json.dumps(result)
    table_json = getattr(getattr(result, "run", None), "table_json", None)
    if table_json is not None:  # a Trace: its table per layer, as `opcost trace --group-by layer --json`
        return table_json("layer")
    if callable(getattr(result, "rows", None)):  # a SweepResult: its rows, as `opcost db export --json --sweep`
        return json.dumps(result.rows())
    if callable(getattr(result, "to_json", None)):  # a Prediction or a Measurement
        return result.to_json(indent=None)
    raise TypeError(f"opcost.report: cannot report a {type(result).__name__}: give a result JSON file's path, a "
                    "Prediction, Measurement, Trace, SweepResult, Comparison, or a dict/list of opcost's JSON")


def report(result: Any, out: str | os.PathLike) -> Path:
    """Writes ``result`` as one self-contained HTML page with charts to ``out`` and returns its
    path. ``result``: a JSON file opcost wrote (validate/predict/model/trace/measure/compare ``--json``,
    ``db export --json``), or a result object (Prediction, Measurement, Trace, SweepResult, Comparison) or
    its JSON as a dict or list. A file that is not such a result raises ValueError naming it."""
    out_path = os.fspath(out)
    if isinstance(result, (str, os.PathLike)):
        _core.write_report_file(os.fspath(result), out_path)
    else:
        _core.write_report(_json_text(result), type(result).__name__, out_path)
    return Path(out_path)
