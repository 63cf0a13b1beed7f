#!/usr/bin/env python3
"""Issue 26's whole-model goal as the issue words it: a model predicted with none of its
signatures measured *at that configuration*, from a database of the same models at others
(resnet50 at batch 128 from batches 16-64; GPT-2 at sequence 2048 from 256-1024; resnet101,
never measured, from resnet18/34/50).

    PYTHONPATH=build/python python3 bench/estimate_unmeasured.py measure OUT [--only REGEX]
    opcost fit --csv ... --csv OUT/rows-models.csv --no-store -o MODEL      # on the CPU: scikit-learn
    PYTHONPATH=build/python python3 bench/estimate_unmeasured.py estimate OUT MODEL [--rows DB] [--only REGEX]
    python3 bench/estimate_unmeasured.py summarize OUT

measure: `opcost.validate` of each MEASURED case into one database (OUT/models.sqlite), all
operator inputs warm as the fit's grid rows are, then that database's rows as CSV
(OUT/rows-models.csv) for the fit. Each case's validate is kept (measured-validate-NAME.json).
estimate: each TARGET case's `opcost.validate(estimate=True)` with the fitted MODEL into a fresh
database: empty (the model's figures alone), or with --rows a copy of the measured database
(OUT/models.sqlite of `measure`), so that an estimate scales from the row of the same call at
the nearest other batch size where there is one (docs/estimate.md). Every signature the model
can estimate is estimated, the rest measured, then the whole step measured and compared paired
by round (estimate-validate-NAME.json, estimate-case-NAME.json; "anchored-" before them with --rows).
summarize: summary-models.json in the issue's form ({"models": [{"case", "paired_time_error",
"paired_energy_error"}]}, fractions) and summary-models.md.
Each case runs in a process of its own (a fresh CUDA context). Models have random weights.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Tuple

sys.path.insert(0, str(Path(__file__).resolve().parent))
from energy_speed import build  # noqa: E402  (one set of model builders for the bench scripts)

# GPT-2 small (12 layers) with 2048 positions, so that one model config serves every length.
_GPT2 = dict(kind="gpt2", positions=2048, batch=2, dtype="bf16")

MEASURED: Dict[str, Dict[str, Any]] = {
    "resnet18-b32-bf16": dict(kind="tv", arch="resnet18", batch=32, dtype="bf16"),
    "resnet18-b64-bf16": dict(kind="tv", arch="resnet18", batch=64, dtype="bf16"),
    "resnet34-b32-bf16": dict(kind="tv", arch="resnet34", batch=32, dtype="bf16"),
    "resnet34-b64-bf16": dict(kind="tv", arch="resnet34", batch=64, dtype="bf16"),
    "resnet50-b16-bf16": dict(kind="tv", arch="resnet50", batch=16, dtype="bf16"),
    "resnet50-b32-bf16": dict(kind="tv", arch="resnet50", batch=32, dtype="bf16"),
    "resnet50-b64-bf16": dict(kind="tv", arch="resnet50", batch=64, dtype="bf16"),
    "resnet50-b32-fp32": dict(kind="tv", arch="resnet50", batch=32),
    "resnet50-b64-fp32": dict(kind="tv", arch="resnet50", batch=64),
    "gpt2-2x256-bf16": dict(_GPT2, seq=256),
    "gpt2-2x512-bf16": dict(_GPT2, seq=512),
    "gpt2-2x1024-bf16": dict(_GPT2, seq=1024),
}

TARGETS: Dict[str, Dict[str, Any]] = {
    # a batch never measured: twice the largest that was
    "resnet50-b128-bf16": dict(kind="tv", arch="resnet50", batch=128, dtype="bf16"),
    "resnet50-b128-fp32": dict(kind="tv", arch="resnet50", batch=128),
    # a family member never measured, at a batch none of the family was measured at
    "resnet101-b96-bf16": dict(kind="tv", arch="resnet101", batch=96, dtype="bf16"),
    # a sequence length never measured: twice the longest that was
    "gpt2-2x2048-bf16": dict(_GPT2, seq=2048),
}


def _validate(spec: Dict[str, Any], db: Path, **options: Any) -> Tuple[Dict[str, Any], str]:
    import torch
    import opcost
    model, inputs = build(spec)
    with torch.no_grad():
        model(*inputs)  # cuDNN and cuBLAS set up before the clock starts
    torch.cuda.synchronize()
    start = time.perf_counter()
    p = opcost.validate(model, *inputs, db=str(db), cache="warm", **options)
    wall = time.perf_counter() - start
    estimated = p.to_dict().get("estimated") or {}
    return dict(validate_wall_s=wall, complete=p.complete, failures=p.failures,
                paired_time_error=p.paired_time_error, paired_energy_error=p.paired_energy_error,
                time_error=p.time_error, energy_error=p.energy_error, predicted_time_us=p.time_us,
                predicted_energy_mJ=p.energy_mJ, measured_time_us=p.measured_time_us,
                measured_energy_mJ=p.measured_energy_mJ, estimated=estimated,
                energy_unavailable=p.energy_unavailable), p.to_json()


def _prefix(phase: str, anchored: bool) -> str:
    """The files' prefix of a phase's case: measured-, estimate- or anchored-estimate-."""
    return "measured" if phase == "measure" else "anchored-estimate" if anchored else "estimate"


def _cases(names, only: str):
    try:
        pattern = re.compile(only)
    except re.error as e:
        raise SystemExit(f"estimate_unmeasured: --only {only!r}: not a regular expression ({e})") from None
    return [n for n in names if pattern.search(n)]


def cmd_case(args) -> int:
    out = Path(args.out)
    if args.name not in (MEASURED if args.phase == "measure" else TARGETS):
        print(f"estimate_unmeasured: '{args.name}' is not a case of {args.phase}", file=sys.stderr)
        return 2
    prefix = _prefix(args.phase, bool(args.rows))
    if args.phase == "measure":
        # One database for every case, kept between runs: validate measures only what it lacks,
        # so a rerun (--only) adds no operator row twice.
        spec, db, options = MEASURED[args.name], out / "models.sqlite", {}
    else:
        spec, db = TARGETS[args.name], out / f"db-{args.name}.sqlite"
        db.unlink(missing_ok=True)
        if args.rows:
            shutil.copyfile(args.rows, db)
        options = dict(estimate=True, cost_model=args.cost_model)
    result: Dict[str, Any] = {"case": args.name, "phase": args.phase, "spec": spec}
    try:
        figures, doc = _validate(spec, db, **options)
        result.update(figures)
        (out / f"{prefix}-validate-{args.name}.json").write_text(doc)
    except Exception as e:  # a case that fails is a finding, kept in the results
        result["error"] = f"{type(e).__name__}: {e}"
    if args.phase == "estimate":
        db.unlink(missing_ok=True)
    (out / f"{prefix}-case-{args.name}.json").write_text(json.dumps(result, indent=1))
    return 1 if "error" in result else 0


def _run_cases(out: Path, phase: str, names, extra, timeout: float) -> int:
    status = 0
    for name in names:
        path = out / f"{_prefix(phase, '--rows' in extra)}-case-{name}.json"
        path.unlink(missing_ok=True)  # no earlier run's figures under this run's name
        start = time.perf_counter()
        try:
            r = subprocess.run([sys.executable, __file__, "case", phase, name, str(out), *extra],
                               timeout=timeout, capture_output=True, text=True)
            rc, tail = r.returncode, (r.stderr or "")[-2000:]
        except subprocess.TimeoutExpired:
            rc, tail = "timeout", f"no answer within {timeout} s"
        if rc != 0 or not path.exists():
            status = 1
        if not path.exists():
            path.write_text(json.dumps({"case": name, "phase": phase, "error": f"exit {rc}: {tail}"}))
        print(f"{phase} {name}: {time.perf_counter() - start:.1f} s {path.read_text()[:300]}", flush=True)
    return status


def cmd_measure(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = _cases(MEASURED, args.only)
    status = _run_cases(out, "measure", names, [], args.timeout)
    r = subprocess.run([str(Path(args.build) / "opcost"), "--db", str(out / "models.sqlite"), "db", "export",
                        "--csv", "-o", str(out / "rows-models.csv")], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"estimate_unmeasured: export failed: {r.stderr.strip()}", file=sys.stderr)
        return 1
    return status


def cmd_estimate(args) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not Path(args.cost_model).is_file():
        print(f"estimate_unmeasured: no cost model file '{args.cost_model}'", file=sys.stderr)
        return 2
    if args.rows and not Path(args.rows).is_file():
        print(f"estimate_unmeasured: no database '{args.rows}'", file=sys.stderr)
        return 2
    names = _cases(TARGETS, args.only)
    extra = ["--cost-model", args.cost_model] + (["--rows", args.rows] if args.rows else [])
    return _run_cases(out, "estimate", names, extra, args.timeout)


def cmd_summarize(args) -> int:
    out = Path(args.out)
    models, lines = [], ["| case | rows at other sizes | paired time | paired energy | estimated / anchored / outside fit "
                         "| validate s | note |", "|---|---|---|---|---|---|---|"]

    def pct(v):
        return "—" if v is None else f"{100 * v:+.1f}%"
    for prefix, rows in (("estimate", "no"), ("anchored-estimate", "yes")):
        for name in TARGETS:
            path = out / f"{prefix}-case-{name}.json"
            if not path.exists():
                continue
            c = json.loads(path.read_text())
            models.append({"case": name + ("" if rows == "no" else ", anchored on rows at other batches"),
                           **{k: c.get(k) for k in ("paired_time_error", "paired_energy_error")}})
            est = c.get("estimated") or {}
            wall = c.get("validate_wall_s")
            lines.append(f"| {name} | {rows} | {pct(c.get('paired_time_error'))} | {pct(c.get('paired_energy_error'))} | "
                         f"{est.get('count', '—')} / {est.get('anchored', '—')} / {est.get('outside_fit', '—')} | "
                         f"{'—' if wall is None else f'{wall:.1f}'} | {(c.get('error') or '')[:120]} |")
    (out / "summary-models.json").write_text(json.dumps({"models": models}, indent=1) + "\n")
    text = "\n".join(lines) + "\n"
    (out / "summary-models.md").write_text(text)
    print(text)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("out")
    m.add_argument("--build", default="build")
    m.add_argument("--only", default=".")
    m.add_argument("--timeout", type=float, default=240)
    e = sub.add_parser("estimate")
    e.add_argument("out")
    e.add_argument("cost_model")
    e.add_argument("--rows", help="a database of the same models at other configurations (measure's)")
    e.add_argument("--only", default=".")
    e.add_argument("--timeout", type=float, default=240)
    c = sub.add_parser("case")
    c.add_argument("phase", choices=["measure", "estimate"])
    c.add_argument("name", choices=sorted({*MEASURED, *TARGETS}))
    c.add_argument("out")
    c.add_argument("--cost-model")
    c.add_argument("--rows")
    s = sub.add_parser("summarize")
    s.add_argument("out")
    args = ap.parse_args()
    return {"measure": cmd_measure, "estimate": cmd_estimate, "case": cmd_case,
            "summarize": cmd_summarize}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
