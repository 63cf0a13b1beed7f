"""Which rows move a cross-GPU estimate (issue 26): the cost model fitted on a base of one GPU's
rows, then on the base plus each sweep of some new rows alone, then on the base plus all of
them, each time with the target GPU's calibration rows; every other target row estimated
(bench/summarize_fit.py's cross_gpu). Prints each fit's median |error| of time and energy per
family.

    PYTHONPATH=build/python python bench/cross_gpu_by_rows.py [--small-trees] TARGET.csv BASE.csv[,MORE.csv] NEW.csv[,MORE.csv] [FAMILY ...]

FAMILY: the families to print (all without). --small-trees: every target with the small trees
(summarize_fit.py's). Needs scikit-learn.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import summarize_fit  # noqa: E402  (bench/'s own module, beside this file)
from opcost import _fit  # noqa: E402


def rows_of(paths: str):
    return [r for p in paths.split(",") for r in _fit.rows_from_csv(p)]


def main(argv) -> int:
    argv = list(argv)
    if "--small-trees" in argv:
        argv.remove("--small-trees")
        summarize_fit.small_trees_only()
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    target, base, new = rows_of(argv[0]), rows_of(argv[1]), rows_of(argv[2])
    families = set(argv[3:])
    target_gpu = next(r["device_name"] for r in target)
    sweeps = sorted({r.get("sweep") or "" for r in new} - set(summarize_fit.CALIBRATION_SWEEPS))
    fits = [("base", base)]
    fits += [(f"base + {s}", base + [r for r in new if (r.get("sweep") or "") == s]) for s in sweeps]
    fits.append(("base + all", base + new))
    for name, rows in fits:
        _, cross, _ = summarize_fit.cross_gpu(rows, target, target_gpu)
        shown = [c for c in cross if not families or c["family"] in families]
        print(f"{name} ({len(rows)} rows): " + ", ".join(
            f"{c['family']} time {100 * c['time_median_abs_error']:.1f}% energy "
            f"{100 * c['energy_median_abs_error']:.1f}%" for c in shown), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
