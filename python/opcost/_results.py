"""Results as Python objects: figures as attributes with their units (and intervals) in their
names, ``table()`` for the text the command line prints, ``to_json()`` / ``save()`` for its JSON
(which the command line reads back), and ``to_pandas()`` where pandas is installed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import _plot


def _pandas():
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_pandas() needs pandas: pip install pandas") from e
    return pandas


class _Document:
    """A result backed by the JSON document the workflow library made."""

    def __init__(self, doc: Dict[str, Any], text: str):
        self._doc = doc
        self._text = text

    def to_dict(self) -> Dict[str, Any]:
        return self._doc

    def to_json(self, indent: Optional[int] = 2) -> str:
        return json.dumps(self._doc, indent=indent)

    def save(self, path: str | Path) -> Path:
        """Writes the JSON document (the command line's own format) to ``path``."""
        path = Path(path)
        path.write_text(self.to_json() + "\n")
        return path

    def table(self) -> str:
        """The text the command line prints for this result."""
        return self._text

    def __str__(self) -> str:
        return self._text


@dataclass(frozen=True)
class OpEntry:
    """One unique operator call of a model: its canonical signature, how often it ran, where."""

    op: str
    overload: str
    args: str
    signature: str
    count: int
    layers: Tuple[str, ...]
    phase: str
    nested: Dict[str, int]
    # The arguments read from memory rather than the L2 (empty: all from L2, or not classed).
    cold_args: Tuple[str, ...] = ()


class Inventory(_Document):
    """Every ATen call of a model step, grouped by signature, with the layers that issued it.

    ``save(path)`` writes the command line's inventory JSON: ``opcost measure --spec path``
    measures every signature in it."""

    @property
    def ops(self) -> List[OpEntry]:
        return [
            OpEntry(o["op"], o["overload"], o["args"], o["signature"], o["count"], tuple(o["layers"]), o["phase"],
                    dict(o.get("nested", {})), tuple(o.get("cold_args", ())))
            for o in self._doc["ops"]
        ]

    @property
    def cache_bytes(self) -> Optional[int]:
        """The cache the inputs were classed against (the GPU's L2, or ``cache_bytes=``), or None
        where they were not classed (on the CPU)."""
        return self._doc.get("cache_bytes") or None

    @property
    def calls(self) -> int:
        return self._doc["totals"]["calls"]

    @property
    def unique_signatures(self) -> int:
        return self._doc["totals"]["unique_signatures"]

    @property
    def layers(self) -> List[str]:
        """Layers in order of first appearance, named as ``named_modules()`` names them."""
        seen: Dict[str, None] = {}
        for o in self._doc["ops"]:
            for layer in o["layers"]:
                seen.setdefault(layer, None)
        return list(seen)

    @property
    def sequence(self) -> List[Tuple[str, str]]:
        """Every outermost call in issue order, as (signature, layer)."""
        ops = self._doc["ops"]
        return [(ops[entry]["signature"], layer) for entry, layer, *_ in self._doc["sequence"]]

    def to_pandas(self):
        """One row per unique signature."""
        return _pandas().DataFrame(
            [{"op": o.op, "overload": o.overload, "args": o.args, "count": o.count, "layers": ",".join(o.layers),
              "phase": o.phase, "cold_args": ",".join(o.cold_args)} for o in self.ops])

    def __repr__(self) -> str:
        return (f"<opcost.Inventory {self._doc['model']} input={self._doc['input']}: {self.calls} calls, "
                f"{self.unique_signatures} unique signatures>")


@dataclass(frozen=True)
class MissingCall:
    """A signature of the model without a measurement (it counts as zero in the prediction): the
    layers that call it (module paths, in order of first use), and, where its measurement failed
    in this run, why and what to do (one line), else None."""

    signature: str
    count: int
    layers: Tuple[str, ...]
    error: Optional[str]


class Prediction(_Document):
    """A model step's predicted time and energy (and, from ``validate``, the measured step)."""

    @property
    def time_us(self) -> float:
        return self._doc["predicted"]["time_us"]

    @property
    def time_ci95_us(self) -> float:
        """Half-width of the 95% interval; it covers the operators' GPU times only."""
        return self._doc["predicted"]["time_ci95_us"]

    @property
    def energy_mJ(self) -> Optional[float]:
        return self._doc["predicted"]["energy_mJ"]

    @property
    def energy_ci95_mJ(self) -> Optional[float]:
        return self._doc["predicted"]["energy_ci95_mJ"]

    @property
    def energy_unavailable(self) -> Optional[str]:
        """Why there is no energy figure, or None."""
        return self._doc["predicted"]["energy_unavailable"]

    @property
    def estimated(self) -> List[str]:
        """The signatures whose costs the cost model estimated (``estimate=True``), not measured:
        their figures and intervals are the model's (docs/estimate.md)."""
        return list(self._doc.get("estimated", {}).get("signatures", []))

    @property
    def capped_energy_mJ(self) -> float:
        """Of ``energy_mJ``, what operators measured at the GPU's power cap in their own loops
        contribute (0 when none was). Where the step stays below the cap their energy may not
        carry over: see docs/prediction.md."""
        return self._doc["capped"]["energy_mJ"]

    @property
    def pooled_energy(self) -> int:
        """How many measured signatures have pooled energies: tiny shares of the step whose power
        was shared with calls of their kind in one loop, each ±50% or wider (docs/energy-method.md,
        "Pooled columns"). Not counted among the flagged ones."""
        return int(self._doc.get("pooled_energy", 0))

    @property
    def launch_latency_us(self) -> Optional[float]:
        """On a GPU: the delay from a kernel's launch to its start on an idle GPU that the
        prediction adds wherever the GPU waits for the host: measured without the profiler
        (``launch_latency_traced_us`` is the traced step's, lengthened by the profiler's
        callbacks). None where launches were not traced (on the CPU: ``launches_why`` says why)."""
        return self._optional("launches", "latency_us")

    @property
    def launch_latency_traced_us(self) -> Optional[float]:
        """The launch latency as the traced step shows it (median over its launches onto an idle
        GPU), or None where launches were not traced or too few found the GPU idle."""
        return self._optional("launches", "latency_traced_us")

    @property
    def launches_why(self) -> Optional[str]:
        """Why each call's kernels were taken as launched when it returns, or None when the
        launches were traced."""
        return self._optional("launches", "why")

    @property
    def time_us_launched_at_return(self) -> Optional[float]:
        """With traced launches: the predicted time had every call launched its kernels as it
        returned, with no launch latency (the timeline without a trace)."""
        return self._doc["predicted"].get("time_us_launched_at_return")

    @property
    def complete(self) -> bool:
        """Every signature measured (or estimated) and the traced step's GPU time covered by its
        calls (see ``uncovered``)."""
        return self._doc["complete"]

    @property
    def uncovered(self) -> bool:
        """Over 1% of the traced step's GPU time ran in kernels no operator call launched (a CUDA
        graph's replay: ``torch.compile(mode="reduce-overhead")``, or the model's own graphs), and
        the prediction counts it as zero: ``untied_device_us`` of ``traced_device_us``. False where
        no step was traced (on the CPU, or with ``check_kernels=False``)."""
        if "uncovered" in self._doc:
            return bool(self._doc["uncovered"])
        # Written before the key was (it had the figures): incomplete with nothing missing can
        # only be the untied time.
        return not self._doc["complete"] and not self._doc.get("missing") and self.untied_device_us > 0

    @property
    def traced_device_us(self) -> float:
        """The traced step's GPU time, µs (0 where none was traced)."""
        return float(self._doc.get("traced_device_us", 0.0))

    @property
    def untied_device_us(self) -> float:
        """Of ``traced_device_us``, the time in kernels no operator call launched, µs."""
        return float(self._doc.get("untied_device_us", 0.0))

    @property
    def failures(self) -> int:
        """Measurements that failed in this run (noted on the ``opcost`` logger): an operator's error,
        or a row the database refused. The rest were measured and stored."""
        return int(self._doc.get("failures") or 0)

    @property
    def missing(self) -> List[str]:
        """Signatures without a measurement (they count as zero in the prediction)."""
        return [m["signature"] for m in self._doc["missing"]]

    @property
    def missing_calls(self) -> List[MissingCall]:
        """The missing signatures with their layers and, for those whose measurement failed,
        the reason and its fix."""
        return [MissingCall(m["signature"], m["count"], tuple(m.get("layers", ())), m.get("error"))
                for m in self._doc["missing"]]

    @property
    def failed_calls(self) -> List[MissingCall]:
        """The missing signatures whose measurement failed in this run (``error`` says why); the
        rest of the model was measured and predicted without them."""
        return [m for m in self.missing_calls if m.error is not None]

    @property
    def matched_ignoring_float_scalars(self) -> int:
        """How many signatures were predicted from a stored row whose arguments differ only in
        floating-point scalar values (an optimizer's step size changes every step), which leave
        the kernel's work as it is; see docs/prediction.md for the operators never matched so."""
        return int((self._doc.get("matched_ignoring_float_scalars") or {}).get("count", 0))

    def _optional(self, section: str, key: str) -> Any:
        """A figure of a section the report may lack (the measured step's, validate's; the traced
        launches', a GPU's), else None."""
        return (self._doc.get(section) or {}).get(key)

    @property
    def measured_time_us(self) -> Optional[float]:
        return self._optional("measured", "time_us")

    @property
    def measured_energy_mJ(self) -> Optional[float]:
        return self._optional("measured", "energy_mJ")

    @property
    def time_error(self) -> Optional[float]:
        """predicted / measured − 1, when the step was measured."""
        return self._optional("error", "time")

    @property
    def energy_error(self) -> Optional[float]:
        return self._optional("error", "energy")

    @property
    def paired_time_error(self) -> Optional[float]:
        """validate: the median over interleaved rounds of each round's prediction against
        that round's own steps, so that the host's speed is the same on both sides. The one to
        read when the host drifted (``headline == "paired"``)."""
        return self._optional("paired", "time_error_median")

    @property
    def paired_time_error_range(self) -> Optional[Tuple[float, float]]:
        low, high = self._optional("paired", "time_error_low"), self._optional("paired", "time_error_high")
        return None if low is None else (low, high)

    @property
    def paired_energy_error(self) -> Optional[float]:
        """validate: the step's energy against the prediction on a host as fast as it was while
        that energy was measured (the GPU idles between kernels for as long as the host takes to
        issue them). None when no host speed reproduces that step time (a GPU-bound step:
        then the energy does not depend on the host, and ``energy_error`` is the one to read)."""
        return self._optional("paired_energy", "energy_error")

    @property
    def host_drift(self) -> Optional[float]:
        """How much the host's speed moved across the paired rounds: the plain step's host time,
        (90th − 10th percentile) / median."""
        return self._optional("paired", "host_drift")

    @property
    def headline(self) -> Optional[str]:
        """Which time error to read: "paired" where the host drifted, else "unpaired"."""
        return self._optional("error", "headline")

    @property
    def flags(self) -> List[str]:
        """The measured step's flags (drift, throttling, other processes)."""
        return list(self._optional("measured", "flags") or [])

    def to_pandas(self, by: str = "layer"):
        """One row per layer (``by="layer"``) or per operator signature (``by="op"``)."""
        if by not in ("layer", "op"):
            raise ValueError(f"by={by!r}: use 'layer' or 'op'")
        rows = self._doc["layers" if by == "layer" else "ops"]
        return _pandas().DataFrame([{k: r[k] for k in ("name", "calls", "time_us", "gpu_us", "cpu_us", "energy_mJ",
                                                      "missing_calls")} for r in rows])

    def plot(self, by: str = "layer", metric: str = "time", top: int = _plot.TOP_ROWS):
        """A matplotlib Figure (never shown): the ``top`` largest layers (``by="layer"``) or
        operators (``by="op"``) in ``metric`` ("time" or "energy") as sorted bars, the rest summed,
        beside the whole step predicted and, from validate, measured, with their 95% intervals.
        Needs matplotlib: ``pip install 'opcost[plot]'``."""
        return _plot.prediction_figure(self._doc, by=by, metric=metric, top=top)

    def __repr__(self) -> str:
        energy = (f"{self.energy_mJ:.4g} ± {self.energy_ci95_mJ:.2g} mJ" if self.energy_mJ is not None
                  else "energy n/a")
        measured = f", measured {self.measured_time_us:.1f} µs" if self.measured_time_us else ""
        if self.paired_time_error is not None:
            measured += f" (paired error {100 * self.paired_time_error:+.2f}%)"
        return (f"<opcost.Prediction {self._doc['model']}: {self.time_us:.1f} ± {self.time_ci95_us:.2g} µs "
                f"(95%, GPU time only), {energy}{measured}{'' if self.complete else ', INCOMPLETE'}"
                f"{f' ({n} failed)' if (n := len(self.failed_calls)) else ''}>")


class Measurement(_Document):
    """One operator call measured alone in a loop."""

    @property
    def op(self) -> str:
        return self._doc["op"] + ("." + self._doc["overload"] if self._doc["overload"] else "")

    @property
    def args(self) -> str:
        return self._doc["args"]

    @property
    def time_us(self) -> float:
        """Mean time per call (GPU time on CUDA, wall time on the CPU)."""
        return self._doc["time_us"]["mean"]

    @property
    def time_ci95_us(self) -> Tuple[float, float]:
        return (self._doc["time_us"]["ci95_low"], self._doc["time_us"]["ci95_high"])

    @property
    def energy_mJ(self) -> Optional[float]:
        e = self._doc.get("energy_mJ")
        return e["per_call"] if e else None

    @property
    def energy_ci95_mJ(self) -> Optional[Tuple[float, float]]:
        e = self._doc.get("energy_mJ")
        return (e["ci95_low"], e["ci95_high"]) if e else None

    @property
    def energy_unavailable(self) -> Optional[str]:
        return self._doc.get("energy_unavailable")

    @property
    def flags(self) -> List[str]:
        return list(self._doc["flags"])

    @property
    def db_id(self) -> Optional[int]:
        return self._doc["db_id"]

    def to_pandas(self):
        return _pandas().DataFrame([{"op": self.op, "args": self.args, "time_us": self.time_us,
                                     "time_ci95_low_us": self.time_ci95_us[0],
                                     "time_ci95_high_us": self.time_ci95_us[1], "energy_mJ": self.energy_mJ,
                                     "flags": ",".join(self.flags)}])

    def __repr__(self) -> str:
        def with_ci(value: float, ci: Tuple[float, float], unit: str) -> str:
            return f"{value:.4g} ± {(ci[1] - ci[0]) / 2:.2g} {unit}"
        time = (f"{self.time_us:.4g} µs (1 sample: no interval)" if self._doc["time_us"]["samples"] < 2
                else with_ci(self.time_us, self.time_ci95_us, "µs"))
        energy = f", {with_ci(self.energy_mJ, self.energy_ci95_mJ, 'mJ')}" if self.energy_mJ is not None else ""
        return f"<opcost.Measurement {self.op} {self.args}: {time}{energy} (95%)>"


class Comparison(_Document):
    """Variants of one model side by side (``opcost.compare``): each one's step time and energy
    over interleaved rounds with its difference to the baseline (paired by round, 95% interval),
    and per layer, matched by module path (docs/compare.md)."""

    _LAYER_COLUMNS = ("layer", "variant", "presence", "present", "time_us", "time_ci95_us", "calls_per_step",
                      "energy_mJ", "energy_ci95_mJ", "time_vs_baseline", "time_vs_baseline_ci95", "time_significant",
                      "energy_vs_baseline", "energy_vs_baseline_ci95", "energy_significant")

    @property
    def json(self) -> Dict[str, Any]:
        """The JSON document, as ``opcost compare --json`` writes it."""
        return self._doc

    @property
    def text(self) -> str:
        """The text the command line prints: the whole step, then per layer."""
        return self._text

    @property
    def variants(self) -> List[str]:
        """The variants' names, the baseline first."""
        return [v["name"] for v in self._doc["variants"]]

    @property
    def baseline(self) -> str:
        return self._doc["baseline"]

    @property
    def energy_why(self) -> Optional[str]:
        """Why the steps have no energy (no counter on the device, ``energy=False``), or None."""
        return self._doc.get("energy_why") or None

    @property
    def layers_why(self) -> Optional[str]:
        """Why there is no per-layer comparison, or None where there is one."""
        return self._doc.get("layers_why") or None

    def _parts(self) -> Tuple[str, str]:
        """The text's whole-step part and its per-layer part (from the line "per layer ...")."""
        lines = self._text.splitlines(keepends=True)
        at = next((i for i, line in enumerate(lines) if line.startswith("per layer")), len(lines))
        return "".join(lines[:at]).rstrip("\n") + "\n", "".join(lines[at:])

    def table(self, by: Optional[str] = None) -> str:
        """The text the command line prints: all of it, or its whole-step part (``by="step"``) or
        its per-layer part (``by="layer"``)."""
        if by is None:
            return self._text
        if by not in ("step", "layer"):
            raise ValueError(f"by={by!r}: use 'step' or 'layer' (or leave it out for both)")
        return self._parts()[0 if by == "step" else 1]

    @staticmethod
    def _figure(summary: Optional[Dict[str, Any]]) -> Tuple[Optional[float], Optional[float]]:
        return (None, None) if summary is None else (summary["mean"], summary["ci95"])

    @staticmethod
    def _difference(d: Optional[Dict[str, Any]]) -> Tuple[Optional[float], Optional[float], Optional[bool]]:
        return (None, None, None) if d is None else (d["relative"], d["relative_ci95"], d["significant"])

    def to_pandas(self, by: str = "step"):
        """``by="step"``: one row per variant, its step's mean time and energy with their 95%
        half-widths, and its relative difference to the baseline (0.1: 10% more) with its
        half-width and whether it is significant (None for the baseline). ``by="layer"``: one row
        per layer and variant (``present`` False where the variant has no such layer); no rows
        where there was no per-layer comparison (``layers_why`` says why)."""
        if by not in ("step", "layer"):
            raise ValueError(f"by={by!r}: use 'step' or 'layer'")
        pandas = _pandas()
        if by == "step":
            rows = []
            for v in self._doc["variants"]:
                time, time_ci = self._figure(v["time_us"])
                energy, energy_ci = self._figure(v["energy_mJ"])
                dt, dt_ci, dt_sig = self._difference(v["time_vs_baseline"])
                de, de_ci, de_sig = self._difference(v["energy_vs_baseline"])
                rows.append({"variant": v["name"], "baseline": v["name"] == self.baseline,
                             "description": v["description"], "time_us": time, "time_ci95_us": time_ci,
                             "energy_mJ": energy, "energy_ci95_mJ": energy_ci, "time_vs_baseline": dt,
                             "time_vs_baseline_ci95": dt_ci, "time_significant": dt_sig, "energy_vs_baseline": de,
                             "energy_vs_baseline_ci95": de_ci, "energy_significant": de_sig,
                             "rounds": len(v["rounds"]), "flags": ",".join(v["flags"])})
            return pandas.DataFrame(rows)
        layers = self._doc.get("layers") or {"rows": [], "variants": []}
        rows = []
        for r in layers["rows"]:
            for variant in layers["variants"]:
                f = r["variants"].get(variant)
                time, time_ci = self._figure(f["time_us"] if f else None)
                energy, energy_ci = self._figure(f["energy_mJ"] if f else None)
                dt, dt_ci, dt_sig = self._difference(f["time_vs_baseline"] if f else None)
                de, de_ci, de_sig = self._difference(f["energy_vs_baseline"] if f else None)
                rows.append(dict(zip(self._LAYER_COLUMNS, (
                    r["layer"], variant, r["presence"], f is not None, time, time_ci,
                    f["calls_per_step"] if f else None, energy, energy_ci, dt, dt_ci, dt_sig, de, de_ci, de_sig))))
        return pandas.DataFrame(rows, columns=list(self._LAYER_COLUMNS))

    def plot(self, by: str = "step", metric: str = "time", top: int = _plot.TOP_ROWS):
        """A matplotlib Figure (never shown): ``by="step"``, each variant's difference to the
        baseline with its 95% interval (hatched, "~": within the noise) beside each variant's step;
        ``by="layer"``, the ``top`` costliest layers of the baseline, a bar per variant, absent
        layers marked. ``metric="energy"`` where the steps have energy (else ``energy_why`` says
        why). Needs matplotlib: ``pip install 'opcost[plot]'``."""
        return _plot.compare_figure(self._doc, by=by, metric=metric, top=top)

    def __repr__(self) -> str:
        parts = []
        for v in self._doc["variants"]:
            d = v["time_vs_baseline"]
            if d is None:
                parts.append(f"{v['name']} {v['time_us']['mean']:.4g} µs (baseline)")
            else:  # as the text table and the plot print it
                parts.append(f"{v['name']} {_plot.relative_text(d)}")
        return f"<opcost.Comparison {self._doc['model']}: {', '.join(parts)} (step time, 95%)>"
