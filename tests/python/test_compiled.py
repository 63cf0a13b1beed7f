"""Kernels torch.compile generates are operators of the inventory (opcost/_compiled.py): named,
counted, tied to the layers they came from, and never taken as measured. On the CPU inductor
generates C++ kernels; the same records wrap Triton launches on a GPU."""

import json

import pytest
import torch

import opcost
from opcost import _compiled

pytest.importorskip("torch._inductor")


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.act = torch.nn.GELU()
        self.ln = torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.ln(self.act(self.fc1(x)))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.fc2 = torch.nn.Linear(32, 8)

    def forward(self, x):
        return torch.relu(self.fc2(self.block(x))) * 2


@pytest.fixture(scope="module")
def compiled_inventory():
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = torch.compile(Net())
    return opcost.inventory(model, torch.randn(4, 16))


def _generated(inv):
    return [o for o in inv.ops if o.op.startswith("compiled::")]


def test_generated_kernels_are_listed_and_counted(compiled_inventory):
    generated = _generated(compiled_inventory)
    names = [o.op for o in generated]
    # GELU and LayerNorm fuse into one C++ kernel; ReLU and the multiply into another.
    assert any("gelu" in n and "native_layer_norm" in n for n in names), names
    assert any("relu" in n and "mul" in n for n in names), names
    assert all(o.count == 1 for o in generated)
    # Each is keyed by its source's hash (kernel names repeat across models with other code).
    assert all(o.overload.startswith("h") and len(o.overload) == 13 for o in generated)
    # Its arguments are the launch's tensors, by position, in the argument language.
    fused = next(o for o in generated if "native_layer_norm" in o.op)
    assert "arg0=f32[4,32]" in fused.args, fused.args
    # The matrix products inductor leaves to ATen are still ATen calls, as their functional twins.
    assert sum(o.count for o in compiled_inventory.ops if o.op == "aten::addmm" and not o.overload) == 2


def test_generated_kernels_carry_the_layer_they_came_from(compiled_inventory):
    by_kernel = {o.op: o.layers for o in _generated(compiled_inventory)}
    fused = next(layers for op, layers in by_kernel.items() if "native_layer_norm" in op)
    # Provenance: the fused kernel's nodes come from block.act and block.ln; most are the norm's.
    assert fused[0] in ("block.ln", "block.act"), by_kernel
    relu = next(layers for op, layers in by_kernel.items() if "relu" in op)
    assert relu == ("",), by_kernel  # torch.relu in the root's forward: the top level
    # The ATen calls of the graph's code carry their launch site's layer too.
    addmm = [o.layers for o in compiled_inventory.ops if o.op == "aten::addmm"]
    assert sorted(layer for layers in addmm for layer in layers) == ["block.fc1", "fc2"], addmm


def test_a_reused_kernel_takes_each_launch_sites_layer():
    # Inductor generates one kernel for the same work in each of several blocks and launches it
    # once per block: each launch belongs to its own block.
    torch._dynamo.reset()
    norm = lambda: torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU(), torch.nn.LayerNorm(32))
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), norm(), norm(), norm())
    inv = opcost.inventory(torch.compile(model), torch.randn(4, 16))
    reused = [o for o in _generated(inv) if o.count == 3]
    assert reused, [(o.op, o.count) for o in _generated(inv)]
    assert {layer.split(".")[0] for layer in reused[0].layers} == {"1", "2", "3"}, reused[0].layers


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(32, 96)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 8, 3, 2, 16).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return y.transpose(1, 2).reshape(2, 8, 32)


def test_an_operator_the_graphs_code_calls_directly_takes_its_launch_sites_layer():
    # Inductor leaves attention to ATen and calls it as torch.ops.aten.<op>.default(...) from
    # the graph's code: each block's call is that block's.
    torch._dynamo.reset()
    model = torch.nn.Sequential(Attention(), Attention())
    inv = opcost.inventory(torch.compile(model), torch.randn(2, 8, 32))
    attention = [o for o in inv.ops if "scaled_dot_product" in o.op]
    assert attention and sum(o.count for o in attention) == 2, [(o.op, o.count) for o in inv.ops]
    assert sorted(layer for o in attention for layer in o.layers) == ["0", "1"], [o.layers for o in attention]


def test_the_stand_in_for_a_graphs_globals_keeps_everything_but_its_sites_as_they_are():
    sites = frozenset({"torch.ops.aten.relu.default"})
    under = frozenset({"torch", "torch.ops", "torch.ops.aten", "torch.ops.aten.relu"})
    proxy = _compiled._LayeredCalls(torch, "torch", sites, under, "", _compiled.CompiledKernels())
    x = torch.tensor([-1.0, 2.0])
    assert proxy.ops.aten.add is torch.ops.aten.add  # off the sites' paths: the original itself
    assert proxy.float32 is torch.float32
    assert proxy.ops.aten.relu.default(x).tolist() == [0.0, 2.0]  # a site, called in its layer
    assert proxy.ops.aten.relu(x).tolist() == [0.0, 2.0]  # a level above a site calls its original
    assert repr(proxy.ops.aten.relu.default) == repr(torch.ops.aten.relu.default)
    with pytest.raises(AttributeError):
        proxy.ops.aten.relu.no_such_overload


def test_a_compiled_backward_graphs_kernels_are_their_forward_layers_backward_calls():
    # The backward graph's nodes carry their forward module (fwd_nn_module_stack): its kernels
    # and matrix products are that layer's backward calls, not the autograd engine's.
    torch._dynamo.reset()
    torch.manual_seed(0)
    inv = opcost.inventory(torch.compile(Net()), torch.randn(4, 16), train=True)
    backward = [o for o in inv.ops if o.phase == "backward" and (o.op.startswith("compiled::") or o.op == "aten::mm")]
    assert len(backward) >= 4, [(o.op, o.phase, o.layers) for o in inv.ops]
    layers = {layer for o in backward for layer in o.layers}
    assert "(autograd)" not in layers, [(o.op, o.layers) for o in backward]
    assert {"block.fc1", "fc2"} <= layers, [(o.op, o.layers) for o in backward]
    fused = next(o for o in backward if "gelu_backward" in o.op)
    assert set(fused.layers) <= {"block.act", "block.ln"}, fused.layers


class WideBlock(torch.nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, hidden)
        self.act = torch.nn.GELU()
        self.ln = torch.nn.LayerNorm(hidden)
        self.out = torch.nn.Linear(hidden, 16)

    def forward(self, x):
        return self.out(self.ln(self.act(self.fc1(x))))


class TwoCompiledBlocks(torch.nn.Module):
    """Two compiled blocks of different widths (32 and 48): each one's kernels tell it apart."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.compile(WideBlock(32)), torch.compile(WideBlock(48))])

    def forward(self, x):
        return self.blocks[1](self.blocks[0](x))


def test_compiled_submodules_backward_kernels_are_their_own_layers_backward_calls():
    # Each compiled block's backward graph is named from the layer its region ran forward in.
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    inv = opcost.inventory(TwoCompiledBlocks(), torch.randn(4, 16), train=True)
    # The layer hooks stay outside the compiled code: the blocks compile as they would alone.
    assert sum(counters["graph_break"].values()) == 0, dict(counters["graph_break"])
    generated = [o for o in _generated(inv) if o.phase == "backward"]
    assert generated, [(o.op, o.phase, o.layers) for o in inv.ops]
    for o in generated:
        block = "blocks.1." if ",48]" in o.args else "blocks.0."
        assert o.layers and all(layer.startswith(block) for layer in o.layers), (o.op, o.args, o.layers)
    assert {o.layers[0].split(".")[1] for o in generated} == {"0", "1"}, [(o.op, o.layers) for o in generated]


def test_a_generated_kernels_tensors_take_part_in_the_cache_classing():
    # Against a 1-byte cache the LayerNorm's weights are read from memory by the fused kernel,
    # while the matrix product's output it reads was just written (the classing's rule): both
    # need the addresses of a generated kernel's tensors (its arguments are text).
    torch._dynamo.reset()
    inv = opcost.inventory(torch.compile(Net()), torch.randn(4, 16), cache_bytes=1)
    fused = next(o for o in _generated(inv) if "native_layer_norm" in o.op)
    assert "arg0" not in fused.cold_args and {"arg1", "arg2"} <= set(fused.cold_args), fused.cold_args


def test_a_cold_replay_rotates_its_cold_inputs_as_an_operators_does(compiled_inventory):
    fused = next(o for o in _generated(compiled_inventory) if "native_layer_norm" in o.op)
    footprint = 1 << 20
    warm = _compiled.make_replay(fused.op, fused.overload, fused.args, "cpu", "warm", footprint)
    assert warm["input_sets"] == 1
    # Copies of the cold inputs spanning the footprint, on the CPU too (as torch/replay.cpp does).
    cold = _compiled.make_replay(fused.op, fused.overload, fused.args, "cpu", "cold:arg1", footprint)
    arg1 = _compiled._value(dict(_compiled._ARG.findall(fused.args))["1"], torch.device("cpu"), torch.Generator())
    assert cold["input_sets"] == min(256, max(2, -(-footprint // arg1.untyped_storage().nbytes())))
    cold["call"]()
    with pytest.raises(ValueError, match=r"'arg99' is no argument of this kernel; name them arg0 to arg"):
        _compiled.make_replay(fused.op, fused.overload, fused.args, "cpu", "cold:arg99", footprint)


def test_a_replay_of_a_generated_kernel_reads_zeros_for_indices():
    # Index tensors are zeros: a generated kernel checks its indices on the device.
    t = _compiled._value("i64[6]", torch.device("cpu"), torch.Generator().manual_seed(0))
    assert t.dtype == torch.int64 and int(t.abs().sum()) == 0
    r = _compiled._value("i64[6]:range[3,5]", torch.device("cpu"), torch.Generator().manual_seed(0))
    assert int(r.min()) >= 3 and int(r.max()) < 5
    assert _compiled._value("7", torch.device("cpu"), torch.Generator()) == 7


def test_a_traced_compiled_model_has_its_parent_layers_too():
    # A launch opens every module's scope on its path, as the modules' hooks would: the parent
    # layer `block` holds the fused kernel of block.ln (inclusive figures, matched by compare).
    torch._dynamo.reset()
    t = opcost.trace_model(torch.compile(Net()), torch.randn(4, 16))
    layers = {r["name"] for r in t.key_averages(group_by="layer")}
    assert {"block", "block.ln", "block.fc1", "fc2"} <= layers, layers


def _assert_unwrapped():
    """No generated kernel is left wrapped by a watch (with arguments or by name alone)."""
    from torch._inductor.codecache import PyCodeCache
    for module in PyCodeCache.modules:
        for name, value in vars(module).items():
            if name.startswith("cpp_fused"):
                assert "CompiledKernels" not in getattr(value, "__qualname__", ""), name
                assert "_named_launch" not in getattr(value, "__qualname__", ""), name
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except ImportError:  # no Triton launches to wrap
        return
    assert "CompiledKernels" not in CachingAutotuner.run.__qualname__


def test_inductor_is_left_as_it_was():
    import torch._inductor.config as config
    model = torch.compile(Net())
    x = torch.randn(4, 16)
    opcost.inventory(model, x)
    assert config.post_grad_custom_post_pass is None
    assert config.trace.provenance_tracking_level == 0
    _assert_unwrapped()


def test_records_only_while_watched():
    kernels = _compiled.CompiledKernels(lambda: "")
    kernels.watch(True)
    kernels.watch(True)  # twice on is once on
    kernels.watch(False)
    _assert_unwrapped()


def test_the_host_timing_steps_record_generated_kernels_by_name_alone(monkeypatch):
    # The timing rounds match their calls to the inventory's by name; a launch's arguments written
    # out there would be host time the observer adds to the generated kernels alone, which the
    # prediction's one observer scale then takes off every call (issue 27).
    torch._dynamo.reset()
    model = torch.compile(Net())
    x = torch.randn(4, 16)
    model(x)  # compiled before the watch begins: every kernel is wrapped
    written, opened = [], []
    launch_inputs, open_record = _compiled._launch_inputs, _compiled._core.open_compiled_kernel_record
    monkeypatch.setattr(_compiled, "_launch_inputs", lambda args: written.append(1) or launch_inputs(args))

    def spy(record, args=(), touches=()):
        opened.append((record, list(args)))
        return open_record(record, args, touches)
    monkeypatch.setattr(_compiled._core, "open_compiled_kernel_record", spy)
    kernels = _compiled.CompiledKernels(lambda: "")
    runs = []
    for names_only in (True, False):
        kernels.watch(True, names_only=names_only)
        try:
            model(x)
        finally:
            kernels.watch(False)
        runs.append(list(opened))
        opened.clear()
    named, with_arguments = runs
    assert len(named) == 2 and all(args == [] for _, args in named), named
    assert [r for r, _ in named] == [r for r, _ in with_arguments]  # the same records, in order
    assert all(args for _, args in with_arguments) and len(written) == len(with_arguments)
    # Turned on in the other mode while on, the launches are wrapped again in that one.
    kernels.watch(True, names_only=False)
    kernels.watch(True, names_only=True)
    try:
        model(x)
    finally:
        kernels.watch(False)
    assert len(opened) == 2 and all(args == [] for _, args in opened), opened
    _assert_unwrapped()


def test_a_compiled_models_host_rounds_match_its_recorded_step():
    # A timing round whose calls differ from the inventory's by name is left out: none may be.
    torch._dynamo.reset()
    inv = opcost.inventory(torch.compile(Net()), torch.randn(4, 16))
    calibration = json.loads(inv.to_json())["host_calibration"]
    assert calibration["rounds"] == 8 and calibration["observed_step_us"] > 0, calibration  # module.cpp's 8


def test_a_node_without_a_module_takes_its_users_layer():
    # A weight (a graph input) copied to channels-last, then used by conv1's convolution, and a
    # node the callable's own code made: the copy and the weight are conv1's; nothing else moves.
    import torch.fx as fx

    g = fx.Graph()
    weight = g.placeholder("weight")
    x = g.placeholder("x")
    copied = g.call_function(torch.clone, (weight,), {"memory_format": torch.channels_last})
    conv = g.call_function(torch.conv2d, (x, copied))
    out = g.call_function(torch.relu, (conv,))
    own = g.call_function(torch.neg, (out,))
    unused = g.placeholder("unused")
    g.output(own)
    conv.meta["nn_module_stack"] = {"c": ("L['self'].conv1", object)}
    out.meta["nn_module_stack"] = {"r": ("L['self'].relu", object)}
    own.meta["source_fn_stack"] = [("neg", torch.neg)]
    own_layers, from_users = _compiled._node_layers(g)
    assert own_layers == {conv.name: "conv1", out.name: "relu", own.name: ""}
    assert from_users[copied.name] == "conv1"  # one hop
    assert from_users[weight.name] == "conv1"  # two hops, through the copy
    assert from_users[x.name] == "conv1"
    assert unused.name not in from_users  # no user: no layer, as before


def test_module_paths_from_dynamo_sources():
    assert _compiled._module_path({"a": ("L['self'].layers[0].attn", object)}) == "layers.0.attn"
    assert _compiled._module_path({"a": ("L['self']._modules['block']._modules['ln']", object)}) == "block.ln"
    assert _compiled._module_path({"a": ("L['self'].fc", object), "b": ("L['self'].fc.inner", object)}) == "fc.inner"
    assert _compiled._module_path({}) is None


def test_a_compiled_model_is_predicted_with_its_kernels_measured_alone(tmp_path):
    torch._dynamo.reset()
    model = torch.compile(Net())
    x = torch.randn(4, 16)
    db = str(tmp_path / "ops.db")
    before = opcost.predict(model, x, db=db)
    assert not before.complete
    assert sum(m.startswith("compiled::") for m in before.missing) == 2, before.missing
    val = opcost.validate(model, x, db=db)
    assert val.complete, val.missing
    after = opcost.predict(model, x, db=db)  # from the stored rows alone, as any operator's
    assert after.complete, after.missing
    generated = [o for o in json.loads(after.to_json())["ops"] if o["name"].startswith("compiled::")]
    assert len(generated) == 2 and all(o["time_us"] > 0 and o["missing_calls"] == 0 for o in generated), generated
    # inductor's out= matrix products are listed, measured and looked up as their functional twins
    assert not any(".out " in m for m in before.missing), before.missing


def test_a_generated_kernel_is_not_replayed_outside_its_process():
    with pytest.raises(Exception, match="generated is replayed only while opcost runs its model"):
        opcost.measure("compiled::cpp_fused_relu_0.h000000000000", arg0="f32[4,8]")
