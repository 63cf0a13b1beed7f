#!/usr/bin/env python3
"""Issue 33's summary.json from the three parts of the sweep-width benchmark:

    python3 bench/summarize_sweep_width.py OUT > OUT/summary.json

OUT/scaling   bench/run_sweep_scaling with WORKER_COUNTS (one worker per GPU): configurations per
              second, the speed-up over one GPU, duplicates and lost items (against the grid's, items.txt) of each run;
OUT/fixed     (where present) the same with fixed budgets, every loop running its whole budget;
OUT/kill      bench/run_sweep_kill: a worker killed mid-item;
OUT/neighbour bench/run_neighbour_energy: GPU 0's energy per call alone and beside busy GPUs.

"gpus" and "neighbour_energy_shift" have the issue's keys; `difference` is loaded minus alone in
mJ, `ci95` its 95% interval (the rows' own intervals combined as independent normal ones), and
`relative` the difference over the alone figure. Each configuration's per-round differences are
listed too, so that the round-to-round spread can be set against the interval.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from summarize_sweep_scaling import run_of  # noqa: E402  (one run's figures, as the two-GPU benchmark gives them)


def read_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def scaling(out: Path) -> list[dict]:
    """Each run (bench/summarize_sweep_scaling.run_of) in the issue's keys, with its speed-up over
    the 1-worker run and what it lost against the grid's items (OUT/items.txt, from --dry-run)."""
    walls = {}
    for line in (out / "wall.txt").read_text().splitlines():
        workers, t0, t1 = line.split()
        walls[int(workers)] = float(t1) - float(t0)
    if 1 not in walls:
        sys.exit(f"summarize_sweep_width: {out}/wall.txt has no 1-worker run; the speed-ups are over one GPU's rate")
    items_file = out / "items.txt"
    items = int(items_file.read_text()) if items_file.exists() else None
    runs = []
    for n in sorted(walls):
        r = run_of(out, n, walls[n])
        runs.append({"n": n, "configs_per_s": r["items_per_s"], "wall_s": r["wall_s"], "rows": r["rows"],
                     "duplicates": r["duplicates"], "gpus_named": len(r["gpus"]),
                     "gpu_seconds_measuring": r["measuring_s"],
                     "flagged_rows": r["flagged_rows"],
                     "lost": None if items is None else items - r["distinct_calls"],
                     "rate": r["distinct_calls"] / walls[n]})
    one = next(r for r in runs if r["n"] == 1)
    for r in runs:
        r["speedup"] = round(r["rate"] / one["rate"], 3)
        r["speedup_goal"] = round(0.9 * r["n"], 2)
    for r in runs:
        del r["rate"]
    return runs


def energy(row: dict) -> tuple[float, float] | None:
    """Energy per call (mJ) and its 95% half-width; None where the row has no interval."""
    try:
        value, low, high = (float(row[k]) for k in ("energy_per_call_mJ", "energy_ci95_low_mJ", "energy_ci95_high_mJ"))
    except (KeyError, ValueError):
        return None
    return value, (high - low) / 2


def mean_with_interval(figures: list[tuple[float, float]]) -> tuple[float, float]:
    k = len(figures)
    return sum(v for v, _ in figures) / k, math.sqrt(sum(h * h for _, h in figures)) / k


def window_means(smi: Path, windows: list[tuple[float, float]]) -> dict:
    """Each GPU's mean power (W), temperature (C) and SM clock (MHz) inside the windows."""
    from datetime import datetime, timezone
    per_gpu = defaultdict(lambda: defaultdict(list))
    with open(smi, newline="") as f:
        for row in csv.reader(f):
            if not row or row[0].startswith("timestamp"):
                continue
            try:
                # nvidia-smi runs with TZ=UTC (bench/run_neighbour_energy); times.txt has epoch seconds.
                t = datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=timezone.utc).timestamp()
                gpu, watts, temp, clock = int(row[1]), float(row[2]), float(row[3]), float(row[4])
            except ValueError:
                continue
            if any(a <= t <= b for a, b in windows):
                for key, v in (("W", watts), ("C", temp), ("MHz", clock)):
                    per_gpu[gpu][key].append(v)
    return {str(g): {k: round(statistics.fmean(v), 1) for k, v in d.items()} for g, d in sorted(per_gpu.items())}


def neighbour(out: Path) -> tuple[list[dict], dict]:
    by_config: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    uuids = set()
    for path in sorted(out.glob("rows-*.csv")):
        _, condition, round_ = path.stem.split("-")
        for row in read_rows(path):
            uuids.add(row["device_uuid"])
            by_config[row["args"]][condition].append((int(round_), energy(row), row["flags"]))
    shifts = []
    for config, sides in by_config.items():
        alone = [e for _, e, _ in sorted(sides["alone"]) if e]
        loaded = [e for _, e, _ in sorted(sides["loaded"]) if e]
        if not alone or not loaded:
            shifts.append({"config": config, "alone_mJ": None, "loaded_mJ": None, "difference": None, "ci95": None,
                           "why": "a side without an energy interval"})
            continue
        a, ha = mean_with_interval(alone)
        lo, hl = mean_with_interval(loaded)
        d, hd = lo - a, math.hypot(ha, hl)
        rounds = sorted({r for r, _, _ in sides["alone"]} & {r for r, _, _ in sides["loaded"]})
        per_round = []
        for r in rounds:
            ea = next(e for q, e, _ in sides["alone"] if q == r)
            el = next(e for q, e, _ in sides["loaded"] if q == r)
            if ea and el:
                per_round.append(round((el[0] - ea[0]) / ea[0], 4))
        shifts.append({"config": config, "alone_mJ": round(a, 4), "loaded_mJ": round(lo, 4),
                       "difference": round(d, 4), "ci95": [round(d - hd, 4), round(d + hd, 4)],
                       "relative": round(d / a, 4), "relative_ci95": [round((d - hd) / a, 4), round((d + hd) / a, 4)],
                       "relative_by_round": per_round,
                       "flags": sorted({f for side in sides.values() for _, _, f in side if f})})
    windows = defaultdict(list)
    starts = {}
    for line in (out / "times.txt").read_text().splitlines():
        condition, round_, edge, t = line.split()
        if edge == "start":
            starts[(condition, round_)] = float(t)
        else:
            windows[condition].append((starts[(condition, round_)], float(t)))
    board = {c: window_means(out / "smi.csv", w) for c, w in windows.items()} if (out / "smi.csv").exists() else {}
    loads = [json.loads(p.read_text()) for p in sorted(out.glob("load-*.json"))]
    return shifts, {"measured_gpu_uuids": sorted(uuids), "board_while_measuring": board, "loads": loads}


def main() -> None:
    out = Path(sys.argv[1])
    summary: dict = {}
    if (out / "scaling").is_dir():
        summary["gpus"] = scaling(out / "scaling")
    if (out / "fixed").is_dir():
        summary["gpus_fixed_budgets"] = scaling(out / "fixed")
    if (out / "kill" / "kill.json").exists():
        summary["kill"] = json.loads((out / "kill" / "kill.json").read_text())
    if (out / "neighbour").is_dir():
        summary["neighbour_energy_shift"], summary["neighbour_conditions"] = neighbour(out / "neighbour")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
