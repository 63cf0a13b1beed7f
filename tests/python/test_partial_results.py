"""A model with one call that cannot be replayed (issue 31, item 6): whatever fails gets one line
naming the model, the layer, the call and the fix, and the rest of the model is still inventoried,
measured, stored and predicted, with the failing call named as missing; ``complete`` is False and
the command line's exit status says so. Through ``opcost.validate/predict/trace_model`` and
``python -m opcost validate|predict|trace``, on CPU tensors with the shortest budgets (the C++
command line's cases are in tests/cli_failures_test.sh)."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest
import torch

import opcost

SHORT = dict(max_time=0.02, step_max_time=0.2, energy=False)

# The model and its operator, in a file both this process and `python -m opcost` load. The
# operator refuses to run outside its model's forward: opcost's replay of it alone raises, however
# its inputs are made, as a custom operator with state the replay does not have would.
MODEL_SOURCE = textwrap.dedent('''
    import torch

    _in_forward = [False]


    @torch.library.custom_op("{namespace}::stateful_sqrt", mutates_args=())
    def stateful_sqrt(x: torch.Tensor) -> torch.Tensor:
        if not _in_forward[0]:
            raise ValueError("stateful_sqrt: called outside its model's forward")
        return x.abs().sqrt()


    @stateful_sqrt.register_fake
    def _(x):
        return torch.empty_like(x)


    class StatefulSqrt(torch.nn.Module):
        def forward(self, x):
            _in_forward[0] = True
            try:
                return stateful_sqrt(x)
            finally:
                _in_forward[0] = False


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.root, self.fc2 = torch.nn.Linear(16, 16), StatefulSqrt(), torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(self.root(torch.relu(self.fc1(x))))


    def build():
        torch.manual_seed(0)
        return Net().eval()
''')


@pytest.fixture(scope="module")
def net_module(tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "stateful_net.py"
    path.write_text(MODEL_SOURCE.replace("{namespace}", "opcost_partial"))
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace


FAILING = "opcost_partial::stateful_sqrt x=f32[4,16]"


def test_validate_goes_past_the_call_and_measures_predicts_and_stores_the_rest(tmp_path, net_module, caplog):
    model, x, db = net_module["build"](), torch.randn(4, 16), tmp_path / "ops.db"
    with caplog.at_level(logging.INFO, logger="opcost"):
        val = opcost.validate(model, x, db=db, **SHORT)
    # The run finished: the step was measured and every other call predicted.
    assert not val.complete and val.failures == 1 and val.measured_time_us > 0 and val.time_us > 0
    assert val.missing == [FAILING]
    [failed] = val.failed_calls
    assert isinstance(failed, opcost.MissingCall)  # the public type, as `from opcost import MissingCall` gives it
    assert failed.signature == FAILING and failed.layers == ("root",) and failed.count == 1
    assert "called outside its model's forward" in failed.error and "; fix: " in failed.error
    assert "\n" not in failed.error
    rows = {r["name"]: r for r in val.to_dict()["ops"]}
    assert all(r["missing_calls"] == 0 and r["time_us"] > 0 for name, r in rows.items() if name != FAILING), rows
    stored = {op for (op,) in sqlite3.connect(db).execute("SELECT op FROM measurements")}
    assert {"aten::linear", "aten::relu"} <= stored and "opcost_partial::stateful_sqrt" not in stored, stored
    # One error, one line: the model, the layer, the call, the reason and the fix.
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "\n" not in errors[0], errors
    assert errors[0].startswith(f"Net: layer root: {FAILING}: ValueError: stateful_sqrt: called outside"), errors
    assert "; fix: " in errors[0] and "listed as missing" in errors[0]
    # The text says it too, under INCOMPLETE, with its layer.
    assert f"{FAILING} ×1  in root\n    failed: ValueError: stateful_sqrt" in val.table()
    assert "INCOMPLETE" in val.table() and "(1 failed)" in repr(val)


def test_predict_afterwards_names_the_call_missing_with_its_layer(tmp_path, net_module):
    model, x, db = net_module["build"](), torch.randn(4, 16), tmp_path / "ops.db"
    opcost.validate(model, x, db=db, **SHORT)
    p = opcost.predict(model, x, db=db)
    assert not p.complete and p.failures == 0 and p.time_us > 0
    # Nothing was tried in predict: missing, with its layer, but no error of this run.
    assert [(m.signature, m.layers, m.error) for m in p.missing_calls] == [(FAILING, ("root",), None)]
    assert p.failed_calls == []
    assert p.to_dict()["measured_calls"] == p.to_dict()["calls"] - 1


def test_trace_model_of_the_model_keeps_every_call(net_module):
    # On the CPU a trace replays nothing: the call that cannot be replayed is traced as the model runs it.
    t = opcost.trace_model(net_module["build"](), torch.randn(4, 16))
    names = {r["name"] for r in t.key_averages()}
    assert {"opcost_partial::stateful_sqrt", "aten::linear"} <= names, names


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "opcost", *args], capture_output=True, text=True, timeout=600,
                          env=env)


def test_the_package_command_line_names_the_call_and_exits_incomplete(tmp_path):
    path = tmp_path / "stateful_net.py"
    path.write_text(MODEL_SOURCE.replace("{namespace}", "opcost_partial_cli"))
    db, failing = tmp_path / "ops.db", "opcost_partial_cli::stateful_sqrt x=f32[4,16]"
    env = dict(os.environ)
    val = run_cli("validate", f"{path}:build", "--input", "f32[4,16]", "--device", "cpu", "--max-time", "0.02",
                  "--no-energy", "--db", str(db), "--json", env=env)
    assert val.returncode == 1, val.stderr  # some measurement failed; the rest were stored
    errors = [line for line in val.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and f"build: layer root: {failing}: ValueError" in errors[0], val.stderr
    assert "; fix: " in errors[0] and "Traceback" not in val.stderr
    doc = json.loads(val.stdout)
    assert not doc["complete"] and doc["failures"] == 1 and doc["measured"]["time_us"] > 0
    assert [(m["signature"], m["layers"]) for m in doc["missing"]] == [(failing, ["root"])]
    assert "called outside its model's forward" in doc["missing"][0]["error"]
    pred = run_cli("predict", f"{path}:build", "--input", "f32[4,16]", "--device", "cpu", "--db", str(db), env=env)
    assert pred.returncode == 3, pred.stderr  # incomplete: one call has no measurement
    assert f"{failing} ×1  in root" in pred.stdout and "INCOMPLETE" in pred.stdout
    trace = run_cli("trace", f"{path}:build", "--input", "f32[4,16]", "--device", "cpu", env=env)
    assert trace.returncode == 0 and "opcost_partial_cli::stateful_sqrt" in trace.stdout, trace.stderr
