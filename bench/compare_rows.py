#!/usr/bin/env python3
"""Two runs' operator measurements side by side (issue 11: did cheaper loops move the figures?).

    python3 bench/compare_rows.py BASE.csv OTHER.csv [--label NAME]

Each CSV is `opcost db export --csv` (or a dump of the measurements table). Rows are matched by
operator and arguments; the gap probe (the first row) and whole steps are left out. Prints,
for the operators both runs measured: the median and 90th percentile of OTHER / BASE - 1 for the
GPU time, the host time and the energy per call; how many energy differences lie within the two
rows' combined 95% half-widths; the energy differences of the operators measured at the power
cap; and how many of OTHER's operators were timed in their energy loop's settle.
"""
import argparse

import pandas as pd


def load(path):
    d = pd.read_csv(path)
    d = d[d.op.str.startswith("aten")].iloc[1:].copy()  # the first aten row is the gap probe
    d["sig"] = d.op + " " + d.args
    d["half_width"] = (d.energy_ci95_high_mJ - d.energy_ci95_low_mJ) / 2
    return d.set_index("sig")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("base")
    ap.add_argument("other")
    ap.add_argument("--label", default=None)
    a = ap.parse_args()
    base, other = load(a.base), load(a.other)
    both = base.index.intersection(other.index)
    b, o = base.loc[both], other.loc[both]

    def ratio(col):
        return o[col] / b[col] - 1

    def pct(x):
        return f"{100 * x:+.2f}%"

    t, h, e = ratio("time_median_us"), ratio("host_us_per_call"), ratio("energy_per_call_mJ")
    within = int(((o.energy_per_call_mJ - b.energy_per_call_mJ).abs() <= (o.half_width**2 + b.half_width**2) ** 0.5).sum())
    capped = e[b.throttle_reasons.astype(str).str.contains("4|cap")]
    settle = int(o.method.str.contains("settle").sum())
    print(f"{a.label or a.other} against {a.base}: {len(both)} operators in both, {settle} timed in the energy settle")
    print(f"  GPU time:  median {pct(t.median())}, |.| p90 {100 * t.abs().quantile(0.9):.2f}%, max {100 * t.abs().max():.1f}%")
    print(f"  host time: median {pct(h.median())}, |.| p90 {100 * h.abs().quantile(0.9):.1f}%")
    print(f"  energy:    median {pct(e.median())}, |.| p90 {100 * e.abs().quantile(0.9):.1f}%; "
          f"{within} of {len(both)} within the combined 95% half-widths")
    print(f"  energy at the power cap ({len(capped)}): " + ", ".join(pct(v) for v in capped))


if __name__ == "__main__":
    main()
