"""torch.profiler's cost on the models of the observer-overhead benchmark (issue 3), from
Python as users run it: wall time of one synchronised forward, plain and inside
torch.profiler.profile(record_shapes=True) (CPU activity, and CPU+CUDA), the profiler's
enter/exit and event collection included. The same architectures as opcost's built-in
resnet50 and distilgpt2, with random weights. Prints JSON.

    python3 bench/profiler_overhead.py resnet50 32 0 [REPEATS]
    python3 bench/profiler_overhead.py distilgpt2 1 128 [REPEATS]
"""
import json
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Bottleneck(nn.Module):
    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inplanes != planes * 4:
            self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                            nn.BatchNorm2d(planes * 4))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet50(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], 64
        for i, n in enumerate([3, 4, 6, 3]):
            planes = 64 << i
            blocks = []
            for b in range(n):
                blocks.append(Bottleneck(inplanes, planes, 2 if b == 0 and i > 0 else 1))
                inplanes = planes * 4
            layers.append(nn.Sequential(*blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, 1000)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


class GptBlock(nn.Module):
    def __init__(self, d=768, heads=12):
        super().__init__()
        self.heads = heads
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.attn_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.c_fc, self.mlp_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, 2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class DistilGpt2(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(50257, 768), nn.Embedding(1024, 768)
        self.h = nn.ModuleList(GptBlock() for _ in range(6))
        self.ln_f = nn.LayerNorm(768)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for b in self.h:
            x = b(x)
        return F.linear(self.ln_f(x), self.wte.weight)


def main():
    name, batch, seq = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 30
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    if name == "resnet50":
        model, x = ResNet50(), torch.randn(batch, 3, 224, 224)
    else:
        model, x = DistilGpt2(), torch.randint(0, 50257, (batch, seq))
    model, x = model.to(dev).eval(), x.to(dev)
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    P = torch.profiler.ProfilerActivity
    modes = {"plain": None, "profiler_cpu": [P.CPU]}
    if dev == "cuda":
        modes["profiler_cpu_cuda"] = [P.CPU, P.CUDA]

    def step(acts):
        t0 = time.perf_counter()
        if acts is None:
            model(x)
            sync()
        else:
            with torch.profiler.profile(activities=acts, record_shapes=True) as p:
                model(x)
                sync()
            p.events()  # the event list users read (key_averages, tables) is built here
        return 1e3 * (time.perf_counter() - t0)

    with torch.inference_mode():
        for _ in range(10):
            model(x)
        sync()
        for acts in modes.values():
            step(acts)  # one-time profiler initialisation stays out of the figures
        times = {m: [] for m in modes}
        for _ in range(repeats):
            for m, acts in modes.items():
                times[m].append(step(acts))
    plain = statistics.median(times["plain"])
    out = {"model": name, "batch": batch, "seq": seq, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
           "torch": torch.__version__, "repeats": repeats, "modes": {}}
    for m, v in times.items():
        med = statistics.median(v)
        out["modes"][m] = {"median_ms": med, "min_ms": min(v), "overhead_vs_plain": med / plain - 1}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
