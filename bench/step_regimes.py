#!/usr/bin/env python3
"""Where a model step's energy goes between its kernels and its regime (issue 25).

`opcost validate` predicts a step's energy from each operator's energy in a loop of its own
(back to back, the GPU busy) plus the gaps between kernels at the gap power. Where a step is
host-bound the GPU runs its kernels in bursts between idle gaps, and the prediction can miss
(resnet18's SGD training step at batch 32: +24% on the H100). This script measures the same
step, by NVML's energy counter and CUDA events alone (no opcost code), in three regimes:

  eager      the step as a user runs it (the host issues each kernel; the GPU waits for it);
  graph      the step captured once in a CUDA graph and replayed back to back (no host gaps:
             the regime of an operator's own loop);
  graph+gap  the graph replayed with a GPU sleep kernel after each replay, sized so that the
             step lasts as long as the eager one (its gaps, in one piece, without its host);
  graph+idle the same with the GPU idle in the gap (the host waits, then sleeps).

Energy per step, the GPU's busy time per step (CUDA events around each graph replay) and the
average power, each over several counter windows. If `graph` draws what opcost's loops
predict and `eager` what validate measured, the miss is the regime, not the replay.

    python3 bench/step_regimes.py resnet18-b32-train [--seconds 4] > OUT.json
"""
import argparse
import json
import sys
import time


def parse_case(case: str):
    """ARCH-bBATCH-MODE: the torchvision architecture, the batch and train or infer."""
    parts = case.split("-")
    if len(parts) != 3 or not parts[1].startswith("b") or not parts[1][1:].isdigit() or parts[2] not in ("train",
                                                                                                       "infer"):
        raise SystemExit(f"step_regimes.py: case {case!r}: use ARCH-bBATCH-train or ARCH-bBATCH-infer, "
                         "e.g. resnet18-b32-train (the loss is --loss)")
    return parts[0], int(parts[1][1:]), parts[2]


def build(case: str, loss: str = "sum", lr: float = 1e-3):
    import torch
    import torchvision
    arch, batch, mode = parse_case(case)
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(weights=None).cuda()
    x = torch.randn(batch, 3, 224, 224, device="cuda")
    labels = torch.randint(0, 1000, (batch,), device="cuda")
    if mode != "train":
        model.eval()

        def step(captured=False):
            with torch.no_grad():
                model(x)
        return step, None
    model.train()
    # lr 1e-3 (the committed runs'): the weights drift from regime to regime (with the sum's
    # loss, the head's bias by ~0.3 a step); lr 0 runs the same kernels on fixed weights.
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)

    def step(captured=False):  # as opcost's training step: sum of the output as the loss
        out = model(x)
        # "sum": opcost's default loss. Its gradient is the same for every sample, and a linear
        # head then sends the same values back through the network (few distinct operands).
        # "ce": cross entropy against random labels, a gradient that differs from sample to sample.
        (out.sum() if loss == "sum" else torch.nn.functional.cross_entropy(out, labels)).backward()
        opt.step()
        # A captured step keeps its grads' memory (the graph owns it): zeroed, not freed.
        opt.zero_grad(set_to_none=not captured)
    return step, opt


class Counter:
    """NVML's total energy (mJ) on the current device, read around whole loops."""

    def __init__(self):
        import pynvml
        pynvml.nvmlInit()
        import torch
        self.nvml = pynvml
        self.h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def mJ(self) -> float:
        return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.h))

    def state(self):
        n = self.nvml
        return dict(sm_MHz=n.nvmlDeviceGetClockInfo(self.h, n.NVML_CLOCK_SM),
                    temp_C=n.nvmlDeviceGetTemperature(self.h, n.NVML_TEMPERATURE_GPU),
                    throttle=int(n.nvmlDeviceGetCurrentClocksThrottleReasons(self.h)))


def edge(counter: Counter) -> float:
    """Waits for the counter's next update; returns its value (the loop starts on an edge)."""
    v0 = counter.mJ()
    while True:
        v = counter.mJ()
        if v != v0:
            return v


def loop(counter: Counter, seconds: float, body):
    """Runs `body` until `seconds` have passed after a counter edge, ends on another edge; energy
    per iteration over the whole span (edges: no partial windows)."""
    import torch
    for _ in range(3):
        body()
    torch.cuda.synchronize()
    e0 = edge(counter)
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds:
        body()
        n += 1
    torch.cuda.synchronize()
    e1 = edge(counter)
    t1 = time.perf_counter()
    # The wait for the last edge (the GPU idle, synchronised) is inside both the energy and the
    # span: up to one counter period at idle power over seconds of looping, ≤ ~1% high in every
    # regime alike.
    out = dict(iterations=n, seconds=t1 - t0, energy_mJ_per_iteration=(e1 - e0) / n,
               power_W=(e1 - e0) / 1e3 / (t1 - t0), state_after=counter.state())
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", help="torchvision arch-bBATCH-train|infer, e.g. resnet18-b32-train")
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--lr", type=float, default=1e-3,
                    help="SGD's learning rate (0: the weights stay as built)")
    ap.add_argument("--loss", choices=["sum", "ce"], default="sum",
                    help="a training step's loss: the output's sum (opcost's default) or cross entropy")
    args = ap.parse_args()
    import torch
    step, _ = build(args.case, args.loss, args.lr)
    counter = Counter()
    result = {"case": args.case, "loss": args.loss, "lr": args.lr, "device": torch.cuda.get_device_name(),
              "torch": torch.__version__}

    # The eager step: time per step by wall clock, GPU busy from a profiler-free estimate below.
    for _ in range(5):
        step()
    torch.cuda.synchronize()
    result["eager"] = loop(counter, args.seconds, step)
    result["eager"]["step_us"] = 1e6 * result["eager"]["seconds"] / result["eager"]["iterations"]

    # The graph of the step (warm-up on a side stream, as torch.cuda.graph requires).
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step(captured=True)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            step(captured=True)
    except Exception as e:  # the eager figures stand; say why there is no graph
        result["graph_error"] = f"{type(e).__name__}: {e}"[:500]
        json.dump(result, sys.stdout, indent=1)
        print()
        return 1
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    busy = []
    for _ in range(20):
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        busy.append(a.elapsed_time(b) * 1e3)
    busy_us = sorted(busy)[len(busy) // 2]
    result["graph_busy_us_per_step"] = busy_us
    result["graph"] = loop(counter, args.seconds, g.replay)
    result["graph"]["step_us"] = 1e6 * result["graph"]["seconds"] / result["graph"]["iterations"]

    # Replays with a GPU sleep after each: the eager step's length, the graph's busy time.
    gap_us = max(0.0, result["eager"]["step_us"] - busy_us)
    # torch.cuda._sleep spins for cycles: its rate measured here, as the clock runs.
    a.record()
    torch.cuda._sleep(20_000_000)
    b.record()
    b.synchronize()
    cycles_per_us = 20_000_000 / (a.elapsed_time(b) * 1e3)

    def replay_with_gap():
        g.replay()
        torch.cuda._sleep(int(gap_us * cycles_per_us))
    result["gap_us_per_step"] = gap_us
    result["graph+gap"] = loop(counter, args.seconds, replay_with_gap)
    result["graph+gap"]["step_us"] = 1e6 * result["graph+gap"]["seconds"] / result["graph+gap"]["iterations"]

    # The same with the GPU idle in the gap (the host waits, then sleeps): one long gap a step.
    def replay_then_idle():
        g.replay()
        b.record()
        b.synchronize()
        time.sleep(gap_us * 1e-6)
    result["graph+idle"] = loop(counter, args.seconds, replay_then_idle)
    result["graph+idle"]["step_us"] = 1e6 * result["graph+idle"]["seconds"] / result["graph+idle"]["iterations"]
    # The power between kernels as opcost's gap probe reads it (a launch-bound add of f32[1]), and
    # the sleep kernel's own.
    tiny = torch.zeros(1, device="cuda")
    result["gap_probe"] = loop(counter, 1.5, lambda: torch.add(tiny, tiny))
    result["sleep"] = loop(counter, 1.5, lambda: torch.cuda._sleep(int(1000 * cycles_per_us)))
    # The eager step less its gaps charged at the gap probe's power: what its kernels drew, to set
    # beside the graph's energy per step (its kernels back to back) and opcost's operator sum.
    gap_W = result["gap_probe"]["power_W"]
    eager = result["eager"]
    result["eager_kernels_mJ"] = eager["energy_mJ_per_iteration"] - gap_W * gap_us * 1e-3
    result["graph_kernels_mJ"] = result["graph"]["energy_mJ_per_iteration"]
    # A training step's forward alone (train mode, the loss, no backward), captured and replayed
    # back to back: its kernels' energy apart from the backward's and the optimizer's.
    if args.case.endswith("-train"):
        fwd = forward_of(args.case)
        with torch.cuda.stream(s):
            for _ in range(3):
                fwd()
        torch.cuda.current_stream().wait_stream(s)
        gf = torch.cuda.CUDAGraph()
        with torch.cuda.graph(gf):
            fwd()
        result["forward_graph"] = loop(counter, args.seconds / 2, gf.replay)
        result["forward_graph"]["step_us"] = (1e6 * result["forward_graph"]["seconds"] /
                                              result["forward_graph"]["iterations"])
    json.dump(result, sys.stdout, indent=1)
    print()
    return 0


def forward_of(case: str):
    import torch
    import torchvision
    arch, batch, _ = parse_case(case)
    torch.manual_seed(0)
    model = getattr(torchvision.models, arch)(weights=None).cuda().train()
    x = torch.randn(batch, 3, 224, 224, device="cuda")

    def fwd():
        with torch.no_grad():  # train mode (batch statistics), no graph kept for a backward
            model(x).sum()
    return fwd


if __name__ == "__main__":
    sys.exit(main())
