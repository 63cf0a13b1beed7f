#!/usr/bin/env python3
"""Prediction accuracy over a grid of built-in models (issue 11, must-have 4), on a GPU.

    python3 bench/validate_grid.py run OUT_DIR [--only REGEX] [--deadline SECONDS] [--opcost build/opcost]
    python3 bench/validate_grid.py summarize OUT_DIR [PYTHON_BENCH_JSON...]

run: `opcost validate CASE --json` for every case of the grid, into one database
(OUT_DIR/grid.db, so operators shared between cases are measured once), with `opcost model`'s
operator loops (0.5 s timing, 1 s energy, 1.5 s at the power cap, all short loops: a fifth of
the timing budget, 3 to 5 counter periods of energy) and a 1.5 s step budget.
Each case's report goes to OUT_DIR/cases/CASE.json with the command's wall time; a case whose
report exists is skipped, so a run cut short by --deadline (stop starting cases after that
many seconds) goes on where it stopped.

summarize: OUT_DIR/grid.md, every case and the distribution (median and worst |error|), with
the Python package's cases from bench/python_bench.py's validate output added.

The grid: resnet18/34/50 at batch 1, 8 and 32; distilgpt2 at 1x128, 4x256 and 8x512; mnist-cnn
at 64 and 1024; each in fp32, bf16 and fp32 under fp16 autocast; inference, and a few in
training (forward and backward).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

DTYPES = {"fp32": ["--dtype", "fp32"], "bf16": ["--dtype", "bf16"], "fp16ac": ["--dtype", "fp32", "--autocast", "fp16"]}
BUDGETS = ["--max-time", "0.5", "--energy-max-time", "1", "--energy-max-time-capped", "1.5", "--step-max-time", "1.5",
           "--short-loops-after", "0"]


def grid():
    """(name, arguments) of every case, in the order they run."""
    shapes = []
    for model in ("resnet18", "resnet34", "resnet50"):
        shapes += [(f"{model}-b{b}", [model, "--batch", str(b)]) for b in (1, 8, 32)]
    shapes += [(f"distilgpt2-{b}x{s}", ["distilgpt2", "--batch", str(b), "--seq", str(s)])
               for b, s in ((1, 128), (4, 256), (8, 512))]
    shapes += [(f"mnist-cnn-b{b}", ["mnist-cnn", "--batch", str(b)]) for b in (64, 1024)]
    cases = [(f"{name}-{dtype}", args + flags) for name, args in shapes for dtype, flags in DTYPES.items()]
    train = [("resnet18-b32-fp32-train", ["resnet18", "--batch", "32", "--dtype", "fp32", "--train"]),
             ("resnet50-b8-bf16-train", ["resnet50", "--batch", "8", "--dtype", "bf16", "--train"]),
             ("distilgpt2-4x256-fp16ac-train", ["distilgpt2", "--batch", "4", "--seq", "256", "--dtype", "fp32",
                                                "--autocast", "fp16", "--train"]),
             ("mnist-cnn-b1024-fp32-train", ["mnist-cnn", "--batch", "1024", "--dtype", "fp32", "--train"])]
    return cases + train


def run(out: Path, only: str | None, deadline_s: float, opcost: str) -> int:
    (out / "cases").mkdir(parents=True, exist_ok=True)
    start = time.time()
    for name, args in grid():
        if only and not re.search(only, name):
            continue
        path = out / "cases" / f"{name}.json"
        if path.exists():
            continue
        if time.time() - start > deadline_s:
            print(f"deadline: stopping before {name}", flush=True)
            return 0
        command = [opcost, "--db", str(out / "grid.db"), "validate", *args, *BUDGETS, "--json"]
        t0 = time.time()
        done = subprocess.run(command, capture_output=True, text=True)
        seconds = time.time() - t0
        try:
            report = json.loads(done.stdout)
        except json.JSONDecodeError:
            report = {"failed": done.stderr[-2000:]}
        report["bench"] = {"command": " ".join(command[1:]), "wall_s": seconds, "exit": done.returncode,
                           "new_measurements": len(re.findall(r"^opcost: \[\d+/\d+\]", done.stderr, re.M))}
        path.write_text(json.dumps(report, indent=1))
        row = summary_row(name, report)
        print(json.dumps(row), flush=True)
    return 0


def summary_row(name: str, d: dict) -> dict:
    """The figures of one case: errors unpaired and paired, and which is the headline."""
    if "failed" in d:
        return {"case": name, "failed": d["failed"].strip().splitlines()[-1:]}
    err, paired, pe = d.get("error", {}), d.get("paired", {}), d.get("paired_energy", {})
    headline_paired = err.get("headline") == "paired"
    time_err = paired.get("time_error_median") if headline_paired else err.get("time")
    # Energy: on a host as fast as in the step's energy loop where the host drifted (and a host
    # speed reproduces that step), else as measured.
    energy_paired = pe.get("energy_error")
    energy_err = energy_paired if headline_paired and energy_paired is not None else err.get("energy")
    # The same with every call launching as it returns and no launch latency (the timeline
    # without a traced step), where the report has it.
    at_return = d["predicted"].get("time_us_launched_at_return")
    measured_us = d.get("measured", {}).get("time_us")
    at_return_err = (paired.get("time_error_median_launched_at_return") if headline_paired
                     else at_return / measured_us - 1 if at_return and measured_us else None)
    bench = d.get("bench", {})
    return {"case": name, "time_error_headline_at_return": at_return_err,
            "unmeasured_calls": d.get("calls", 0) - d.get("measured_calls", 0),
            "launch_latency_us": d.get("launches", {}).get("latency_us"),
            # Rounds before the untraced probe have the traced figure as latency_us.
            "launch_latency_traced_us": d.get("launches", {}).get("latency_traced_us", d.get("launches", {}).get("latency_us")),
            "calls": d.get("calls"), "predicted_us": d["predicted"]["time_us"],
            "measured_us": d.get("measured", {}).get("time_us"), "time_error": err.get("time"),
            "paired_time_error": paired.get("time_error_median"), "host_drift": paired.get("host_drift"),
            "headline": err.get("headline", "unpaired"), "time_error_headline": time_err,
            "energy_error": err.get("energy"), "paired_energy_error": energy_paired,
            "energy_error_headline": energy_err, "host_scale": pe.get("host_scale"),
            "gap_power_W": d.get("gap_power_W"), "gap_us": d["predicted"]["timeline"]["gap_us"],
            "gpu_busy_us": d["predicted"]["timeline"]["gpu_busy_us"],
            "mismatches": len(d.get("kernels", {}).get("mismatches", [])), "flags": d.get("measured", {}).get("flags", []),
            "wall_s": bench.get("wall_s"), "new_measurements": bench.get("new_measurements")}


def python_rows(paths):
    rows = []
    for p in paths:
        doc = json.load(open(p))
        for case in doc["validate"]:
            report = dict(case["report"], bench={"wall_s": case["seconds"]})
            rows.append(summary_row("python:" + case["case"], report))
    return rows


def pct(v):
    return "n/a" if v is None else f"{100 * v:+.2f}%"


def us1(v):
    return "n/a" if v is None else f"{v:.1f}"


def summarize(out: Path, python_jsons) -> int:
    rows = [summary_row(p.stem, json.loads(p.read_text())) for p in sorted((out / "cases").glob("*.json"))]
    order = {name: i for i, (name, _) in enumerate(grid())}
    rows.sort(key=lambda r: order.get(r["case"], len(order)))
    rows += python_rows(python_jsons)
    lines = ["| case | calls | predicted µs | measured µs | time error | paired | drift | energy error | paired energy "
             "| host × | gap µs | GPU busy µs | mismatches | wall s | new ops | headline time, launched at return "
             "| launch latency µs (traced) | unmeasured calls |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "failed" in r:
            lines.append(f"| {r['case']} | failed: {' '.join(r['failed'])} |")
            continue
        bold = lambda v, on: f"**{pct(v)}**" if on else pct(v)  # noqa: E731
        hp = r["headline"] == "paired"
        lines.append(
            f"| {r['case']} | {r['calls']} | {r['predicted_us']:.0f} | {r['measured_us']:.0f} | "
            f"{bold(r['time_error'], not hp)} | {bold(r['paired_time_error'], hp)} | "
            f"{100 * (r['host_drift'] or 0):.0f}% | {bold(r['energy_error'], r['energy_error_headline'] == r['energy_error'])} | "
            f"{bold(r['paired_energy_error'], r['energy_error_headline'] == r['paired_energy_error'] and r['paired_energy_error'] is not None)} | "
            f"{r['host_scale'] or 0:.2f} | {r['gap_us']:.0f} | {r['gpu_busy_us']:.0f} | {r['mismatches']} | "
            f"{r['wall_s'] or 0:.0f} | {r['new_measurements'] or 0} | {pct(r['time_error_headline_at_return'])} | "
            f"{us1(r['launch_latency_us'])} ({us1(r.get('launch_latency_traced_us'))}) | "
            f"{r['unmeasured_calls']} |")
    ok = [r for r in rows if "failed" not in r]

    def dist(key):
        vals = [abs(r[key]) for r in ok if r[key] is not None]
        if not vals:
            return "n/a"
        worst = max(ok, key=lambda r: abs(r[key]) if r[key] is not None else -1)
        return (f"median {100 * statistics.median(vals):.2f}%, worst {100 * max(vals):.2f}% ({worst['case']}), "
                f"{sum(v <= 0.03 for v in vals)}/{len(vals)} within 3%, {sum(v <= 0.05 for v in vals)}/{len(vals)} within 5%")

    head = [f"Cases: {len(rows)} ({len(rows) - len(ok)} failed). Bold: the headline figure of each case.", "",
            f"- time, headline (paired where the host drifted): {dist('time_error_headline')}",
            f"- time, unpaired: {dist('time_error')}",
            f"- time, headline, had every call launched as it returned (no traced launches): "
            f"{dist('time_error_headline_at_return')}",
            f"- energy, headline: {dist('energy_error_headline')}",
            f"- energy, unpaired: {dist('energy_error')}",
            f"- energy, paired (where a host speed reproduces the step): {dist('paired_energy_error')}",
            f"- GPU-seconds: {sum(r['wall_s'] or 0 for r in ok):.0f} s in all", ""]
    (out / "grid.md").write_text("\n".join(head + lines) + "\n")
    print("\n".join(head + lines))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["run", "summarize"])
    parser.add_argument("out", type=Path)
    parser.add_argument("python_jsons", nargs="*", help="summarize: bench/python_bench.py validate outputs")
    parser.add_argument("--only", help="run only the cases whose name matches this regular expression")
    parser.add_argument("--deadline", type=float, default=float("inf"), help="start no case after this many seconds")
    parser.add_argument("--opcost", default=os.path.join("build", "opcost"))
    args = parser.parse_args()
    if args.mode == "run":
        return run(args.out, args.only, args.deadline, args.opcost)
    return summarize(args.out, args.python_jsons)


if __name__ == "__main__":
    sys.exit(main())
