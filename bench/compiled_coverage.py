#!/usr/bin/env python3
"""Issue 27: what opcost sees of a torch.compile'd model on a GPU, now that the kernels inductor
generates are operators of the inventory (opcost/_compiled.py).

    PYTHONPATH=build/python python3 bench/compiled_coverage.py run OUT_DIR [--only REGEX]
    python3 bench/compiled_coverage.py summarize OUT_DIR      # summary.json

Each case in a process of its own (a fresh CUDA context, an empty database in OUT_DIR): the
model is compiled by its first call inside `opcost.inventory` (so that inductor's provenance
names each kernel's layer), then
- the inventory: generated kernels (signatures, calls, how many have a layer), ATen calls;
- `opcost.validate` from an empty database: every signature measured alone (generated kernels
  replayed on seeded inputs of their geometry), the prediction against the measured step, paired;
- `opcost.trace_model(energy=True)` on that database: the step's GPU time, the share of it in
  kernels launched by generated-kernel calls and by any inventory operator (gpu_time_covered),
  and the per-layer energy closure (trace_energy_error).
Writes OUT_DIR/case-NAME.json and prints one line per case.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict

CASES: Dict[str, Dict[str, Any]] = {
    "mlp-block-b64": dict(kind="mlp", batch=64),
    "resnet18-b32": dict(kind="tv", arch="resnet18", batch=32),
    "resnet50-b32-bf16": dict(kind="tv", arch="resnet50", batch=32, dtype="bf16"),
    "gpt2-8x512-bf16": dict(kind="gpt2", batch=8, seq=512, dtype="bf16"),
    # A training step (forward, loss, backward, SGD): the backward graph's kernels too.
    "resnet18-b32-train": dict(kind="tv", arch="resnet18", batch=32, train=True),
    # The same step with cross entropy against random labels: the output's sum gives every sample
    # the same gradient, and its step draws 26% less energy than with a real loss
    # (bench/results/2026-11-27-h100-training-loss/).
    "resnet18-b32-train-ce": dict(kind="tv", arch="resnet18", batch=32, train=True, loss="ce"),
    # torch.compile(mode="reduce-overhead"): inductor's code replays the step's kernels from CUDA
    # graphs (cudagraph trees) after its warm-up runs.
    "mlp-block-b64-reduce-overhead": dict(kind="mlp", batch=64, mode="reduce-overhead"),
    "resnet18-b32-reduce-overhead": dict(kind="tv", arch="resnet18", batch=32, mode="reduce-overhead"),
}


def build(spec: Dict[str, Any]):
    import torch
    torch.manual_seed(0)
    dtype = {None: torch.float32, "bf16": torch.bfloat16}[spec.get("dtype")]
    if spec["kind"] == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.LayerNorm(4096),
                                    torch.nn.Linear(4096, 1024))
        inputs = (torch.randn(spec["batch"], 1024),)
    elif spec["kind"] == "tv":
        import torchvision
        model = getattr(torchvision.models, spec["arch"])(weights=None)
        inputs = (torch.randn(spec["batch"], 3, 224, 224),)
    else:
        import transformers
        model = transformers.GPT2LMHeadModel(transformers.GPT2Config())
        inputs = (torch.randint(0, model.config.vocab_size, (spec["batch"], spec["seq"])),)
    dev = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU: a smoke test of this script
    model = model.to(dev).to(dtype).train(bool(spec.get("train")))
    inputs = tuple(t.to(dev).to(dtype) if t.is_floating_point() else t.to(dev) for t in inputs)
    return model, inputs


def run_case(name: str, out: Path) -> Dict[str, Any]:
    import torch
    import opcost
    model, inputs = build(CASES[name])
    compiled = torch.compile(model, mode=CASES[name].get("mode"))
    # A training step: forward, the output's sum as the loss (or the case's), backward and SGD (opcost's own).
    steps = (dict(train=True, optimizer=torch.optim.SGD(model.parameters(), lr=1e-3))
             if CASES[name].get("train") else {})
    if CASES[name].get("loss") == "ce":  # fixed random labels, the same every step
        labels = torch.randint(0, 1000, (inputs[0].shape[0],), device=inputs[0].device)
        steps["loss_fn"] = lambda out: torch.nn.functional.cross_entropy(out, labels)
    db = out / f"db-{name}.sqlite"
    db.unlink(missing_ok=True)
    result: Dict[str, Any] = {"case": name, "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu", "torch": torch.__version__}
    t0 = time.perf_counter()
    inv = opcost.inventory(compiled, *inputs, name=name, **steps)
    result["inventory_wall_s"] = time.perf_counter() - t0
    generated = [o for o in inv.ops if o.op.startswith("compiled::")]
    result["generated_signatures"] = len(generated)
    result["generated_calls"] = sum(o.count for o in generated)
    # Signatures whose every listed layer is a named one (not the top level): a signature's calls
    # are not listed one by one, so this counts signatures, not launches.
    result["generated_signatures_with_layer"] = sum(1 for o in generated if o.layers and all(o.layers))
    result["aten_calls"] = inv.calls - result["generated_calls"]
    result["layers"] = len(inv.layers)
    result["generated_examples"] = [{"op": o.op, "args": o.args[:200], "layers": list(o.layers)[:3]}
                                    for o in generated[:8]]
    t0 = time.perf_counter()
    val = opcost.validate(compiled, *inputs, db=str(db), name=name, **steps)
    result["validate_wall_s"] = time.perf_counter() - t0
    result["validate"] = {k: getattr(val, k, None) for k in (
        "time_us", "measured_time_us", "energy_mJ", "complete", "time_error", "paired_time_error",
        "energy_error", "paired_energy_error")}
    result["validate"]["missing"] = len(val.missing)
    result["validate"]["missing_generated"] = sum(1 for m in val.missing if m.startswith("compiled::"))
    (out / f"validate-{name}.json").write_text(val.to_json())
    result["validate_text"] = val.table()[-4000:]
    try:
        t = opcost.trace_model(compiled, *inputs, name=name, energy=True, db=str(db), **steps)
        rows = [r for r in t.key_averages(group_by="op") if r["name"] != "total"]
        total = sum(float(r["gpu_self_us"] or 0) for r in rows)
        gen = sum(float(r["gpu_self_us"] or 0) for r in rows if str(r["name"]).startswith("compiled::"))
        ops = sum(float(r["gpu_self_us"] or 0) for r in rows if "::" in str(r["name"]))
        table = json.loads(t.run.table_json("layer"))
        totals = table.get("totals") or table
        busy, untied = totals.get("device_busy_us"), totals.get("untied_gpu_us") or 0
        # GPU time in kernels tied to an inventory operator (ATen or generated), of the step's busy
        # time: the trace's own figures (activities tied to no call are the rest).
        result["trace"] = {"gpu_us": total, "generated_gpu_us": gen, "operator_gpu_us": ops,
                           "device_busy_us": busy, "untied_gpu_us": untied,
                           "generated_share": gen / total if total else None,
                           "gpu_time_covered": 1 - untied / busy if busy else None,
                           "uncovered_rows": [r["name"] for r in rows if "::" not in str(r["name"])][:10]}
        result["trace_energy_error"] = (table.get("energy") or {}).get("error")
        result["trace_energy_unavailable"] = table.get("energy_unavailable")
        result["trace_text"] = t.table()[:6000]
        result["trace_layers_text"] = t.table(group_by="layer")[:6000]
    except Exception as e:  # the trace is a second look: its failure is recorded, not fatal
        result["trace_error"] = f"{type(e).__name__}: {e}"[:500]
    return result


def summarize(out: Path) -> None:
    """summary.json in issue 27's form: {"compiled": [{case, paired_time_error, paired_energy_error,
    gpu_time_covered}]} (fractions), beside the cases' own files."""
    cases = [json.loads(p.read_text()) for p in sorted(out.glob("case-*.json"))]
    compiled = [{"case": c["case"],
                 "paired_time_error": (c.get("validate") or {}).get("paired_time_error"),
                 "paired_energy_error": (c.get("validate") or {}).get("paired_energy_error"),
                 "gpu_time_covered": (c.get("trace") or {}).get("gpu_time_covered"),
                 "trace_energy_error": c.get("trace_energy_error"),
                 "complete": (c.get("validate") or {}).get("complete"),
                 "validate_wall_s": c.get("validate_wall_s")} for c in cases]
    (out / "summary.json").write_text(json.dumps({"compiled": compiled}, indent=1) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--only", default=".")
    r.add_argument("--timeout", type=float, default=240)
    sm = sub.add_parser("summarize")
    sm.add_argument("out", type=Path)
    c = sub.add_parser("case")
    c.add_argument("name")
    c.add_argument("out", type=Path)
    args = ap.parse_args()
    if args.cmd == "summarize":
        summarize(args.out)
        return
    if args.cmd == "case":
        result = run_case(args.name, args.out)
        (args.out / f"case-{args.name}.json").write_text(json.dumps(result, indent=1))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        if not re.search(args.only, name):
            continue
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, __file__, "case", name, str(args.out)], timeout=args.timeout,
                               capture_output=True, text=True)
            (args.out / f"log-{name}.txt").write_text(p.stdout + p.stderr)
            status = f"rc={p.returncode}"
        except subprocess.TimeoutExpired as e:
            (args.out / f"log-{name}.txt").write_text(str(e.stdout or "") + str(e.stderr or ""))
            status = "timed out"
        case = args.out / f"case-{name}.json"
        summary = json.loads(case.read_text()) if case.exists() else {}
        trace = dict(summary.get("trace") or {}, uncovered_rows=None)
        print(f"{name}: {status} in {time.perf_counter() - t0:.0f} s; generated "
              f"{summary.get('generated_calls')} calls, {summary.get('generated_signatures')} signatures "
              f"({summary.get('generated_signatures_with_layer')} in named layers), "
              f"aten {summary.get('aten_calls')}; validate {summary.get('validate')} in "
              f"{summary.get('validate_wall_s')} s; trace {trace}, energy closure {summary.get('trace_energy_error')}"
              f"{' ' + summary['trace_error'] if 'trace_error' in summary else ''}", flush=True)
    summarize(args.out)


if __name__ == "__main__":
    main()
