"""Do operators' energies add up? (issue 11: distilgpt2 8x512 bf16/fp16-autocast's energy is
predicted 6-9% high in every round while its time holds; its output GEMM, 68% of the predicted
energy, draws 515 W alone and three GEMM loops read 764-789 W, where the whole step averages
about 460 W.)

Small bf16 steps, from one operator to a transformer-like mix, each validated by opcost from an
empty database: every operator alone in its own loop, the whole step in its loop, and the
prediction (the operators' energies added along the timeline) against the step's energy. If
one operator's step is predicted right and mixes of the same operators are predicted high,
the energies of operators measured alone do not add up to the energy of their mix. Beside each
step: its average power, each operator's power alone, and how that power moved across its
energy windows (first and last window), temperatures and clocks.

    PYTHONPATH=build/python python3 bench/mix_energy.py OUT.json
    python3 bench/mix_energy.py --summarize OUT.json...   # the tables of the results' README
"""
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

import opcost


class Mlp(nn.Module):
    """A transformer block's feed-forward half: layer norm, 768 -> 3072 -> 768, GELU, residual."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(768)
        self.up = nn.Linear(768, 3072)
        self.down = nn.Linear(3072, 768)

    def forward(self, x):
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class HeadAndUps(nn.Module):
    """The output GEMM (about 510 W alone, below the power limit) and `ups` MLP up-projections
    (about 780 W alone, at the limit) on the same tokens, back to back: as `ups` grows, the
    step's power climbs from the one's towards the other's, with no idle between kernels."""

    def __init__(self, ups: int, head: bool = True):
        super().__init__()
        self.head = nn.Linear(768, 50257, bias=False) if head else None
        self.up = nn.Linear(768, 3072)
        self.ups = ups

    def forward(self, x):
        outs = [self.head(x)] if self.head is not None else []
        return outs + [self.up(x) for _ in range(self.ups)]


def cases():
    """name -> (module, input): one GEMM, the GEMM after a light operator, MLP blocks, and the
    output GEMM diluting more and more up-projections."""
    bf16 = {"device": "cuda", "dtype": torch.bfloat16}
    tokens = torch.randn(4096, 768, **bf16)  # distilgpt2 at batch 8 x 512
    return {
        "lm-head": (nn.Linear(768, 50257, bias=False), tokens),
        "norm+lm-head": (nn.Sequential(nn.LayerNorm(768), nn.Linear(768, 50257, bias=False)), tokens),
        "mlp": (Mlp(), tokens),
        "mlp-x6": (nn.Sequential(*[Mlp() for _ in range(6)]), tokens),
        "mlp-x6+lm-head": (nn.Sequential(*[Mlp() for _ in range(6)], nn.LayerNorm(768),
                                         nn.Linear(768, 50257, bias=False)), tokens),
        "lm-head+up-x4": (HeadAndUps(4), tokens),
        "lm-head+up-x16": (HeadAndUps(16), tokens),
        "lm-head+up-x64": (HeadAndUps(64), tokens),
        "up-x64": (HeadAndUps(64, head=False), tokens),
    }


def op_rows(db: Path):
    """Each operator's stored measurement: energy, power and how its windows' power moved."""
    rows = []
    for args, op, doc in sqlite3.connect(db).execute("select args, op, result_json from measurements"):
        if op.startswith("model::") or "f32[1]" in args:  # the step and the gap probe
            continue
        d = json.loads(doc)
        e = d.get("energy_mJ") or {}
        windows = e.get("window_list") or []
        # [start_s, seconds, mJ per call, W]: the last column is the window's power
        rows.append({"op": op, "args": args, "time_us": d["time_us"]["median"],
                     "energy_mJ": e.get("per_call"), "rel_ci95": e.get("rel_ci95"),
                     "power_W": (d.get("power_W") or {}).get("average"),
                     "first_window_W": windows[0][3] if windows else None,
                     "last_window_W": windows[-1][3] if windows else None, "windows": len(windows),
                     "temperature_C": d.get("temperature_C"), "sm_clock_MHz": d["clocks_MHz"],
                     "throttle": d.get("throttle_reasons")})
    return rows


def summarize(paths) -> None:
    """Per case: the errors and powers; the output GEMM's energy alone against its temperature;
    each up-projection's energy inside the diluted steps against alone."""
    for path in paths:
        cases = {c["case"]: c for c in json.loads(Path(path).read_text())["cases"]}
        print(f"== {path}")
        print("case | step µs | step W | energy error | paired | time error | gap mJ | operators alone (W, max °C, min SM MHz)")
        for c in cases.values():
            paired = c["paired_energy_error"]
            ops = "; ".join(f"{o['args'].split(' ')[1] if ' ' in o['args'] else o['op']} {o['power_W']:.0f} W "
                            f"{o['temperature_C']['max']} °C {o['sm_clock_MHz']['sm_min']}" for o in c["ops"])
            print(f"{c['case']} | {c['step_time_us']:.0f} | {c['step_power_W']:.0f} | {100 * c['energy_error']:+.1f}% | "
                  + (f"{100 * paired:+.1f}%" if paired is not None else "-")
                  + f" | {100 * c['time_error']:+.1f}% | {c['gap_energy_mJ']:.1f} | {ops}")
        print("output GEMM alone, by case: mJ per call at its loop's highest temperature")
        for c in cases.values():
            for o in c["ops"]:
                if "50257" in o["args"]:
                    print(f"  {c['case']}: {o['energy_mJ']:.1f} mJ at {o['temperature_C']['max']} °C, {o['power_W']:.0f} W")
        if "lm-head" in cases and "lm-head+up-x4" in cases:
            head = cases["lm-head"]
            for k in (4, 16, 64):
                c = cases.get(f"lm-head+up-x{k}")
                if not c:
                    continue
                up = next(o for o in c["ops"] if "3072" in o["args"])
                print(f"  up-projection in lm-head+up-x{k}: (step - lm-head step) / {k} = "
                      f"{(c['step_energy_mJ'] - head['step_energy_mJ']) / k:.1f} mJ, "
                      f"{(c['step_time_us'] - head['step_time_us']) / k:.1f} µs; alone {up['energy_mJ']:.1f} mJ, "
                      f"{up['time_us']:.1f} µs")


def main() -> None:
    if sys.argv[1] == "--summarize":
        summarize(sys.argv[2:])
        return
    out = Path(sys.argv[1])
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "cases": []}
    for name, (module, x) in cases().items():
        module = module.to(device="cuda", dtype=torch.bfloat16).eval()
        with tempfile.TemporaryDirectory() as tmp, torch.inference_mode():
            db = Path(tmp) / "ops.db"
            p = opcost.validate(module, x, db=str(db), name=name)
            doc = p.to_dict()
            measured, predicted = doc["measured"], doc["predicted"]
            step_W = measured["energy_mJ"] / measured["energy_loop_time_us"] * 1e3
            case = {"case": name, "time_error": p.time_error, "energy_error": p.energy_error,
                    "paired_energy_error": p.paired_energy_error, "step_time_us": measured["time_us"],
                    "step_energy_mJ": measured["energy_mJ"], "step_power_W": step_W,
                    "predicted_energy_mJ": predicted["energy_mJ"], "gap_energy_mJ": predicted["gap_energy_mJ"],
                    "gap_power_W": doc.get("gap_power_W"), "paired_time_error": p.paired_time_error,
                    "host_drift": p.host_drift, "timeline": predicted["timeline"], "paired": doc.get("paired"),
                    "ops": op_rows(db)}
        results["cases"].append(case)
        print(f"{name:16s} step {case['step_time_us']:8.1f} us {step_W:5.0f} W  energy error "
              f"{100 * case['energy_error']:+5.1f}%  time error {100 * case['time_error']:+5.1f}%  ops alone: "
              + ", ".join(f"{o['op']} {o['power_W']:.0f} W ({o['first_window_W']:.0f}->{o['last_window_W']:.0f})"
                          for o in case["ops"] if o["power_W"]), flush=True)
    out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
