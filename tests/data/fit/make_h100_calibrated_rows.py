#!/usr/bin/env python3
"""Writes tests/data/fit/h100-calibrated-rows.csv: a small cut of issue 26's H100 rows
(bench/results/2026-11-26-fit/rows-h100.csv) that tests/python/test_fit.py fits energy and power
on. Unlike h100-conv-mm-rows.csv it has the calibration rows (sweeps fit-calibrate-*: GEMMs at the
FLOP roofline, copies and adds moving 1-2 GiB at the byte roofline), so the GPU's draw at either
roofline, and with it each call's base power, is known. Every one of them is kept, and per
operator family 16 of its other rows, evenly spaced by id: enough configurations for a model of
every family, few enough to fit in seconds.

Run it again only where that file of rows changes:

    PYTHONPATH=build/python .venv/bin/python tests/data/fit/make_h100_calibrated_rows.py
"""
import csv
import sys
from pathlib import Path

from opcost import _core

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parents[2] / "bench" / "results" / "2026-11-26-fit" / "rows-h100.csv"
OUT = HERE / "h100-calibrated-rows.csv"
PER_FAMILY = 16


def main() -> int:
    with open(SOURCE, newline="") as f:
        reader = csv.DictReader(f)
        fields, rows = reader.fieldnames, list(reader)
    rows.sort(key=lambda r: int(r["id"]))
    kept = [r for r in rows if r["sweep"].startswith("fit-calibrate")]
    by_family = {}
    for r in rows:
        work = _core.call_work(r["op"], r["args"])
        if work is not None and not r["sweep"].startswith("fit-calibrate"):
            by_family.setdefault(work["family"], []).append(r)
    for family, family_rows in sorted(by_family.items()):
        step = max(1, len(family_rows) // PER_FAMILY)
        kept += family_rows[::step][:PER_FAMILY]
    kept.sort(key=lambda r: int(r["id"]))
    with open(OUT, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    print(f"wrote {OUT}: {len(kept)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
