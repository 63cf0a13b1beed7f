"""Issue 26: does the interval fitted for estimates scaled from another size (the fit's `scaled`,
per unit of distance ln 2 + |ln(extent ratio)|) cover what it claims, on calls it was not fitted
on, and how does it compare with the width those estimates had before (the trees' relative width)?

    PYTHONPATH=build/python python bench/scaled_interval_check.py OUT ROWS.csv[,MORE.csv] [--coverage 0.95]

On the CPU, from committed GPU rows (opcost db export --csv). The rows' calls are split in two by
call group (the operator with its arguments' digits blanked: the calls a scaled estimate pairs),
so no pair crosses the split, in --splits different ways (each split's halves are random: one
split alone moved the totals by a point). For each family and target (time, energy), each half's scaled
residuals (python/opcost/_fit.py's _scaled_residuals: each distinct call estimated from its
nearest other size) give the interval, and the other half is checked against it: the share of
its calls whose measured figure lies inside, and the interval's mean half-width. The same for the
trees' relative width (the full fit's held-out conformal quantile), which a scaled estimate kept
before. Then, over every family and target, the same check for other forms of the distance the
interval grows with (why the fit uses ln 2 + |ln ratio|). Writes OUT/scaled-interval.json and
OUT/scaled-interval.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import statistics
import sys
from pathlib import Path

from opcost import _fit


def _half(row: "_fit._Row", split: int) -> int:
    """Which half a row's call group falls in, in split number `split`: stable across runs and
    machines."""
    return hashlib.sha256(f"{split}|{'|'.join(_fit.call_group(row))}".encode()).digest()[0] & 1


# Forms of the distance an interval could grow with, of ln_ratio = |ln(extent ratio)|; the fit's
# first.
FORMS = {"ln 2 + ln_ratio (the fit's)": _fit._scaled_distance,
         "ln_ratio": lambda ln_ratio: ln_ratio,
         "sqrt(ln_ratio)": lambda ln_ratio: math.sqrt(ln_ratio),
         "1 (no distance)": lambda ln_ratio: 1.0}
TREES = "trees' relative width (before)"


def _check(calibrate, test, trees_halfwidth, coverage, form):
    """On `test`, for the interval of `form` fitted on `calibrate`: (calls inside, the sum of their
    half-widths, calls); and for the trees' fixed half-width: (calls inside, the sum, calls)."""
    if not calibrate or not test:
        return (0, 0.0, 0), (0, 0.0, 0)
    q = _fit._scaled_interval(calibrate, coverage, distance=form)["log_halfwidth_per_distance"]
    fitted = (sum(abs(r) <= q * form(d) for r, d in test), sum(q * form(d) for _, d in test), len(test))
    trees = (sum(abs(r) <= trees_halfwidth for r, _ in test), trees_halfwidth * len(test), len(test))
    return fitted, trees


def _add(total, part):
    return [a + b for a, b in zip(total, part)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("rows", help="CSV files of opcost db export --csv, comma-separated")
    ap.add_argument("--coverage", type=float, default=_fit.COVERAGE)
    ap.add_argument("--splits", type=int, default=10, help="random two-way splits of the call groups (default 10)")
    args = ap.parse_args()
    if not 1 <= args.splits <= 1000:
        print(f"scaled_interval_check: --splits {args.splits}: give 1 to 1000", file=sys.stderr)
        return 2
    raw = []
    for path in args.rows.split(","):
        try:
            raw += _fit.rows_from_csv(path)
        except OSError as e:
            print(f"scaled_interval_check: {path}: {e.strerror}", file=sys.stderr)
            return 2
    fit = _fit.fit_rows(raw, coverage=args.coverage)
    model = json.loads(fit.model_json)
    rows, left_out = _fit._usable(raw)
    rows = _fit.with_features(rows, _fit.gpu_profiles(rows), left_out)
    fits = {}  # (family, target) -> [inside, half-widths, calls] of the fit's form, over every split
    trees = {}  # the same for the trees' width
    forms = {name: [0, 0.0, 0] for name in list(FORMS) + [TREES]}
    per_split = {name: [] for name in forms}  # each split's coverage over every family and target
    for split in range(args.splits):
        this_split = {name: [0, 0.0, 0] for name in forms}
        for family, spec in sorted(model["families"].items()):
            frows = [r for r in rows if r.work["family"] == family]
            for target in _fit.SCALED_TARGETS:
                if target not in spec["targets"]:
                    continue
                y_of = _fit.TARGETS[target]
                halves = [_fit._scaled_residuals([r for r in frows if _half(r, split) == h], y_of) for h in (0, 1)]
                for h in (0, 1):
                    for name, form in FORMS.items():
                        fitted, by_trees = _check(halves[1 - h], halves[h],
                                                  spec["targets"][target]["interval_log_halfwidth"], args.coverage,
                                                  form)
                        this_split[name] = _add(this_split[name], fitted)
                        if form is _fit._scaled_distance:
                            key = (family, target)
                            fits[key] = _add(fits.get(key, [0, 0.0, 0]), fitted)
                            trees[key] = _add(trees.get(key, [0, 0.0, 0]), by_trees)
                            this_split[TREES] = _add(this_split[TREES], by_trees)
        for name, total in this_split.items():
            forms[name] = _add(forms[name], total)
            if total[2]:
                per_split[name].append(total[0] / total[2])
    results = [{"family": family, "target": target, "n_test": n // args.splits,
                "fitted_covered": inside / n, "fitted_mean_halfwidth": width / n,
                "trees_covered": trees[(family, target)][0] / n,
                "trees_halfwidth": trees[(family, target)][1] / n}
               for (family, target), (inside, width, n) in sorted(fits.items()) if n]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    overall = [{"form": name, "covered": c / n, "covered_min": min(per_split[name]),
                "covered_max": max(per_split[name]), "mean_halfwidth": w / n, "n_test": n // args.splits}
               for name, (c, w, n) in forms.items() if n]
    document = {"rows": args.rows, "coverage": args.coverage, "splits": args.splits, "data_hash": fit.data_hash,
                "checks": results, "forms": overall}
    (out / "scaled-interval.json").write_text(json.dumps(document, indent=1) + "\n")
    pct = lambda v: f"{100 * v:.0f}%"  # noqa: E731
    width = lambda v: f"±{100 * math.expm1(v):.0f}%"  # noqa: E731
    lines = [f"Scaled estimates' intervals at {pct(args.coverage)}, each half of the call groups checked against the "
             f"other's, over {args.splits} splits ({args.rows}; fit {fit.data_hash[:19]}):", "",
             "| family | target | calls checked | fitted: covered | fitted: mean half-width | trees' width: covered "
             "| trees' half-width |", "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['family']} | {r['target']} | {r['n_test']} | {pct(r['fitted_covered'])} | "
                     f"{width(r['fitted_mean_halfwidth'])} | {pct(r['trees_covered'])} | "
                     f"{width(r['trees_halfwidth'])} |")
    lines += ["", "Over every family and target, by the distance the interval grows with:", "",
              "| interval's form | calls checked | covered | covered, range over the splits | mean half-width |",
              "|---|---|---|---|---|"]
    for f in overall:
        lines.append(f"| {f['form']} | {f['n_test']} | {100 * f['covered']:.1f}% | "
                     f"{100 * f['covered_min']:.1f}–{100 * f['covered_max']:.1f}% | {width(f['mean_halfwidth'])} |")
    (out / "scaled-interval.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
