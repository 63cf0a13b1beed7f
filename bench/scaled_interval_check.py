"""Issue 26: does the interval fitted for estimates scaled from another size (the fit's `scaled`,
per unit of distance ln 2 + |ln(extent ratio)|) cover what it claims, on calls it was not fitted
on, and how does it compare with the width those estimates had before (the trees' relative width)?

    PYTHONPATH=build/python python bench/scaled_interval_check.py OUT ROWS.csv[,MORE.csv] [--coverage 0.95]

On the CPU, from committed GPU rows (opcost db export --csv). The rows' calls are split in two by
call group (the operator with its arguments' digits blanked: the calls a scaled estimate pairs),
so no pair crosses the split. For each family and target (time, energy), each half's scaled
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


def _half(row: "_fit._Row") -> int:
    """Which half a row's call group falls in: stable across runs and machines."""
    group = f"{row.device}|{row.op}|{row.overload}|{row.cache_mode}|{_fit._DIGITS.sub('#', row.args)}"
    return hashlib.sha256(group.encode()).digest()[0] & 1


LN2 = math.log(2)
# Forms of the distance an interval could grow with, of ln_ratio = |ln(extent ratio)|; the fit's
# (_fit._scaled_distance) first.
FORMS = {"ln 2 + ln_ratio (the fit's)": lambda ln_ratio: LN2 + ln_ratio,
         "ln_ratio": lambda ln_ratio: ln_ratio,
         "sqrt(ln_ratio)": lambda ln_ratio: math.sqrt(ln_ratio),
         "1 (no distance)": lambda ln_ratio: 1.0}


def _check(calibrate, test, trees_halfwidth, coverage):
    """Coverage and mean half-width (log space) on `test` of the interval fitted on `calibrate`,
    and of the trees' fixed half-width."""
    if not calibrate or not test:
        return None
    per_distance = _fit._scaled_interval(calibrate, coverage)["log_halfwidth_per_distance"]
    return {"n_calibrate": len(calibrate), "n_test": len(test),
            "fitted_covered": sum(abs(r) <= per_distance * d for r, d in test) / len(test),
            "fitted_mean_halfwidth": statistics.fmean(per_distance * d for _, d in test),
            "trees_covered": sum(abs(r) <= trees_halfwidth for r, _ in test) / len(test),
            "trees_halfwidth": trees_halfwidth}


def _form_check(halves, form, coverage):
    """(covered, mean half-width × n, n) of `form` over both halves, each against the other."""
    covered = width = n = 0
    for h in (0, 1):
        calibrate, test = halves[1 - h], halves[h]
        if not calibrate or not test:
            continue
        distance = lambda d: form(d - LN2)  # noqa: E731 (the residuals carry the fit's distance)
        q = _fit._conformal_quantile([abs(r) / distance(d) for r, d in calibrate], coverage)
        covered += sum(abs(r) <= q * distance(d) for r, d in test)
        width += sum(q * distance(d) for _, d in test)
        n += len(test)
    return covered, width, n


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("rows", help="CSV files of opcost db export --csv, comma-separated")
    ap.add_argument("--coverage", type=float, default=_fit.COVERAGE)
    args = ap.parse_args()
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
    results = []
    forms = {name: [0, 0.0, 0] for name in FORMS}
    trees_total = [0, 0.0, 0]
    for family, spec in sorted(model["families"].items()):
        frows = [r for r in rows if r.work["family"] == family]
        for target in _fit.SCALED_TARGETS:
            if target not in spec["targets"]:
                continue
            y_of = _fit.TARGETS[target]
            halves = [_fit._scaled_residuals([r for r in frows if _half(r) == h], y_of) for h in (0, 1)]
            checks = [_check(halves[1 - h], halves[h], spec["targets"][target]["interval_log_halfwidth"],
                             args.coverage) for h in (0, 1)]
            checks = [c for c in checks if c]
            if not checks:
                continue
            for name, form in FORMS.items():
                forms[name] = [a + b for a, b in zip(forms[name], _form_check(halves, form, args.coverage))]
            for c in checks:
                trees_total[0] += c["trees_covered"] * c["n_test"]
                trees_total[1] += c["trees_halfwidth"] * c["n_test"]
                trees_total[2] += c["n_test"]
            n = sum(c["n_test"] for c in checks)
            mean = lambda key: sum(c[key] * c["n_test"] for c in checks) / n  # noqa: E731
            results.append({"family": family, "target": target, "n_test": n,
                            "fitted_covered": mean("fitted_covered"),
                            "fitted_mean_halfwidth": mean("fitted_mean_halfwidth"),
                            "trees_covered": mean("trees_covered"),
                            "trees_halfwidth": checks[0]["trees_halfwidth"]})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    overall = [{"form": name, "covered": c / n, "mean_halfwidth": w / n, "n_test": n}
               for name, (c, w, n) in list(forms.items()) + [("trees' relative width (before)", trees_total)] if n]
    document = {"rows": args.rows, "coverage": args.coverage, "data_hash": fit.data_hash, "checks": results,
                "forms": overall}
    (out / "scaled-interval.json").write_text(json.dumps(document, indent=1) + "\n")
    pct = lambda v: f"{100 * v:.0f}%"  # noqa: E731
    width = lambda v: f"±{100 * math.expm1(v):.0f}%"  # noqa: E731
    lines = [f"Scaled estimates' intervals at {pct(args.coverage)}, each half of the call groups checked against the "
             f"other's ({args.rows}; fit {fit.data_hash[:19]}):", "",
             "| family | target | calls checked | fitted: covered | fitted: mean half-width | trees' width: covered "
             "| trees' half-width |", "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['family']} | {r['target']} | {r['n_test']} | {pct(r['fitted_covered'])} | "
                     f"{width(r['fitted_mean_halfwidth'])} | {pct(r['trees_covered'])} | "
                     f"{width(r['trees_halfwidth'])} |")
    lines += ["", "Over every family and target, by the distance the interval grows with:", "",
              "| interval's form | calls checked | covered | mean half-width |", "|---|---|---|---|"]
    for f in overall:
        lines.append(f"| {f['form']} | {f['n_test']} | {100 * f['covered']:.1f}% | {width(f['mean_halfwidth'])} |")
    (out / "scaled-interval.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
