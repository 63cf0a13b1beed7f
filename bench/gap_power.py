#!/usr/bin/env python3
"""What does the GPU draw while it idles between kernels, by the idle's length and by the work
before it? (issue 11, must-have 3). On a GPU:

    python3 bench/gap_power.py OUT.json [--seconds 3]

For each burst (a kernel of about 5 µs, 50 µs and 500 µs: bf16 matmuls of growing size, and
an add of one element, the tiny kernel of opcost's gap probe) and each idle length G: a loop
of burst, synchronise, host spin until G µs after the kernel ended, repeat. The energy
counter is read by a thread that records the times at which it changes; the loop's average
power comes from whole counter periods after a 1 s settle. With the burst's own energy from
a back-to-back loop of it (no idle), the idle's power is what the rest of the energy needs:

    P_idle(G) = (P_loop × T − n × E_burst) / (T − n × t_burst)

where T is the window, n the bursts in it and t_burst the burst's GPU time (CUDA events).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

import pynvml
import torch


class Counter:
    """The energy counter's update edges: (host time, mJ) whenever the value changes."""

    def __init__(self, handle):
        self.handle, self.edges, self._stop = handle, [], threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self):
        last = None
        while not self._stop.is_set():
            e = pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)
            if e != last:
                self.edges.append((time.perf_counter(), e))
                last = e
            time.sleep(0.0005)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def power_W(self, after: float):
        """Average power between the first edge after `after` and the last edge."""
        edges = [e for e in self.edges[1:] if e[0] >= after]  # the first reading is no edge
        if len(edges) < 3:
            return None, 0.0
        (t0, e0), (t1, e1) = edges[0], edges[-1]
        return (e1 - e0) / 1000 / (t1 - t0), t1 - t0


def kernel_us(fn, n=200):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(10):
        fn()
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000 / n


def loop(handle, fn, idle_us, seconds, settle_s=1.0):
    """Average power of the loop over whole counter periods, and bursts per second."""
    with Counter(handle) as counter:
        t_start = time.perf_counter()
        settle_end, end = t_start + settle_s, t_start + settle_s + seconds
        n_after = 0
        while True:
            now = time.perf_counter()
            if now >= end:
                break
            fn()
            if idle_us is not None:
                torch.cuda.synchronize()
                spin_end = time.perf_counter() + idle_us * 1e-6
                while time.perf_counter() < spin_end:
                    pass
            if now >= settle_end:
                n_after += 1
        torch.cuda.synchronize()
        t_end = time.perf_counter()
    power, window = counter.power_W(settle_end)
    return power, window, n_after / (t_end - settle_end)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=3.0)
    args = parser.parse_args()
    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(0)
    dev = "cuda"
    bursts = {"add-1": (torch.ones(1, device=dev),) * 2}
    for n in (256, 1024, 4096):
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        bursts[f"mm-bf16-{n}"] = (a, a.clone())
    results = []
    idle_lengths = [0, 5, 20, 50, 200, 1000, 5000]
    for name, (a, b) in bursts.items():
        fn = (lambda a=a, b=b: torch.add(a, b)) if name.startswith("add") else (lambda a=a, b=b: torch.mm(a, b))
        t_burst = kernel_us(fn)
        # Back to back (the GPU never idles, unless the launches are slower than the kernel).
        p_b2b, window, rate = loop(handle, fn, None, args.seconds)
        busy = min(1.0, rate * t_burst * 1e-6)
        e_burst_mJ = p_b2b / rate * 1000  # energy per burst, idle included where launch-bound
        row = {"burst": name, "burst_us": t_burst, "back_to_back_W": p_b2b, "back_to_back_busy": busy, "points": []}
        for idle in idle_lengths:
            p, window, rate = loop(handle, fn, idle, args.seconds)
            idle_share = 1 - rate * t_burst * 1e-6
            # The burst's energy from its back-to-back loop, which for a launch-bound burst
            # includes that loop's own idle: then the back-to-back power per unit of time.
            e_kernel_mJ = e_burst_mJ if busy > 0.95 else p_b2b * t_burst * 1e-3
            p_idle = (p - rate * e_kernel_mJ / 1000) / idle_share if p and idle_share > 0.05 else None
            row["points"].append({"idle_us_requested": idle, "bursts_per_s": rate,
                                  "idle_us_per_burst": idle_share / rate * 1e6, "idle_share": idle_share,
                                  "loop_W": p, "window_s": window, "idle_W": p_idle})
            print(json.dumps({"burst": name, **row["points"][-1]}), flush=True)
        results.append(row)
    # Deep idle: nothing launched.
    with Counter(handle) as counter:
        time.sleep(args.seconds + 1)
    idle_W, _ = counter.power_W(time.perf_counter() - args.seconds)
    json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "seconds": args.seconds,
               "deep_idle_W": idle_W, "bursts": results}, open(args.out, "w"), indent=2)
    print(json.dumps({"deep_idle_W": idle_W}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
