#!/usr/bin/env python3
"""Issue 25's goals on a GPU: how long `opcost.validate` takes from an empty database, and how
right its energy is, on a set of models nobody tuned for (vision, encoder, decoders, training).

    PYTHONPATH=build/python python3 bench/energy_speed.py run OUT_DIR [--only REGEX] [--timeout S] [--own-loops N] [--no-trace]
    PYTHONPATH=build/python python3 bench/energy_speed.py model OUT_DIR BUILD_DIR [--own-loops N]
    python3 bench/energy_speed.py summarize OUT_DIR

run: each case in a process of its own (a fresh CUDA context, an empty database in OUT_DIR):
the model is built and run once, then `opcost.validate` is timed by wall clock (the figure the
goal reads: validate_wall_s), then `opcost.trace_model(energy=True)` on the same database gives
the per-layer energy closure. Writes OUT_DIR/case-NAME.json, and the progress lines of opcost
with their times (log-NAME.txt) so that where the time went can be read afterwards. A case past
--timeout is written as such; a run stopped by SIGTERM (an outer `timeout`) writes the case in
hand as cut off, with its seconds, and stops.
model: `opcost model resnet50 --batch 32 --target 0.95` from an empty database, timed.
--no-trace leaves the trace out (a comparison of validate's wall alone: no trace_energy_error).
summarize: summary.json (one object per case: case, validate_wall_s, paired_time_error,
paired_energy_error, trace_energy_error; errors as fractions) and summary.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

# name -> (builder key, batch/shape, dtype or autocast, train)
CASES: Dict[str, Dict[str, Any]] = {
    "efficientnet_b0-b16": dict(kind="tv", arch="efficientnet_b0", batch=16),
    "mobilenet_v3_large-b64-bf16": dict(kind="tv", arch="mobilenet_v3_large", batch=64, dtype="bf16"),
    "swin_t-b8": dict(kind="tv", arch="swin_t", batch=8),
    "convnext_tiny-b16-autocast_fp16": dict(kind="tv", arch="convnext_tiny", batch=16, autocast="fp16"),
    "vit_b_16-b8-bf16": dict(kind="tv", arch="vit_b_16", batch=8, dtype="bf16"),
    "resnet50-b32": dict(kind="tv", arch="resnet50", batch=32),
    "bert_base-16x64-bf16": dict(kind="bert", batch=16, seq=64, dtype="bf16"),
    "gpt2-1x1024": dict(kind="gpt2", batch=1, seq=1024),
    "llama8-4x1024-bf16": dict(kind="llama", batch=4, seq=1024, dtype="bf16"),
    "distilgpt2-8x512-bf16": dict(kind="gpt2", layers=6, batch=8, seq=512, dtype="bf16"),
    "resnet18-b32-train": dict(kind="tv", arch="resnet18", batch=32, train="sgd"),
    "bert_base-16x128-train-autocast_bf16": dict(kind="bert", batch=16, seq=128, autocast="bf16", train="adamw"),
    "densenet121-b16-train": dict(kind="tv", arch="densenet121", batch=16, train="sgd"),
    # The same resnet18 step with a loss whose gradient differs from sample to sample (the sum's is
    # the same for every sample): bench/step_regimes.py measures what that does to its energy.
    "resnet18-b32-train-ce": dict(kind="tv", arch="resnet18", batch=32, train="sgd", loss="ce"),
    "densenet121-b16-train-ce": dict(kind="tv", arch="densenet121", batch=16, train="sgd", loss="ce"),
}


def _dtype(name: str | None):
    import torch
    return {None: torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[name]


def build(spec: Dict[str, Any]) -> Tuple[Any, tuple]:
    """The model on the GPU and its inputs (random weights: nothing is downloaded)."""
    import torch
    torch.manual_seed(0)
    dtype = _dtype(spec.get("dtype"))
    kind = spec["kind"]
    if kind == "tv":
        import torchvision
        model = getattr(torchvision.models, spec["arch"])(weights=None)
        inputs = (torch.randn(spec["batch"], 3, 224, 224),)
    else:
        import transformers
        if kind == "bert":
            model = transformers.BertModel(transformers.BertConfig())
        elif kind == "gpt2":
            model = transformers.GPT2LMHeadModel(transformers.GPT2Config(
                n_layer=spec.get("layers", 12), n_positions=spec.get("positions", 1024)))
        elif kind == "llama":
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
                hidden_size=1024, intermediate_size=2816, num_hidden_layers=8, num_attention_heads=16,
                num_key_value_heads=16, vocab_size=32000, max_position_embeddings=2048))
        else:
            raise ValueError(kind)
        vocab = model.config.vocab_size
        inputs = (torch.randint(0, vocab, (spec["batch"], spec["seq"])),)
    model = model.cuda().to(dtype)
    model.train(bool(spec.get("train")))
    inputs = tuple(t.cuda().to(dtype) if t.is_floating_point() else t.cuda() for t in inputs)
    return model, inputs


def optimizer_of(spec: Dict[str, Any], model):
    import torch
    name = spec.get("train")
    if not name:
        return None
    return (torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9) if name == "sgd"
            else torch.optim.AdamW(model.parameters(), lr=1e-4))


class _TimedLines(logging.Handler):
    """Keeps opcost's progress lines with the seconds since the run began, each written to `path`
    as it comes: a case stopped by its time-out still leaves where its time went."""

    def __init__(self, start: float, path: Path):
        super().__init__(logging.DEBUG)
        self.start = start
        self.file = path.open("w", buffering=1)

    def emit(self, record: logging.LogRecord) -> None:
        self.file.write(f"{time.perf_counter() - self.start:8.2f} {record.getMessage()}\n")

    def close(self) -> None:
        self.file.close()
        super().close()


def run_case(name: str, out: Path, own_loops: Optional[int] = None, trace: bool = True) -> Dict[str, Any]:
    import torch
    import opcost
    spec = CASES[name]
    model, inputs = build(spec)
    opt = optimizer_of(spec, model)
    db = out / f"db-{name}.sqlite"
    db.unlink(missing_ok=True)
    common = dict(train=bool(spec.get("train")), optimizer=opt, autocast=spec.get("autocast"), name=name)
    options = {} if own_loops is None else dict(own_loops=own_loops)
    if spec.get("loss") == "ce":  # cross entropy against random labels (fixed: the same every step)
        labels = torch.randint(0, 1000, (spec["batch"],), device="cuda")
        common["loss_fn"] = lambda out: torch.nn.functional.cross_entropy(out, labels)
    with torch.no_grad():
        if not spec.get("train"):
            model(*inputs)  # cuDNN and cuBLAS set up before the clock starts, as a user's model is
    torch.cuda.synchronize()
    start = time.perf_counter()
    timed = _TimedLines(start, out / f"log-{name}.txt")
    logger = logging.getLogger("opcost")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(timed)
    result: Dict[str, Any] = {"case": name, "spec": spec, "options": options}
    try:
        p = opcost.validate(model, *inputs, db=str(db), **common, **options)
        result["validate_wall_s"] = time.perf_counter() - start
        d = p.to_dict()
        result.update(
            complete=p.complete, failures=p.failures, time_error=p.time_error, energy_error=p.energy_error,
            paired_time_error=p.paired_time_error, paired_energy_error=p.paired_energy_error,
            predicted_time_us=p.time_us, predicted_energy_mJ=p.energy_mJ, measured_time_us=p.measured_time_us,
            measured_energy_mJ=p.measured_energy_mJ, calls=d.get("calls"),
            energy_unavailable=p.energy_unavailable, capped_energy_mJ=p.capped_energy_mJ)
        (out / f"validate-{name}.json").write_text(p.to_json())
        if not trace:
            return result
        t0 = time.perf_counter()
        tr = opcost.trace_model(model, *inputs, energy=True, db=str(db), **common)
        table = json.loads(tr.run.table_json("layer"))
        result["trace_wall_s"] = time.perf_counter() - t0
        energy = table.get("energy") or {}
        result["trace_energy_error"] = energy.get("error")
        result["trace_energy_unavailable"] = table.get("energy_unavailable")
    except Exception as e:  # kept in the results: a case that fails is a finding, not a crash
        result["error"] = f"{type(e).__name__}: {e}"
        result.setdefault("validate_wall_s", time.perf_counter() - start)
    finally:
        logger.removeHandler(timed)
        timed.close()
    return result


class CutOff(Exception):
    """The run itself was stopped (an outer `timeout`'s SIGTERM): the case in hand says so."""


def _cut_off(signum, frame):
    raise CutOff(signal.Signals(signum).name)


def cmd_run(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n in CASES if re.search(args.only, n)]
    status = 0
    # An outer time limit (the device call's stage) kills the run, not the case: without this the
    # case in hand left no file, and read as a case that never answered (stop 51's BERT at
    # --own-loops 4 had ~42 s of a stage, not its 70 s).
    signal.signal(signal.SIGTERM, _cut_off)
    for name in names:
        start = time.perf_counter()
        own = [] if args.own_loops is None else ["--own-loops", str(args.own_loops)]
        own += [] if args.trace else ["--no-trace"]
        child = None
        try:
            child = subprocess.Popen([sys.executable, __file__, "case", name, str(out)] + own,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                _, stderr = child.communicate(timeout=args.timeout)
                rc, tail = child.returncode, (stderr or "")[-2000:]
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
                rc, tail = "timeout", f"no answer within the case's {args.timeout} s"
        except CutOff as e:
            if child is not None:
                child.kill()
            wall = time.perf_counter() - start
            (out / f"case-{name}.json").write_text(json.dumps(
                {"case": name, "error": f"cut off by {e} after {wall:.1f} s: the run's outer time limit, not the "
                                        f"case's {args.timeout} s", "process_wall_s": wall}))
            print(f"{name}: cut off by {e} after {wall:.1f} s", flush=True)
            return 1
        wall = time.perf_counter() - start
        path = out / f"case-{name}.json"
        if rc != 0 or not path.exists():
            status = 1
            path.write_text(json.dumps({"case": name, "error": f"exit {rc}: {tail}", "process_wall_s": wall}))
        print(f"{name}: {wall:.1f} s {path.read_text()[:400]}", flush=True)
    return status


def cmd_case(args) -> int:
    out = Path(args.out)
    r = run_case(args.name, out, args.own_loops, args.trace)
    (out / f"case-{args.name}.json").write_text(json.dumps(r, indent=1))
    return 0


def cmd_model(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = out / "db-model-resnet50.sqlite"
    db.unlink(missing_ok=True)
    command = [str(Path(args.build) / "opcost"), "model", "resnet50", "--batch", "32", "--target", "0.95",
               "--db", str(db), "--json"] + ([] if args.own_loops is None else ["--own-loops", str(args.own_loops)])
    start = time.perf_counter()
    r = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - start
    (out / "model-resnet50.json").write_text(r.stdout)
    (out / "model-resnet50.log").write_text(r.stderr)
    result = {"command": " ".join(command[1:]), "wall_s": wall, "exit": r.returncode}
    try:
        doc = json.loads(r.stdout)
        result["error"] = doc.get("error")
    except json.JSONDecodeError:
        pass
    (out / "model-resnet50-summary.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))
    return r.returncode


def cmd_summarize(args) -> int:
    out = Path(args.out)
    cases = []
    for name in CASES:
        path = out / f"case-{name}.json"
        if path.exists():
            cases.append(json.loads(path.read_text()))
    summary = [{k: c.get(k) for k in ("case", "validate_wall_s", "paired_time_error", "paired_energy_error",
                                      "trace_energy_error")} for c in cases]
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")

    def pct(v):
        return "—" if v is None else f"{100 * v:+.2f}%"
    lines = ["| case | validate s | paired time | paired energy | trace energy | note |", "|---|---|---|---|---|---|"]
    for c in cases:
        note = c.get("error") or ("incomplete" if c.get("complete") is False else "")
        wall = c.get("validate_wall_s")
        lines.append(f"| {c['case']} | {'—' if wall is None else f'{wall:.1f}'} | {pct(c.get('paired_time_error'))} | "
                     f"{pct(c.get('paired_energy_error'))} | {pct(c.get('trace_energy_error'))} | {note[:120]} |")
    done = [c for c in cases if c.get("validate_wall_s") is not None and not c.get("error")]
    if done:
        worst = lambda k: max((abs(c[k]) for c in done if c.get(k) is not None), default=None)  # noqa: E731
        lines.append("")
        lines.append(f"worst validate wall {max(c['validate_wall_s'] for c in done):.1f} s over {len(done)} cases; "
                     f"worst |paired time| {pct(worst('paired_time_error'))}, worst |paired energy| "
                     f"{pct(worst('paired_energy_error'))}, worst |trace energy| {pct(worst('trace_energy_error'))}")
    model = out / "model-resnet50-summary.json"
    if model.exists():
        m = json.loads(model.read_text())
        lines.append(f"`opcost {m['command']}`: {m['wall_s']:.1f} s (exit {m['exit']})")
    text = "\n".join(lines) + "\n"
    (out / "summary.md").write_text(text)
    print(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--only", default=".")
    r.add_argument("--timeout", type=float, default=240)
    c = sub.add_parser("case")
    c.add_argument("name", choices=sorted(CASES))
    c.add_argument("out")
    m = sub.add_parser("model")
    m.add_argument("out")
    m.add_argument("build")
    for p in (r, c, m):  # validate's and model's --own-loops (heavy operators' loops of their own)
        p.add_argument("--own-loops", type=int, default=None)
    for p in (r, c):
        p.add_argument("--no-trace", dest="trace", action="store_false", help="validate alone, no trace_model")
    s = sub.add_parser("summarize")
    s.add_argument("out")
    args = ap.parse_args()
    return {"run": cmd_run, "case": cmd_case, "model": cmd_model, "summarize": cmd_summarize}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
