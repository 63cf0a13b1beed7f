"""The Python package on CPU tensors: inventories of eager models (a small module, torchvision's
resnet18, a 2-layer GPT-2 built from its config) against torch.profiler on the same run, module
paths against named_modules(), replay of every signature, predict and validate end to end, and
the errors a user meets. Nothing is downloaded: models have random weights."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import opcost

OPCOST_BIN = os.environ.get("OPCOST_BIN")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(32, 16)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))  # the residual add is the block's own


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(Block(), Block())
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return torch.softmax(self.head(self.blocks(x)), dim=-1)  # a functional call at the top


def outermost_aten_calls(fn):
    """The outermost ATen calls torch.profiler records while ``fn`` runs: (name, input shapes)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    calls = []
    for e in prof.events():
        if not e.name.startswith("aten::"):
            continue
        parent, nested = e.cpu_parent, False
        while parent is not None:
            if parent.name.startswith("aten::"):
                nested = True
                break
            parent = parent.cpu_parent
        if not nested:
            calls.append((e.time_range.start, e.name, [list(s) for s in e.input_shapes if s]))
    return [(name, shapes) for _, name, shapes in sorted(calls, key=lambda c: c[0])]


def inventory_calls(inv: opcost.Inventory):
    """The inventory's sequence as (name, tensor shapes), read back from its JSON."""
    out = []
    for signature, _layer in inv.sequence:
        op = signature.split(" ")[0].split(".")[0]
        shapes = []
        for arg in signature.split(" ")[1:]:
            value = arg.split("=", 1)[-1]
            if value.startswith("["):  # a tensor list: torch.profiler records no shapes for it
                continue
            for piece in value.split("],"):
                if "[" in piece and piece.split("[")[0].strip("[") in ("f32", "f16", "bf16", "i64", "i32", "bool", "u8"):
                    dims = piece.split("[", 1)[1].split("]")[0]
                    shapes.append([int(d) for d in dims.split(",") if d])
        # torch.profiler writes [] for 0-dim tensors and for non-tensors alike: compare the rest.
        out.append((op, [s for s in shapes if s]))
    return out


def assert_matches_profiler(model, inputs, step=None):
    step = step or (lambda: model(*inputs))
    with torch.inference_mode():
        expected = outermost_aten_calls(step)
    inv = opcost.inventory(model, *inputs)
    got = inventory_calls(inv)
    assert [n for n, _ in got] == [n for n, _ in expected], "operator names and order differ from torch.profiler"
    assert Counter(n for n, _ in got) == Counter(n for n, _ in expected)
    for (name, shapes), (_, profiled) in zip(got, expected):
        assert shapes == profiled[: len(shapes)], f"{name}: shapes {shapes} vs torch.profiler's {profiled}"
    return inv


def test_small_module_layers_are_named_modules_paths():
    net = Net().eval()
    inv = assert_matches_profiler(net, (torch.randn(8, 16),))
    names = {n for n, _ in net.named_modules()}
    assert set(inv.layers) <= names  # "" is the root: the model's own top level
    by_op = {o.signature: o for o in inv.ops}
    add = next(o for o in inv.ops if o.op == "aten::add")
    assert set(add.layers) == {"blocks.0", "blocks.1"}  # the residual add, in its block's forward
    softmax = next(o for o in inv.ops if o.op == "aten::softmax")
    assert softmax.layers == ("",)  # a functional call in the root's forward: (top)
    assert any("blocks.1.fc2" in o.layers for o in by_op.values())
    assert inv.calls == 10 and inv.unique_signatures == 6
    assert "blocks.0.fc1" in inv.table()


def test_module_hooks_name_one_step_and_are_gone_after():
    # The hooks name the layers of the signature step only: the timing steps, and the user's
    # model afterwards, run without them (hooks move every module off the fast call path).
    net = Net().eval()
    seen = []
    net.blocks[0].fc1.register_forward_pre_hook(lambda m, a: seen.append(len(m._forward_pre_hooks)))
    doc = opcost.inventory(net, torch.randn(8, 16)).to_dict()
    assert max(seen) == 2 and min(seen) == 1  # opcost's hook in one step, only the user's in the others
    assert all(len(m._forward_pre_hooks) == (1 if m is net.blocks[0].fc1 else 0) and not m._forward_hooks
               for m in net.modules())
    cal = doc["host_calibration"]
    assert cal["rounds"] >= 1 and cal["plain_step_us"] > 0 and cal["observed_step_us"] > 0
    assert doc["sequence_columns"] == ["entry", "layer", "host_us", "host_gap_us"]


def test_torchvision_resnet18_matches_the_profiler_and_named_modules():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18().eval()
    inv = assert_matches_profiler(model, (torch.randn(1, 3, 64, 64),))
    names = {n for n, _ in model.named_modules()}
    assert set(inv.layers) <= names
    assert "layer3.1.conv1" in inv.layers and "fc" in inv.layers
    # The residual adds are issued by each BasicBlock's own forward.
    adds = [o for o in inv.ops if o.op in ("aten::add_", "aten::add")]
    assert adds and all(layer.count(".") == 1 for o in adds for layer in o.layers), adds


def test_gpt2_two_layers_matches_the_profiler_and_named_modules():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=512, n_positions=64)
    model = transformers.GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 512, (2, 16))
    inv = assert_matches_profiler(model, (ids,))
    names = {n for n, _ in model.named_modules()}
    assert set(inv.layers) <= names
    assert "transformer.h.1.attn.c_attn" in inv.layers
    assert any(o.op == "aten::addmm" and "transformer.h.0.mlp.c_fc" in o.layers for o in inv.ops)


@pytest.mark.skipif(not OPCOST_BIN, reason="OPCOST_BIN is set by ctest")
def test_every_signature_of_a_python_inventory_replays(tmp_path):
    inv = opcost.inventory(Net().eval(), torch.randn(4, 16))
    spec = inv.save(tmp_path / "inv.json")
    run = subprocess.run([OPCOST_BIN, "measure", "--spec", str(spec), "--device", "cpu", "--no-store", "--no-energy",
                          "--max-time", "0.01"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert f"{inv.unique_signatures} measured, 0 skipped, 0 failed" in run.stderr


def test_train_attributes_backward_ops_to_forward_layers():
    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    inv = opcost.inventory(net, torch.randn(4, 16), train=True, optimizer=opt)
    backward = [o for o in inv.ops if o.phase == "backward"]
    assert backward
    assert any("blocks.0.fc1" in o.layers for o in backward)


def test_predict_and_validate_end_to_end(tmp_path):
    db = tmp_path / "ops.db"
    net, x = Net().eval(), torch.randn(8, 16)
    before = opcost.predict(net, x, db=db)
    assert not before.complete and before.missing and not db.exists()  # predict never creates a database
    val = opcost.validate(net, x, db=db, max_time=0.02, step_max_time=0.2, energy=False)
    assert val.complete and val.measured_time_us > 0 and val.time_error is not None
    assert val.capped_energy_mJ == 0 and val.to_dict()["capped"]["signatures"] == 0  # no power cap on a CPU
    assert val.pooled_energy == 0 == val.to_dict()["pooled_energy"]  # shared windows pool on a GPU only
    # Launches are traced on a GPU only: on the CPU the prediction says why it has none.
    assert val.launch_latency_us is None and val.launch_latency_traced_us is None
    assert val.time_us_launched_at_return is None
    assert "GPU" in val.launches_why
    # The prediction's host times and the step, timed in the same rounds: one error per round.
    paired = val.to_dict()["paired"]
    assert paired["rounds"] >= 5 and len(paired["predicted_us"]) == paired["rounds"]
    low, high = val.paired_time_error_range
    assert low <= val.paired_time_error <= high and val.host_drift >= 0
    assert val.headline in ("paired", "unpaired")
    # Without energy there is no paired energy, and the report says why.
    assert val.paired_energy_error is None and "no energy figure" in val.to_dict()["paired_energy"]["why"]
    after = opcost.predict(net, x, db=db)
    assert after.complete and after.time_us > 0
    doc = json.loads(val.to_json())
    assert {row["name"] for row in doc["layers"]} >= {"blocks.0.fc1", "head", "(top)"}
    pandas = pytest.importorskip("pandas")
    assert isinstance(after.to_pandas(by="op"), pandas.DataFrame)


def test_validate_takes_the_short_loop_options(tmp_path, caplog):
    net, x = Net().eval(), torch.randn(8, 16)
    with caplog.at_level(logging.INFO, logger="opcost"):
        val = opcost.validate(net, x, db=tmp_path / "ops.db", max_time=0.02, step_max_time=0.2, energy=False,
                              short_loops_after=0, ops_energy_ci=0.05)
    assert val.complete
    assert any("every operator gets short loops" in r.getMessage() for r in caplog.records), caplog.text
    for bad in (dict(short_loops_after=1.5), dict(ops_energy_ci=-0.1)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            opcost.validate(net, x, db=tmp_path / "ops.db", **bad)


def test_validate_classes_inputs_against_a_given_cache(tmp_path):
    net, x = Net().eval(), torch.randn(8, 16)
    db = tmp_path / "ops.db"
    val = opcost.validate(net, x, db=db, max_time=0.02, step_max_time=0.2, energy=False, cache_bytes=256)
    auto = val.to_dict()["cache_auto"]
    assert val.complete and auto["l2_bytes"] == 256 and auto["signatures_with_cold_inputs"] >= 1, auto
    # The default on the CPU classes nothing, and says so; its warm signatures are other rows.
    default = opcost.predict(net, x, db=db)
    assert default.to_dict()["cache_auto"] == {"why": "on the CPU every input is warm"}
    with pytest.raises(ValueError, match="cache_bytes"):
        opcost.validate(net, x, db=db, cache_bytes=-1)
    with pytest.raises(ValueError, match="tepid"):
        opcost.predict(net, x, db=db, cache="tepid")


def test_inventory_classes_inputs_against_a_given_cache():
    net, x = Net().eval(), torch.randn(8, 16)
    plain = opcost.inventory(net, x)
    assert plain.cache_bytes is None and not any(o.cold_args for o in plain.ops)  # the CPU: nothing classed
    small = opcost.inventory(net, x, cache_bytes=256)
    assert small.cache_bytes == 256
    # A weight is read once a step: against 256 bytes, from memory; an activation just written is not.
    linears = [o for o in small.ops if o.op == "aten::linear"]
    assert linears and all("weight" in o.cold_args for o in linears), linears
    assert any("input" not in o.cold_args for o in linears), linears
    assert "weight" in small.to_pandas()["cold_args"].str.cat(sep=",")
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="cache_bytes"):
            opcost.inventory(net, x, cache_bytes=bad)


def test_measure_from_python_values():
    m = opcost.measure("aten::add", self="f32[32,32]", other=torch.ones(32, 32), alpha=2, device="cpu",
                       max_time=0.05, energy=False, store=False)
    assert m.op == "aten::add.Tensor" and m.args == "self=f32[32,32] other=f32[32,32] alpha=2"
    low, high = m.time_ci95_us
    assert low <= m.time_us <= high
    assert m.energy_mJ is None and "switched off" in m.energy_unavailable


def test_errors_name_the_model_and_what_fits():
    net = Net().eval()
    with pytest.raises(opcost.ModelError, match=r"Net\(f32\[8,3\]\) raised RuntimeError"):
        opcost.inventory(net, torch.randn(8, 3))
    with pytest.raises(TypeError, match="is not a model"):
        opcost.inventory(42, torch.randn(8, 16))
    with pytest.raises(opcost.InputError, match="unknown operator 'aten::reluu'.*did you mean"):
        opcost.measure("aten::reluu", self="f32[4]", device="cpu", store=False)
    with pytest.raises(ValueError, match="the path is empty"):
        opcost.predict(net, torch.randn(8, 16), db="")


def run_module(*args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-m", "opcost", *args], capture_output=True, text=True, env=env)


def test_python_m_opcost_inventory_of_a_module_in_a_file(tmp_path):
    (tmp_path / "my_model.py").write_text(
        "import torch\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())\n")
    run = run_module("inventory", f"{tmp_path / 'my_model.py'}:build", "--input", "f32[2,8]", "--device", "cpu",
                     "--json", "-o", str(tmp_path / "inv.json"))
    assert run.returncode == 0, run.stderr
    doc = json.loads((tmp_path / "inv.json").read_text())
    assert doc["totals"]["calls"] == 2 and {o["layers"][0] for o in doc["ops"]} == {"0", "1"}


def test_python_m_opcost_errors():
    run = run_module("inventory", "no_such_package_xyz:build", "--input", "f32[2,8]")
    assert run.returncode == 2 and "cannot import no_such_package_xyz" in run.stderr
    run = run_module("inventory", "torch.nn:Linearr", "--input", "f32[2,8]")
    assert run.returncode == 2 and "has no 'Linearr'" in run.stderr
    run = run_module("inventory", "torch:nn", "--input", "q7[2]")
    assert run.returncode == 2 and "error" in run.stderr


def test_a_damaged_database_is_a_database_error_with_its_kind(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not a database " * 100)
    with pytest.raises(opcost.DatabaseError, match="bad.db") as caught:
        opcost.validate(Net().eval(), torch.randn(8, 16), db=bad, max_time=0.02)
    assert caught.value.kind == "other"  # full, read_only, io or other: what the command line's exit status follows
    (tmp_path / "m.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(16, 4)\n")
    run = run_module("validate", f"{tmp_path / 'm.py'}:build", "--input", "f32[8,16]", "--device", "cpu", "--db",
                     str(bad))
    assert run.returncode == 1, run.stderr  # as `opcost validate`: a database that fails is exit 1, read-only 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("opcost: error: ") and "bad.db" in run.stderr


def test_a_prediction_says_when_gpu_time_ran_in_kernels_no_call_launched():
    # The committed validate result (an H100's, written before these keys were): not uncovered;
    # the same result as validate writes it where a CUDA graph's replay launched half the step's
    # GPU time; and that result as written between the figures and the `uncovered` key.
    doc = json.loads((Path(__file__).resolve().parents[1] / "data" / "report" / "validate.json").read_text())
    covered = opcost.Prediction(doc, "")
    assert not covered.uncovered and covered.untied_device_us == 0.0
    doc = dict(doc, traced_device_us=5000.0, untied_device_us=2500.0, uncovered=True, complete=False)
    uncovered = opcost.Prediction(doc, "")
    assert uncovered.uncovered and not uncovered.complete
    assert (uncovered.untied_device_us, uncovered.traced_device_us) == (2500.0, 5000.0)
    assert "INCOMPLETE" in repr(uncovered)
    older = dict(doc)
    del older["uncovered"]
    assert opcost.Prediction(older, "").uncovered


def test_a_cpu_validate_traces_no_step_and_is_not_uncovered(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    p = opcost.validate(model, torch.randn(2, 8), db=tmp_path / "ops.db", max_time=0.02, step_max_time=0.2,
                        energy=False)
    assert p.complete
    assert p.traced_device_us == 0.0 and p.untied_device_us == 0.0 and not p.uncovered
    assert p.to_dict()["uncovered"] is False
