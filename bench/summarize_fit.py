"""Issue 26's benchmark: the cost model's held-out errors per family on each GPU's rows, and its
cross-GPU estimates (fitted on one GPU's rows plus only the calibration rows of another,
checked against everything measured on the other), and the time an estimate takes.

    python bench/summarize_fit.py [--small-trees] RESULTS_DIR H100_ROWS.csv[,MORE.csv] H200_ROWS.csv [MODELS_DIR [UNMEASURED_DIR ...]]

--small-trees: every target with the small trees (_fit.BOOSTING), as fits did before a target of
_fit.LARGE_TARGET_CONFIGURATIONS configurations got deeper ones.

Writes RESULTS_DIR/summary.json (the issue's form, fractions) and RESULTS_DIR/fit-<gpu>.txt
(each GPU's table). MODELS_DIR: the validate_<case>.json of bench/run_estimate_models (whole
models with every countable signature estimated), read into summary.json's "models".
UNMEASURED_DIR: a folder of bench/estimate_unmeasured.py's estimate phase (models at a
configuration none of whose signatures was measured, the fit having rows of the same models at
others), its cases read into "models" too, each named with its folder. Needs opcost's package
(PYTHONPATH=build/python) and scikit-learn.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from opcost import _core, _fit

CALIBRATION_SWEEPS = ("fit-calibrate-mm", "fit-calibrate-copy", "fit-calibrate-add")


def held_out(rows, gpu):
    result = _fit.fit_rows(rows)
    families = [{"family": f.family, "gpu": gpu,
                 "time_median_abs_error": f.time["median_abs_error"], "time_p90_abs_error": f.time["p90_abs_error"],
                 "energy_median_abs_error": f.energy["median_abs_error"] if f.energy else None,
                 "energy_p90_abs_error": f.energy["p90_abs_error"] if f.energy else None,
                 "power_median_abs_error": f.power["median_abs_error"] if f.power else None,
                 "host_median_abs_error": f.host["median_abs_error"] if f.host else None,
                 "n_train": f.n_train, "n_test": f.time["n_test"]} for f in result.families]
    return result, families


def cross_gpu(source_rows, target_rows, target_gpu):
    """Fit on the source's rows and the target's calibration rows; estimate every other target row."""
    calibration = [r for r in target_rows if r.get("sweep") in CALIBRATION_SWEEPS]
    source_gpu = {r["device_name"] for r in source_rows}
    result = _fit.fit_rows(list(source_rows) + calibration, train_gpus=sorted(source_gpu))
    model = _core.CostModel.from_text(result.model_json, "cross-GPU fit")
    by_family, seconds, n = {}, 0.0, 0
    for r in target_rows:
        if r.get("sweep") in CALIBRATION_SWEEPS:
            continue
        try:
            t0 = time.perf_counter()
            e = model.estimate(r["op"], r["args"], r["cache_mode"] or "warm", target_gpu)
            seconds += time.perf_counter() - t0
            n += 1
        except ValueError:
            continue  # a family the source rows had no model of
        f = by_family.setdefault(e["family"], {"time": [], "energy": [], "power": [], "out_of_range": 0})
        f["time"].append(e["time_us"]["estimate"] / float(r["time_median_us"]) - 1)
        if e["energy_mJ"] and r["energy_per_call_mJ"]:
            f["energy"].append(e["energy_mJ"]["estimate"] / float(r["energy_per_call_mJ"]) - 1)
        if e["power_W"] and r["power_W"]:
            f["power"].append(e["power_W"] / float(r["power_W"]) - 1)
        f["out_of_range"] += bool(e["out_of_range"])
    med = lambda v: statistics.median(abs(x) for x in v) if v else None  # noqa: E731
    cross = [{"family": fam, "time_median_abs_error": med(f["time"]), "energy_median_abs_error": med(f["energy"]),
              "power_mape": statistics.fmean(abs(x) for x in f["power"]) if f["power"] else None,
              "time_median_signed_error": statistics.median(f["time"]), "n_test": len(f["time"]),
              "out_of_range": f["out_of_range"]}
             for fam, f in sorted(by_family.items())]
    return result, cross, seconds / max(n, 1)


def models(models_dir):
    """Each whole-model case: the paired time error (by round) and the energy error, with what was
    estimated and how long the answer took."""
    cases = []
    for path in sorted(Path(models_dir).glob("validate_*.json")):
        d = json.loads(path.read_text())
        paired_energy = d.get("paired_energy") or {}
        cases.append({"case": path.stem.removeprefix("validate_"),
                      "paired_time_error": d["paired"]["time_error_median"],
                      "paired_energy_error": paired_energy.get("energy_error"),
                      "energy_error": d["error"]["energy"],
                      "energy_error_note": paired_energy.get("why"),
                      "signatures_estimated": d["estimated"]["count"],
                      "estimated_outside_fit": d["estimated"]["outside_fit"],
                      "signatures_measured": len({o["name"] for o in d["ops"]}) - d["estimated"]["count"],
                      "predicted_us": d["predicted"]["time_us"], "measured_us": d["measured"]["time_us"],
                      "predicted_mJ": d["predicted"]["energy_mJ"], "measured_mJ": d["measured"]["energy_mJ"],
                      "wall_s": d.get("bench_wall_s")})
    return cases


def unmeasured(folder):
    """The cases of one estimate run of bench/estimate_unmeasured.py, named "<case> (<folder>)"."""
    cases = []
    for path in sorted(Path(folder).glob("*estimate-case-*.json")):
        d = json.loads(path.read_text())
        est = d.get("estimated") or {}
        anchored = path.name.startswith("anchored-") and "anchored" not in Path(folder).name
        cases.append({"case": f"{d['case']} ({Path(folder).name}{', anchored' if anchored else ''})",
                      "paired_time_error": d.get("paired_time_error"),
                      "paired_energy_error": d.get("paired_energy_error"),
                      "energy_error": d.get("energy_error"),
                      "signatures_estimated": est.get("count"), "estimated_anchored": est.get("anchored"),
                      "estimated_outside_fit": est.get("outside_fit"),
                      "predicted_us": d.get("predicted_time_us"), "measured_us": d.get("measured_time_us"),
                      "predicted_mJ": d.get("predicted_energy_mJ"), "measured_mJ": d.get("measured_energy_mJ"),
                      "wall_s": d.get("validate_wall_s")})
    return cases


def main(out_dir, h100_csv, h200_csv, models_dir=None, *unmeasured_dirs):
    out = Path(out_dir)
    h100 = [r for path in h100_csv.split(",") for r in _fit.rows_from_csv(path)]
    h200 = _fit.rows_from_csv(h200_csv)
    families = []
    for rows, gpu in ((h100, "H100"), (h200, "H200")):
        result, fams = held_out(rows, gpu)
        (out / f"fit-{gpu}.txt").write_text(result.table() + "\n")
        families += fams
    h200_name = next(r["device_name"] for r in h200)
    cross_result, cross, estimate_s = cross_gpu(h100, h200, h200_name)
    cases = (models(models_dir) if models_dir else []) + [c for d in unmeasured_dirs for c in unmeasured(d)]
    summary = {"families": families, "models": cases, "cross_gpu": cross,
               "cross_gpu_direction": "fitted on H100 rows and the H200's calibration rows; estimates of the H200's "
                                      "other rows",
               "estimate_seconds_per_signature": estimate_s,
               "method": json.loads(cross_result.model_json)["method"]}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


def small_trees_only() -> None:
    """Every target fitted with the small trees, whatever its configurations."""
    _fit.LARGE_TARGET_CONFIGURATIONS = 10**9


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--small-trees" in args:
        args.remove("--small-trees")
        small_trees_only()
    if len(args) < 3:
        sys.exit(__doc__)
    main(*args)
