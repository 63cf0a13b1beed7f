#!/usr/bin/env python3
"""Writes a large sweep export (default 10,000 rows) for the report's size and speed check.

The rows are copies of a real sweep export's rows (tests/data/report/sweep.json, measured on a GPU):
copy k gets one more axis, `replica` = k, so the report aggregates over a 7+1-axis grid of
realistic values. No number is invented; they are repeated. Usage:
    make_big_sweep.py SWEEP_EXPORT.json OUT.json [ROWS]
"""
import copy
import json
import sys


def main() -> int:
    if len(sys.argv) not in (3, 4):
        print("usage: make_big_sweep.py SWEEP_EXPORT.json OUT.json [ROWS]", file=sys.stderr)
        return 2
    source, out = sys.argv[1], sys.argv[2]
    want = int(sys.argv[3]) if len(sys.argv) == 4 else 10_000
    with open(source, encoding="utf-8") as f:
        rows = json.load(f)
    if not isinstance(rows, list) or not rows:
        print(f"{source}: expected the non-empty JSON array of `opcost db export --json`", file=sys.stderr)
        return 2
    big = []
    for i in range(want):
        row = copy.deepcopy(rows[i % len(rows)])
        axes = dict(row.get("axes") or {})
        axes["replica"] = i // len(rows)
        row["axes"] = axes
        if "db_id" in row:
            row["db_id"] = i + 1
        big.append(row)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(big, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
