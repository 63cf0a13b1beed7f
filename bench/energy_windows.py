#!/usr/bin/env python3
"""Prints the energy windows of `opcost measure --json` documents beside the SM clock and
power sampled during each window (from --power-trace), to see why an energy CI is wide.
   energy_windows.py RESULT.json TRACE.json"""
import json, sys

docs = json.load(open(sys.argv[1]))
docs = docs if isinstance(docs, list) else [docs]
traces = json.load(open(sys.argv[2]))
for d, tr in zip(docs, traces):
    e = d.get("energy_mJ")
    print(f"{d['op']} {d['args'][:70]}")
    if not e:
        print("  energy unavailable:", d.get("energy_unavailable"))
        continue
    print(f"  per call {e['per_call']:.4g} mJ ±{100*e['rel_ci95']:.2f}%  flags {d['flags']}")
    # Trace times are relative to the first power sample, which the monitor takes at the
    # loop's start; window starts are relative to the loop's start too.
    clk = tr["sm_clock_MHz"]
    for start, secs, mj, watts in e["window_list"]:
        c = [v for t, v in clk if start <= t < start + secs]
        cs = f"{min(c):.0f}-{max(c):.0f}" if c else "?"
        print(f"  t={start:6.3f}s  {secs*1e3:6.1f} ms  {mj:8.4g} mJ/call  {watts:6.1f} W  SM {cs} MHz")
