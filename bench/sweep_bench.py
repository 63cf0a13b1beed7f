#!/usr/bin/env python3
"""Sweeps on a GPU (issue 13, must-have 7): GPU-seconds per configuration at the default
interval targets, the share of items within their targets, and how energy per call moves
with the input data. On the GPU machine, from the repo root:

    python3 bench/sweep_bench.py run DB GRID... [--deadline S] [--opcost-arg=--energy-group=1]...
    python3 bench/sweep_bench.py summarize DB OUT_DIR GRID...
    python3 bench/sweep_bench.py agree DB_A DB_B OUT.json   # the same items' energies in both

`agree` pairs the newest row of each call in two databases (e.g. a sweep with its items' energies
in shared counter windows, the default, and one with `--energy-group 1`, each in its own loop)
and says how often the two energies per call differ by less than their 95% intervals together
(half-widths in quadrature), with the distribution of their ratios.

`run` runs `opcost sweep GRID --db DB` for each grid, each with the command line's default
budgets and targets, and stops after --deadline seconds (a sweep stopped
by the deadline resumes where it was). `summarize` reads the database through
`opcost db export --csv` and writes summary.md and summary.json.
"""

from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import time

import pandas as pd

OPCOST = "build/opcost"
TIME_TARGET, ENERGY_TARGET = 0.01, 0.02  # opcost measure's defaults (--target-ci, --energy-target-ci)


def run(args) -> int:
    start = time.monotonic()
    for grid in args.grids:
        if time.monotonic() - start > args.deadline:
            print(f"deadline reached before {grid}", file=sys.stderr)
            return 1
        t0 = time.monotonic()
        # At the deadline the sweep gets SIGTERM: its item goes back to pending, and the next run
        # resumes there.
        sweep = subprocess.Popen([OPCOST, "sweep", grid, "--db", args.db, "--progress-every", "30",
                                  *args.opcost_arg])
        try:
            rc = sweep.wait(timeout=max(1.0, args.deadline - (t0 - start)))
        except subprocess.TimeoutExpired:
            sweep.terminate()
            sweep.wait()
            rc = "deadline"
        wall = time.monotonic() - t0
        print(f"{grid}: exit {rc} after {wall:.0f} s", file=sys.stderr)
        with open(args.db + ".runs.jsonl", "a") as f:  # wall time of every run, for summarize
            f.write(json.dumps({"grid": grid_name(grid), "wall_s": wall, "exit": rc}) + "\n")
    return 0


def rel_half_width(low, high, mean):
    return (high - low) / 2 / mean


def summarize(args) -> int:
    csv = subprocess.run([OPCOST, "db", "export", "--csv", "--db", args.db], check=True, capture_output=True,
                         text=True).stdout
    rows = pd.read_csv(io.StringIO(csv))
    try:
        runs = [json.loads(line) for line in open(args.db + ".runs.jsonl")]
    except FileNotFoundError:
        runs = []
    out = {"grids": {}, "data": []}
    md = ["# Sweeps on the GPU: summary", ""]
    for grid in args.grids:
        name = grid_name(grid)
        status = subprocess.run([OPCOST, "sweep", "status", grid, "--db", args.db], capture_output=True,
                                text=True).stdout
        d = rows[rows["sweep"] == name].copy()
        if d.empty:
            continue
        # The newest row of each item, whole (groupby().last() would mix rows' non-null cells).
        d = d.sort_values("id").drop_duplicates("args_hash", keep="last").set_index("args_hash")
        d["time_rel_ci"] = rel_half_width(d["time_ci95_low_us"], d["time_ci95_high_us"], d["time_mean_us"])
        d["energy_rel_ci"] = rel_half_width(d["energy_ci95_low_mJ"], d["energy_ci95_high_mJ"], d["energy_per_call_mJ"])
        within_time = (d["time_rel_ci"] <= TIME_TARGET * 1.0001).mean()
        within_energy = (d["energy_rel_ci"] <= ENERGY_TARGET * 1.0001).mean()
        flagged = (d["flags"].fillna("") != "").sum()
        # Where the GPU-seconds go: at the power cap the energy loop may run 3.5 s instead of 2 s,
        # and a host-bound call (the loop's wall time per call well above its GPU time) has an
        # energy per call that moves with the host's pace, window to window.
        capped = d["flags"].fillna("").str.contains("sw_power_cap")
        host_bound = d["loop_wall_us_per_call"] > 1.5 * d["time_mean_us"]
        energy_met = d["energy_rel_ci"] <= ENERGY_TARGET * 1.0001

        def part(mask):
            return {"items": int(mask.sum()), "gpu_seconds_mean": float(d.loc[mask, "seconds"].mean()) if mask.any()
                    else None, "share_energy_within_target": float(energy_met[mask].mean()) if mask.any() else None}

        parts = {"power_capped": part(capped), "host_bound": part(host_bound & ~capped),
                 "other": part(~capped & ~host_bound)}
        wall_s = sum(r["wall_s"] for r in runs if r["grid"] == name)
        g = {
            "items_measured": int(len(d)),
            "gpu_seconds_total": float(d["seconds"].sum()),
            "gpu_seconds_per_item_mean": float(d["seconds"].mean()),
            "gpu_seconds_per_item_median": float(d["seconds"].median()),
            "gpu_seconds_per_item_max": float(d["seconds"].max()),
            "share_time_within_target": float(within_time),
            "share_energy_within_target": float(within_energy),
            "share_both_within_target": float(((d["time_rel_ci"] <= TIME_TARGET * 1.0001) &
                                               (d["energy_rel_ci"] <= ENERGY_TARGET * 1.0001)).mean()),
            "flagged": int(flagged),
            "sweep_wall_seconds": wall_s,  # every `opcost sweep` run of the grid: workers, inputs, loops
            "status": status.strip(),
            "by_kind": parts,
        }
        out["grids"][name] = g
        md += [f"## {name} ({grid})", "", "```", status.strip(), "```", "",
               "| figure | value |", "|---|---|",
               f"| items measured | {g['items_measured']} |",
               f"| GPU-seconds per item, mean | {g['gpu_seconds_per_item_mean']:.2f} s |",
               f"| GPU-seconds per item, median / max | {g['gpu_seconds_per_item_median']:.2f} / "
               f"{g['gpu_seconds_per_item_max']:.2f} s |",
               f"| GPU-seconds in all | {g['gpu_seconds_total']:.1f} s |",
               f"| wall seconds of the sweep runs (worker start, inputs, loops) | {wall_s:.1f} s "
               f"({wall_s / max(1, g['items_measured']):.2f} s an item) |",
               f"| time within ±{TIME_TARGET:.0%} (95% CI) | {within_time:.1%} |",
               f"| energy within ±{ENERGY_TARGET:.0%} (95% CI) | {within_energy:.1%} |",
               f"| both | {g['share_both_within_target']:.1%} |",
               f"| flagged (throttling, clocks, other processes) | {flagged} |", "",
               "| items | count | GPU-s per item | energy within target |", "|---|---|---|---|"]
        for kind, label in (("power_capped", "at the power cap"), ("host_bound", "host-bound (loop wall > 1.5 × GPU time)"),
                            ("other", "the rest")):
            p = parts[kind]
            if p["items"]:
                md.append(f"| {label} | {p['items']} | {p['gpu_seconds_mean']:.2f} s | "
                          f"{p['share_energy_within_target']:.0%} |")
        md.append("")
        if "axis_data" in d.columns and d["axis_data"].nunique() > 1:
            keys = [c for c in d.columns if c.startswith("axis_") and c != "axis_data" and d[c].notna().any()]
            md += [f"### {name}: energy per call by input data (relative to normal)", "",
                   "| " + " | ".join(k[5:] for k in keys) + " | data | energy/call mJ (±95%) | vs normal | power W "
                   "| time µs |",
                   "|" + "---|" * (len(keys) + 5)]
            for config, group in d.groupby(keys):
                config = config if isinstance(config, tuple) else (config,)
                base = group[group["axis_data"] == "normal"]
                base_mJ = float(base["energy_per_call_mJ"].iloc[0]) if len(base) else float("nan")
                for _, r in group.sort_values("axis_data").iterrows():
                    ratio = r["energy_per_call_mJ"] / base_mJ - 1
                    half = (r["energy_ci95_high_mJ"] - r["energy_ci95_low_mJ"]) / 2
                    out["data"].append({"grid": name, **{k[5:]: v for k, v in zip(keys, config)},
                                        "data": r["axis_data"], "energy_mJ": r["energy_per_call_mJ"],
                                        "energy_ci95_mJ": half, "vs_normal": ratio, "power_W": r["power_W"],
                                        "time_us": r["time_mean_us"]})
                    md.append("| " + " | ".join(str(v) for v in config) +
                              f" | {r['axis_data']} | {r['energy_per_call_mJ']:.4g} (±{half:.2g}) | {ratio:+.1%} | "
                              f"{r['power_W']:.0f} | {r['time_mean_us']:.1f} |")
            md.append("")
    with open(f"{args.out}/summary.json", "w") as f:
        json.dump(out, f, indent=1, default=float)
    with open(f"{args.out}/summary.md", "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    return 0


def newest_rows(db: str) -> pd.DataFrame:
    csv = subprocess.run([OPCOST, "db", "export", "--csv", "--db", db], check=True, capture_output=True,
                         text=True).stdout
    rows = pd.read_csv(io.StringIO(csv)).sort_values("id")
    return rows.drop_duplicates("args_hash", keep="last").set_index("args_hash")


def agree(args) -> int:
    a, b = newest_rows(args.db_a), newest_rows(args.db_b)
    both = a.merge(b, left_index=True, right_index=True, suffixes=("_a", "_b"))
    both = both[both["energy_per_call_mJ_a"].notna() & both["energy_per_call_mJ_b"].notna()]
    half_a = (both["energy_ci95_high_mJ_a"] - both["energy_ci95_low_mJ_a"]) / 2
    half_b = (both["energy_ci95_high_mJ_b"] - both["energy_ci95_low_mJ_b"]) / 2
    diff = both["energy_per_call_mJ_a"] - both["energy_per_call_mJ_b"]
    within = diff.abs() <= (half_a ** 2 + half_b ** 2) ** 0.5
    ratio = both["energy_per_call_mJ_a"] / both["energy_per_call_mJ_b"] - 1
    time_ratio = both["time_median_us_a"] / both["time_median_us_b"] - 1
    out = {"db_a": args.db_a, "db_b": args.db_b, "calls_in_both": int(len(both)),
           "energy_within_joint_ci95": float(within.mean()) if len(both) else None,
           "energy_ratio_a_over_b_minus_1": {q: float(ratio.quantile(v)) for q, v in
                                             (("p10", 0.1), ("median", 0.5), ("p90", 0.9))} if len(both) else None,
           "energy_abs_diff_median": float(ratio.abs().median()) if len(both) else None,
           "time_ratio_median": float(time_ratio.median()) if len(both) else None,
           "gpu_seconds_per_item_mean": {"a": float(both["seconds_a"].mean()), "b": float(both["seconds_b"].mean())}
           if len(both) else None,
           "calls": [{"op": r["op_a"], "args": r["args_a"], "energy_mJ_a": r["energy_per_call_mJ_a"],
                      "energy_ci95_mJ_a": ha, "energy_mJ_b": r["energy_per_call_mJ_b"], "energy_ci95_mJ_b": hb,
                      "within": bool(w)}
                     for (_, r), ha, hb, w in zip(both.iterrows(), half_a, half_b, within)]}
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1, default=float)
    print(json.dumps({k: v for k, v in out.items() if k != "calls"}, indent=1, default=float))
    return 0


def grid_name(path: str) -> str:
    for line in open(path):
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip()
    raise SystemExit(f"{path}: no name: line")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("db")
    r.add_argument("grids", nargs="+")
    r.add_argument("--deadline", type=float, default=1e9, help="stop (resumably) after this many seconds")
    r.add_argument("--opcost-arg", action="append", default=[],
                   help="one more word for `opcost sweep` (repeatable), e.g. --opcost-arg=--energy-group=1")
    s = sub.add_parser("summarize")
    s.add_argument("db")
    s.add_argument("out")
    s.add_argument("grids", nargs="+")
    g = sub.add_parser("agree")
    g.add_argument("db_a")
    g.add_argument("db_b")
    g.add_argument("out")
    args = p.parse_args()
    return {"run": run, "summarize": summarize, "agree": agree}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
