"""Summarises bench/run_sweep_scaling's OUT directory as JSON: for each run (1 and 2 workers) the
items, their rows, duplicates (calls stored more than once), the GPUs (UUIDs) the rows name, the
wall time from the sweep's start to its end, items per second, and the mean seconds a measurement
took; then each run's speed-up over the 1-worker run in items per second.

    python3 bench/summarize_sweep_scaling.py OUT
"""
import csv
import json
import sys
from collections import Counter
from pathlib import Path


def run_of(out: Path, workers: int, wall_s: float) -> dict:
    with open(out / f"rows-{workers}.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    calls = Counter((r["op"], r["args"]) for r in rows)
    flagged = [r for r in rows if r["flags"]]
    return {
        "workers": workers,
        "rows": len(rows),
        "distinct_calls": len(calls),
        "duplicates": sum(n - 1 for n in calls.values()),
        "gpus": sorted({r["device_uuid"] for r in rows}),
        "rows_per_gpu": dict(Counter(r["device_uuid"] for r in rows)),
        "flagged_rows": len(flagged),
        "wall_s": round(wall_s, 2),
        "items_per_s": round(len(calls) / wall_s, 4),
        "mean_measurement_s": round(sum(float(r["seconds"]) for r in rows) / len(rows), 3),
        "measuring_s": round(sum(float(r["seconds"]) for r in rows), 1),
    }


def main() -> None:
    out = Path(sys.argv[1])
    walls = {}
    for line in (out / "wall.txt").read_text().splitlines():
        workers, t0, t1 = line.split()
        walls[int(workers)] = float(t1) - float(t0)
    runs = [run_of(out, w, walls[w]) for w in sorted(walls)]
    summary = {"runs": runs}
    one = next((r for r in runs if r["workers"] == 1), None)
    if one:
        for r in runs:
            r["speedup_items_per_s"] = round(r["items_per_s"] / one["items_per_s"], 3)
        if len(runs) == 2:  # the two-GPU benchmark's key (bench/results/2026-11-23-h200x2-sweep-scaling)
            summary["speedup_items_per_s"] = runs[1]["speedup_items_per_s"]
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
