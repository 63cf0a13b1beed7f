"""GPU check of training steps from Python (issue 31): validate a transformers masked LM under
bf16 autocast with AdamW and a torchvision resnet18 with SGD on CUDA; each must be complete and
hold backward ops. Run from the repository root after a build with the Python package:
    PYTHONPATH=build/python python3 tests/gpu/python_training.py
Prints one line per case and "N passed, M failed"."""

import torch
import opcost

from gpu_cases import case, finish  # beside this file


def check(pred):
    assert pred.measured_time_us, "no measured step"
    assert not pred.failures, pred.failures
    names = [r["name"] for r in pred._doc["ops"]]
    assert any("backward" in n for n in names), "no backward op in the prediction"
    print(f"  complete={pred.complete}, missing {len(pred.missing)}, time error {pred.time_error}, "
          f"paired {pred.paired_time_error}, energy {pred.energy_mJ} mJ")


def bert():
    from transformers import BertConfig, BertForMaskedLM
    cfg = BertConfig(num_hidden_layers=2, hidden_size=256, num_attention_heads=4, intermediate_size=1024)
    model = BertForMaskedLM(cfg).cuda()
    ids = torch.randint(0, cfg.vocab_size, (8, 64), device="cuda")
    opt = torch.optim.AdamW(model.parameters())
    check(opcost.validate(model, input_ids=ids, labels=ids, train=True, optimizer=opt, autocast="bf16",
                          db="/tmp/gpu-train.db", max_time=0.2))


def resnet():
    import torchvision
    model = torchvision.models.resnet18().cuda()
    x = torch.randn(16, 3, 224, 224, device="cuda")
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    check(opcost.validate(model, x, train=True, optimizer=opt, db="/tmp/gpu-train.db", max_time=0.2))


case("BertForMaskedLM 8x64 train, AdamW, bf16 autocast", bert)
case("resnet18 b16 train, SGD", resnet)
finish()
