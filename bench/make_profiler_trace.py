#!/usr/bin/env python3
"""A torch.profiler Chrome trace of torchvision resnet50 on the GPU, as a user records one to
read layers from an eager model (record_shapes, with_stack, with_modules): the seed of the
trace-import benchmark (bench/trace_import_bench.py), which repeats its steps to any size.

    python3 bench/make_profiler_trace.py OUT.json.gz [--steps 10] [--batch 32]
"""
import argparse
import gzip
import os
import shutil
import tempfile

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile, schedule


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--batch", type=int, default=32)
    a = p.parse_args()
    model = torchvision.models.resnet50().cuda().eval()
    x = torch.randn(a.batch, 3, 224, 224, device="cuda")
    with torch.inference_mode():
        model(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True, with_stack=True,
                 with_modules=True, schedule=schedule(wait=1, warmup=1, active=a.steps)) as prof:
        for _ in range(a.steps + 2):
            with torch.inference_mode():
                model(x)
            torch.cuda.synchronize()
            prof.step()
    with tempfile.TemporaryDirectory() as d:
        plain = os.path.join(d, "trace.json")
        prof.export_chrome_trace(plain)
        with open(plain, "rb") as f, gzip.open(a.out, "wb", compresslevel=6) as g:
            shutil.copyfileobj(f, g)
        print(f"{a.out}: {os.path.getsize(plain) / 1e6:.1f} MB of JSON, {os.path.getsize(a.out) / 1e6:.1f} MB gzip, "
              f"{a.steps} steps of resnet50 b{a.batch}; torch {torch.__version__} on {torch.cuda.get_device_name()}")


if __name__ == "__main__":
    main()
