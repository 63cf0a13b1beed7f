"""The results' .plot() with matplotlib (Agg, never shown): figures drawn from the committed GPU
results of tests/data/report/ (validate, trace with energy, a sweep's export, a compare) and from runs on the
CPU here (validate, trace, sweep). What is checked is what a reader takes from the figure: the
bars' and points' values equal the result's, the largest first with the rest summed, the
intervals drawn are the JSON's, every axis names its unit; and the errors a user meets."""

from __future__ import annotations

import dataclasses
import io
import json
import math
import sys
from pathlib import Path

import pytest
import torch

import opcost
from opcost import _plot

matplotlib = pytest.importorskip("matplotlib")  # pip install 'opcost[plot]' (scripts/bootstrap installs it)
matplotlib.use("Agg")

REPORT_DATA = Path(__file__).resolve().parent.parent / "data" / "report"
UNIT_IN_LABEL = ("(µs)", "(mJ)", "(W)")


def fixture(name: str):
    return json.loads((REPORT_DATA / name).read_text())


def bars_of(ax):
    """The axes' bars (its BarContainer: the error bars drawn with them are a container too)."""
    from matplotlib.container import BarContainer

    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    return bars


def error_bar_halfwidths(ax):
    """The drawn error bars' half-widths, in bar order."""
    return container_halfwidths(bars_of(ax))


def container_halfwidths(container):
    """A BarContainer's error bars' half-widths, in bar order; None where a bar has none drawn (NaN)."""
    segments = container.errorbar.lines[2][0].get_segments() if container.errorbar else []
    return [None if len(s) == 0 else abs(s[1][1] - s[0][1]) / 2 if s[0][0] == s[1][0] else abs(s[1][0] - s[0][0]) / 2
            for s in segments]


def assert_units_on_every_axis(fig):
    for ax in fig.axes:
        labels = [ax.get_xlabel(), ax.get_ylabel()]
        assert any(u in label for label in labels for u in UNIT_IN_LABEL), (ax.get_title(), labels)


def assert_renders(fig):
    png = io.BytesIO()
    fig.savefig(png, format="png", dpi=40)
    assert png.getvalue()[:8] == b"\x89PNG\r\n\x1a\n"


def expected_top_and_rest(rows, key, top):
    values = sorted((r[key] for r in rows if r.get(key) is not None), reverse=True)
    return values[:top] + ([sum(values[top:])] if len(values) > top else [])


# --- from the committed GPU results -------------------------------------------------------------


@pytest.mark.parametrize("by,metric,key", [("layer", "time", "time_us"), ("op", "energy", "energy_mJ")])
def test_a_validate_result_plots_its_largest_rows_and_the_whole_step_with_intervals(by, metric, key):
    doc = fixture("validate.json")
    fig = opcost.Prediction(doc, "").plot(by=by, metric=metric, top=5)
    bars, whole = fig.axes
    rows = doc["layers" if by == "layer" else "ops"]
    assert [b.get_width() for b in bars_of(bars)] == pytest.approx(expected_top_and_rest(rows, key, 5), rel=1e-12)
    labels = [t.get_text() for t in bars.get_yticklabels()]
    assert labels[-1] == f"other {len(rows) - 5} {'layers' if by == 'layer' else 'operators'}"
    assert all(len(label) <= _plot.LABEL_MAX_CHARS for label in labels)
    # The whole step: predicted and measured, with their 95% intervals as error bars.
    ci = "time_ci95_us" if metric == "time" else "energy_ci95_mJ"
    assert [b.get_height() for b in bars_of(whole)] == pytest.approx(
        [doc["predicted"][key], doc["measured"][key]], rel=1e-12)
    assert error_bar_halfwidths(whole) == pytest.approx([doc["predicted"][ci], doc["measured"][ci]], rel=1e-9)
    paired = metric == "time" and doc["error"]["headline"] == "paired"
    error = doc["paired"]["time_error_median"] if paired else doc["error"][metric]
    assert f"{100 * error:+.1f}% against measured" in fig._suptitle.get_text()
    assert_units_on_every_axis(fig)
    assert_renders(fig)


def test_a_trace_with_energy_plots_energy_power_and_the_closure():
    table = fixture("trace.json")
    fig = _plot.trace_figure(table, top=4)
    energy, power, closure = fig.axes
    rows = table["rows"]
    ranked = sorted(rows, key=lambda r: r["energy_self_mJ"], reverse=True)
    assert [b.get_width() for b in bars_of(energy)] == pytest.approx(
        expected_top_and_rest(rows, "energy_self_mJ", 4), rel=1e-12)
    # Each shown row's interval; the summed rest's is the sum of theirs (an upper bound).
    assert error_bar_halfwidths(energy) == pytest.approx(
        [r["energy_self_ci95_mJ"] for r in ranked[:4]] + [sum(r["energy_self_ci95_mJ"] for r in ranked[4:])], rel=1e-9)
    # Power in line with the energy's rows; the rest has none of its own.
    widths = [b.get_width() for b in bars_of(power)]
    assert widths[:4] == pytest.approx([r["power_self_W"] for r in ranked[:4]], rel=1e-12) and math.isnan(widths[4])
    assert [t.get_text() for t in power.get_yticklabels()] == [t.get_text() for t in energy.get_yticklabels()]
    e = table["energy"]
    assert [b.get_height() for b in bars_of(closure)] == pytest.approx([e["attributed_mJ"], e["measured_mJ"]])
    assert error_bar_halfwidths(closure) == pytest.approx([e["attributed_ci95_mJ"], e["measured_ci95_mJ"]], rel=1e-9)
    assert_units_on_every_axis(fig)
    assert_renders(fig)


COMPARE_UNITS = {"time": ("time_us", "(µs)"), "energy": ("energy_mJ", "(mJ)")}


@pytest.mark.parametrize("metric", ["time", "energy"])
def test_a_comparison_plots_each_variants_paired_difference_and_step_with_their_intervals(metric):
    doc = fixture("compare.json")
    key, unit = COMPARE_UNITS[metric]
    fig = opcost.Comparison(doc, "").plot(metric=metric)
    difference, whole = fig.axes
    others = [v for v in doc["variants"] if v["name"] != doc["baseline"]]
    assert others and all(v[f"{metric}_vs_baseline"]["significant"] for v in others), "the fixture's are significant"
    # Each variant's relative difference (in %) with its interval, as the JSON has them.
    drawn = bars_of(difference)
    assert [b.get_width() for b in drawn] == pytest.approx(
        [100 * v[f"{metric}_vs_baseline"]["relative"] for v in others], rel=1e-12)
    assert error_bar_halfwidths(difference) == pytest.approx(
        [100 * v[f"{metric}_vs_baseline"]["relative_ci95"] for v in others], rel=1e-9)
    assert [t.get_text() for t in difference.get_yticklabels()] == [v["name"] for v in others]
    assert [b.get_hatch() for b in drawn] == [""] * len(others)  # significant: plain
    assert difference.get_xlabel().endswith("(%)") and f"against {doc['baseline']}" in difference.get_xlabel()
    # Each variant's whole step, the baseline first, with its interval.
    assert [b.get_height() for b in bars_of(whole)] == pytest.approx([v[key]["mean"] for v in doc["variants"]])
    assert error_bar_halfwidths(whole) == pytest.approx([v[key]["ci95"] for v in doc["variants"]], rel=1e-9)
    assert whole.get_ylabel().endswith(unit)
    title = fig._suptitle.get_text()
    assert doc["model"] in title and doc["device"] in title
    assert_renders(fig)


def test_a_difference_within_the_noise_is_hatched_and_marked_and_plots_from_a_file(tmp_path):
    doc = fixture("compare.json")
    noisy = next(v for v in doc["variants"] if v["name"] != doc["baseline"])
    noisy["time_vs_baseline"].update(relative=0.004, relative_ci95=0.009, significant=False)
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(doc))
    fig = opcost.plot(path)  # compare's JSON, recognised by its "kind"
    difference, _ = fig.axes
    (bar,) = bars_of(difference)
    assert bar.get_width() == pytest.approx(0.4) and bar.get_hatch() == _plot._NOT_SIGNIFICANT_HATCH
    assert [t.get_text() for t in difference.get_yticklabels()] == [f"~{noisy['name']}"]
    assert "~+0.4% ±0.9%" in [t.get_text() for t in difference.texts]


def ranked_layers(doc, top):
    """The per-layer rows the figure should show: the baseline's costliest first."""
    base = doc["baseline"]
    rows = doc["layers"]["rows"]
    present = sorted((r for r in rows if r["variants"].get(base)),
                     key=lambda r: -r["variants"][base]["time_us"]["mean"])
    return (present + [r for r in rows if not r["variants"].get(base)])[:top]


def test_a_comparison_by_layer_draws_each_variants_bars_and_marks_absent_layers_not_as_zero():
    doc = fixture("compare.json")
    doc["layers"]["rows"].reverse()  # ranked by the figure, not by the JSON's order
    top = 16
    shown = ranked_layers(doc, top)
    absent = [(i, name) for i, r in enumerate(shown) for name, f in r["variants"].items() if f is None]
    assert absent, "the fixture's compiled variant lacks layers among the costliest (maxpool)"
    fig = opcost.Comparison(doc, "").plot(by="layer", top=top)
    (ax,) = fig.axes
    from matplotlib.container import BarContainer

    groups = [c for c in ax.containers if isinstance(c, BarContainer)]
    names = doc["layers"]["variants"]
    assert [c.get_label() for c in groups] == [f"{names[0]} (baseline)"] + names[1:]
    assert [t.get_text() for t in ax.get_yticklabels()] == [r["layer"] for r in shown]
    for name, group in zip(names, groups):
        figures = [r["variants"][name] for r in shown]
        widths, halfwidths = [b.get_width() for b in group], container_halfwidths(group)
        for f, width, half in zip(figures, widths, halfwidths):
            if f is None:
                assert math.isnan(width) and half is None  # nothing drawn, not a zero
            else:
                assert (width, half) == pytest.approx((f["time_us"]["mean"], f["time_us"]["ci95"]), rel=1e-9)
    # Each absent layer is labelled at its own bar's place.
    places = {name: [b.get_y() + b.get_height() / 2 for b in g] for name, g in zip(names, groups)}
    marked = sorted(t.xy[1] for t in ax.texts if t.get_text() == "absent")
    assert marked == pytest.approx(sorted(places[name][i] for i, name in absent))
    assert "GPU time" in ax.get_xlabel() and ax.get_xlabel().endswith("(µs)")
    assert doc["model"] in fig._suptitle.get_text() and doc["device"] in fig._suptitle.get_text()
    assert_renders(fig)


def test_a_layer_only_a_variant_has_comes_after_the_baselines_with_the_baseline_marked_absent():
    doc = fixture("compare.json")
    base, other = doc["layers"]["variants"][0], doc["layers"]["variants"][1]
    row = next(r for r in doc["layers"]["rows"] if r["variants"][other] and r["layer"] != "ResNet")
    row["variants"][base], row["presence"] = None, f"only in {other}"
    row["variants"][other]["time_vs_baseline"] = None  # as compare writes it: no baseline to differ from
    fig = opcost.Comparison(doc, "").plot(by="layer", top=len(doc["layers"]["rows"]))
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == row["layer"]
    assert "(new)" in [t.get_text() for t in ax.texts]
    assert math.isnan(bars_of_label(ax, f"{base} (baseline)")[-1].get_width())


def bars_of_label(ax, label):
    from matplotlib.container import BarContainer

    (bars,) = [c for c in ax.containers if isinstance(c, BarContainer) and c.get_label() == label]
    return bars


@pytest.mark.parametrize("options, message", [
    ({"by": "op"}, "by='op': use 'step' or 'layer'"),
    ({"metric": "power"}, "metric='power': use 'time' or 'energy'"),
    ({"top": 0}, "top=0: use a whole number from 1"),
    ({"by": "layer", "metric": "energy"}, "metric='energy' with by='layer': the per-layer table compares time only.*"
                                          "use metric='time' or by='step'"),
])
def test_a_comparisons_bad_options_are_named(options, message):
    with pytest.raises(ValueError, match=message):
        opcost.Comparison(fixture("compare.json"), "").plot(**options)


def test_a_comparison_without_energy_or_layers_says_why_and_what_to_use():
    doc = fixture("compare.json")
    doc["energy_why"] = "the device has no energy counter"
    for v in doc["variants"]:
        v["energy_mJ"] = v["energy_vs_baseline"] = None
    doc["layers"], doc["layers_why"] = None, "not asked for (layers off)"
    result = opcost.Comparison(doc, "")
    with pytest.raises(ValueError, match=r"^metric='energy': no energy in this comparison "
                                         r"\(the device has no energy counter\); use metric='time'$"):
        result.plot(metric="energy")
    with pytest.raises(ValueError, match=r"by='layer': no per-layer comparison .*\(not asked for \(layers off\)\); "
                                         "use by='step'"):
        result.plot(by="layer")
    assert [b.get_width() for b in bars_of(result.plot().axes[0])] == pytest.approx(
        [100 * doc["variants"][1]["time_vs_baseline"]["relative"]])  # time still plots


def sweep_rows_with(rows, x, hue):
    return [r for r in rows if x in (r.get("axes") or {}) and (hue is None or hue in r["axes"])]


@pytest.mark.parametrize("y,value,low,high", [("time_us", "mean", "ci95_low", "ci95_high"),
                                               ("energy_mJ", "per_call", "ci95_low", "ci95_high")])
def test_a_sweep_export_plots_points_with_their_intervals_per_hue(y, value, low, high):
    rows = fixture("sweep.json")
    x, hue = "cin", "dtype"
    assert all({x, hue} <= set(r["axes"]) for r in rows), "the sweep fixture's rows carry these axes"
    fig = opcost.plot(REPORT_DATA / "sweep.json", x=x, y=y, hue=hue)
    (ax,) = fig.axes
    # Every row is one point at its own x, with its own interval, in the series of its hue.
    plotted = sorted((label, px, py, lo, hi) for c, label in zip(ax.containers, legend_texts(ax))
                     for px, py, lo, hi in zip(c.lines[0].get_xdata(), c.lines[0].get_ydata(), *_errorbar_ends(c)))
    expected = sorted((str(r["axes"][hue]), r["axes"][x], r[y][value], r[y][low], r[y][high]) for r in rows)
    assert [p[0] for p in plotted] == [e[0] for e in expected]
    assert [v for p in plotted for v in p[1:]] == pytest.approx([v for e in expected for v in e[1:]], rel=1e-9)
    assert f"({'µs' if y == 'time_us' else 'mJ'})" in ax.get_ylabel() and ax.get_xlabel() == x
    assert_renders(fig)


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _errorbar_ends(container):
    """An errorbar container's lower and upper ends, point by point."""
    segments = container.lines[2][0].get_segments()
    return [min(s[0][1], s[1][1]) for s in segments], [max(s[0][1], s[1][1]) for s in segments]


# --- from runs on the CPU here --------------------------------------------------------------------


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.act = torch.nn.GELU()
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def test_a_cpu_validate_plots_time_and_says_why_it_has_no_energy(tmp_path):
    val = opcost.validate(Net().eval(), torch.randn(8, 16), db=tmp_path / "ops.db", max_time=0.02, step_max_time=0.2,
                          energy=False)
    fig = val.plot(by="op", top=2)
    bars, whole = fig.axes
    ops = val.to_dict()["ops"]
    assert [b.get_width() for b in bars_of(bars)] == pytest.approx(expected_top_and_rest(ops, "time_us", 2))
    assert [b.get_height() for b in bars_of(whole)] == pytest.approx([val.time_us, val.measured_time_us])
    assert_units_on_every_axis(fig)
    with pytest.raises(ValueError, match="no energy in this prediction .*use metric='time'"):
        val.plot(metric="energy")
    with pytest.raises(ValueError, match="by='module': use 'layer' or 'op'"):
        val.plot(by="module")
    with pytest.raises(ValueError, match="top=0: use a whole number from 1"):
        val.plot(top=0)


def test_a_cpu_trace_plots_each_layers_own_cpu_time():
    model, x = Net().eval(), torch.randn(8, 16)
    with opcost.trace(model, device="cpu") as t:
        for _ in range(3):
            with torch.inference_mode():
                model(x)
            t.step()
    fig = t.plot(by="layer")
    (ax,) = fig.axes  # no energy: one panel
    rows = t.key_averages("layer")[:-1]
    assert [b.get_width() for b in bars_of(ax)] == pytest.approx(expected_top_and_rest(rows, "cpu_self_us", 15))
    assert "own CPU time" in ax.get_xlabel() and "(µs)" in ax.get_xlabel()
    with pytest.raises(ValueError, match="no energy per call .*energy=True"):
        t.plot(metric="energy")


GRID = """
name: plot-grid
op: aten::mm
args: {self: "f32[8,{k}]", mat2: "f32[{k},{n}]"}
axes: {k: [4, 16], n: [2, 8]}
"""


def test_a_cpu_sweep_plots_its_rows_from_its_database(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    result = opcost.sweep(grid, db=tmp_path / "ops.db", progress=False, device="cpu", energy=False, max_time=0.02)
    assert "ops.db" not in repr(result)  # the database (a URL may hold a password) stays out of the repr
    rows = result.rows()
    assert len(rows) == 4 and {(r["axes"]["k"], r["axes"]["n"]) for r in rows} == {(4, 2), (4, 8), (16, 2), (16, 8)}
    fig = result.plot(x="k", y="time_us", hue="n")
    (ax,) = fig.axes
    assert legend_texts(ax) == ["2", "8"]
    for n, container in zip((2, 8), ax.containers):
        mine = sorted((r for r in rows if r["axes"]["n"] == n), key=lambda r: r["axes"]["k"])
        order = sorted(range(len(mine)), key=lambda i: container.lines[0].get_xdata()[i])
        assert [container.lines[0].get_ydata()[i] for i in order] == pytest.approx([r["time_us"]["mean"] for r in mine])
        low, high = _errorbar_ends(container)
        assert [low[i] for i in order] == pytest.approx([r["time_us"]["ci95_low"] for r in mine])
        assert [high[i] for i in order] == pytest.approx([r["time_us"]["ci95_high"] for r in mine])
    with pytest.raises(ValueError, match="no row has both x='cin'.*axes are k, n"):
        result.plot(x="cin")
    with pytest.raises(ValueError, match="energy_mJ and power_W need a sweep run with energy"):
        result.plot(x="k", y="energy_mJ")
    moved = dataclasses.replace(result, db=str(tmp_path / "moved.db"))
    with pytest.raises(RuntimeError, match=r"'plot-grid': its rows could not be exported: .*moved.db: no database"):
        moved.rows()
    with pytest.raises(ValueError, match="does not know its database"):
        dataclasses.replace(result, db=None).plot(x="k")


# --- errors ---------------------------------------------------------------------------------------


def test_without_matplotlib_the_error_names_the_install_command(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    with pytest.raises(ImportError, match=r"needs matplotlib, .*: pip install matplotlib"):
        opcost.Prediction(fixture("validate.json"), "").plot()
    with pytest.raises(ImportError, match=r"pip install 'opcost\[plot\]'"):
        opcost.plot([])
    with pytest.raises(ImportError, match=r"needs matplotlib"):
        opcost.Comparison(fixture("compare.json"), "").plot()


def test_plot_of_a_file_names_the_file_and_what_it_expects(tmp_path):
    not_json = tmp_path / "notes.json"
    not_json.write_text("{ half")
    with pytest.raises(ValueError, match=r"notes.json: not JSON"):
        opcost.plot(not_json)
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    with pytest.raises(ValueError, match=r"other.json: expected the JSON of opcost validate/predict/model/trace"):
        opcost.plot(other)
    with pytest.raises(ValueError, match=r"missing.json: cannot read it"):
        opcost.plot(tmp_path / "missing.json")
    measurement = tmp_path / "measure.json"
    measurement.write_text('{"op": "aten::mm", "time_us": {"mean": 1.0}}')
    with pytest.raises(ValueError, match=r"measure.json: a single measurement has no plot yet"):
        opcost.plot(measurement)
