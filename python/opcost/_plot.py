"""Figures of opcost's results with matplotlib, an optional dependency (``pip install
'opcost[plot]'``). Each figure is drawn from the result's JSON, as the command line writes it, so
that a result saved yesterday plots as the one in hand does::

    pred.plot(by="layer", metric="energy")          # Prediction: sorted bars, the whole step beside
    trace.plot(by="layer")                          # Trace: energy and power per layer, the closure
    sweep.plot(x="cin", y="time_us", hue="dtype")   # SweepResult: points with their intervals
    opcost.plot("validate.json")                    # any of them from a saved JSON file

A figure is returned, never shown: it is a ``matplotlib.figure.Figure`` made without pyplot, so
no GUI backend is touched (safe under Agg, in a worker, in a notebook, which displays it). Every
axis carries its unit; intervals are the JSON's 95% intervals, drawn as error bars; colours
differ in lightness and carry hatches or markers as well, so that a greyscale print reads.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

# How many rows a bar chart draws before it sums the rest into one bar: every plot() defaults to it.
TOP_ROWS = 15

INSTALL_HINT = "pip install matplotlib (or opcost with its extra: pip install 'opcost[plot]')"
# A saved result larger than this is not one opcost wrote for a single run: refused before it is read
# (the same bound as `opcost report`).
MAX_JSON_BYTES = 256 * 1024 * 1024
LABEL_MAX_CHARS = 48  # an operator's signature runs to hundreds of characters: the bar shows its start

# Dark to light (viridis' lightness rises monotonically), so the series differ in greyscale too.
_SERIES_LIGHTNESS = (0.0, 0.45, 0.75, 0.2, 0.6, 0.9, 0.1, 0.35, 0.55, 0.8)
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
_BAR_COLOUR, _OTHER_COLOUR, _MEASURED_COLOUR = "#3b528b", "#c8c8c8", "#1f1f1f"

# What a metric is called in each result, with its unit and (where the JSON has one) its interval.
_PREDICTION_METRICS = {"time": ("time_us", "µs"), "energy": ("energy_mJ", "mJ")}
# A trace's metrics are its table's ``sort_by`` names: (row key, interval key, unit, what it is).
_TRACE_METRICS = {"energy": ("energy_self_mJ", "energy_self_ci95_mJ", "mJ", "own energy"),
                  "gpu": ("gpu_self_us", None, "µs", "own GPU time"),
                  "cpu": ("cpu_self_us", None, "µs", "own CPU time")}
# A sweep row's figures: (path to the value, paths to the interval's ends, unit).
_SWEEP_METRICS = {
    "time_us": (("time_us", "mean"), (("time_us", "ci95_low"), ("time_us", "ci95_high")), "µs"),
    "energy_mJ": (("energy_mJ", "per_call"), (("energy_mJ", "ci95_low"), ("energy_mJ", "ci95_high")), "mJ"),
    "power_W": (("power_W", "average"), None, "W"),
}


def _figure_class():
    """matplotlib's Figure, or an ImportError that says how to install it."""
    try:
        from matplotlib.figure import Figure
    except ImportError as e:
        raise ImportError(f".plot() needs matplotlib, an optional dependency of opcost: {INSTALL_HINT}") from e
    return Figure


def _colours(n: int) -> List[Any]:
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    return [cmap(_SERIES_LIGHTNESS[i % len(_SERIES_LIGHTNESS)]) for i in range(n)]


def _check_top(top: Any) -> int:
    if isinstance(top, bool) or not isinstance(top, int) or not 1 <= top <= 1000:
        raise ValueError(f"top={top!r}: use a whole number from 1 to 1000 (the bars shown; the rest are summed)")
    return top


def _choice(name: str, value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r}: use " + " or ".join(repr(c) for c in choices))
    return value


def _short(label: str) -> str:
    label = label or "(top)"  # the model's own calls, outside every submodule
    return label if len(label) <= LABEL_MAX_CHARS else label[:LABEL_MAX_CHARS - 1] + "…"


def _number(value: Any) -> Optional[float]:
    """A finite number of the JSON, else None (null, absent, a string)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _top_and_rest(rows: List[Tuple[str, float, Optional[float]]], top: int, noun: str):
    """The ``top`` largest rows, largest first, and the rest summed into one "other" row (its
    interval the sum of theirs: an upper bound, since the rows' errors may be correlated)."""
    rows = sorted(rows, key=lambda r: r[1], reverse=True)
    shown, rest = rows[:top], rows[top:]
    if not rest:
        return shown, None
    cis = [r[2] for r in rest]
    ci = None if any(c is None for c in cis) else sum(cis)
    return shown, (f"other {len(rest)} {noun}", sum(r[1] for r in rest), ci)


def _bars(ax, shown, other, unit: str, what: str) -> None:
    """Horizontal bars, the largest at the top, the summed rest hatched and last."""
    labels = [_short(r[0]) for r in shown] + ([other[0]] if other else [])
    values = [r[1] for r in shown] + ([other[1]] if other else [])
    cis = [r[2] for r in shown] + ([other[2]] if other else [])
    colours = [_BAR_COLOUR] * len(shown) + ([_OTHER_COLOUR] if other else [])
    hatches = [""] * len(shown) + (["//"] if other else [])
    xerr = None if all(c is None for c in cis) else [c or 0.0 for c in cis]
    positions = list(range(len(values)))
    bars = ax.barh(positions, values, xerr=xerr, color=colours, edgecolor="black", linewidth=0.5,
                   error_kw={"ecolor": "black", "capsize": 3}, label=what)
    for bar, hatch in zip(bars, hatches):
        bar.set_hatch(hatch)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"{what} ({unit})")
    ax.grid(axis="x", alpha=0.3)


def _whole(ax, entries: List[Tuple[str, Optional[float], Optional[float]]], unit: str, what: str) -> None:
    """The whole step's figures side by side (predicted, measured, ...), each with its interval."""
    entries = [e for e in entries if e[1] is not None]
    positions = list(range(len(entries)))
    colours = [_BAR_COLOUR, _MEASURED_COLOUR, _OTHER_COLOUR][:len(entries)]
    bars = ax.bar(positions, [e[1] for e in entries], yerr=[e[2] or 0.0 for e in entries], color=colours,
                  edgecolor="black", linewidth=0.5, error_kw={"ecolor": "dimgray", "capsize": 4, "elinewidth": 1.5})
    for bar, hatch in zip(bars, ["", "xx", "//"]):
        bar.set_hatch(hatch)
    ax.set_xticks(positions, [e[0] for e in entries], fontsize=8)
    ax.set_ylabel(f"{what} ({unit})")
    ax.grid(axis="y", alpha=0.3)


def prediction_figure(doc: Dict[str, Any], by: str = "layer", metric: str = "time", top: int = TOP_ROWS):
    """A prediction's (validate's, predict's) rows per layer or operator as sorted bars, the
    largest ``top`` and the rest summed, beside the whole step: predicted and, from validate,
    measured, each with its 95% interval. The rows carry no interval of their own in the JSON."""
    Figure = _figure_class()
    _choice("by", by, ("layer", "op"))
    key, unit = _PREDICTION_METRICS[_choice("metric", metric, tuple(_PREDICTION_METRICS))]
    top = _check_top(top)
    predicted, measured = doc.get("predicted") or {}, doc.get("measured") or {}
    if metric == "energy" and _number(predicted.get(f"{key}")) is None:
        why = predicted.get("energy_unavailable") or "the result has no energy figures"
        raise ValueError(f"metric='energy': no energy in this prediction ({why}); use metric='time'")
    rows = [(r.get("name") or "", v, None) for r in doc["layers" if by == "layer" else "ops"]
            if (v := _number(r.get(key))) is not None]
    noun = "layers" if by == "layer" else "operators"
    shown, other = _top_and_rest(rows, top, noun)
    what = "time per step" if metric == "time" else "energy per step"
    fig = Figure(figsize=(10, max(3.0, 0.3 * (len(shown) + 2))), layout="constrained")
    bars_ax, whole_ax = fig.subplots(1, 2, width_ratios=(3, 1))
    _bars(bars_ax, shown, other, unit, f"predicted {what}")
    bars_ax.set_title(f"per {'layer' if by == 'layer' else 'operator'}, largest first", fontsize=9)
    ci_key = "time_ci95_us" if metric == "time" else "energy_ci95_mJ"
    _whole(whole_ax, [("predicted", _number(predicted.get(key)), _number(predicted.get(ci_key))),
                      ("measured", _number(measured.get(key)), _number(measured.get(ci_key)))], unit, what)
    whole_ax.set_title("whole step, 95% CI", fontsize=9)
    fig.suptitle(_prediction_title(doc, metric))
    return fig


def _prediction_title(doc: Dict[str, Any], metric: str) -> str:
    title = f"{doc.get('model', 'model')} {doc.get('input', '')} on {doc.get('gpu') or doc.get('device', '?')}"
    error = _number((doc.get("error") or {}).get(metric))
    if metric == "time" and (doc.get("error") or {}).get("headline") == "paired":
        # The host drifted: the error to read is the paired rounds' (Prediction.headline).
        error = _number((doc.get("paired") or {}).get("time_error_median"))
        title += f": predicted {100 * error:+.1f}% against measured (paired rounds)" if error is not None else ""
    elif error is not None:
        title += f": predicted {100 * error:+.1f}% against measured"
    if not doc.get("complete", True):
        title += " (INCOMPLETE: some calls unmeasured)"
    return title


def trace_figure(table: Dict[str, Any], metric: Optional[str] = None, top: int = TOP_ROWS):
    """A trace table's (``opcost trace --json``, ``Trace.key_averages``) rows as sorted bars:
    each row's own ("self") energy with its 95% interval and its average power, beside the
    energy attributed to the calls against the energy measured over the same steps. Without
    energy in the table, ``metric="gpu"`` (the default then, where the device ran kernels) or
    ``"cpu"``: the rows' own GPU or CPU time."""
    Figure = _figure_class()
    rows_in = table.get("rows") or []
    has_energy = any(_number(r.get("energy_self_mJ")) is not None for r in rows_in)
    if metric is None:
        on_device = any((_number(r.get("gpu_self_us")) or 0) > 0 for r in rows_in)
        metric = "energy" if has_energy else "gpu" if on_device else "cpu"
    key, ci_key, unit, what = _TRACE_METRICS[_choice("metric", metric, tuple(_TRACE_METRICS))]
    top = _check_top(top)
    if metric == "energy" and not has_energy:
        raise ValueError("metric='energy': this trace has no energy per call (trace with "
                         "opcost.trace_model(..., energy=True) on a GPU, or `opcost trace --energy`); "
                         "use metric='gpu' or 'cpu'")
    by = table.get("group_by", "layer")
    rows = [(r.get("name") or "", v, _number(r.get(ci_key)) if ci_key else None) for r in rows_in
            if (v := _number(r.get(key))) is not None]
    shown, other = _top_and_rest(rows, top, "layers" if by == "layer" else "rows")
    steps = table.get("steps")
    over = f"over {steps} traced steps" if steps else "over the traced steps"
    panels = 3 if metric == "energy" else 1
    fig = Figure(figsize=(12 if panels == 3 else 8, max(3.0, 0.3 * (len(shown) + 2))), layout="constrained")
    axes = fig.subplots(1, panels, width_ratios=(3, 2, 1)[:panels], squeeze=False)[0]
    _bars(axes[0], shown, other, unit, f"{what} {over}")
    axes[0].set_title(f"per {by}: what runs in it, not in its sublayers (95% intervals)", fontsize=9)
    if metric == "energy":
        power = {r.get("name") or "": _number(r.get("power_self_W")) for r in rows_in}
        # The same rows as the energy's, in line with them; the summed rest has no power of its own.
        labels = [_short(r[0]) for r in shown] + ([other[0]] if other else [])
        values = [power.get(r[0]) or 0.0 for r in shown] + ([math.nan] if other else [])
        positions = list(range(len(labels)))
        bars = axes[1].barh(positions, values, color=_OTHER_COLOUR, edgecolor="black", linewidth=0.5)
        for bar in bars:
            bar.set_hatch("..")
        axes[1].set_yticks(positions, labels, fontsize=8)
        axes[1].invert_yaxis()
        axes[1].set_xlabel("average power over its own time (W)")
        axes[1].grid(axis="x", alpha=0.3)
        closure = table.get("energy") or {}
        _whole(axes[2], [("attributed", _number(closure.get("attributed_mJ")),
                          _number(closure.get("attributed_ci95_mJ"))),
                         ("measured", _number(closure.get("measured_mJ")), _number(closure.get("measured_ci95_mJ")))],
               "mJ", f"energy {over}")
        axes[2].set_title("all steps, 95% CI", fontsize=9)
    error = _number((table.get("energy") or {}).get("error"))
    fig.suptitle(f"trace per {by}" + (f": attributed {100 * error:+.1f}% against measured" if error is not None
                                       else ""))
    return fig


def _path_value(row: Dict[str, Any], path: Sequence[str]) -> Any:
    for part in path:
        if not isinstance(row, dict):
            return None
        row = row.get(part)
    return row


def _axis_value(row: Dict[str, Any], name: str) -> Any:
    """A row's value on an axis of its sweep (``axes``), else a field of the row itself (``op``)."""
    axes = row.get("axes")
    if isinstance(axes, dict) and name in axes:
        return axes[name]
    value = row.get(name)
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _sort_key(value: Any) -> Tuple[int, Any]:
    return (0, value) if _number(value) is not None else (1, str(value))


def sweep_figure(rows: List[Dict[str, Any]], x: Optional[str] = None, y: str = "time_us", hue: Optional[str] = None):
    """A sweep's rows (``opcost db export --json``, ``SweepResult.rows()``) as points of ``y``
    (time_us, energy_mJ or power_W) against the axis ``x``, one series (marker and lightness) per
    value of the axis ``hue``, each point with its 95% interval where the row has one."""
    Figure = _figure_class()
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise ValueError("a sweep's rows are a list of result documents: `opcost db export --json` writes them")
    value_path, ci_paths, unit = _SWEEP_METRICS[_choice("y", y, tuple(_SWEEP_METRICS))]
    if not x:
        axes = sorted({a for r in rows for a in (r.get("axes") or {})})
        raise ValueError(f"x: name the axis to plot against, one of the rows' axes: {', '.join(axes) or 'none'}")
    points = []  # (x value, hue value, y, low, high)
    for r in rows:
        xv, v = _axis_value(r, x), _number(_path_value(r, value_path))
        if xv is None or v is None:
            continue
        low = high = None
        if ci_paths:
            low, high = _number(_path_value(r, ci_paths[0])), _number(_path_value(r, ci_paths[1]))
        points.append((xv, _axis_value(r, hue) if hue else None, v, low, high))
    if not points:
        axes = sorted({a for r in rows for a in (r.get("axes") or {})})
        raise ValueError(f"no row has both x={x!r} and a {y} figure: the rows' axes are "
                         f"{', '.join(axes) or 'none'}" + ("; energy_mJ and power_W need a sweep run with energy"
                                                           if y != "time_us" else ""))
    numeric_x = all(_number(p[0]) is not None for p in points)
    categories = sorted({p[0] for p in points}, key=_sort_key)
    position = {c: i for i, c in enumerate(categories)}
    series = sorted({p[1] for p in points}, key=_sort_key) if hue else [None]
    fig = Figure(figsize=(8, 5), layout="constrained")
    ax = fig.subplots()
    for colour, marker, value in zip(_colours(len(series)), _MARKERS * (len(series) // len(_MARKERS) + 1), series):
        mine = [p for p in points if p[1] == value]
        xs = [float(p[0]) if numeric_x else position[p[0]] for p in mine]
        ys = [p[2] for p in mine]
        # An interval's ends around the mean; a row without one gets none (not a zero-width one drawn).
        err = [[p[2] - p[3] if p[3] is not None else 0.0 for p in mine],
               [p[4] - p[2] if p[4] is not None else 0.0 for p in mine]]
        ax.errorbar(xs, ys, yerr=err if ci_paths else None, fmt=marker, linestyle="none", color=colour,
                    markeredgecolor="black", markeredgewidth=0.5, ecolor="dimgray", capsize=3,
                    label=str(value) if hue else y)
    if not numeric_x:
        ax.set_xticks(range(len(categories)), [str(c) for c in categories])
    elif min(categories) > 0 and max(categories) / min(categories) >= 100:
        ax.set_xscale("log")  # sizes swept over decades: evenly spaced by ratio
    ax.set_xlabel(x if numeric_x else f"{x} (category)")
    ax.set_ylabel(f"{y.rsplit('_', 1)[0]} per call ({unit})")
    ax.grid(alpha=0.3)
    if hue:
        ax.legend(title=hue, fontsize=8)
    sweeps = sorted({str(r.get("sweep")) for r in rows if r.get("sweep")})
    ax.set_title(f"{', '.join(sweeps) or 'sweep'}: {len(points)} rows (95% intervals)", fontsize=10)
    return fig


def _read_json(path: Path) -> Any:
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror}); give the JSON file opcost wrote") from None
    if size > MAX_JSON_BYTES:
        raise ValueError(f"{path}: {size} bytes, more than the {MAX_JSON_BYTES} a result of opcost has; "
                         "give the JSON of one validate, predict, trace or `db export --json`")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not JSON ({str(e).splitlines()[0][:200]}); give the file "
                         "`opcost ... --json` wrote") from None


def plot(source: Any, **options: Any):
    """A figure of any result: a result object (``Prediction``, ``Trace``, ``SweepResult``: its
    ``.plot(**options)``), or the JSON the command line wrote, as a path or parsed: validate's,
    predict's or model's (``by``, ``metric``, ``top``), a trace table (``metric``, ``top``), a
    sweep's ``db export --json`` rows (``x``, ``y``, ``hue``)."""
    if hasattr(source, "plot") and not isinstance(source, (dict, list)):
        return source.plot(**options)
    name = "the result"
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        source = _read_json(Path(source))
    if isinstance(source, list):
        return sweep_figure(source, **options)
    if isinstance(source, dict) and "predicted" in source and "layers" in source:
        return prediction_figure(source, **options)
    if isinstance(source, dict) and "rows" in source and "group_by" in source:
        return trace_figure(source, **options)
    if isinstance(source, dict) and "time_us" in source and "op" in source:
        raise ValueError(f"{name}: a single measurement has no plot yet; `opcost report` shows its energy windows")
    raise ValueError(f"{name}: expected the JSON of opcost validate/predict/model/trace or `db export --json`")
