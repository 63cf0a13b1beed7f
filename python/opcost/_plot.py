"""Figures of opcost's results with matplotlib, an optional dependency (``pip install
'opcost[plot]'``). Each figure is drawn from the result's JSON, as the command line writes it, so
that a result saved yesterday plots as the one in hand does::

    pred.plot(by="layer", metric="energy")          # Prediction: sorted bars, the whole step beside
    trace.plot(by="layer")                          # Trace: energy and power per layer, the closure
    sweep.plot(x="cin", y="time_us", hue="dtype")   # SweepResult: points with their intervals
    cmp.plot(by="step", metric="energy")            # Comparison: differences to the baseline, each step
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
# A series' hatch beside its lightness (grouped bars): the first plain, as the single-series bars are.
_SERIES_HATCHES = ("", "xx", "//", "..", "\\\\", "++", "oo", "--", "||", "**")
# A difference whose 95% interval includes 0: hatched and light, and "~" before its name, as the table marks it.
_NOT_SIGNIFICANT_HATCH = "//"

# What a metric is called in each result, with its unit and (where the JSON has one) its interval.
_PREDICTION_METRICS = {"time": ("time_us", "µs"), "energy": ("energy_mJ", "mJ")}
# A trace's metrics are its table's ``sort_by`` names: (row key, interval key, unit, what it is).
_TRACE_METRICS = {"energy": ("energy_self_mJ", "energy_self_ci95_mJ", "mJ", "own energy"),
                  "gpu": ("gpu_self_us", None, "µs", "own GPU time"),
                  "cpu": ("cpu_self_us", None, "µs", "own CPU time")}
# A comparison's figures: (key of the variant or layer, unit, what it is per step).
_COMPARE_METRICS = {"time": ("time_us", "µs", "time"), "energy": ("energy_mJ", "mJ", "energy")}
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


def _bars(ax, shown, other, unit: str, what: str):
    """Horizontal bars, the largest at the top, the summed rest hatched and last; returns them
    (a caller marks some, as compare_figure does the differences within the noise)."""
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
    return bars


def _whole(ax, entries: List[Tuple[str, Optional[float], Optional[float]]], unit: str, what: str,
           colours: Optional[List[Any]] = None) -> None:
    """The whole step's figures side by side (predicted, measured, ...), each with its interval;
    ``colours`` one per entry (a comparison's variants, as its other figures colour them)."""
    entries = [e for e in entries if e[1] is not None]
    positions = list(range(len(entries)))
    colours = colours or [_BAR_COLOUR, _MEASURED_COLOUR, _OTHER_COLOUR]
    bars = ax.bar(positions, [e[1] for e in entries], yerr=[e[2] or 0.0 for e in entries],
                  color=colours[:len(entries)], edgecolor="black", linewidth=0.5,
                  error_kw={"ecolor": "dimgray", "capsize": 4, "elinewidth": 1.5})
    for bar, hatch in zip(bars, _SERIES_HATCHES):
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


def _summary(summary: Any) -> Tuple[Optional[float], Optional[float]]:
    """A JSON summary's (``{"mean", "ci95", "samples"}``) mean and 95% half-width; None where
    absent (a ``ci95`` is null under 2 samples)."""
    if not isinstance(summary, dict):
        return None, None
    return _number(summary.get("mean")), _number(summary.get("ci95"))


def relative_text(d: Dict[str, Any]) -> str:
    """A difference to the baseline as the text table prints it: "-12.3% ±1.1%", and "~+0.4% ±0.9%"
    where its interval includes 0, so that the figure and the table read alike."""
    relative, ci = _number(d.get("relative")), _number(d.get("relative_ci95"))
    if relative is None:
        return "no figure"
    if ci is None:
        return f"{100 * relative:+.1f}% (no interval)"
    return f"{'' if d.get('significant') else '~'}{100 * relative:+.1f}% ±{100 * ci:.1f}%"


def _compare_title(doc: Dict[str, Any], variants: List[Dict[str, Any]], baseline: str) -> str:
    base = next((v for v in variants if v.get("name") == baseline), {})
    step = "training step" if doc.get("train") else "inference"
    inputs = f", {base['input']}" if base.get("input") else ""
    device = doc.get("device") or doc.get("device_kind") or "?"
    return f"{doc.get('model') or 'model'} ({step}{inputs}) on {device}: variants against {baseline}"


def compare_figure(doc: Dict[str, Any], by: str = "step", metric: str = "time", top: int = TOP_ROWS):
    """A comparison's (``opcost compare --json``, ``Comparison.json``) figures. ``by="step"``: each
    variant's difference to the baseline, relative and paired by round (the figure whose interval
    decides significance, as in the table), with its 95% interval; one whose interval includes 0
    is hatched, light and marked "~", so that noise does not read as a gain; beside it, each
    variant's whole step with its interval. ``by="layer"``: the per-layer table's ``top`` layers
    costliest in the baseline (then those only other variants have), a bar per variant with its
    interval; a layer a variant lacks (fused away, not called) is marked absent, never drawn as 0."""
    Figure = _figure_class()
    _choice("by", by, ("step", "layer"))
    key, unit, what = _COMPARE_METRICS[_choice("metric", metric, tuple(_COMPARE_METRICS))]
    top = _check_top(top)
    variants = [v for v in doc.get("variants") or [] if isinstance(v, dict)]
    baseline = doc.get("baseline") or (variants[0].get("name") if variants else "?")
    if metric == "energy" and (doc.get("energy_why") or any(_summary(v.get(key))[0] is None for v in variants)):
        why = doc.get("energy_why") or "the result has no energy figures"
        raise ValueError(f"metric='energy': no energy in this comparison ({why}); use metric='time'")
    if by == "step":
        return _compare_step_figure(Figure, doc, variants, baseline, metric, key, unit, what)
    return _compare_layer_figure(Figure, doc, variants, baseline, metric, key, unit, top)


def _compare_step_figure(Figure, doc: Dict[str, Any], variants: List[Dict[str, Any]], baseline: str, metric: str,
                         key: str, unit: str, what: str):
    differences = []  # (the variant's difference, drawn in % of the baseline)
    for v in variants:
        d = v.get(f"{metric}_vs_baseline")
        if v.get("name") != baseline and isinstance(d, dict) and _number(d.get("relative")) is not None:
            differences.append((v.get("name") or "?", d))
    fig = Figure(figsize=(11, max(3.0, 0.6 * (len(variants) + 3))), layout="constrained")
    diff_ax, whole_ax = fig.subplots(1, 2, width_ratios=(3, 2))
    rows = [(("" if d.get("significant") else "~") + name, 100 * _number(d["relative"]),
             None if (ci := _number(d.get("relative_ci95"))) is None else 100 * ci) for name, d in differences]
    bars = _bars(diff_ax, rows, None, "%", f"{what} per step against {baseline}, paired by round")
    for position, (bar, (_, d)) in enumerate(zip(bars, differences)):
        if not d.get("significant"):
            bar.set_hatch(_NOT_SIGNIFICANT_HATCH)
            bar.set_facecolor(_OTHER_COLOUR)
        # The figure past the interval's far end, where neither the bar nor its interval is.
        _, value, ci = rows[position]
        below = value < 0
        diff_ax.annotate(relative_text(d), (value + (-1 if below else 1) * (ci or 0.0), position),
                         xytext=(-4 if below else 4, 0), textcoords="offset points", ha="right" if below else "left",
                         va="center", fontsize=8)
    diff_ax.axvline(0, color="black", linewidth=0.8)
    # Room past the intervals' ends for those figures.
    ends = [0.0] + [v + sign * (c or 0.0) for _, v, c in rows for sign in (-1, 1)]
    span = (max(ends) - min(ends)) or 1.0
    diff_ax.set_xlim(min(ends) - (0.3 if any(v < 0 for _, v, _ in rows) else 0.05) * span,
                     max(ends) + (0.3 if any(v >= 0 for _, v, _ in rows) else 0.05) * span)
    diff_ax.set_title("difference to the baseline, 95% CI; hatched and ~: the interval includes 0 "
                      "(no significant difference)", fontsize=8)
    _whole(whole_ax, [(f"{v.get('name')}\n(baseline)" if v.get("name") == baseline else str(v.get("name")),
                       *_summary(v.get(key))) for v in variants], unit, f"{what} per step",
           colours=_colours(len(variants)))
    rounds = (doc.get("options") or {}).get("rounds")
    whole_ax.set_title(f"each variant's step, 95% CI over {rounds or 'its'} rounds", fontsize=9)
    fig.suptitle(_compare_title(doc, variants, baseline))
    return fig


def _compare_layer_figure(Figure, doc: Dict[str, Any], variants: List[Dict[str, Any]], baseline: str, metric: str,
                          key: str, unit: str, top: int):
    layers = doc.get("layers")
    rows_in = [r for r in (layers.get("rows") or []) if isinstance(r, dict)] if isinstance(layers, dict) else []
    if not rows_in:
        why = doc.get("layers_why") or "the JSON has no per-layer table"
        raise ValueError(f"by='layer': no per-layer comparison in this result ({why}); use by='step'")
    names = list(layers.get("variants") or [v.get("name") for v in variants])
    if not names:
        raise ValueError("by='layer': the per-layer table names no variant; give the JSON `opcost compare --json` wrote")
    names.sort(key=lambda n: n != baseline)  # the baseline first, the others in the result's order

    def figures(row: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
        """The layer's figures in this variant; None where the variant lacks the layer."""
        f = (row.get("variants") or {}).get(name)
        return f if isinstance(f, dict) else None

    if metric == "energy" and not any(_summary(f.get(key))[0] is not None for r in rows_in for n in names
                                      if (f := figures(r, n))):
        raise ValueError("metric='energy' with by='layer': the per-layer table compares time only (energy is "
                         "compared for the whole step); use metric='time' or by='step'")

    def in_baseline(row: Dict[str, Any]) -> Optional[float]:
        return _summary((figures(row, baseline) or {}).get(key))[0]

    # The baseline's costliest first; a layer only other variants have after them, in the result's order.
    ranked = sorted(rows_in, key=lambda r: (in_baseline(r) is None, -(in_baseline(r) or 0.0)))
    shown = ranked[:top]
    fig = Figure(figsize=(10, max(3.0, 0.2 * len(shown) * len(names) + 1.5)), layout="constrained")
    ax = fig.subplots()
    height = 0.8 / len(names)
    for j, (name, colour) in enumerate(zip(names, _colours(len(names)))):
        ys = [i + (j - (len(names) - 1) / 2) * height for i in range(len(shown))]
        found = [figures(r, name) for r in shown]
        means_cis = [_summary(f.get(key)) if f else (None, None) for f in found]
        # An absent layer's bar is NaN (nothing drawn, not a zero) and labelled "absent" below.
        values = [m if m is not None else math.nan for m, _ in means_cis]
        ax.barh(ys, values, height=height, xerr=[c or 0.0 for _, c in means_cis], color=colour, edgecolor="black",
                linewidth=0.5, hatch=_SERIES_HATCHES[j % len(_SERIES_HATCHES)],
                error_kw={"ecolor": "dimgray", "capsize": 2}, label=name + (" (baseline)" if name == baseline else ""))
        for y, f, (mean, ci) in zip(ys, found, means_cis):
            if f is None:
                ax.annotate("absent", (0, y), xytext=(3, 0), textcoords="offset points", ha="left", va="center",
                            fontsize=7, style="italic", color="firebrick")
            elif mean is None:
                ax.annotate("n/a", (0, y), xytext=(3, 0), textcoords="offset points", ha="left", va="center",
                            fontsize=7, style="italic")
            elif name != baseline:
                d = f.get(f"{metric}_vs_baseline")
                label = relative_text(d) if isinstance(d, dict) else "(new)"
                ax.annotate(label, (mean + (ci or 0.0), y), xytext=(3, 0), textcoords="offset points", ha="left",
                            va="center", fontsize=7)
    ax.set_yticks(range(len(shown)), [_short(r.get("layer") or "") for r in shown], fontsize=8)
    ax.invert_yaxis()
    clock = "GPU time" if layers.get("time_kind") == "gpu" else "host time"
    steps = (doc.get("options") or {}).get("layer_steps")
    ax.set_xlabel(f"{clock if metric == 'time' else 'energy'} per step, inclusive of sublayers ({unit})")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"per layer: the {len(shown)} costliest of {len(rows_in)} in {baseline}, over "
                 f"{steps or 'the'} traced steps a variant (95% CI); absent: the variant has no such layer "
                 "(fused away by compile, or not called)", fontsize=8)
    fig.suptitle(_compare_title(doc, variants, baseline))
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
                         "give the JSON of one validate, predict, trace, compare or `db export --json`")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{path}: not JSON ({str(e).splitlines()[0][:200]}); give the file "
                         "`opcost ... --json` wrote") from None


def plot(source: Any, **options: Any):
    """A figure of any result: a result object (``Prediction``, ``Trace``, ``SweepResult``,
    ``Comparison``: its ``.plot(**options)``), or the JSON the command line wrote, as a path or
    parsed: validate's, predict's or model's (``by``, ``metric``, ``top``), a trace table
    (``metric``, ``top``), a sweep's ``db export --json`` rows (``x``, ``y``, ``hue``), compare's
    (``by="step"|"layer"``, ``metric="time"|"energy"``, ``top``)."""
    if hasattr(source, "plot") and not isinstance(source, (dict, list)):
        return source.plot(**options)
    name = "the result"
    if isinstance(source, (str, os.PathLike)):
        name = os.fspath(source)
        source = _read_json(Path(source))
    if isinstance(source, list):
        return sweep_figure(source, **options)
    # Before the prediction's test: a comparison has "layers" too.
    if isinstance(source, dict) and source.get("kind") == "compare":
        return compare_figure(source, **options)
    if isinstance(source, dict) and "predicted" in source and "layers" in source:
        return prediction_figure(source, **options)
    if isinstance(source, dict) and "rows" in source and "group_by" in source:
        return trace_figure(source, **options)
    if isinstance(source, dict) and "time_us" in source and "op" in source:
        raise ValueError(f"{name}: a single measurement has no plot yet; `opcost report` shows its energy windows")
    raise ValueError(f"{name}: expected the JSON of opcost validate/predict/model/trace/compare or "
                     "`db export --json`")
