#!/usr/bin/env python3
"""Writes tests/data/fit/expected_held_out.json: the held-out errors that fitting each committed
dataset gives, which tests/python/test_fit.py checks a refit reproduces:

- h100-conv-mm-rows.csv: issue 13's H100 sweep (conv2d, mm and linear;
  bench/results/2026-11-23-h100-sweep/measurements.csv, as committed). It has no calibration rows:
  its only calls moving 256 MiB are compute-bound GEMMs, so no call runs near the byte roofline,
  no memory-bound call has a base power, and its families have time and host models only.
- h100-calibrated-rows.csv: a cut of issue 26's H100 rows with their calibration rows
  (make_h100_calibrated_rows.py): every family, with energy and power models.

Each family's errors include those of estimates scaled from the nearest other size of a call
(`scaled_time`, `scaled_energy`: None where too few calls have one).

Run it again only where the fit is meant to change (its features, targets or parameters, or the
scikit-learn it records), and say why in the commit:

    PYTHONPATH=build/python .venv/bin/python tests/data/fit/make_expected_held_out.py
"""
import json
import sys
from pathlib import Path

import sklearn

from opcost import _fit

HERE = Path(__file__).resolve().parent
DATASETS = ("h100-conv-mm-rows.csv", "h100-calibrated-rows.csv")
EXPECTED = HERE / "expected_held_out.json"


def held_out_errors(fit: _fit.Fit) -> dict:
    """What a refit must reproduce: per family its rows and each target's held-out errors."""
    return {"data_hash": fit.data_hash,
            "skipped": fit.skipped,
            "rows_left_out": fit.rows_left_out,
            "families": {f.family: {"n_train": f.n_train, "n_configurations": f.n_configurations,
                                    "time": f.time, "energy": f.energy, "power": f.power, "host": f.host,
                                    "scaled_time": f.scaled_time, "scaled_energy": f.scaled_energy}
                         for f in fit.families}}


def main() -> int:
    document = {"scikit_learn": sklearn.__version__, "boosting": _fit.BOOSTING,
                "boosting_large": _fit.BOOSTING_LARGE, "large_target_configurations": _fit.LARGE_TARGET_CONFIGURATIONS,
                "time_floor_us": _fit.TIME_FLOOR_US,
                "bandwidth_min_bytes": _fit.BANDWIDTH_MIN_BYTES, "near_roofline": _fit.NEAR_ROOFLINE,
                "datasets": {}}
    for name in DATASETS:
        fit = _fit.fit_rows(_fit.rows_from_csv(HERE / name))
        document["datasets"][name] = held_out_errors(fit)
        print(f"{name}:\n{fit.table()}")
    EXPECTED.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    print(f"wrote {EXPECTED}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
