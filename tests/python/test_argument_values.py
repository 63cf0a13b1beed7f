"""Every argument value a model passes reaches the replay as itself (issue 31, item 2): strings with
commas (einsum's equation), Scalar lists (a foreach optimizer's per-parameter step sizes), complex
scalars, lists with None inside. Each model here failed as a whole before, at the first such call.
On CPU tensors with the shortest budgets: the figures are not checked, only that every unique call
was replayed, measured and found by the prediction."""

from __future__ import annotations

import pytest
import torch

import opcost
from opcost import _core, _specs

SHORT = dict(max_time=0.02, step_max_time=0.2, energy=False)


class EinsumNet(torch.nn.Module):
    """einsum with a comma, an arrow and (second call) spaces in its equation."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16, 8))
        self.v = torch.nn.Parameter(torch.randn(8, 8))

    def forward(self, x):
        h = torch.einsum("bd,de->be", x, self.w).relu()
        return torch.einsum("b e, e f -> b f", h, self.v)


class ComplexNet(torch.nn.Module):
    """A complex Scalar argument (alpha: Python wraps a plain operand into a 0-d tensor); an index
    list with None before a tensor (aten::index.Tensor indices=[None,i64[3]])."""

    def forward(self, x):
        z = torch.view_as_complex(x)
        z = torch.add(z, z, alpha=1.5 - 2j)
        return torch.view_as_real(z)[:, torch.tensor([0, 2, 5])]


def assert_every_call_replayed(p: opcost.Prediction):
    assert p.complete, p.missing
    assert p.failures == 0


def test_einsum_equations_round_trip_and_validate(tmp_path):
    model, x = EinsumNet(), torch.randn(4, 16)
    inventory = opcost.inventory(model, x)
    equations = [e.args for e in inventory.ops if e.op == "aten::einsum"]
    assert equations == ['equation="bd,de->be" tensors=[f32[4,16],f32[16,8]]',
                         'equation="b e, e f -> b f" tensors=[f32[4,8],f32[8,8]]'], equations
    for e in inventory.ops:
        back = _core.signature_round_trip(e.op + (f".{e.overload}" if e.overload else ""), e.args)
        assert back["ok"], (e.signature, back)
    assert_every_call_replayed(opcost.validate(model, x, db=tmp_path / "ops.db", **SHORT))


@pytest.mark.parametrize("optimizer", ["SGD", "AdamW"])
def test_a_foreach_optimizer_step_validates(tmp_path, optimizer):
    # foreach=True: the per-parameter step sizes travel as Scalar lists (_foreach_addcdiv_.ScalarList),
    # which an H100 run of BERT with AdamW could not replay.
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    opt = getattr(torch.optim, optimizer)(model.parameters(), lr=1e-3, foreach=True,
                                          **({"momentum": 0.9} if optimizer == "SGD" else {}))
    x = torch.randn(8, 16)
    inventory = opcost.inventory(model, x, train=True, optimizer=opt)
    foreach = [e for e in inventory.ops if e.op.startswith("aten::_foreach_")]
    assert foreach, [e.signature for e in inventory.ops]
    if optimizer == "AdamW":
        assert any(e.overload == "ScalarList" for e in foreach), [e.signature for e in foreach]
    for e in inventory.ops:
        back = _core.signature_round_trip(e.op + (f".{e.overload}" if e.overload else ""), e.args)
        assert back["ok"], (e.signature, back)
    assert_every_call_replayed(opcost.validate(model, x, db=tmp_path / "ops.db", train=True, optimizer=opt, **SHORT))


def test_complex_scalars_and_none_in_index_lists_validate(tmp_path):
    model, x = ComplexNet(), torch.randn(4, 6, 2)
    inventory = opcost.inventory(model, x)
    signatures = [e.signature for e in inventory.ops]
    assert any("alpha=1.5-2.0j" in s for s in signatures), signatures
    assert any(s.startswith("aten::index.Tensor") and "indices=[None,i64[3]" in s for s in signatures), signatures
    assert_every_call_replayed(opcost.validate(model, x, db=tmp_path / "ops.db", **SHORT))


class SelfAttention(torch.nn.Module):
    """nn.MultiheadAttention's inference fast path: one tensor as query, key and value."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x):
        return self.attn(x, x, x, need_weights=False)[0]


def test_one_tensor_given_as_several_arguments_replays_as_one(tmp_path):
    """aten::_native_multi_head_attention fuses its projections only when query, key and value are
    one tensor: replayed as three tensors, ViT-B/16's attention ran 3.5x the model's GPU time on
    the H100 (another path, other kernels) and its energy read +18%."""
    model, x = SelfAttention().eval(), torch.randn(2, 10, 32)
    with torch.inference_mode():
        inv = opcost.inventory(model, x)
        val = opcost.validate(model, x, db=tmp_path / "ops.db", **SHORT)
    mha = [o.args for o in inv.ops if o.op == "aten::_native_multi_head_attention"]
    assert len(mha) == 1, [o.op for o in inv.ops]
    assert "key=f32[2,10,32]:same[query] value=f32[2,10,32]:same[query]" in mha[0], mha
    assert_every_call_replayed(val)
    assert _core.signature_round_trip("aten::_native_multi_head_attention", mha[0])["ok"]


@pytest.mark.parametrize("name,args", [
    ("aten::einsum", 'equation="i,j->ij" tensors=[f32[2],f32[3]]'),
    ("aten::_foreach_div_.ScalarList", "self=[f32[3],f32[4]] scalars=[2.0,-0.5]"),
    ("aten::mul.Scalar", "self=c64[4] other=1.5-2.0j"),
    ("aten::index.Tensor", "self=f32[4,5] indices=[None,i64[3]]"),
])
def test_signature_round_trip_binding(name, args):
    assert _core.signature_round_trip(name, args) == {"ok": True, "canonical": args, "error": ""}


def test_signature_round_trip_says_why_not():
    bad = _core.signature_round_trip("aten::einsum", "equation=bd,de->be tensors=[f32[2,3],f32[3,4]]")
    assert not bad["ok"] and "in quotes" in bad["error"], bad
    reordered = _core.signature_round_trip("aten::relu", "self=f32[4] ")
    assert not reordered["ok"] and reordered["canonical"] == "self=f32[4]", reordered


def test_python_values_in_the_language():
    assert _specs.spec_of(1.5 - 2j) == "1.5-2.0j"
    assert _specs.spec_of(complex(0.0, -0.0)) == "0.0-0.0j"
    assert _specs.spec_of(torch.channels_last) == "channels_last"
    assert _specs.spec_of(torch.device("cpu")) == "cpu"
    assert _specs.spec_of(torch.strided) == "strided"
    m = opcost.measure("aten::mul.Scalar", "c64[8]", 1.5 - 2j, device="cpu", store=False, max_time=0.02,
                       energy=False)
    assert m.args == "self=c64[8] other=1.5-2.0j", m.args
