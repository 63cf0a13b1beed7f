#!/usr/bin/env python3
"""Issue 27: what observing a compiled step costs its host, and where that cost sits.

    PYTHONPATH=build/python python3 bench/compiled_host.py OUT.json CASE [CASE ...]

CASE: one of bench/compiled_coverage.py's cases (e.g. resnet18-b32, gpt2-8x512-bf16). Per case,
in this process, after the compiled model's warm-up steps, in three modes:
- ``plain``: the step as the user runs it;
- ``names_only``: observed as opcost's host-timing rounds observe it (each generated kernel's
  launch in a record that carries its name alone: `KernelRecords::kNamesOnly`);
- ``with_arguments``: observed with each launch's arguments written out, as the inventory's one
  recorded step does (and, before this change, every host-timing round).

For each mode:
- ``host_step_us``: the host time of the step's call (median of `--steps`), the device synchronised
  between steps; ``observer_scale``: plain over this mode's, as the prediction's `observer_scale`;
- ``first_launch_events_us``: CUDA events at the step's start and right after its first generated
  kernel's launch (no CUPTI): the host time to that launch plus the kernel's own time (median);
- from one CUPTI trace (torch.profiler, CUDA activities only) of `--traced` steps, each after a
  marker kernel (``torch.cuda._sleep``) and a synchronisation: ``first_launch_us``, the host time
  from the marker's launch returning to the step's first kernel launch (median over the steps;
  the time the step's own code runs before it launches anything), ``last_launch_us`` likewise to
  the last launch's return, and the launches per step.

Writes OUT.json: {"device", "torch", "cases": {CASE: {MODE: {...}}}} and prints one line per mode.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import torch

import opcost
from opcost import _compiled, _core

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compiled_coverage import CASES, build  # noqa: E402  (the same models, built the same way)

MODES = ("plain", "names_only", "with_arguments")
_LAUNCHES = ("cudaLaunchKernel", "cuLaunchKernel", "cuLaunchKernelEx", "cudaLaunchKernelExC")


def in_mode(step: Callable[[], Any], mode: str) -> Callable[[], None]:
    """One step of `step` as `mode` runs it (the watch turned on and off outside the step's own call)."""
    if mode == "plain":
        return step
    kernels = _compiled.CompiledKernels()

    def observed() -> None:
        kernels.watch(True, names_only=(mode == "names_only"))
        try:
            _core.observe_only(step, inputs=False, host_times_only=True)
        finally:
            kernels.watch(False)
    return observed


def host_step_us(step: Callable[[], Any], mode: str, steps: int) -> float:
    """The host time of the step's own call in `mode`, median of `steps`."""
    took: List[float] = []

    def timed() -> None:
        t0 = time.perf_counter()
        step()
        took.append((time.perf_counter() - t0) * 1e6)
    run = in_mode(timed, mode)
    for _ in range(steps):
        run()
        torch.cuda.synchronize()
    return statistics.median(took)


def launch_offsets(step: Callable[[], Any], mode: str, traced: int) -> Dict[str, Any]:
    """From a CUPTI trace: per step, the first and last launch after the marker's, in µs, and
    (``launches``) each launch's median offset and its kernel's name."""
    from torch.profiler import ProfilerActivity, profile

    def marked() -> None:
        torch.cuda._sleep(1000)  # the marker: `spin_kernel`, launched by nothing else
        step()
    run = in_mode(marked, mode)  # the marker inside: turning the watch on is not the step's time
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(traced):
            torch.cuda.synchronize()
            run()
            torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as f:
            events = json.load(f).get("traceEvents", [])
    kernel_of = {e["args"]["correlation"]: e["name"] for e in events
                 if e.get("cat") == "kernel" and "correlation" in e.get("args", {})}
    launches = sorted((e for e in events if e.get("name") in _LAUNCHES and "ts" in e), key=lambda e: e["ts"])
    steps: List[List[Dict[str, Any]]] = []
    for e in launches:
        if "spin_kernel" in kernel_of.get(e.get("args", {}).get("correlation"), ""):
            steps.append([e])
        elif steps:
            steps[-1].append(e)
    first = [s[1]["ts"] - (s[0]["ts"] + s[0]["dur"]) for s in steps if len(s) > 1]
    last = [s[-1]["ts"] + s[-1]["dur"] - (s[0]["ts"] + s[0]["dur"]) for s in steps if len(s) > 1]
    # Each launch of the step, where every traced step launched as many: its offset from the
    # marker's return (median over the steps) and its kernel.
    per_launch = []
    if steps and len({len(s) for s in steps}) == 1:
        for k in range(1, len(steps[0])):
            offset = statistics.median(s[k]["ts"] - (s[0]["ts"] + s[0]["dur"]) for s in steps)
            name = kernel_of.get(steps[0][k].get("args", {}).get("correlation"), "")
            per_launch.append([round(offset, 2), name[:80]])
    return {"traced_steps": len(steps),
            "launches_per_step": statistics.median(len(s) - 1 for s in steps) if steps else None,
            "first_launch_us": statistics.median(first) if first else None,
            "last_launch_us": statistics.median(last) if last else None,
            "kernels_traced": len(kernel_of), "launch_events": len(launches), "launches": per_launch}


def first_launch_by_events(step: Callable[[], Any], mode: str, steps: int) -> Dict[str, Any]:
    """Without CUPTI (whose callbacks move every launch): a CUDA event recorded as the step starts,
    the GPU idle, and one recorded right after its first generated kernel's launch returns, both
    inside the step as `mode` runs it. Their distance is the host time to that launch plus the
    kernel's own time; between modes, what the mode adds before the first launch (µs, median)."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    start, after = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    pending = [False]
    original = CachingAutotuner.run

    def run(autotuner: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(autotuner, *args, **kwargs)
        if pending[0]:
            pending[0] = False
            after.record()
        return out

    def marked() -> None:
        pending[0] = True
        start.record()
        step()
    CachingAutotuner.run = run  # beneath the watch's own wrapper, which takes it as the original
    try:
        run_step = in_mode(marked, mode)
        took = []
        for _ in range(steps):
            torch.cuda.synchronize()
            run_step()
            torch.cuda.synchronize()
            if not pending[0]:  # a step that launched no generated kernel (CUDA graphs) has no figure
                took.append(start.elapsed_time(after) * 1e3)
    finally:
        CachingAutotuner.run = original
    return {"first_launch_events_us": statistics.median(took) if took else None}


def run_case(name: str, steps: int, traced: int) -> Dict[str, Any]:
    spec = CASES[name]
    if spec.get("train"):
        raise SystemExit(f"{name}: a training case; this script times inference steps only")
    model, inputs = build(spec)
    compiled = torch.compile(model, mode=spec.get("mode"))

    def step() -> None:  # as opcost's own inference step runs it
        with torch.inference_mode():
            compiled(*inputs)
    for _ in range(5):  # compiles, then settles
        step()
    torch.cuda.synchronize()
    out: Dict[str, Any] = {}
    for mode in MODES:
        out[mode] = {"host_step_us": host_step_us(step, mode, steps)}
    for mode in MODES:
        out[mode]["observer_scale"] = out["plain"]["host_step_us"] / out[mode]["host_step_us"]
        out[mode].update(first_launch_by_events(step, mode, steps))
        out[mode].update(launch_offsets(step, mode, traced))
        print(f"{name} {mode}: " + ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                                            for k, v in out[mode].items() if k != "launches"), flush=True)
    # The inventory's host times of the same step (its calls, and the gap before each, observed
    # as the timing rounds observe them), to set against the plain step's launches.
    inv = json.loads(opcost.inventory(compiled, *inputs, name=name).to_json())
    out["inventory"] = {k: inv[k] for k in ("sequence_columns", "sequence", "host_step_us", "host_after_last_call_us",
                                            "host_calibration")}
    out["inventory"]["ops"] = [o["signature"][:120] for o in inv["ops"]]
    return out


def main() -> None:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("cases", nargs="+", choices=sorted(CASES))
    ap.add_argument("--steps", type=int, default=50, help="timed steps per mode (default 50)")
    ap.add_argument("--traced", type=int, default=10, help="traced steps per mode (default 10)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("compiled_host.py: needs a CUDA GPU (it traces kernel launches with CUPTI)")
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "opcost": opcost.__version__,
              "cases": {}}
    for name in args.cases:
        result["cases"][name] = run_case(name, args.steps, args.traced)
        args.out.write_text(json.dumps(result, indent=1) + "\n")  # what was done so far, kept


if __name__ == "__main__":
    main()
