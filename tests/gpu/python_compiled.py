"""GPU check of compiled models (issue 27): a torch.compile'd MLP block validates complete with
its generated kernels; the same block compiled with mode="reduce-overhead" (CUDA graphs replay
its kernels outside any operator call) is refused as incomplete, saying how much of the traced
step's GPU time no call launched. Run from the repository root after a build with the Python
package:
    PYTHONPATH=build/python python3 tests/gpu/python_compiled.py
Prints one line per case and "N passed, M failed"."""

import torch
import opcost

from gpu_cases import case, finish  # beside this file


def block():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.LayerNorm(4096),
                                torch.nn.Linear(4096, 1024)).cuda().eval()
    return model, torch.randn(64, 1024, device="cuda")


def default_mode():
    model, x = block()
    p = opcost.validate(torch.compile(model), x, db="/tmp/gpu-compiled.db", max_time=0.2)
    d = p.to_dict()
    assert p.complete, p.table()
    assert any(o["name"].startswith("compiled::") for o in d["ops"]), "no generated kernel in the prediction"
    assert d["untied_device_us"] <= 0.01 * d["traced_device_us"], (d["untied_device_us"], d["traced_device_us"])
    print(f"  traced {d['traced_device_us']:.1f} us, untied {d['untied_device_us']:.1f} us")


def reduce_overhead():
    model, x = block()
    p = opcost.validate(torch.compile(model, mode="reduce-overhead"), x, db="/tmp/gpu-compiled.db", max_time=0.2)
    d = p.to_dict()
    assert not p.complete, p.table()
    assert d["untied_device_us"] > 0.5 * d["traced_device_us"] > 0, (d["untied_device_us"], d["traced_device_us"])
    assert "ran in kernels no operator call launched" in p.table(), p.table()
    print(f"  traced {d['traced_device_us']:.1f} us, untied {d['untied_device_us']:.1f} us: incomplete, as it must")


case("torch.compile'd MLP block: complete, its kernels tied to calls", default_mode)
case("the same with mode='reduce-overhead': refused as incomplete, with the untied share", reduce_overhead)
finish()
