"""opcost.fit and opcost.estimate: a cost model fitted from the database's measurements, for the
calls never measured (issue 26; docs/estimate.md).

Method: per operator family, gradient-boosted regression-tree ensembles (scikit-learn's
``GradientBoostingRegressor``), one each for a call's time, energy, power and host time. Why
these: the paper opcost's documents start from (Braun et al., TACO 2021) found tree ensembles over
hardware-independent features portable and fast; on our rows boosting small trees matched its
extra-trees and beat a random forest, and it stays small enough to store as JSON (a pickle would
run code when read: a shared database is hostile input).

The time (and the energy) is fitted as its ratio to a base, the call's roofline time on the GPU's
achieved rates plus a fixed cost, in log space: what is learned is how far a call stays from its
roofline, which carries to sizes the rows did not have (the roofline moves with them), where a
tree fitted on times alone would repeat the largest time it saw. To a GPU the rows did not have,
the C++ estimate reads the trees at a fitted GPU's rates and moves the roofline part of the time
(``CostModel::estimate``; each family's ``gpus`` says which GPUs fitted it).

The features are computed by the C++ core, the same code every estimate runs
(``_core.cost_features``). Held-out errors come from 5-fold cross-validation split by
configuration (a call's operator and shapes, whatever its data, cache mode or GPU), never by
repeat; each interval is the ``coverage`` quantile of its family's cross-validated |log errors|.
"""

from __future__ import annotations

import csv
import datetime
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from . import _core
from ._export import export_rows

COVERAGE = 0.95  # the intervals', as every other interval opcost gives
MIN_CONFIGURATIONS = 8  # fewer distinct configurations in a family: no model (its errors would mean nothing)
# The targets a row at another size is scaled for (predict_estimates.cpp; host time is the model's
# ratio), and the fewest calls with such a neighbour that fit their own interval.
SCALED_TARGETS = ("time", "energy")
MIN_SCALED_CALLS = 8
FOLDS = 5
# Small trees, many of them, a slow rate: steady on a few hundred rows; about 100 KB of JSON a target.
BOOSTING = dict(n_estimators=200, max_depth=3, learning_rate=0.05, subsample=1.0, random_state=0)
# A target (a family's time, energy, power or host time) fitted on at least
# LARGE_TARGET_CONFIGURATIONS configurations gets deeper trees, and more of them. With the H100's
# dense grids (bench/results/2026-11-27-h100-fit-dense/) the small trees fitted convolutions' 364
# configurations so loosely that the H200's were estimated worse than from a fifth of the rows
# (time 4.4% → 8.8%, energy 6.8% → 12.2%; 3.1% and 5.9% with these). Deeper trees on every family
# helped the three largest (convolution, matmul, normalization) and hurt pooling's 64
# configurations: the threshold is from those rows.
BOOSTING_LARGE = dict(BOOSTING, n_estimators=400, max_depth=5)
LARGE_TARGET_CONFIGURATIONS = 150


def boosting_for(configurations: int) -> Dict[str, Any]:
    """The trees' parameters for a target fitted on this many distinct configurations."""
    return BOOSTING_LARGE if configurations >= LARGE_TARGET_CONFIGURATIONS else BOOSTING


TIME_FLOOR_US = _core.TIME_FLOOR_US  # cost_features.h: the base time is roofline + this
_DATA_MODIFIER = re.compile(r":(zeros|range)\[[^\]]*\]")


class FitError(ValueError):
    """The rows cannot make a model: none usable, or none of a family with enough configurations."""


def _sklearn():
    try:
        import sklearn  # noqa: F401
        from sklearn.ensemble import GradientBoostingRegressor
        from sklearn.model_selection import GroupKFold
    except ImportError as e:
        raise ImportError("opcost.fit needs scikit-learn: pip install 'opcost[fit]'") from e
    return sklearn, GradientBoostingRegressor, GroupKFold


def _number(row: Dict[str, str], key: str) -> Optional[float]:
    text = (row.get(key) or "").strip()
    try:
        v = float(text)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def rows_from_csv(path: str | os.PathLike) -> List[Dict[str, str]]:
    """The rows of an ``opcost db export --csv`` file."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def rows_from_db(db: str) -> List[Dict[str, str]]:
    """Every row of a database, as `opcost db export --csv` gives them."""
    return export_rows(db, ["--csv"], rows_from_csv, f"{display_location(db)}: the rows")


@dataclass
class _Row:
    op: str
    args: str
    device: str
    cache_mode: str
    dtype: str
    time_us: float
    energy_mJ: Optional[float]
    host_us: Optional[float]
    power_W: Optional[float]  # the board's mean draw in the energy loop
    idle_W: Optional[float]
    work: Dict[str, Any]
    calibration: bool = False  # a row of the calibration sweeps (CALIBRATION_SWEEP_PREFIX)
    overload: str = ""
    autocast: str = ""
    features: List[float] = field(default_factory=list)
    base_us: float = 0.0
    base_power_W: Optional[float] = None

    @property
    def configuration(self) -> str:
        return self.op + " " + _DATA_MODIFIER.sub("", self.args)


def _usable(raw: Sequence[Dict[str, str]]) -> tuple[List[_Row], Dict[str, int]]:
    rows, left_out = [], {}
    for r in raw:
        op, args, time_us = r.get("op", ""), r.get("args", ""), _number(r, "time_median_us")
        why = None
        if not op or time_us is None or time_us <= 0:
            why = "no time"
        else:
            work = _core.call_work(op, args)
            if work is None:
                why = f"{op}: work not counted"
        if why:
            left_out[why] = left_out.get(why, 0) + 1
            continue
        energy = _number(r, "energy_per_call_mJ")
        host = _number(r, "host_us_per_call")
        power = _number(r, "power_W")
        # A pooled energy is its column's power over the call's time, not the call's own power
        # (docs/energy-method.md, "Pooled columns"): its time is fitted, its energy is not.
        if any(f.startswith(_core.POOLED_ENERGY_FLAG) for f in (r.get("flags") or "").split(",")):
            energy = power = None
            partly = "their energies only: pooled, times kept"
            left_out[partly] = left_out.get(partly, 0) + 1
        rows.append(_Row(op=op, args=args, device=r.get("device_name") or r.get("device_kind") or "",
                         cache_mode=r.get("cache_mode") or "warm", dtype=r.get("dtype") or "", time_us=time_us,
                         energy_mJ=energy if energy and energy > 0 else None,
                         host_us=host if host and host > 0 else None,
                         power_W=power if power and power > 0 else None, idle_W=_number(r, "idle_power_W"), work=work,
                         calibration=(r.get("sweep") or "").startswith(CALIBRATION_SWEEP_PREFIX),
                         overload=r.get("overload") or "", autocast=r.get("autocast") or ""))
    return rows, left_out


def _median(values: List[float]) -> Optional[float]:
    if not values:
        return None
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


# A call moving less than this may run from the L2 cache (50 MB on an H100 or H200) when warm: its
# bytes per second are not the memory's. The calibration grid's copies move 1-2 GiB.
BANDWIDTH_MIN_BYTES = 256 << 20
# A call doing more FLOPs per byte than this may be compute-bound on any GPU: its bytes per second
# say nothing of the memory (an 8192³ GEMM moves 400 MiB at 300 GB/s).
BANDWIDTH_MAX_FLOP_PER_BYTE = 4.0


# The calibration grids' sweeps (bench/grids/fit/calibrate-*.yaml: the same 7 large calls on every
# GPU). Where a GPU has their rows, its rates and draws come from them alone: a rate read from
# whichever call happened to run best would differ between GPUs by the grids swept there (the
# H100's best bf16 GEMM of all its rows ran 11% above the calibration GEMM the H200 had alone,
# and every GEMM estimated for the H200 came out 12% slow).
CALIBRATION_SWEEP_PREFIX = "fit-calibrate"


def gpu_profiles(rows: Iterable[_Row]) -> Dict[str, Dict[str, Any]]:
    """Each device's achieved rates, from its calibration rows where it has them, else from all
    its rows: the best FLOP rate of its matrix products and convolutions
    per dtype; the best byte rate of its memory-bound calls (at most BANDWIDTH_MAX_FLOP_PER_BYTE)
    that move at least BANDWIDTH_MIN_BYTES (where none does, of smaller ones, and said so); the
    median idle draw its rows saw; and its draws near the roofline (_roofline_powers)."""
    profiles: Dict[str, Dict[str, Any]] = {}
    idle: Dict[str, List[float]] = {}
    small_GBps: Dict[str, float] = {}
    any_GBps: Dict[str, float] = {}
    rows_list = list(rows)
    calibrated = {r.device for r in rows_list if r.calibration}
    rows_list = [r for r in rows_list if r.calibration or r.device not in calibrated]
    for r in rows_list:
        p = profiles.setdefault(r.device, {"achieved_tflops": {}, "achieved_GBps": 0.0, "idle_power_W": None})
        if r.work["family"] in ("matmul", "convolution") and r.work["flops"] > 0 and r.dtype:
            rate = r.work["flops"] / r.time_us / 1e6
            p["achieved_tflops"][r.dtype] = max(p["achieved_tflops"].get(r.dtype, 0.0), rate)
        rate = r.work["bytes"] / r.time_us / 1e3
        any_GBps[r.device] = max(any_GBps.get(r.device, 0.0), rate)
        if r.work["bytes"] > 0 and r.work["flops"] <= BANDWIDTH_MAX_FLOP_PER_BYTE * r.work["bytes"]:
            if r.work["bytes"] >= BANDWIDTH_MIN_BYTES:
                p["achieved_GBps"] = max(p["achieved_GBps"], rate)
            else:
                small_GBps[r.device] = max(small_GBps.get(r.device, 0.0), rate)
        if r.idle_W and r.idle_W > 0:
            idle.setdefault(r.device, []).append(r.idle_W)
    for device, p in profiles.items():
        p["rates_from"] = "its calibration rows" if device in calibrated else "all its rows (no calibration rows)"
        p["bandwidth_from"] = f"memory-bound calls moving at least {BANDWIDTH_MIN_BYTES >> 20} MiB"
        if p["achieved_GBps"] == 0 and small_GBps.get(device, 0) > 0:
            p["achieved_GBps"] = small_GBps[device]
            p["bandwidth_from"] = (f"no memory-bound call moved {BANDWIDTH_MIN_BYTES >> 20} MiB: the best of smaller "
                                   "ones, which may run from the L2 cache (sweep bench/grids/fit/calibrate-copy.yaml)")
        elif p["achieved_GBps"] == 0 and any_GBps.get(device, 0) > 0:
            p["achieved_GBps"] = any_GBps[device]
            p["bandwidth_from"] = ("no memory-bound call: the best byte rate of compute-bound ones, below the memory's "
                                   "(sweep bench/grids/fit/calibrate-copy.yaml)")
        p["idle_power_W"] = _median(idle.get(device, []))
        p["compute_power_W"], p["memory_power_W"] = _roofline_powers(
            [r for r in rows_list if r.device == device], p)
    return {d: p for d, p in profiles.items() if p["achieved_GBps"] > 0}


# A call within this fraction of the achieved rate runs at the roofline: its draw is the GPU's there.
NEAR_ROOFLINE = 0.8


def _roofline_powers(rows: List[_Row], profile: Dict[str, Any]) -> tuple[Optional[float], Optional[float]]:
    """The median power of the calls near the achieved FLOP rate of their dtype (compute-bound)
    and of the large calls near the achieved byte rate (memory-bound); None where none is."""
    compute, memory = [], []
    for r in rows:
        if not r.power_W:
            continue
        peak = profile["achieved_tflops"].get(r.dtype)
        if (r.work["family"] in ("matmul", "convolution") and peak
                and r.work["flops"] / r.time_us / 1e6 >= NEAR_ROOFLINE * peak):
            compute.append(r.power_W)
        elif (r.work["bytes"] >= BANDWIDTH_MIN_BYTES
              and r.work["flops"] <= BANDWIDTH_MAX_FLOP_PER_BYTE * r.work["bytes"]
              and r.work["bytes"] / r.time_us / 1e3 >= NEAR_ROOFLINE * profile["achieved_GBps"]):
            memory.append(r.power_W)
    return _median(compute), _median(memory)


def _conformal_quantile(abs_residuals: List[float], coverage: float) -> float:
    """The split-conformal quantile: the ⌈(n+1)·coverage⌉-th smallest |residual| (the largest when
    n is too small for that rank to exist)."""
    s = sorted(abs_residuals)
    rank = min(len(s), math.ceil((len(s) + 1) * coverage))
    return s[rank - 1]


def _errors(log_residuals: List[float]) -> Dict[str, Any]:
    """Held-out errors as fractions: |estimate / measured − 1|."""
    errors = sorted(abs(math.expm1(r)) for r in log_residuals)
    p90 = errors[min(len(errors) - 1, math.ceil(0.9 * len(errors)) - 1)]
    return {"median_abs_error": _median(errors), "p90_abs_error": p90, "n_test": len(errors)}


def _export_trees(model) -> Dict[str, Any]:
    """A fitted GradientBoostingRegressor as arrays (core/estimate/cost_model.h reads them)."""
    trees = []
    for estimator in model.estimators_[:, 0]:
        t = estimator.tree_
        trees.append({"feature": [int(v) for v in t.feature], "threshold": [float(v) for v in t.threshold],
                      "left": [int(v) for v in t.children_left], "right": [int(v) for v in t.children_right],
                      "value": [float(v) for v in t.value[:, 0, 0]]})
    init = model.init_.constant_
    return {"init": float(getattr(init, "flat", [init])[0]), "learning_rate": float(model.learning_rate),
            "trees": trees}


def _fit_target(X: List[List[float]], y: List[float], groups: List[str]) -> tuple[Dict[str, Any], List[float]]:
    """Out-of-fold log residuals (estimate − measured) by configuration, then the model fitted on all rows."""
    _, Regressor, GroupKFold = _sklearn()
    import numpy as np

    Xa, ya = np.asarray(X, dtype=np.float64), np.asarray(y, dtype=np.float64)
    folds = min(FOLDS, len(set(groups)))
    params = boosting_for(len(set(groups)))
    predicted = np.empty_like(ya)
    for train, test in GroupKFold(n_splits=folds).split(Xa, ya, groups):
        predicted[test] = Regressor(**params).fit(Xa[train], ya[train]).predict(Xa[test])
    final = Regressor(**params).fit(Xa, ya)
    return _export_trees(final), [float(v) for v in predicted - ya]


_DIGITS = re.compile(r"\d+")


def _relative(value: Optional[float], base: Optional[float]) -> Optional[float]:
    return math.log(value / base) if value and base else None


# What each target's trees fit, of a row with its features (None: the row has no such figure).
# Energy is fitted on its own, as time is: relative to the base time × the base power
# (cost_features.h: the GPU's draw at the call's roofline side, and idle for the floor), so that
# it carries to a GPU that draws more at the same work. Not as time × power: a row's energy is
# charged over its loop's wall time, longer than its kernel's for a host-bound call. Power is
# relative to the base power; host time is as it is.
TARGETS: Dict[str, Callable[[_Row], Optional[float]]] = {
    "time": lambda r: math.log(r.time_us / r.base_us),
    "energy": lambda r: _relative(1e3 * r.energy_mJ if r.energy_mJ else None,
                                  r.base_us * r.base_power_W if r.base_power_W else None),
    "power": lambda r: _relative(r.power_W, r.base_power_W),
    "host": lambda r: math.log(r.host_us) if r.host_us else None,
}


def with_features(rows: List[_Row], profiles: Dict[str, Dict[str, Any]], left_out: Dict[str, int]) -> List[_Row]:
    """The rows whose features (and base time and power) their GPU's rates give, those set;
    the others counted into ``left_out`` by why."""
    out = []
    for r in rows:
        if r.device not in profiles:
            continue
        f = _core.cost_features(r.op, r.args, r.cache_mode, json.dumps(dict(profiles[r.device], name=r.device)))
        if f is None:  # a GPU profile the features refuse: said, not a crash
            left_out["no features on its GPU's rates"] = left_out.get("no features on its GPU's rates", 0) + 1
            continue
        r.features, r.base_us, r.base_power_W = f["values"], f["base_us"], f["base_power_W"]
        out.append(r)
    return out


def _scaled_distance(ln_ratio: float) -> float:
    """How far a scaled estimate reaches, from |ln(extent ratio)|: ln 2 + it, as the estimate
    widens its interval (cost_model.h's scaled_distance, one formula for both). The ln 2 is a
    floor for the nearest sizes, whose errors (noise, a kernel chosen for one size) do not
    shrink with the distance."""
    return _core.scaled_distance(ln_ratio)


def call_group(row: _Row) -> tuple:
    """The calls a scaled estimate may pair ``row`` with: its device, operator, autocast and cache
    mode, and its arguments with their digits blanked (two calls that differ in one extent differ
    in digits only)."""
    return (row.device, row.op, row.overload, row.autocast, row.cache_mode, _DIGITS.sub("#", row.args))


def _scaled_residuals(rows: List[_Row], y_of: Callable[[_Row], Optional[float]]) -> List[tuple[float, float]]:
    """The log residuals (estimate − measured) of estimates scaled from another size, as
    ``predict --estimate`` makes them (workflow/predict_estimates.h), each with its |ln(extent
    ratio)|: each distinct call of the rows estimated from the nearest other size of the same call
    (core/predict/extent_match.h; nearest in ratio, then the larger), its figure relative to its
    base (``y_of``: log(time / base time), log(energy / base energy)) carried over. Repeats of a
    call count once, at their median. Unlike ``--estimate``, which picks its row by time among the
    database's newest, prefers an unflagged one and leaves energy unscaled where that row has none,
    every row here counts as it is and each target pairs among the rows that have it."""
    calls: Dict[tuple, List[float]] = {}
    for r in rows:
        y = y_of(r)
        if y is not None:
            calls.setdefault(call_group(r) + (r.args,), []).append(y)
    candidates: Dict[tuple, List[tuple]] = {}
    for key in calls:
        candidates.setdefault(key[:-1], []).append(key)
    residuals = []
    for group in candidates.values():
        for key in group:
            best = None  # ((ratio numerator, denominator), row extent, row key)
            for other in group:
                if other is key:
                    continue
                pair = _core.extent_pair(key[1], key[-1], other[-1])
                if pair is None or pair[0] <= 0 or pair[1] <= 0:
                    continue
                hi, lo = max(pair), min(pair)
                if best is None or hi * best[0][1] < best[0][0] * lo or (
                        hi * best[0][1] == best[0][0] * lo and pair[1] > best[1]):
                    best = ((hi, lo), pair[1], other)
            if best is not None:
                residuals.append((_median(calls[best[2]]) - _median(calls[key]), math.log(best[0][0] / best[0][1])))
    return residuals


def _scaled_interval(scaled: List[tuple[float, float]], coverage: float,
                     distance: Callable[[float], float] = _scaled_distance) -> Dict[str, Any]:
    """A scaled estimate's error grows with its distance (on the H100 grids, matmul's median
    |log residual| went 0.07, 0.17, 0.42 at ratios 2, 4, 256): the interval is the conformal
    quantile of |residual| / distance, per unit of distance. The errors are at the rows' own."""
    # A quantile of |residual| / (ln 2 + |ln ratio|). The forms bench/scaled_interval_check.py
    # tried on issue 26's rows (|ln ratio| alone, its square root, a constant) covered held-out
    # call groups within 0.5 points of it, less than the spread between random splits.
    return {"log_halfwidth_per_distance": _conformal_quantile([abs(r) / distance(d) for r, d in scaled], coverage),
            "held_out": _errors([r for r, _ in scaled])}


def _data_hash(rows: List[_Row], options: Dict[str, Any]) -> str:
    """What the fit read: every usable row (the other GPUs' too: they set the rates), each by every
    field the fit uses, and the fit's own options."""
    lines = sorted("\t".join(repr(v) for v in (r.op, r.args, r.device, r.cache_mode, r.dtype, r.time_us, r.energy_mJ,
                                                r.host_us, r.power_W, r.idle_W, r.calibration, r.overload,
                                                r.autocast))
                   for r in rows)
    lines.append(json.dumps(options, sort_keys=True))
    return "sha256:" + hashlib.sha256("\n".join(lines).encode()).hexdigest()


@dataclass
class FamilyFit:
    """One family's fit: its rows and what its held-out configurations said."""

    family: str
    gpus: List[str]
    n_train: int
    n_configurations: int
    time: Dict[str, Any]
    energy: Optional[Dict[str, Any]]
    power: Optional[Dict[str, Any]]
    host: Optional[Dict[str, Any]]
    # Each distinct call estimated from the nearest other size of it (as predict --estimate
    # scales a row): None where fewer than MIN_SCALED_CALLS calls had one.
    scaled_time: Optional[Dict[str, Any]] = None
    scaled_energy: Optional[Dict[str, Any]] = None


@dataclass
class Fit:
    """A fitted cost model: ``model_json`` (what is stored), the families' held-out errors, the
    families left out and why, and the rows left out by reason."""

    model_json: str
    families: List[FamilyFit]
    skipped: Dict[str, str]
    rows_left_out: Dict[str, int]
    data_hash: str
    stored_id: Optional[int] = None
    coverage: float = COVERAGE  # of every interval the fit stores

    def table(self) -> str:
        head = (f"{'family':<14} {'rows':>5} {'configs':>7}  {'time med':>8} {'p90':>6}  {'energy med':>10} {'p90':>6}"
                f"  {'power med':>9}  {'host med':>8}  gpus")
        lines = [f"cost model {self.data_hash[:19]}…: held-out errors, |estimate/measured − 1|, by configuration",
                 head]
        pct = lambda d, k: f"{100 * d[k]:.1f}%" if d else "–"  # noqa: E731
        for f in self.families:
            lines.append(f"{f.family:<14} {f.n_train:>5} {f.n_configurations:>7}  {pct(f.time, 'median_abs_error'):>8}"
                         f" {pct(f.time, 'p90_abs_error'):>6}  {pct(f.energy, 'median_abs_error'):>10}"
                         f" {pct(f.energy, 'p90_abs_error'):>6}  {pct(f.power, 'median_abs_error'):>9}"
                         f"  {pct(f.host, 'median_abs_error'):>8}  {', '.join(f.gpus)}")
        scaled = [f for f in self.families if f.scaled_time or f.scaled_energy]
        if scaled:
            lines.append("scaled from the nearest other size of the same call (predict --estimate with rows there), "
                         f"and the {100 * self.coverage:.0f}% interval of a scaled estimate from a row at half or "
                         "twice its size:")
            # The interval widens with the distance: at a ratio of 2 its half-width is q·2 ln 2 (log space).
            at_2x_distance = _scaled_distance(math.log(2))

            def at_2x(d: Optional[Dict[str, Any]]) -> str:
                return f"±{100 * math.expm1(d['log_halfwidth_per_distance'] * at_2x_distance):.0f}%" if d else "–"

            calls = lambda d: f"{d['n_test']:>4} calls" if d else "         "  # noqa: E731
            for f in scaled:
                t, e = f.scaled_time, f.scaled_energy
                lines.append(f"{f.family:<14} time {pct(t, 'median_abs_error'):>6} p90 {pct(t, 'p90_abs_error'):>6}"
                             f" at 2× {at_2x(t):>5} ({calls(t)})  energy {pct(e, 'median_abs_error'):>6}"
                             f" p90 {pct(e, 'p90_abs_error'):>6} at 2× {at_2x(e):>5} ({calls(e)})")
        for family, why in sorted(self.skipped.items()):
            lines.append(f"{family:<14} no model: {why}")
        if self.rows_left_out:
            lines.append("rows left out: " + ", ".join(f"{n} ({why})" for why, n in sorted(self.rows_left_out.items())))
        return "\n".join(lines)

    def summary(self) -> Dict[str, Any]:
        return {"data_hash": self.data_hash, "stored_id": self.stored_id,
                "families": [f.__dict__ for f in self.families], "skipped": self.skipped,
                "rows_left_out": self.rows_left_out}


def fit_rows(raw_rows: Sequence[Dict[str, str]], *, train_gpus: Optional[Sequence[str]] = None,
             coverage: float = COVERAGE, progress: Optional[Callable[[str], None]] = None) -> Fit:
    """Fit a cost model from rows as ``opcost db export --csv`` writes them. ``train_gpus``: fit
    only on these devices' rows (the other devices' rows still give their achieved rates, so the
    model can estimate there: a cross-GPU estimate)."""
    sklearn, _, _ = _sklearn()
    if not 0 < coverage < 1:
        raise ValueError(f"coverage={coverage}: give a fraction between 0 and 1, e.g. 0.9")
    rows, left_out = _usable(raw_rows)
    if not rows:
        raise FitError(f"no row to fit: {len(raw_rows)} rows, none with a time and a counted operator"
                       + (f" ({', '.join(f'{n} {w}' for w, n in left_out.items())})" if left_out else ""))
    profiles = gpu_profiles(rows)
    known = sorted(profiles)
    if train_gpus:
        missing = [g for g in train_gpus if g not in profiles]
        if missing:
            raise FitError(f"train_gpus: {', '.join(missing)} has no rows; the rows' devices: {', '.join(known)}")
    train = with_features([r for r in rows if not train_gpus or r.device in train_gpus], profiles, left_out)
    names = _core.cost_feature_names()
    families_json: Dict[str, Any] = {}
    fits: List[FamilyFit] = []
    skipped: Dict[str, str] = {}
    by_family: Dict[str, List[_Row]] = {}
    for r in train:
        by_family.setdefault(r.work["family"], []).append(r)
    for family, frows in sorted(by_family.items()):
        configs = {r.configuration for r in frows}
        if len(configs) < MIN_CONFIGURATIONS:
            skipped[family] = (f"{len(configs)} configurations, fewer than the {MIN_CONFIGURATIONS} a held-out "
                               "error needs; sweep more (bench/grids/fit/)")
            continue
        if progress:
            progress(f"{family}: {len(frows)} rows, {len(configs)} configurations")
        X = [r.features for r in frows]
        groups = [r.configuration for r in frows]
        targets: Dict[str, Any] = {}
        scaled_errors: Dict[str, Dict[str, Any]] = {}

        def fit_target(name: str, y_of: Callable[[_Row], Optional[float]]) -> Optional[Dict[str, Any]]:
            """One target, on the rows that have it (8 configurations at least): its held-out errors."""
            keep = [k for k, r in enumerate(frows) if y_of(r) is not None]
            if len({groups[k] for k in keep}) < MIN_CONFIGURATIONS:
                return None
            trees, residuals = _fit_target([X[k] for k in keep], [y_of(frows[k]) for k in keep],
                                           [groups[k] for k in keep])
            # Its configurations say which trees it has (boosting_for).
            targets[name] = dict(trees, configurations=len({groups[k] for k in keep}),
                                 **_interval(residuals, coverage))
            if name in SCALED_TARGETS:
                scaled = _scaled_residuals([frows[k] for k in keep], y_of)
                if len(scaled) >= MIN_SCALED_CALLS:
                    targets[name]["scaled"] = _scaled_interval(scaled, coverage)
                    scaled_errors[name] = dict(targets[name]["scaled"]["held_out"],
                                               log_halfwidth_per_distance=targets[name]["scaled"][
                                                   "log_halfwidth_per_distance"])
            return _errors(residuals)

        fam = FamilyFit(family=family, gpus=sorted({r.device for r in frows}), n_train=len(frows),
                        n_configurations=len(configs),
                        **{name: fit_target(name, y_of) for name, y_of in TARGETS.items()})
        fam.scaled_time, fam.scaled_energy = scaled_errors.get("time"), scaled_errors.get("energy")
        families_json[family] = {
            "ops": sorted({r.op for r in frows}), "n_train": len(frows),
            # An estimate on a GPU not among these is carried from the one with the most rows.
            "gpus": {g: sum(r.device == g for r in frows) for g in sorted({r.device for r in frows})},
            "ranges": [[min(x[k] for x in X), max(x[k] for x in X)] for k in range(len(names))],
            "targets": targets}
        fits.append(fam)
    if not fits:
        raise FitError("no family has enough configurations to fit: " +
                       "; ".join(f"{f}: {why}" for f, why in skipped.items()))
    data_hash = _data_hash(rows, {"train_gpus": sorted(train_gpus or []), "coverage": coverage,
                                  "boosting": BOOSTING, "boosting_large": BOOSTING_LARGE,
                                  "large_target_configurations": LARGE_TARGET_CONFIGURATIONS})
    model = {"format": "opcost-cost-model", "version": 1, "features_version": _core.COST_FEATURES_VERSION,
             "features": names, "coverage": coverage, "time_floor_us": TIME_FLOOR_US, "data_hash": data_hash,
             "created_at": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
             "method": {"library": f"scikit-learn {sklearn.__version__}", "estimator": "GradientBoostingRegressor",
                        "parameters": BOOSTING, "parameters_for_large_targets": BOOSTING_LARGE,
                        "large_target_configurations": LARGE_TARGET_CONFIGURATIONS,
                        "folds": FOLDS, "split": "by configuration",
                        "targets": {"time": "log(time_us / base_us), base_us = roofline_us + time_floor_us",
                                    "energy": "log(energy_uJ / (base_us · base_power_W))",
                                    "power": "log(power_W / base_power_W)", "host": "log(host_us)"}},
             "gpus": profiles, "families": families_json}
    return Fit(model_json=json.dumps(model, separators=(",", ":")), families=fits, skipped=skipped,
               rows_left_out=left_out, data_hash=data_hash, coverage=coverage)


def _interval(log_residuals: List[float], coverage: float) -> Dict[str, Any]:
    return {"interval_log_halfwidth": _conformal_quantile([abs(r) for r in log_residuals], coverage),
            "held_out": _errors(log_residuals)}


def display_location(db: str) -> str:
    """The database as messages name it (a URL without its password)."""
    return _core.display_location(str(db))


def fit(db: Optional[str | os.PathLike] = None, *, csv_files: Sequence[str | os.PathLike] = (),
        train_gpus: Optional[Sequence[str]] = None, store: bool = True, output: Optional[str | os.PathLike] = None,
        coverage: float = COVERAGE, progress: Optional[Callable[[str], None]] = None) -> Fit:
    """Fit a cost model from a database's rows (opcost's default database when ``db`` is None)
    and ``csv_files`` of ``opcost db export --csv``; store it in the database's cost_models table
    (``store``; never among the measurements) and write it to ``output``. Estimates made from it
    are marked estimated."""
    given_db = db is not None
    db = str(db) if given_db else _core.default_db_path()
    raw: List[Dict[str, str]] = []
    db_exists = _core.database_exists(db)
    # Rows from CSV files alone make no database at the default location: only one given or there.
    store = store and (given_db or db_exists)
    if db_exists:
        raw += rows_from_db(db)
    elif not csv_files:
        raise FitError(f"{display_location(db)}: no database there; measure first (opcost sweep) or give rows "
                       "(--csv FILE, csv_files=)")
    for path in csv_files:
        raw += rows_from_csv(path)
    result = fit_rows(raw, train_gpus=train_gpus, coverage=coverage, progress=progress)
    if output is not None:
        tmp = f"{output}.tmp"
        with open(tmp, "w") as f:
            f.write(result.model_json)
        os.replace(tmp, output)
    if store:
        result.stored_id = _core.store_cost_model(str(db), result.model_json)
    return result


MODEL_MAX_CHARS = 64 << 20  # a hostile file is not read whole: the command line's bound on input files


def load_model(db: Optional[str] = None, cost_model: Optional[str | os.PathLike] = None):
    """The cost model of a file (``cost_model``), else the newest one stored in ``db``."""
    if cost_model is not None:
        with open(cost_model) as f:
            text = f.read(MODEL_MAX_CHARS + 1)  # the C++ reader refuses a larger one, naming the bound
        return _core.CostModel.from_text(text, str(cost_model))
    db = str(db) if db is not None else _core.default_db_path()
    stored = _core.latest_cost_model(db)
    shown = display_location(db)  # a URL's password in no message
    if stored is None:
        raise FitError(f"{shown}: no cost model stored; fit one first (python -m opcost fit --db {shown})")
    return _core.CostModel.from_text(stored["model_json"], f"{shown} (cost model {stored['id']})")


def estimate(op: str, args: str = "", *, gpu: Optional[str] = None, db: Optional[str] = None,
             cost_model: Optional[str | os.PathLike] = None, cache: str = "warm") -> Dict[str, Any]:
    """The estimated cost of a call never measured (``aten::conv2d``, ``"input=bf16[64,256,28,28]
    weight=bf16[512,256,3,3]"``) on ``gpu`` (the model's only GPU when it knows one): a dict marked
    ``estimated``, each figure with its interval, and ``out_of_range`` where the call lies outside
    the rows the model was fitted on. Where ``db`` (else the default database) has the call at
    another size (a batch, a sequence length), the estimate is scaled from that row, as
    ``predict(estimate=True)``'s are: ``anchor`` says which (else None; docs/estimate.md)."""
    if cache not in ("warm", "cold"):
        raise ValueError(f"cache={cache!r}: use 'warm' or 'cold', as the rows were measured")
    m = load_model(db, cost_model)
    if gpu is None:
        if len(m.gpus) != 1:
            raise ValueError(f"gpu=: the model knows {', '.join(m.gpus)}; name one")
        gpu = m.gpus[0]
    return m.estimate(op, args, cache, gpu, str(db) if db is not None else _core.default_db_path())
