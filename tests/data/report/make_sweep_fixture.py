#!/usr/bin/env python3
"""Writes sweep.json, the report's sweep fixture, from a committed real sweep: the rows of sweep
conv2d-resnet in bench/results/2026-11-23-h100-sweep/measurements.csv (`opcost db export --csv` on
an H100), put back into the shape `opcost db export --json --sweep conv2d-resnet` writes: each row
the measurement document (columns mapped to their paths by the record's field table,
src/core/store/measurement_record.cpp) with "sweep" and "axes" (numbers as numbers, as the grid
file gave them). No number is made up: each is the CSV's.

    python3 tests/data/report/make_sweep_fixture.py   # from the repository's root
"""
import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = ROOT / "bench/results/2026-11-23-h100-sweep/measurements.csv"
SWEEP = "conv2d-resnet"

# CSV column -> path in the document (measurement_record.cpp's field table), and its type.
FIELDS = {
    "id": ("db_id", int), "created_at": ("created_at", str), "opcost_version": ("environment/opcost", str),
    "op": ("op", str), "overload": ("overload", str), "args": ("args", str), "args_hash": ("args_hash", str),
    "dtype": ("dtype", str), "device_kind": ("device_kind", str), "device_name": ("device", str),
    "device_uuid": ("environment/gpu_uuid", str), "driver_version": ("environment/driver", str),
    "cuda_version": ("environment/cuda", str), "torch_version": ("environment/torch", str),
    "cache_mode": ("cache_mode", str), "method": ("method", str), "autocast": ("autocast", str),
    "time_median_us": ("time_us/median", float), "time_mean_us": ("time_us/mean", float),
    "time_clipped_mean_us": ("time_us/clipped_mean", float), "time_min_us": ("time_us/min", float),
    "time_stdev_us": ("time_us/stdev", float), "time_ci95_low_us": ("time_us/ci95_low", float),
    "time_ci95_high_us": ("time_us/ci95_high", float), "time_samples": ("time_us/samples", int),
    "stop_reason": ("time_us/stop_reason", str), "host_us_per_call": ("host_us_per_call/wall", float),
    "host_cpu_us_per_call": ("host_us_per_call/cpu", float), "energy_per_call_mJ": ("energy_mJ/per_call", float),
    "energy_above_idle_mJ": ("energy_mJ/above_idle", float), "energy_ci95_low_mJ": ("energy_mJ/ci95_low", float),
    "energy_ci95_high_mJ": ("energy_mJ/ci95_high", float), "energy_unavailable": ("energy_unavailable", str),
    "power_W": ("power_W/average", float), "idle_power_W": ("power_W/idle", float),
    "loop_wall_us_per_call": ("energy_mJ/loop_wall_us_per_call", float), "sm_clock_MHz": ("clocks_MHz/sm", int),
    "mem_clock_MHz": ("clocks_MHz/mem", int), "temperature_C": ("temperature_C/after", int),
    "throttle_reasons": ("throttle_reasons", str), "calls": ("measured/calls", int),
    "seconds": ("measured/seconds", float),
}


def axis_value(text):
    """A grid's value as its YAML gave it: a whole number, a number, or text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def document(row):
    doc = {}
    for column, (path, kind) in FIELDS.items():
        if row[column] == "":
            continue
        *parents, leaf = path.split("/")
        at = doc
        for p in parents:
            at = at.setdefault(p, {})
        at[leaf] = kind(row[column])
    doc["flags"] = [f for f in row["flags"].split(",") if f]
    doc["sweep"] = row["sweep"] or None
    doc["axes"] = {c[len("axis_"):]: axis_value(v) for c, v in row.items() if c.startswith("axis_") and v != ""}
    return doc


def main():
    with SOURCE.open(newline="") as f:
        rows = [document(r) for r in csv.DictReader(f) if r["sweep"] == SWEEP]
    out = Path(__file__).resolve().parent / "sweep.json"
    # One row a line: a diff of the fixture reads row by row.
    out.write_text("[\n" + ",\n".join(json.dumps(r) for r in rows) + "\n]\n")
    print(f"{out}: {len(rows)} rows of sweep {SWEEP}")


if __name__ == "__main__":
    main()
