"""Data-dependent and value-constrained operators from Python, on CPU tensors (issue 31, item 3):
boolean-mask indexing and index_put_, nonzero, masked_select, item, unique, topk/sort outputs used
as indices, gather/scatter, embedding with padding_idx, multinomial, and torchvision's nms and
roi_align (registered only once torchvision is imported, so replayed in this process). The
inventory records a mask's density in the signature (`:zeros[f]`, the share of false elements),
and validate replays every signature with valid inputs: nothing is missing or failed."""

from __future__ import annotations

import re

import pytest
import torch

import opcost

torchvision = pytest.importorskip("torchvision")

SHORT = dict(max_time=0.02, step_max_time=0.2, energy=False)


class DataDependent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(50, 8, padding_idx=0)

    def forward(self, x, ids, boxes, scores):
        picked = x[x > 0.9]                       # aten::index with a bool mask, 10% true
        rows = torch.nonzero(x < 0.25)            # 25% true
        upper = torch.masked_select(x, x > 0.5)
        y = x.clone()
        y[x > 0.8] = x[x > 0.8] * 2               # index_put_: as many values as true elements
        total = x.sum().item()
        distinct = torch.unique(ids)
        _, top = x.topk(4, dim=1)
        gathered = x.gather(1, top)               # topk's indices used as indices
        _, order = x.sort(dim=1)
        scattered = torch.zeros_like(x).scatter_(1, order, x)
        embedded = self.emb(ids)                  # padding_idx=0
        samples = torch.multinomial(torch.softmax(x, dim=1), 2)
        keep = torchvision.ops.nms(boxes, scores, 0.5)
        pooled = torchvision.ops.roi_align(x.view(1, 1, 64, 64), [boxes[:8]], (4, 4), 1.0, 2)
        return (picked.sum() + rows.sum() + upper.sum() + y.sum() + total + distinct.sum() + gathered.sum()
                + scattered.sum() + embedded.sum() + samples.sum() + keep.sum() + pooled.sum())


def inputs():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(64, 64, generator=g)
    ids = torch.randint(0, 50, (4, 16), generator=g)
    corner = torch.rand(200, 2, generator=g) * 48
    boxes = torch.cat([corner, corner + 4 + torch.rand(200, 2, generator=g) * 12], dim=1)  # x1 < x2, y1 < y2
    return x, ids, boxes, torch.rand(200, generator=g)


def zeros_of(args: str, arg: str) -> list:
    """The :zeros fractions of the bool tensors of one argument of a signature."""
    m = re.search(rf"(?:^| ){arg}=(\[[^ ]*\]|[^ ]+)", args)
    assert m, (arg, args)
    return [float(f) for f in re.findall(r"bool\[[0-9,]*\]:zeros\[([0-9.e-]+)\]", m.group(1))]


def test_the_inventory_records_what_a_mask_held():
    x, ids, boxes, scores = inputs()
    inv = opcost.inventory(DataDependent().eval(), x, ids, boxes, scores)
    by_op = {}
    for o in inv.ops:
        by_op.setdefault(o.op, []).append(o.args)
    # x[x > 0.9]: 10% of the mask true, as the model's data had it (before: bool[64,64], and the
    # replay drew half of it true).
    densities = [f for args in by_op["aten::index"] for f in zeros_of(args, "indices")]
    assert any(abs(f - 0.9) <= 0.02 for f in densities), by_op["aten::index"]
    assert any(abs(f - 0.8) <= 0.02 for f in densities), by_op["aten::index"]
    assert all(f == round(f, 2) for f in densities)  # 2 digits: signatures stay few
    assert abs(zeros_of(by_op["aten::nonzero"][0], "self")[0] - 0.75) <= 0.02, by_op["aten::nonzero"]
    assert abs(zeros_of(by_op["aten::masked_select"][0], "mask")[0] - 0.5) <= 0.03, by_op["aten::masked_select"]
    put = by_op["aten::index_put_"][0]
    assert abs(zeros_of(put, "indices")[0] - 0.8) <= 0.02 and re.search(r"values=f32\[[0-9]+\]", put), put
    assert any(":range[" in a for a in by_op["aten::_unique2"]), by_op["aten::_unique2"]  # its distinct values
    # Float tensors whose values do not matter keep their dtype and shape only.
    assert all(":zeros" not in a for a in by_op["aten::softmax"]), by_op["aten::softmax"]
    assert "torchvision::nms" in by_op and "torchvision::roi_align" in by_op
    # nms: how many boxes the model's call kept, on its boxes, so that the replay keeps as many.
    kept = len(torchvision.ops.nms(boxes, scores, 0.5))
    assert f"dets=f32[200,4]:distinct[{kept}]" in by_op["torchvision::nms"][0], (kept, by_op["torchvision::nms"])


def test_every_data_dependent_signature_replays(tmp_path):
    """validate measures every signature in this process (torchvision's ops included): before,
    multinomial's random-normal weights and index_put_'s half-true mask (139 true elements for 26
    values) were rejected by the op, and the calls went missing."""
    x, ids, boxes, scores = inputs()
    val = opcost.validate(DataDependent().eval(), x, ids, boxes, scores, db=tmp_path / "ops.db", **SHORT)
    assert val.failures == 0, [(m.signature, m.error) for m in val.failed_calls]
    assert val.complete and not val.missing, val.missing
    names = {row["name"].split(" ")[0] for row in val.to_dict()["ops"]}
    assert {"aten::multinomial", "aten::index_put_", "torchvision::nms", "torchvision::roi_align",
            "aten::nonzero", "aten::item"} <= names, names


@pytest.mark.parametrize("op,args", [
    ("aten::multinomial", ["f32[16,16]", "2"]),
    ("aten::index_put_", ["self=f32[16,16]", "indices=[bool[16,16]:zeros[0.9]]", "values=f32[26]"]),
    ("aten::embedding", ["weight=f32[50,8]", "indices=i64[4,8]", "padding_idx=0"]),
    ("torchvision::nms", ["dets=f32[500,4]", "scores=f32[500]", "iou_threshold=0.7"]),
    ("torchvision::roi_align", ["input=f32[2,8,16,16]", "rois=f32[64,5]", "spatial_scale=0.25", "pooled_height=7",
                                "pooled_width=7", "sampling_ratio=0", "aligned=true"]),
    ("aten::scatter_", ["self=f32[4,4]", "dim=1", "index=i64[4,4]", "src=f32[4,4]"]),
])
def test_value_constrained_ops_replay_alone(op, args):
    m = opcost.measure(op, *args, device="cpu", store=False, energy=False, max_time=0.01)
    assert m.time_us > 0
