#!/usr/bin/env python3
"""Benchmarks of the Python package on the models users run (issue 10), on a GPU.

    PYTHONPATH=build/python python3 bench/python_bench.py overhead OUT.json
    PYTHONPATH=build/python python3 bench/python_bench.py validate OUT.json CASE... [--db DB]

overhead: the step of torchvision resnet50 b32 and transformers GPT-2 (6 layers) b1x128, plain,
under opcost's observer as an inventory runs it (the timing steps, whose host times feed the
prediction, and the one signature step, with module hooks and inputs), and under
torch.profiler with record_shapes, with_stack and with_modules (what it needs to name eager
modules). Medians of synchronised steps, each timed alone, the modes interleaved in rounds so
host drift hits all alike.

validate: opcost.validate of each CASE (resnet18/34/50-bN or gpt2-BxS, each -fp32 or -bf16), with
the budgets of `opcost model` (0.5 s timing, 1 s energy per operator).

monitor: does NVML polling slow a host-bound Python step (issue 11, must-have 2)? The issue's
experiment (torchvision resnet34 b8 bf16; the energy counter polled every 0.5 ms from a thread
of the same process, or from another process), with each polling phase between two baselines:
cycles of none / thread / none / process / none, 1 s each, for SECONDS; per cycle, each polling
phase's median step against the mean of its neighbours'.

    PYTHONPATH=build/python python3 bench/python_bench.py monitor OUT.json [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import torch

import opcost
from opcost import _core
from opcost._api import _LayerNames


def build(case: str):
    name, _, dtype_name = case.rpartition("-")
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    if name.startswith("resnet"):
        import torchvision
        arch, batch = name.split("-b")
        model = getattr(torchvision.models, arch)().cuda().eval().to(dtype)
        batch = int(batch)
        inputs = (torch.randn(batch, 3, 224, 224, device="cuda", dtype=dtype),)
    else:
        import transformers
        batch, seq = (int(v) for v in name.split("-")[1].split("x"))
        config = transformers.GPT2Config(n_layer=6, n_embd=768, n_head=12)
        model = transformers.GPT2LMHeadModel(config).cuda().eval().to(dtype)
        inputs = (torch.randint(0, config.vocab_size, (batch, seq), device="cuda"),)
    return model, inputs


def step_of(model, inputs):
    def step():
        with torch.inference_mode():
            model(*inputs)
        torch.cuda.synchronize()
    return step


def overhead(out_path: str, rounds: int = 15, steps: int = 10) -> None:
    results = []
    for case in ("resnet50-b32-fp32", "gpt2-1x128-fp32"):
        model, inputs = build(case)
        step = step_of(model, inputs)
        for _ in range(5):
            step()
        # As opcost.inventory does: one step observed with its layers named (module hooks) and
        # its inputs recorded (the signatures), and timing steps observed for their host times
        # only (no hooks). Each step is observed alone; its time is taken inside the observation.
        times = {"plain": [], "opcost timing step": [], "opcost signature step": [], "torch.profiler": []}
        names = _LayerNames(model)

        def timed(label):
            t0 = time.perf_counter()
            step()
            times[label].append((time.perf_counter() - t0) * 1e6)

        for _ in range(rounds):
            for _ in range(steps):
                timed("plain")
            for _ in range(steps):
                _core.observe_only(lambda: timed("opcost timing step"), inputs=False, host_times_only=True)
            names(True)
            for _ in range(steps):
                _core.observe_only(lambda: timed("opcost signature step"))
            names(False)
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                    torch.profiler.ProfilerActivity.CUDA],
                                        record_shapes=True, with_stack=True, with_modules=True):
                for _ in range(steps):
                    timed("torch.profiler")
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"case": case, "step_us": med, "rounds": rounds, "steps_per_round": steps,
               "overhead": {k: med[k] / med["plain"] - 1 for k in times if k != "plain"},
               "spread_us": {k: [min(v), max(v)] for k, v in times.items()}}
        print(json.dumps(row), flush=True)
        results.append(row)
        del model
        torch.cuda.empty_cache()
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "overhead": results},
              open(out_path, "w"), indent=2)


def validate(out_path: str, cases, db: str) -> None:
    results = []
    for case in cases:
        model, inputs = build(case)
        t0 = time.time()
        p = opcost.validate(model, *inputs, db=db, name=case, max_time=0.5, energy_max_time=1.0,
                            energy_max_time_capped=1.5, step_max_time=3.0)
        row = {"case": case, "predicted_time_us": p.time_us, "measured_time_us": p.measured_time_us,
               "time_error": p.time_error, "paired_time_error": p.paired_time_error,
               "paired_time_error_range": p.paired_time_error_range, "host_drift": p.host_drift,
               "headline": p.headline, "predicted_energy_mJ": p.energy_mJ,
               "measured_energy_mJ": p.measured_energy_mJ, "energy_error": p.energy_error, "flags": p.flags,
               "complete": p.complete, "seconds": time.time() - t0, "calls": p.to_dict()["calls"],
               "report": p.to_dict()}
        print(json.dumps({k: v for k, v in row.items() if k != "report"}), flush=True)
        results.append(row)
        del model
        torch.cuda.empty_cache()
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "validate": results},
              open(out_path, "w"), indent=2)


_POLLER = """
import sys, time, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    pynvml.nvmlDeviceGetTotalEnergyConsumption(h); time.sleep(0.0005)
"""


def monitor(out_path: str, seconds: float, phase_s: float = 1.0) -> None:
    import subprocess
    import threading

    import pynvml
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    model, inputs = build("resnet34-b8-bf16")
    step = step_of(model, inputs)
    for _ in range(20):
        step()

    def phase():
        times = []
        end = time.perf_counter() + phase_s
        while time.perf_counter() < end:
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1e6)
        return statistics.median(times)

    def with_thread():
        stop = threading.Event()

        def poll():
            while not stop.is_set():
                pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
                time.sleep(0.0005)
        t = threading.Thread(target=poll)
        t.start()
        try:
            return phase()
        finally:
            stop.set()
            t.join()

    def with_process():
        poller = subprocess.Popen([sys.executable, "-c", _POLLER, str(phase_s + 1)])
        time.sleep(0.3)  # started and polling
        try:
            return phase()
        finally:
            poller.kill()
            poller.wait()

    cycles = []
    start = time.time()
    while time.time() - start < seconds:
        c = {"none": phase(), "thread": with_thread(), "none_2": phase(), "process": with_process(), "none_3": phase()}
        c["thread_ratio"] = c["thread"] / ((c["none"] + c["none_2"]) / 2)
        c["process_ratio"] = c["process"] / ((c["none_2"] + c["none_3"]) / 2)
        print(json.dumps(c), flush=True)
        cycles.append(c)
    summary = {k: statistics.median(c[k] for c in cycles) for k in cycles[0]}
    summary["baseline_range_us"] = [min(min(c["none"], c["none_2"], c["none_3"]) for c in cycles),
                                    max(max(c["none"], c["none_2"], c["none_3"]) for c in cycles)]
    print(json.dumps({"median": summary}), flush=True)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "case": "resnet34-b8-bf16",
               "phase_s": phase_s, "cycles": cycles, "median": summary}, open(out_path, "w"), indent=2)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["overhead", "validate", "monitor"])
    parser.add_argument("out")
    parser.add_argument("cases", nargs="*")
    parser.add_argument("--db", default="/tmp/opcost-python-bench.db")
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    if args.mode == "overhead":
        overhead(args.out)
    elif args.mode == "monitor":
        monitor(args.out, args.seconds)
    else:
        validate(args.out, args.cases, args.db)
    return 0


if __name__ == "__main__":
    sys.exit(main())
