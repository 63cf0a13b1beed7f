"""The corpus's coverage: the counts (runs and models passed, signatures replayed, round trips),
the table ``python -m opcost corpus`` prints, failures grouped by cause, and the check against a
committed floor (tests/corpus/coverage_floor.json)."""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

FLOOR_MAX_BYTES = 1 << 20  # a floor file is a few kilobytes: anything larger is not one
FLOOR_COUNTS = ("runs_passed", "models_passed", "signatures_replayed")
TABLE_REASON_CHARS = 110  # the table's reason column; the JSON keeps the whole line


def _replayed(r: Mapping[str, Any]) -> Tuple[int, int]:
    """(replayed, validated) signatures of a run; (0, inventory's count) where validate never answered."""
    replay = r.get("replay")
    if not replay:
        return 0, int(r.get("signatures") or 0)
    return int(replay["replayed"]), int(replay["validated_signatures"])


def coverage(results: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """The counts a floor compares, and the runs that passed."""
    models: Dict[str, bool] = OrderedDict()
    for r in results:
        models[r["model"]] = models.get(r["model"], True) and r["status"] == "passed"
    replayed = [_replayed(r) for r in results]
    checked = [r["round_trip"] for r in results if not r["round_trip"].get("pending")]
    return {"runs": len(results), "runs_passed": sum(r["status"] == "passed" for r in results),
            "models": len(models), "models_passed": sum(models.values()),
            "signatures": sum(t for _, t in replayed), "signatures_replayed": sum(d for d, _ in replayed),
            "round_trips_checked": sum(rt["ok"] + len(rt["failed"]) for rt in checked),
            "round_trips_ok": sum(rt["ok"] for rt in checked),
            "round_trip_pending": any(r["round_trip"].get("pending") for r in results),
            "passed": sorted(r["run"] for r in results if r["status"] == "passed")}


def cause_of(stage: str, reason: str) -> str:
    """A failure's cause without what differs between models (shapes, numbers, quoted values),
    so that the same defect in many models groups together."""
    text = re.sub(r"^\d+ signature\(s\) (do not round-trip|not replayed): ", "", reason)
    text = re.sub(r"\b[a-z]+\d*\[[^\]]*\](:\w+\[[^\]]*\])*", "T", text)  # tensor specs
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"\b\d+(\.\d+)?(e[-+]?\d+)?\b", "N", text)
    return f"{stage}: {text[:160]}"


def failures_by_cause(results: Iterable[Mapping[str, Any]]) -> "OrderedDict[str, List[str]]":
    groups: "OrderedDict[str, List[str]]" = OrderedDict()
    for r in results:
        if r["status"] != "passed":
            groups.setdefault(cause_of(r.get("stage") or r["status"], r.get("reason") or ""), []).append(r["run"])
    return OrderedDict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def _percent(value: Any) -> str:
    return f"{100 * value:+.0f}%" if isinstance(value, (int, float)) else "-"


def _round_trip_cell(rt: Mapping[str, Any]) -> str:
    if rt.get("pending"):
        return "pending"
    return f"{rt['ok']}/{rt['ok'] + len(rt['failed'])}"


def _row(r: Mapping[str, Any]) -> List[str]:
    done, total = _replayed(r)
    reason = r.get("reason") or ""
    if len(reason) > TABLE_REASON_CHARS:
        reason = reason[:TABLE_REASON_CHARS - 1] + "…"
    error = r.get("paired_time_error", r.get("time_error"))
    return [r["run"], r["precision"], r["status"], f"{done}/{total}", _round_trip_cell(r["round_trip"]),
            _percent(error), f"{r.get('seconds', 0):.0f}", reason]


def _columns(rows: List[List[str]]) -> List[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows]


def _covered_lines(covered: Mapping[str, Sequence[str]]) -> List[str]:
    lines = ["", "covered by their family's run (members that differ only in width or depth):"]
    lines += [f"  {model}: {', '.join(members)}" for model, members in covered.items() if members]
    return lines if len(lines) > 2 else []


def _failure_lines(results: Sequence[Mapping[str, Any]]) -> List[str]:
    groups = failures_by_cause(results)
    if not groups:
        return []
    lines = ["", "failures by cause:"]
    for cause, runs in groups.items():
        lines.append(f"  {len(runs)} × {cause}")
        lines.append(f"      {', '.join(runs)}")
    return lines


def summary_line(cov: Mapping[str, Any]) -> str:
    rt = ("round trips pending (no signature_round_trip in this build)" if cov["round_trip_pending"] and
          not cov["round_trips_checked"] else f"round trips {cov['round_trips_ok']}/{cov['round_trips_checked']}")
    return (f"runs passed {cov['runs_passed']}/{cov['runs']}, models passed {cov['models_passed']}/{cov['models']}, "
            f"signatures replayed {cov['signatures_replayed']}/{cov['signatures']}, {rt}")


def format_table(results: Sequence[Mapping[str, Any]], covered: Mapping[str, Sequence[str]] = {}) -> str:
    """The table: one row per run (model and mode), then the family members each run stands
    for, the failures grouped by cause, and the counts."""
    if not results:
        return "no runs\n"
    header = ["run", "precision", "status", "replayed", "round trip", "time err", "s", "reason"]
    lines = _columns([header] + [_row(r) for r in results])
    lines += _covered_lines(covered) + _failure_lines(results) + ["", summary_line(coverage(results))]
    return "\n".join(lines) + "\n"


def load_floor(path: str | Path) -> Dict[str, Any]:
    """A committed floor: counts that must not drop, and the runs that must keep passing."""
    path = Path(path)
    try:
        if path.stat().st_size > FLOOR_MAX_BYTES:
            raise ValueError(f"--floor {path}: larger than {FLOOR_MAX_BYTES} bytes, not a floor file")
        floor = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise ValueError(f"--floor {path}: {e}; give the JSON file `corpus --json` coverage writes") from None
    if not isinstance(floor, dict) or not all(isinstance(floor.get(k, 0), int) for k in FLOOR_COUNTS) \
            or not all(isinstance(run, str) for run in floor.get("passed", [])):
        raise ValueError(f"--floor {path}: expected {{{', '.join(FLOOR_COUNTS)}: integers, passed: [run names]}}")
    return floor


def below_floor(cov: Mapping[str, Any], floor: Mapping[str, Any], selected: Iterable[str],
                whole_corpus: bool) -> List[str]:
    """What fell below the floor: a count (only when the whole corpus ran) or a run that
    passed when the floor was committed and no longer does (among the runs selected)."""
    short = []
    if whole_corpus:
        short += [f"{k} {cov[k]} < {floor[k]}" for k in FLOOR_COUNTS if k in floor and cov[k] < floor[k]]
    passing, chosen = set(cov["passed"]), set(selected)
    short += [f"{run} passed at the floor, not now" for run in floor.get("passed", [])
              if run in chosen and run not in passing]
    return short
