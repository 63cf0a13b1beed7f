#!/usr/bin/env python3
"""Issue 27: opcost.compare of torchvision resnet18 (b32, fp32, random weights) against its
torch.compile variant on a GPU, time and energy per step and per layer.

    CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONPATH=build/python python3 bench/compare_compiled_resnet18.py OUT_DIR

Writes OUT_DIR/compare-resnet18-b32.txt (the step and per-layer tables) and .json.
"""
import json
import sys

import torch
import torchvision

import opcost


def main(out: str) -> None:
    torch.manual_seed(0)
    model = torchvision.models.resnet18(weights=None).cuda().eval()
    x = torch.randn(32, 3, 224, 224, device="cuda")
    r = opcost.compare(model, x, variants=("fp32", "compile"))
    with open(f"{out}/compare-resnet18-b32.txt", "w") as f:
        f.write(r.table() + "\n\n" + r.table(by="layer"))
    with open(f"{out}/compare-resnet18-b32.json", "w") as f:
        f.write(json.dumps(r.json, indent=1))
    print(r.table())


if __name__ == "__main__":
    main(sys.argv[1])
