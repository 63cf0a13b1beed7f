#!/usr/bin/env python3
"""What the validation grid's misses have in common, from its case reports (no GPU needed).

    python3 bench/grid_analysis.py ROUND_DIR [EARLIER_ROUND_DIR]

For every case of ROUND_DIR/cases/*.json (bench/validate_grid.py's output):
- time: the headline error beside the step's balance, the predicted host time over the
  predicted GPU time (near 1 the GPU waits for the host at some calls and not at others), and
  the GPU's idle time measured (step time less the kernels traced in the model) against
  the idle time predicted;
- host time the timeline drops: the model's host times add up to the plain step's host time;
  the timeline's CPU time is less by the in-call time of calls it has no measurement for;
- energy: the headline error against the combined 95% half-width of prediction and measurement,
  and, with an earlier round, how far the same case moved between the rounds;
- with an earlier round, each case's headline time error in both, with its signatures that
  have cold inputs (`--cache auto`) and its loops' GPU time against the kernels traced in the
  model (the loops include the GPU's gaps between back-to-back kernels, the trace does not);
- the traced step replayed through the timeline with its own host and kernel times
  (launches.traced_step_us against launches.traced_step_timeline_us).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def headline_time(d: dict) -> float:
    e = d["error"]
    return d["paired"]["time_error_median"] if e.get("headline") == "paired" else e["time"]


def headline_energy(d: dict) -> tuple[float, float]:
    """(error, combined relative 95% half-width) as the grid's summary picks them."""
    e, pe = d["error"], d.get("paired_energy", {})
    if e.get("headline") == "paired" and pe.get("energy_error") is not None:
        err, p, pci, m, mci = (pe["energy_error"], pe["predicted_mJ"], pe["predicted_ci95_mJ"], pe["measured_mJ"],
                               pe["measured_ci95_mJ"])
    else:
        err, p, pci = e["energy"], d["predicted"]["energy_mJ"], d["predicted"]["energy_ci95_mJ"]
        m, mci = d["measured"]["energy_mJ"], d["measured"]["energy_ci95_mJ"]
    return err, ((pci / p) ** 2 + (mci / m) ** 2) ** 0.5


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    cases = {p.stem: json.loads(p.read_text()) for p in sorted(Path(sys.argv[1], "cases").glob("*.json"))}
    cases = {k: d for k, d in cases.items() if "failed" not in d}
    earlier = {}
    if len(sys.argv) == 3:
        earlier = {p.stem: json.loads(p.read_text()) for p in Path(sys.argv[2], "cases").glob("*.json")}

    print("## Time: headline error by the step's balance (predicted host time / predicted GPU time)\n")
    print("| case | host/GPU | headline time | GPU idle measured µs | GPU idle predicted µs | unmeasured calls |"
          " host time the timeline drops µs |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for name, d in cases.items():
        t, h = d["predicted"]["timeline"], d["host"]
        host_sum = h["in_calls_us"] + h["between_calls_us"] + h["after_last_call_us"]
        rows.append((t["cpu_us"] / t["gpu_busy_us"] if t["gpu_busy_us"] else float("inf"), name, headline_time(d),
                     d["measured"]["time_us"] - d["kernels"].get("device_us_traced_in_model", 0), t["gap_us"],
                     d["calls"] - d["measured_calls"], host_sum - t["cpu_us"]))
    for ratio, name, err, idle, gap, unmeasured, dropped in sorted(rows):
        print(f"| {name} | {ratio:.2f} | {100 * err:+.2f}% | {idle:.0f} | {gap:.0f} | {unmeasured} | {dropped:.0f} |")
    for low, high in ((0, 0.8), (0.8, 1.1), (1.1, float("inf"))):
        errs = [abs(r[2]) for r in rows if low <= r[0] < high]
        if errs:
            print(f"\nhost/GPU in [{low}, {high}): {len(errs)} cases, median |time error| "
                  f"{100 * statistics.median(errs):.2f}%, worst {100 * max(errs):.2f}%, "
                  f"{sum(e > 0.03 for e in errs)} above 3%", end="")
    print("\n\n## Energy: headline error against the combined 95% half-width of prediction and measurement\n")
    print("| case | headline energy | ± combined 95% | outside it | earlier round | moved |")
    print("|---|---|---|---|---|---|")
    moved, outside = [], 0
    for name, d in cases.items():
        err, ci = headline_energy(d)
        before = headline_energy(earlier[name])[0] if name in earlier and "failed" not in earlier[name] else None
        if before is not None:
            moved.append(abs(err - before))
        outside += abs(err) > ci
        if abs(err) > 0.05 or (before is not None and abs(before) > 0.05):
            print(f"| {name} | {100 * err:+.2f}% | {100 * ci:.2f}% | {'yes' if abs(err) > ci else 'no'} | "
                  + (f"{100 * before:+.2f}% | {100 * abs(err - before):.2f} |" if before is not None else "n/a | n/a |"))
    print(f"\n{len(cases) - outside} of {len(cases)} headline energy errors lie within their combined 95% half-width.")
    if moved:
        moved.sort()
        print(f"The same case between the two rounds moved by a median of {100 * statistics.median(moved):.2f} points "
              f"(90th percentile {100 * moved[int(0.9 * len(moved))]:.2f}, most {100 * moved[-1]:.2f}).")
    if earlier:
        print_time_moves(cases, earlier)
    print_trace_replay(cases)
    return 0


def loops_over_traced(d: dict) -> str:
    k = d.get("kernels", {})
    loops, traced = k.get("device_us_from_loops"), k.get("device_us_traced_in_model")
    return f"{100 * (loops / traced - 1):+.1f}%" if loops and traced else "-"


def print_time_moves(cases: dict, earlier: dict) -> None:
    print("\n\n## Time: the headline error in both rounds\n")
    print("| case | earlier round | this round | signatures with cold inputs | loops' GPU time / traced, earlier | "
          "this round |")
    print("|---|---|---|---|---|---|")
    for name, d in cases.items():
        if name not in earlier:
            continue
        cold = d.get("cache_auto", {}).get("signatures_with_cold_inputs", "-")
        print(f"| {name} | {100 * headline_time(earlier[name]):+.2f}% | {100 * headline_time(d):+.2f}% | {cold} | "
              f"{loops_over_traced(earlier[name])} | {loops_over_traced(d)} |")


def print_trace_replay(cases: dict) -> None:
    diffs = []
    for name, d in cases.items():
        launches = d.get("launches", {})
        traced, replayed = launches.get("traced_step_us"), launches.get("traced_step_timeline_us")
        if traced and replayed:
            diffs.append((replayed / traced - 1, name, traced))
    if not diffs:
        return
    diffs.sort(key=lambda x: abs(x[0]))
    print("\n\n## The traced step replayed through the timeline (its own host, kernel and launch times)\n")
    within = sum(1 for x in diffs if abs(x[0]) <= 0.002)
    print(f"{within} of {len(diffs)} within 0.2%; the largest differences:")
    for diff, name, traced in diffs[-5:]:
        print(f"- {name}: traced step {traced:.0f} µs, through the timeline {100 * diff:+.2f}%")


if __name__ == "__main__":
    sys.exit(main())
