#!/usr/bin/env python3
"""Issue 27's GPU cases: `opcost.compare` over the built-in variants on resnet50 b32 and GPT-2
8x512 (models built as bench/energy_speed.py builds them: random weights, nothing downloaded).

    PYTHONPATH=build/python python3 bench/compare_variants.py run OUT_DIR [--only REGEX]

Each case in a process of its own (a fresh CUDA context): writes OUT_DIR/compare-CASE.json (the
comparison's JSON, as `opcost compare --json` writes it), compare-CASE.txt (its table) and the
wall time it took; then OUT_DIR/summary.md, one line per variant: step time and energy relative to
fp32 with their 95% intervals. Not run yet on a GPU (no device time left in the session that
wrote it): bench/results/ has no output of it until it is.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from energy_speed import build  # noqa: E402  (the same models, built the same way)

CASES = {
    "resnet50-b32": (dict(kind="tv", arch="resnet50", batch=32),
                     ["fp32", "bf16", "autocast-bf16", "channels_last", "bf16+channels_last", "compile"]),
    "gpt2-8x512": (dict(kind="gpt2", batch=8, seq=512), ["fp32", "bf16", "autocast-bf16", "compile"]),
}


def one_case(name: str, out: Path) -> None:
    import opcost
    spec, variants = CASES[name]
    model, inputs = build(spec)
    started = time.monotonic()
    r = opcost.compare(model, *inputs, variants=variants, name=name)
    wall_s = time.monotonic() - started
    doc = dict(r.json, wall_s=wall_s)
    (out / f"compare-{name}.json").write_text(json.dumps(doc, indent=1))
    (out / f"compare-{name}.txt").write_text(r.text)


def summarize(out: Path) -> None:
    lines = ["| case | variant | step time vs fp32 | step energy vs fp32 | wall s |", "|---|---|---|---|---|"]
    for path in sorted(out.glob("compare-*.json")):
        doc = json.loads(path.read_text())
        for v in doc["variants"]:
            def rel(d):
                if not d:
                    return "baseline" if v["name"] == doc["baseline"] else "n/a"
                ci = d["relative_ci95"]
                mark = "" if d["significant"] else "~"
                return f"{mark}{100 * d['relative']:+.1f}% ±{100 * ci:.1f}%" if ci is not None else f"{100 * d['relative']:+.1f}%"
            lines.append(f"| {doc['model']} | {v['name']} | {rel(v['time_vs_baseline'])} | "
                         f"{rel(v['energy_vs_baseline'])} | {doc['wall_s']:.0f} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["run", "case", "summarize"])
    p.add_argument("out", type=Path)
    p.add_argument("--only", default="", help="cases whose name matches this regular expression")
    p.add_argument("--case", default="", help=argparse.SUPPRESS)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    if a.action == "case":
        one_case(a.case, a.out)
        return 0
    if a.action == "run":
        for name in CASES:
            if a.only and not re.search(a.only, name):
                continue
            rc = subprocess.call([sys.executable, __file__, "case", str(a.out), "--case", name])
            print(f"{name}: exit {rc}", flush=True)
    summarize(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
