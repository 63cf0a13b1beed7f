#!/usr/bin/env python3
"""Issue 27: opcost.compare of a model's variants on a GPU (random weights), the step and per
layer in time and energy.

    CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONPATH=build/python python3 bench/compare_variants_gpu.py CASE OUT_DIR

CASE: resnet18-compile (torchvision resnet18 b32 fp32 against torch.compile; writes
OUT_DIR/compare-resnet18-b32.txt and .json) or bert-int8 (transformers BERT-base 16×128, fp32
against bf16 and int8; writes OUT_DIR/compare-bert-int8.txt and .json).
"""
import json
import sys
from typing import Any, Callable, Dict, Tuple

import torch

import opcost


def _resnet18() -> Tuple[Any, Any]:
    import torchvision
    return torchvision.models.resnet18(weights=None).cuda().eval(), torch.randn(32, 3, 224, 224, device="cuda")


def _bert() -> Tuple[Any, Any]:
    import transformers
    model = transformers.BertModel(transformers.BertConfig()).cuda().eval()
    return model, torch.randint(0, model.config.vocab_size, (16, 128), device="cuda")


# case -> (model and input, variants, output file stem)
CASES: Dict[str, Tuple[Callable[[], Tuple[Any, Any]], Tuple[str, ...], str]] = {
    "resnet18-compile": (_resnet18, ("fp32", "compile"), "compare-resnet18-b32"),
    "bert-int8": (_bert, ("fp32", "bf16", "int8"), "compare-bert-int8"),
}


def main(case: str, out: str) -> None:
    build, variants, stem = CASES[case]
    torch.manual_seed(0)
    model, x = build()
    r = opcost.compare(model, x, variants=variants)
    with open(f"{out}/{stem}.txt", "w") as f:
        f.write(r.table() + "\n\n" + r.table(by="layer"))
    with open(f"{out}/{stem}.json", "w") as f:
        f.write(json.dumps(r.json, indent=1))
    print(r.table())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in CASES:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(CASES)}}} OUT_DIR")
    main(sys.argv[1], sys.argv[2])
