#!/usr/bin/env python3
"""Issue 27: the int8 variant on a GPU (nn.Linear layers through torch._int_mm), compared with
fp32 and bf16 on transformers BERT-base (random weights, batch 16, sequence 128).

    CUDA_DEVICE_ORDER=PCI_BUS_ID PYTHONPATH=build/python python3 bench/compare_int8_gpu.py OUT_DIR

Writes OUT_DIR/compare-bert-int8.txt (step and per-layer tables) and .json.
"""
import json
import sys

import torch
import transformers

import opcost


def main(out: str) -> None:
    torch.manual_seed(0)
    model = transformers.BertModel(transformers.BertConfig()).cuda().eval()
    ids = torch.randint(0, model.config.vocab_size, (16, 128), device="cuda")
    r = opcost.compare(model, ids, variants=("fp32", "bf16", "int8"))
    with open(f"{out}/compare-bert-int8.txt", "w") as f:
        f.write(r.table() + "\n\n" + r.table(by="layer"))
    with open(f"{out}/compare-bert-int8.json", "w") as f:
        f.write(json.dumps(r.json, indent=1))
    print(r.table())


if __name__ == "__main__":
    main(sys.argv[1])
