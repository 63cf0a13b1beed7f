#!/usr/bin/env python3
"""Where a validate's predicted step time falls short: kernel time or GPU idle (issue 27).

    python3 bench/step_idle.py VALIDATE.json[.gz] ...

Reads validate documents as `opcost validate --json` (or `Prediction.to_json()`) writes them,
nothing else, and prints per document:
- the paired rounds' medians (measured and predicted) and their error;
- the operators' GPU time from their loops (the prediction's `gpu_busy_us`) against the kernel
  check's time of the same kernels traced in the model, apart for generated (`compiled::`)
  kernels and ATen operators;
- the GPU idle the prediction places (its timeline's `gap_us`) against the idle the measured
  step implies (paired median − GPU time traced in the model − the synchronisation);
- the host: `observer_scale` (the plain step's host time over the observed one's, which the
  prediction applies to every call's host time alike) and the paired host drift;
- the paired rounds in five bins by predicted time (as even as their count allows): where a step
  is host-bound in some rounds and GPU-bound in others, the error of each regime.
A document without one of these fields prints what it has and names what is missing.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional


def load(path: str) -> Dict[str, Any]:
    with (gzip.open(path, "rt", encoding="utf-8") if path.endswith(".gz") else open(path, encoding="utf-8")) as f:
        return json.load(f)


class Unreadable(ValueError):
    """A document or field this script cannot read, said in one line."""


def section(doc: Dict[str, Any], key: str) -> Dict[str, Any]:
    value = doc.get(key) or {}
    if not isinstance(value, dict):
        raise Unreadable(f"`{key}` is {type(value).__name__}, not an object")
    return value


def gpu_times(doc: Dict[str, Any], generated: bool) -> tuple[float, float, int]:
    """The loops' and the model's GPU time of the generated kernels (or of the ATen operators),
    and how many of them have no time in the model (their loops' time is left out of neither)."""
    loops = model = 0.0
    without_model = 0
    for op in doc.get("ops", []):
        if not isinstance(op, dict) or op.get("name", "").startswith("compiled::") != generated:
            continue
        loops += float(op.get("gpu_us", 0.0))
        per_call = (op.get("kernels") or {}).get("model_device_us_per_call")
        if per_call is None:
            without_model += 1 if op.get("gpu_us", 0.0) else 0
            continue
        model += float(per_call) * float(op.get("calls", 0))
    return loops, model, without_model


def bins(predicted: List[float], measured: List[float], count: int = 5) -> List[str]:
    """The rounds sorted by predicted time, cut into `count` bins of sizes differing by one at most."""
    pairs = sorted(zip(predicted, measured))
    out = []
    for k in range(count):
        chunk = pairs[len(pairs) * k // count:len(pairs) * (k + 1) // count]
        if not chunk:
            continue
        out.append("{} rounds: predicted {:.0f} µs, measured {:.0f} µs: {:+.1f}%".format(
            len(chunk), statistics.median(p for p, _ in chunk), statistics.median(m for _, m in chunk),
            100 * statistics.median(p / m - 1 for p, m in chunk)))
    return out


def report(path: str) -> List[str]:
    doc = load(path)
    if not isinstance(doc, dict):
        raise Unreadable(f"its top level is a {type(doc).__name__}, not a validate document's object")
    lines = [path]
    paired = section(doc, "paired")
    measured_rounds, predicted_rounds = paired.get("measured_us"), paired.get("predicted_us")
    if not measured_rounds or not predicted_rounds:
        return lines + ["  no paired rounds (paired.measured_us / predicted_us): nothing to decompose"]
    if len(measured_rounds) != len(predicted_rounds):
        raise Unreadable(f"{len(measured_rounds)} measured paired rounds against {len(predicted_rounds)} predicted")
    if not all(isinstance(v, (int, float)) and v > 0 for v in list(measured_rounds) + list(predicted_rounds)):
        raise Unreadable("a paired round's time is not a positive number")
    measured = statistics.median(measured_rounds)
    predicted = statistics.median(predicted_rounds)
    lines.append(f"  paired medians: measured {measured:.0f} µs, predicted {predicted:.0f} µs, "
                 f"short by {measured - predicted:.0f} µs ({100 * (predicted / measured - 1):+.1f}%)")
    timeline = section(section(doc, "predicted"), "timeline")
    traced: Optional[float] = section(doc, "kernels").get("device_us_traced_in_model")
    missing = [name for name, present in (("predicted.timeline.gpu_busy_us", "gpu_busy_us" in timeline),
                                          ("predicted.timeline.gap_us", "gap_us" in timeline),
                                          ("kernels.device_us_traced_in_model", traced is not None),
                                          ("sync_us", "sync_us" in doc)) if not present]
    if not missing:
        gen_loops, gen_model, gen_without = gpu_times(doc, True)
        aten_loops, aten_model, aten_without = gpu_times(doc, False)
        lines.append(f"  GPU time: loops {timeline['gpu_busy_us']:.0f} µs against {traced:.0f} traced in the model "
                     f"(generated {gen_loops:.0f} against {gen_model:.0f}; ATen {aten_loops:.0f} against "
                     f"{aten_model:.0f})")
        if gen_without or aten_without:
            lines.append(f"    {gen_without + aten_without} operator(s) with GPU time have no time in the model "
                         "(kernels.model_device_us_per_call): their loops' time has no counterpart above")
        implied = measured - traced - doc["sync_us"]
        lines.append(f"  GPU idle: predicted {timeline['gap_us']:.0f} µs, implied by the measured "
                     f"step {implied:.0f} µs (paired median − traced GPU time − synchronisation)")
    else:
        lines.append(f"  without {', '.join(missing)}: the GPU side is not decomposed")
    host = section(doc, "host")
    if "observer_scale" in host:
        drift = paired.get("host_drift")
        lines.append(f"  host: observer_scale {host['observer_scale']:.3f} (plain step {host.get('plain_step_us', 0):.0f} µs, "
                     f"observed {host.get('observed_step_us', 0):.0f} µs), paired host drift "
                     + (f"{drift:.2f}" if isinstance(drift, (int, float)) else "not recorded"))
    else:
        lines.append("  without host.observer_scale: the host's calibration is not shown")
    lines.append("  paired rounds by predicted time:")
    lines += ["    " + b for b in bins(predicted_rounds, measured_rounds)]
    return lines


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    status = 0
    for path in argv:
        if not Path(path).is_file():
            print(f"{path}: no such file; give a validate document (opcost validate --json)", file=sys.stderr)
            status = 2
            continue
        try:
            print("\n".join(report(path)))
        except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError, ZeroDivisionError) as e:
            print(f"{path}: not a validate document this script can read ({type(e).__name__}: {e})", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
