"""Summarises `opcost trace --energy --group-by layer --json`: the attributed energy against the
untraced step's measured energy, and the layers with the most energy.
    python3 bench/summarize_trace_energy.py TABLE.json [ROWS]"""
import json
import sys

t = json.load(open(sys.argv[1]))
rows = int(sys.argv[2]) if len(sys.argv) > 2 else 15
e, m = t.get("energy"), t.get("measured_step", {})
print(f"steps traced: {t['steps']}; device busy {t['device_busy_us']:.1f} us, untied {t['untied_gpu_us']:.1f} us")
if m:
    print(f"untraced step: {m['time_us']:.1f} us ± {m['time_ci95_us']:.1f}; "
          + (f"{m['energy_mJ']:.2f} mJ ± {m['energy_ci95_mJ']:.2f} at {m['energy_loop_time_us']:.1f} us a step "
             "in its energy loop" if "energy_mJ" in m else f"energy unavailable: {m.get('energy_unavailable')}")
          + (f"; flags: {', '.join(m['flags'])}" if m.get("flags") else ""))
if not e:
    print("no energy per layer:", t.get("energy_unavailable"))
    sys.exit(0)
self_sum = sum(r["energy_self_mJ"] for r in t["rows"])
print(f"attributed {e['attributed_mJ']:.2f} mJ ± {e['attributed_ci95_mJ']:.2f} (kernels {e['kernels_mJ']:.2f}, "
      f"idle {e['idle_mJ']:.2f} at {e['idle_power_W']:.0f} W ± {e['idle_power_ci95_W']:.0f}, idle scale "
      f"{e['idle_scale']:.3f}); measured {e['measured_mJ']:.2f} mJ ± {e['measured_ci95_mJ']:.2f}; "
      f"error {100 * e['error']:+.2f}% (not scaled)")
print(f"layers' self energies sum to {self_sum:.3f} mJ; unattributed device time {e['unattributed_device_us']:.1f} us"
      + (f" ({e['calls_without_power']})" if e["calls_without_power"] else ""))
print(f"\n{'layer':<44} {'energy total mJ':>18} {'self mJ':>16} {'self W':>7} {'GPU self us':>12}")
for r in sorted(t["rows"], key=lambda r: -r["energy_total_mJ"])[:rows]:
    print(f"{r['name'][:44]:<44} {r['energy_total_mJ']:>9.2f} ± {r['energy_total_ci95_mJ']:<6.2f} "
          f"{r['energy_self_mJ']:>8.2f} ± {r['energy_self_ci95_mJ']:<5.2f} "
          f"{'-' if r['power_self_W'] is None else round(r['power_self_W']):>7} "
          f"{r['gpu_self_us']:>12.1f}")
