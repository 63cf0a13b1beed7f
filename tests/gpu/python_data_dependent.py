"""GPU check of data-dependent operators (issue 31, item 3): ops that synchronise (item, nonzero,
masked_select, boolean-mask index, unique) replay on CUDA without hanging, are measured as calls
that wait for the device (timed by wall clock, so the prediction's timeline makes the host wait
for the GPU before them), and a model using them is validated complete. Run from the repository
root after a build with the Python package:
    PYTHONPATH=build/python python3 tests/gpu/python_data_dependent.py
Prints one line per case (with the time errors, which are reported, not asserted) and
"N passed, M failed". A hang ends the process after 10 minutes with every thread's stack."""
import faulthandler

import torch
import opcost

faulthandler.dump_traceback_later(600, exit=True)
from gpu_cases import case, finish  # beside this file
WAITS = "the op waits for the device"


def synchronising_ops_wait():
    for op, args in [("aten::item", ["self=f32[]"]), ("aten::_local_scalar_dense", ["self=f32[]"]),
                     ("aten::nonzero", ["self=bool[1048576]:zeros[0.9]"]),
                     ("aten::masked_select", ["self=f32[1048576]", "mask=bool[1048576]:zeros[0.9]"]),
                     ("aten::index", ["self=f32[1024,1024]", "indices=[bool[1024,1024]:zeros[0.9]]"]),
                     ("aten::_unique2", ["self=i64[1048576]:range[0,1000]"])]:
        m = opcost.measure(op, *args, device="cuda", store=False, energy=False, max_time=0.2)
        method = m.to_dict()["method"]
        print(f"  {op}: {m.time_us:.1f} us, {method}")
        assert WAITS in method, (op, method)
    # Values that never synchronise are not taken for a wait.
    m = opcost.measure("aten::masked_fill.Scalar", "self=f32[1048576]", "mask=bool[1048576]:zeros[0.9]", "value=0.0",
                       device="cuda", store=False, energy=False, max_time=0.2)
    assert WAITS not in m.to_dict()["method"], m.to_dict()["method"]


class Detector(torch.nn.Module):
    """GPU work, then a mask, an item and nms: the host waits for the GPU three times a step."""

    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)])

    def forward(self, x, boxes, scores):
        import torchvision
        h = self.body(x)
        picked = h[h > 0.5]
        scale = h.abs().mean().item()
        keep = torchvision.ops.nms(boxes * scale, scores, 0.7)
        return picked.sum() + keep.numel()


def model_with_waits():
    x = torch.randn(512, 1024, device="cuda")
    corner = torch.rand(2000, 2, device="cuda") * 800
    boxes = torch.cat([corner, corner + 16 + torch.rand(2000, 2, device="cuda") * 128], dim=1)
    pred = opcost.validate(Detector().cuda().eval(), x, boxes, torch.rand(2000, device="cuda"),
                           db="/tmp/gpu-data-dependent.db", max_time=0.2, energy=False)
    assert not pred.failures, [(m.signature, m.error) for m in pred.failed_calls]
    assert pred.complete, pred.missing
    names = {r["name"].split(" ")[0].split(".")[0] for r in pred.to_dict()["ops"]}  # without the overload
    assert {"aten::index", "aten::item", "torchvision::nms"} <= names, names
    print(f"  predicted {pred.time_us:.0f} us, measured {pred.measured_time_us:.0f} us, time error {pred.time_error}, "
          f"paired {pred.paired_time_error}")


case("synchronising ops replay on CUDA and are measured as waiting for the device", synchronising_ops_wait)
case("a model with a mask, an item and nms on CUDA is validated complete", model_with_waits)
finish()
