"""Summary of a corpus run in parts (bench/corpus_gpu): every OUT_DIR/corpus-*.json merged (a run
in two parts counts once, from the later file), as markdown on standard output: the environment,
the coverage table, the paired time error median and worst over the runs that answered, and the
failures grouped by cause.

    python3 bench/summarize_corpus.py bench/results/<date>-corpus-h100
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from opcost import _corpus_table


def merged_runs(out: Path) -> tuple[list, list]:
    """(runs, environments): later files replace earlier runs of the same name."""
    runs, environments = {}, []
    for path in sorted(out.glob("corpus-*.json"), key=lambda p: p.stat().st_mtime):
        doc = json.loads(path.read_text())
        environments.append((path.name, doc["environment"], doc.get("command")))
        for r in doc["runs"]:
            runs[r["run"]] = r
    return list(runs.values()), environments


def error_lines(runs: list) -> list[str]:
    """The paired time error (each round's prediction against its own steps) over the runs."""
    answered = [(r["paired_time_error"], r["run"]) for r in runs if r.get("paired_time_error") is not None]
    if not answered:
        return ["No run has a paired time error."]
    worst = max(answered, key=lambda e: abs(e[0]))
    median = statistics.median(e for e, _ in answered)
    median_abs = statistics.median(abs(e) for e, _ in answered)
    within = sum(abs(e) <= 0.1 for e, _ in answered)
    return [f"- runs with a paired time error: {len(answered)} of {len(runs)}",
            f"- median {100 * median:+.1f}% (of the absolute errors: {100 * median_abs:.1f}%)",
            f"- worst {100 * worst[0]:+.1f}% ({worst[1]})",
            f"- within ±10%: {within} of {len(answered)}"]


def main(out: Path) -> int:
    runs, environments = merged_runs(out)
    if not runs:
        print(f"no corpus-*.json in {out}", file=sys.stderr)
        return 1
    lines = [f"# The model corpus at GPU sizes ({out.name})", ""]
    for name, env, command in environments:
        lines.append(f"- `{name}`: {env['date']}, {env.get('gpu') or env['device']}, torch {env['versions']['torch']}, "
                     f"size {env['size']}; `{' '.join(command or [])}`")
    environment_txt = out / "environment.txt"
    if environment_txt.exists():
        lines += ["", "```", environment_txt.read_text().rstrip(), "```"]
    lines += ["", "## Paired time error", ""] + error_lines(runs)
    lines += ["", "## Coverage", "", "```", _corpus_table.format_table(runs).rstrip(), "```"]
    return print("\n".join(lines)) or 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize_corpus.py OUT_DIR")
    sys.exit(main(Path(sys.argv[1])))
