#!/usr/bin/env python3
"""One line per `opcost validate --json` document: errors with the host costs re-measured beside
the step and with the stored ones, the step's drift, and the CPU side of both timelines.
    bench/summarize_validate.py FILE.json..."""
import json
import sys

for f in sys.argv[1:]:
    d = json.load(open(f))
    m, hc = d["measured"], d.get("host_costs", {})
    stored = hc.get("stored_host_costs_prediction", {})
    e = d["error"]["energy"]
    print(f"{f}: time {100 * d['error']['time']:+.2f}% energy {100 * e:+.2f}% | with stored host costs "
          f"{100 * stored.get('time_error', float('nan')):+.2f}% | step before ops {m.get('before_ops_time_us', float('nan')):.0f} µs, "
          f"after {m['time_us']:.0f} µs | CPU issue: pass {d['predicted']['timeline']['cpu_us']:.0f} µs, stored "
          f"{stored.get('cpu_us', float('nan')):.0f} µs ({hc.get('rounds')} rounds) | kernel mismatches "
          f"{len(d['kernels'].get('mismatches', []))}")
