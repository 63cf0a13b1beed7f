"""Training steps from Python, on CPU tensors: validate, predict and trace_model of tiny models whose
output is a tensor, a tuple, a dict or a transformers ModelOutput, with and without an optimizer,
with loss_fn=, under autocast; the core's own contract (every step it runs gets the step's grad
and inference modes, whatever the caller's); and `python -m opcost validate|predict|trace --train`.
Budgets are the shortest: the figures are not checked, only that every step ran and was measured."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys
import types

import pytest
import torch

import opcost
from opcost import _api, _core

SHORT = dict(max_time=0.02, step_max_time=0.2, energy=False)


class TensorMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TupleCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.head = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.Linear(8, 4)

    def forward(self, x):
        features = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.head(features), features


class DictNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.norm, self.head = torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4)

    def forward(self, x):
        hidden = self.norm(self.fc(x))
        return {"logits": self.head(hidden), "hidden": hidden}


def tiny_bert():
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                     intermediate_size=64, max_position_embeddings=32)
    return transformers.BertForMaskedLM(config)


def op_names(p: opcost.Prediction) -> set:
    return {row["name"].split(" ")[0] for row in p.to_dict()["ops"]}


def layer_names(p: opcost.Prediction) -> set:
    return {row["name"] for row in p.to_dict()["layers"]}


def case(name):
    """A model, its inputs and keywords, and the ops its backward (and optimizer) must show."""
    torch.manual_seed(0)
    if name == "tensor":
        m = TensorMLP()
        return m, (torch.randn(8, 16),), {}, {"aten::gelu_backward", "aten::mm"}
    if name == "tuple-sgd-autocast":
        m = TupleCNN()
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        return m, (torch.randn(2, 3, 8, 8),), dict(optimizer=opt, autocast="bf16"), {"aten::convolution_backward"}
    if name == "dict-adamw-loss_fn":
        m = DictNet()
        target = torch.randint(0, 4, (8,))
        loss_fn = lambda out: torch.nn.functional.cross_entropy(out["logits"], target)  # noqa: E731
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        return m, (torch.randn(8, 16),), dict(optimizer=opt, loss_fn=loss_fn), {"aten::native_layer_norm_backward"}
    if name == "modeloutput-adamw-autocast":  # the case: a masked LM under bf16 autocast with AdamW
        m = tiny_bert()
        ids = torch.randint(0, 64, (2, 8))
        opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
        return m, (ids,), dict(labels=ids, optimizer=opt, autocast="bf16"), {"aten::embedding_backward",
                                                                             "aten::native_layer_norm_backward"}
    raise AssertionError(name)


CASES = ["tensor", "tuple-sgd-autocast", "dict-adamw-loss_fn", "modeloutput-adamw-autocast"]


@pytest.mark.parametrize("name", CASES)
def test_validate_then_predict_a_training_step(tmp_path, name):
    model, inputs, kw, backward_ops = case(name)
    model.train()
    db = tmp_path / "ops.db"
    val = opcost.validate(model, *inputs, db=db, train=True, **SHORT, **kw)
    assert val.complete and not val.missing and val.failures == 0, (val.missing, val.failures)
    assert val.measured_time_us > 0 and val.time_error is not None
    assert backward_ops <= op_names(val), sorted(op_names(val))
    # The optimizer's own calls are part of the step (their layer is the profiler's record of it).
    optimizer = kw.get("optimizer")
    stepped = {layer for layer in layer_names(val) if layer.startswith("Optimizer.step#")}
    assert stepped == ({f"Optimizer.step#{type(optimizer).__name__}.step"} if optimizer else set())
    # Everything the step calls is in the database now: predict measures nothing and is complete.
    # AdamW's step size, a float argument of addcdiv_, differs from the step validate measured:
    # those calls are matched ignoring float scalar values, and the prediction says so.
    again = opcost.predict(model, *inputs, db=db, train=True, **kw)
    assert again.time_us > 0 and op_names(again) == op_names(val)
    assert again.complete, again.missing
    assert (again.matched_ignoring_float_scalars > 0) == isinstance(optimizer, torch.optim.AdamW)


@pytest.mark.parametrize("foreach", [False, True])
def test_predict_after_validate_of_an_adamw_step_is_complete(tmp_path, foreach):
    # AdamW's step size -lr/(1-beta1**t) is a float argument of aten::addcdiv_ (foreach: a list
    # of them in _foreach_addcdiv_.ScalarList, with _foreach_div_.ScalarList's, as on a GPU) that
    # changes with the step count: a later step's calls differ from those validated in those
    # values only, and are predicted from the rows validate stored, said in the result, its JSON
    # and its text.
    model, inputs, kw, _ = case("dict-adamw-loss_fn")
    kw["optimizer"] = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=foreach)
    db = tmp_path / "ops.db"
    opcost.validate(model, *inputs, db=db, train=True, **SHORT, **kw)
    rows = sqlite3.connect(db).execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
    again = opcost.predict(model, *inputs, db=db, train=True, **kw)
    assert again.complete, again.missing
    matched = again.to_dict()["matched_ignoring_float_scalars"]
    assert again.matched_ignoring_float_scalars == matched["count"] == len(matched["signatures"]) > 0
    ops = {"aten::_foreach_addcdiv_.ScalarList", "aten::_foreach_div_.ScalarList"} if foreach else {"aten::addcdiv_"}
    assert {m["signature"].split(" ")[0] for m in matched["signatures"]} == ops
    for m in matched["signatures"]:  # the same call but for the step size, from a row validate stored
        op, args = m["signature"].split(" ", 1)
        assert m["db_id"] > 0 and args != m["stored_args"]
        assert args.split("value=" if op == "aten::addcdiv_" else "scalars=")[0] == m["stored_args"].split(
            "value=" if op == "aten::addcdiv_" else "scalars=")[0]
    assert f"{again.matched_ignoring_float_scalars} signatures matched ignoring float scalar values" in again.table()
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM measurements").fetchone()[0] == rows  # predict stores none


def test_a_float_scalar_that_changes_the_kernel_is_never_matched_so(tmp_path):
    # pow's exponent picks the kernel (2 squares, 0.5 takes a root): a call with another
    # exponent stays missing, while clamp with another bound (the same kernel) is matched.
    class Powers(torch.nn.Module):
        def __init__(self, exponent):
            super().__init__()
            self.exponent = exponent

        def forward(self, x):
            return torch.clamp(torch.pow(x, self.exponent), min=-self.exponent)

    x, db = torch.rand(8, 16), tmp_path / "ops.db"
    opcost.validate(Powers(2.0), x, db=db, **SHORT)
    p = opcost.predict(Powers(0.5), x, db=db)
    assert [m.split(" ")[0] for m in p.missing] == ["aten::pow.Tensor_Scalar"], p.missing
    assert p.matched_ignoring_float_scalars == 1 and not p.failed_calls


def test_predict_and_trace_of_a_modeloutput_without_a_loss(tmp_path):
    # BertForMaskedLM without labels: a ModelOutput whose loss is None, so the step's loss is the
    # logits' sum. predict measures nothing: a new database lacks every call, and names them.
    model, ids = tiny_bert().train(), torch.randint(0, 64, (2, 8))
    p = opcost.predict(model, ids, db=tmp_path / "ops.db", train=True)
    assert not p.complete and {"aten::embedding_backward", "aten::native_layer_norm_backward"} <= {
        m.split(" ")[0] for m in p.missing}
    t = opcost.trace_model(model, ids, train=True)
    assert "aten::embedding_backward" in {r["name"] for r in t.key_averages()}


def test_a_caller_in_no_grad_or_inference_mode_does_not_reach_the_step(tmp_path):
    model, (x,), _, _ = case("tensor")
    with torch.inference_mode():
        val = opcost.validate(model, x, db=tmp_path / "ops.db", train=True, **SHORT)
    assert val.complete and "aten::gelu_backward" in op_names(val)
    with torch.no_grad():
        inv = opcost.inventory(model, x, train=True)
    assert any(o.phase == "backward" for o in inv.ops)


def core_validate(step, model, x, train: bool, db):
    """_core.predict as opcost.validate calls it, on a raw step that sets no modes of its own."""
    d = dict(_api._describe(model, (x,), {}, train, None, "raw-step"), name_layers=lambda on: None)
    options = {"command": "validate", "db": str(db), "db_is_default": False, "cache": "auto",
               "cache_bytes": 0, "energy": False, "max_time": 0.02, "energy_max_time": 2.0,
               "energy_max_time_capped": 3.5, "step_max_time": 0.2}
    return json.loads(_core.predict(step, d, options)["json"])


@pytest.mark.parametrize("train", [True, False])
def test_the_core_runs_every_step_under_the_steps_own_modes(tmp_path, train):
    # The core itself, not the package's step: observing, timing the whole step (in the
    # measurement loop's inference mode) and the paired rounds all get the step's modes, here
    # from under a caller's no_grad.
    model, (x,), _, _ = case("tensor")
    seen = []

    def step():
        seen.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        out = model(x)
        if train:
            out.sum().backward()
            model.zero_grad(set_to_none=True)

    with torch.no_grad():
        doc = core_validate(step, model, x, train, tmp_path / "ops.db")
    assert doc["complete"] and doc["measured"]["time_us"] > 0
    assert len(seen) > 10 and set(seen) == {(True, False) if train else (False, True)}


def test_trace_model_of_a_training_step_measures_the_untraced_step(tmp_path):
    model, (x,), kw, _ = case("tuple-sgd-autocast")
    t = opcost.trace_model(model, x, train=True, energy=True, db=tmp_path / "ops.db", **kw)
    assert t.run.steps == 1
    names = {r["name"] for r in t.key_averages()}
    assert {"aten::convolution_backward", "aten::native_batch_norm_backward"} <= names, sorted(names)
    assert "untraced step, measured:" in t.table()  # timed by the measurement loop, as validate's step


def run_module(*args):
    return subprocess.run([sys.executable, "-m", "opcost", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=300)


def test_python_m_opcost_validate_predict_and_trace_train(tmp_path):
    pytest.importorskip("torchvision")
    db = str(tmp_path / "ops.db")
    model = ["torchvision.models:resnet18", "--input", "f32[2,3,32,32]", "--device", "cpu", "--train"]  # BatchNorm: 2+ a channel
    run = run_module("validate", *model, "--db", db, "--max-time", "0.02", "--no-energy", "--json",
                     "-o", str(tmp_path / "val.json"))
    assert run.returncode == 0, run.stderr
    doc = json.loads((tmp_path / "val.json").read_text())
    assert doc["complete"] and doc["measured"]["time_us"] > 0
    assert "aten::convolution_backward" in {row["name"].split(" ")[0] for row in doc["ops"]}
    run = run_module("predict", *model, "--db", db)
    assert run.returncode == 0, run.stderr  # complete: 0, incomplete: 3
    run = run_module("trace", *model, "--energy", "--db", db, "--json")
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["rows"]
    assert "aten::convolution_backward" in {r["name"] for r in rows}


class _Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * x * grad


class _SquareLayer(torch.nn.Module):
    def forward(self, x):
        return _Square.apply(x)


def test_a_python_autograd_functions_backward_is_the_layer_it_was_applied_in():
    # Its backward node is numbered by the Function's apply, not by an ATen call: the layer the
    # apply ran in is the node's, as for an ATen call's node.
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), _SquareLayer())
    inv = opcost.inventory(model, torch.randn(4, 8), train=True)
    backward_muls = [o for o in inv.ops if o.op == "aten::mul" and o.phase == "backward"]
    assert backward_muls and all(o.layers == ("1",) for o in backward_muls), [(o.op, o.layers) for o in inv.ops]


def test_the_default_loss_says_once_what_it_does_to_a_training_steps_energy(caplog):
    # The output's sum gives every sample the same gradient; the note says so and how to give a
    # real loss, once for the step function, and not where a loss_fn is given.
    model = torch.nn.Sequential(torch.nn.Linear(8, 8))
    with caplog.at_level(logging.INFO, logger="opcost"):
        opcost.inventory(model, torch.randn(4, 8), train=True)
    notes = [r.getMessage() for r in caplog.records if "without loss_fn" in r.getMessage()]
    assert len(notes) == 1 and "pass loss_fn=" in notes[0], notes
    # No note where the loss is real: a loss_fn, a model that returns its own scalar loss, or an
    # output carrying `.loss` (transformers' with labels).
    class ScalarLoss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            return self.fc(x).pow(2).mean()

    class WithLoss(ScalarLoss):
        def forward(self, x):
            out = types.SimpleNamespace(logits=self.fc(x))
            out.loss = out.logits.pow(2).mean()
            return out

    for m, kwargs in ((model, {"loss_fn": lambda out: out.pow(2).sum()}), (ScalarLoss(), {}), (WithLoss(), {})):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="opcost"):
            opcost.inventory(m, torch.randn(4, 8), train=True, **kwargs)
        assert not [r for r in caplog.records if "without loss_fn" in r.getMessage()], type(m).__name__
