"""Issue 26, cross-GPU: how much faster each family's calls ran on one GPU than on another, by
bytes moved, from rows both GPUs measured (the same call, cache mode and arguments).

    PYTHONPATH=build/python python bench/cross_gpu_speedup.py OUT A_ROWS.csv B_ROWS.csv

On the CPU, from committed rows (opcost db export --csv). The cost model carries a fit across
GPUs through each GPU's achieved rates (its FLOP rate per dtype and its DRAM byte rate from the
calibration copies): a memory-bound call is estimated faster on the other GPU by the ratio of
their byte rates. This shows, per family and range of bytes, the median ratio of the two GPUs'
times (A's time over B's) beside that byte-rate ratio, and so where a family's calls are not
bound by DRAM bandwidth. Writes OUT/cross-gpu-speedup.md and .json.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
from pathlib import Path

from opcost import _fit

BYTE_RANGES = ((0, 8 << 20), (8 << 20, 64 << 20), (64 << 20, None))  # the L2 is 50 MiB on both boards


def _calls(path: str):
    rows, _ = _fit._usable(_fit.rows_from_csv(path))
    calls = collections.defaultdict(list)
    for r in rows:
        calls[(r.op, r.overload, r.args, r.cache_mode)].append(r)
    return rows, calls


def _label(lo: int, hi) -> str:
    return f"{lo >> 20}–{hi >> 20} MiB" if hi else f"≥ {lo >> 20} MiB"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("a_rows")
    ap.add_argument("b_rows")
    args = ap.parse_args()
    try:
        a_rows, a = _calls(args.a_rows)
        b_rows, b = _calls(args.b_rows)
    except OSError as e:
        print(f"cross_gpu_speedup: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    devices = []
    for path, rows in ((args.a_rows, a_rows), (args.b_rows, b_rows)):
        found = sorted({r.device for r in rows})
        if len(found) != 1:
            print(f"cross_gpu_speedup: {path}: give the rows of one GPU; it has "
                  f"{', '.join(found) if found else 'no usable row'}", file=sys.stderr)
            return 2
        devices += found
    profiles = {**_fit.gpu_profiles(a_rows), **_fit.gpu_profiles(b_rows)}
    byte_rate_ratio = profiles[devices[1]]["achieved_GBps"] / profiles[devices[0]]["achieved_GBps"]
    by_family = collections.defaultdict(list)
    for key in a.keys() & b.keys():
        first = a[key][0]
        speedup = statistics.median(r.time_us for r in a[key]) / statistics.median(r.time_us for r in b[key])
        by_family[first.work["family"]].append((first.work["bytes"], speedup))
    results = []
    for family, calls in sorted(by_family.items()):
        for lo, hi in BYTE_RANGES:
            inside = [s for n, s in calls if n >= lo and (hi is None or n < hi)]
            if inside:
                results.append({"family": family, "bytes": _label(lo, hi), "calls": len(inside),
                                "median_speedup": statistics.median(inside)})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    document = {"a": devices[0], "b": devices[1], "byte_rate_ratio": byte_rate_ratio,
                "rows": [args.a_rows, args.b_rows], "by_family_and_bytes": results}
    (out / "cross-gpu-speedup.json").write_text(json.dumps(document, indent=1) + "\n")
    lines = [f"Median time on {devices[0]} over time on {devices[1]}, per family and bytes moved, of the calls both "
             f"measured. The ratio of their calibrated DRAM byte rates, which the cost model scales memory-bound "
             f"calls by: {byte_rate_ratio:.2f}.", "", "| family | bytes moved | calls | median speedup |",
             "|---|---|---|---|"]
    lines += [f"| {r['family']} | {r['bytes']} | {r['calls']} | {r['median_speedup']:.2f} |" for r in results]
    (out / "cross-gpu-speedup.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
