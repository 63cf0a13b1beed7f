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
- the paired rounds in bins of a fifth of them, by predicted time: where a step is host-bound in some rounds
  and GPU-bound in others, the error of each regime.
A document without one of these fields prints what it has and says which is missing.
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


def gpu_times(doc: Dict[str, Any], generated: bool) -> tuple[float, float]:
    """The loops' and the model's GPU time of the generated kernels (or of the ATen operators)."""
    loops = model = 0.0
    for op in doc.get("ops", []):
        if op.get("name", "").startswith("compiled::") != generated:
            continue
        loops += op.get("gpu_us", 0.0)
        per_call = (op.get("kernels") or {}).get("model_device_us_per_call")
        model += (per_call or 0.0) * op.get("calls", 0)
    return loops, model


def bins(predicted: List[float], measured: List[float], count: int = 5) -> List[str]:
    pairs = sorted(zip(predicted, measured))
    size = max(1, len(pairs) // count)
    out = []
    for i in range(0, len(pairs), size):
        chunk = pairs[i:i + size]
        out.append("predicted {:.0f} µs, measured {:.0f} µs: {:+.1f}%".format(
            statistics.median(p for p, _ in chunk), statistics.median(m for _, m in chunk),
            100 * statistics.median(p / m - 1 for p, m in chunk)))
    return out


def report(path: str) -> List[str]:
    doc = load(path)
    lines = [path]
    paired = doc.get("paired") or {}
    measured_rounds, predicted_rounds = paired.get("measured_us"), paired.get("predicted_us")
    if not measured_rounds or not predicted_rounds:
        return lines + ["  no paired rounds (paired.measured_us / predicted_us): nothing to decompose"]
    measured = statistics.median(measured_rounds)
    predicted = statistics.median(predicted_rounds)
    lines.append(f"  paired medians: measured {measured:.0f} µs, predicted {predicted:.0f} µs, "
                 f"short by {measured - predicted:.0f} µs ({100 * (predicted / measured - 1):+.1f}%)")
    timeline = (doc.get("predicted") or {}).get("timeline") or {}
    kernels = doc.get("kernels") or {}
    traced: Optional[float] = kernels.get("device_us_traced_in_model")
    if "gpu_busy_us" in timeline and traced is not None:
        gen_loops, gen_model = gpu_times(doc, True)
        aten_loops, aten_model = gpu_times(doc, False)
        lines.append(f"  GPU time: loops {timeline['gpu_busy_us']:.0f} µs against {traced:.0f} traced in the model "
                     f"(generated {gen_loops:.0f} against {gen_model:.0f}; ATen {aten_loops:.0f} against "
                     f"{aten_model:.0f})")
        implied = measured - traced - doc.get("sync_us", 0.0)
        lines.append(f"  GPU idle: predicted {timeline.get('gap_us', float('nan')):.0f} µs, implied by the measured "
                     f"step {implied:.0f} µs (paired median − traced GPU time − synchronisation)")
    else:
        lines.append("  no timeline GPU time or traced GPU time (predicted.timeline.gpu_busy_us, "
                     "kernels.device_us_traced_in_model): the GPU side is not decomposed")
    host = doc.get("host") or {}
    if "observer_scale" in host:
        lines.append(f"  host: observer_scale {host['observer_scale']:.3f} (plain step {host.get('plain_step_us', 0):.0f} µs, "
                     f"observed {host.get('observed_step_us', 0):.0f} µs), paired host drift "
                     f"{paired.get('host_drift', float('nan')):.2f}")
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
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{path}: not a validate document this script can read ({type(e).__name__}: {e})", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
