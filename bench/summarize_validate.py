#!/usr/bin/env python3
"""One line per `opcost validate --json` document: the unpaired and the paired time error (each
round's prediction against its own steps), the energy error, the host's drift, the step before
and after the operator loops, and the kernel mismatches.
    bench/summarize_validate.py FILE.json..."""
import json
import sys

nan = float("nan")
for f in sys.argv[1:]:
    d = json.load(open(f))
    m, p, e = d["measured"], d.get("paired", {}), d["error"]
    energy = 100 * e["energy"] if e.get("energy") is not None else nan
    print(f"{f}: time {100 * e['time']:+.2f}% | paired {100 * p.get('time_error_median', nan):+.2f}% "
          f"({100 * p.get('time_error_low', nan):+.2f}% to {100 * p.get('time_error_high', nan):+.2f}%, "
          f"{p.get('rounds')} rounds, host drift {100 * p.get('host_drift', nan):.1f}%) | energy {energy:+.2f}% | "
          f"headline {e.get('headline')} | step before ops {m.get('before_ops_time_us', nan):.0f} µs, after "
          f"{m['time_us']:.0f} µs | kernel mismatches {len(d['kernels'].get('mismatches', []))}")
