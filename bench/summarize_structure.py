#!/usr/bin/env python3
"""Summary of bench/structure_check: OUT_DIR CASE... -> a Markdown table on stdout.

For each case: (a) the old and the new build predicting from the same database (the old one's,
migrated by the new build): the operators' summed GPU time and energy come from the database and
must be equal; (b) the prediction of a fresh validate by each build, and whether the two agree
within their 95% intervals (the half-widths added in quadrature, plus the two runs' own measured
step difference for time, since the step time itself moves between runs on a machine)."""
import json
import math
import sys
from pathlib import Path


def load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as e:
        return {"_error": f"{path.name}: {e}"}


def pairs(out: Path, cases, old: str, new: str):
    """(case, old document, new document) for each case whose two documents both load; a row
    naming what is missing for the others."""
    for c in cases:
        o, n = load(out / f"{old}_{c}.json"), load(out / f"{new}_{c}.json")
        if "_error" in o or "_error" in n:
            print(f"| {c} | {o.get('_error', '')} {n.get('_error', '')} |")
            continue
        yield c, o, n


def op_sums(d):
    """The database-derived parts: the per-operator rows' summed GPU time and energy."""
    ops = d.get("ops") or []
    gpu = sum(o.get("gpu_us") or 0 for o in ops)
    energy = [o.get("energy_mJ") for o in ops]
    return gpu, (None if any(e is None for e in energy) or not energy else sum(energy)), len(ops)


def loop_rows(d):
    """Each operator's stored row as the prediction used it (its loop: row id, GPU time, energy,
    wall time), by the operator's signature: the table orders operators by their share, which
    the live host times can swap."""
    return {o["name"]: o.get("loop") for o in d.get("ops") or []}


def rel(a, b):
    if a is None or b is None:
        return None
    return 0.0 if a == b else (a - b) / b if b else math.inf


def fmt(x, unit="", digits=1):
    return "n/a" if x is None else f"{x:.{digits}f}{unit}"


def pct(x):
    return "n/a" if x is None else f"{100 * x:+.3f}%"


def predicted(d):
    p = d.get("predicted") or {}
    return p.get("time_us"), p.get("time_ci95_us"), p.get("energy_mJ"), p.get("energy_ci95_mJ")


def agree(a, ca, b, cb):
    if None in (a, b):
        return "n/a"
    width = math.hypot(ca or 0, cb or 0)
    return "yes" if abs(a - b) <= width else f"no (|Δ| {abs(a - b):.1f} > {width:.1f})"


def main():
    out = Path(sys.argv[1])
    cases = sys.argv[2:]
    print("# Issue 29: predictions before and after the restructuring\n")
    print("## The same database (the old build's, migrated by the new one)\n")
    print("The operators' stored rows (each one's loop: row, GPU µs, energy, wall µs) must be the same; the")
    print("energy per operator also holds its share of the GPU's idle gaps, which follow the host times each run")
    print("measures live, as does the predicted step time.\n")
    print("| case | ops | stored rows identical | Σ op GPU µs old | new | Δ | Σ op energy mJ old | new | Δ "
          "| predicted µs old | new |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c, o, n in pairs(out, cases, "old_predict", "new_predict_on_old"):
        (og, oe, on), (ng, ne, nn) = op_sums(o), op_sums(n)
        lo, ln = loop_rows(o), loop_rows(n)
        same = sum(1 for k, v in lo.items() if k in ln and ln[k] == v)
        print(f"| {c} | {on}/{nn} | {same}/{len(lo)} | {fmt(og)} | {fmt(ng)} | {pct(rel(ng, og))} | {fmt(oe, '', 2)} | {fmt(ne, '', 2)} "
              f"| {pct(rel(ne, oe))} | {fmt(predicted(o)[0])} | {fmt(predicted(n)[0])} |")
    print("\n## Fresh validates, old build against new build (paired: the host as fast on both sides)\n")
    print("| case | paired time error old | new | paired energy error old ± | new ± | agree | host step µs old | new |")
    print("|---|---|---|---|---|---|---|---|")
    for c, o, n in pairs(out, cases, "old_validate", "new_validate"):
        po, pn = o.get("paired") or {}, n.get("paired") or {}
        eo, en = o.get("paired_energy") or {}, n.get("paired_energy") or {}

        def rel_ci(e):  # the paired energy error's 95% half-width, relative: both sides' in quadrature
            if not e.get("measured_mJ"):
                return None
            return math.hypot(e.get("predicted_ci95_mJ") or 0, e.get("measured_ci95_mJ") or 0) / e["measured_mJ"]

        co, cn = rel_ci(eo), rel_ci(en)
        ok = "n/a" if None in (co, cn, eo.get("energy_error"), en.get("energy_error")) else (
            "yes" if abs(eo["energy_error"] - en["energy_error"]) <= math.hypot(co, cn) else "no")
        print(f"| {c} | {pct(po.get('time_error_median'))} | {pct(pn.get('time_error_median'))} "
              f"| {pct(eo.get('energy_error'))} ± {pct(co)} | {pct(en.get('energy_error'))} ± {pct(cn)} | {ok} "
              f"| {fmt((o.get('host') or {}).get('plain_step_us'))} | {fmt((n.get('host') or {}).get('plain_step_us'))} |")
    print("\n## Fresh validates, unpaired (each side's own host speed)\n")
    print("| case | predicted µs old ± | new ± | agree | predicted mJ old ± | new ± | agree "
          "| unpaired time error old | new | energy error old | new |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c, o, n in pairs(out, cases, "old_validate", "new_validate"):
        ot, otc, oe, oec = predicted(o)
        nt, ntc, ne, nec = predicted(n)
        # The measured steps' own difference is part of what two validates may differ by.
        mo, mn = (o.get("measured") or {}).get("time_us"), (n.get("measured") or {}).get("time_us")
        step_move = abs(mo - mn) if None not in (mo, mn) else 0
        po, pn = o.get("paired") or {}, n.get("paired") or {}
        eo, en = (o.get("error") or {}), (n.get("error") or {})
        print(f"| {c} | {fmt(ot)} ± {fmt(otc)} | {fmt(nt)} ± {fmt(ntc)} | {agree(ot, math.hypot(otc or 0, step_move), nt, ntc)} "
              f"| {fmt(oe)} ± {fmt(oec)} | {fmt(ne)} ± {fmt(nec)} | {agree(oe, oec, ne, nec)} "
              f"| {pct(eo.get('time'))} | {pct(en.get('time'))} "
              f"| {pct(eo.get('energy'))} | {pct(en.get('energy'))} |")


if __name__ == "__main__":
    main()
