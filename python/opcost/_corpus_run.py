"""One corpus run: a model in one mode through inventory, the argument language's round trip of
every signature, and validate (one real replay of each signature, then the whole step). The
result is a plain dict (JSON): what passed, what did not, and why, one line each."""

from __future__ import annotations

import contextlib
import logging
import re
import time
from typing import Any, Dict, Iterator, List, Optional

import torch

from . import _api, _core
from ._corpus_models import Case, CorpusModel

# The shortest budgets that still replay every signature: short loops from the first operator
# (5 ms of warm-up and 5 ms of timing each, against 50 ms and more for full loops), a 10 ms
# budget for the whole step, no energy loops.
SHORT_BUDGETS = dict(max_time=0.001, step_max_time=0.01, short_loops_after=0.0, energy=False)
# On a GPU: loops long enough for a time error worth reading, still no energy loops.
GPU_BUDGETS = dict(max_time=0.02, step_max_time=0.5, energy=False)
REASON_MAX_CHARS = 600  # a reason is one line of the table; the JSON keeps the same line
ROUND_TRIP_PENDING = "pending: this build's opcost._core has no signature_round_trip"


def one_line(text: str, limit: int = REASON_MAX_CHARS) -> str:
    """A message as one line: LibTorch's backtrace cut off, lines joined, long ones elided."""
    for tail in ("\nException raised from ", "\n\nAt:\n"):
        text = text.split(tail, 1)[0]
    text = re.sub(r"\s*\n\s*", " ", text).strip()
    return text if len(text) <= limit else f"{text[:limit // 2]}…{text[-limit // 2:]}"


def _precision_of(entry: CorpusModel, size: str) -> str:
    return entry.gpu_precision if size == "gpu" else "fp32"


def _on_device(case: Case, device: str, precision: str) -> Case:
    """The case's model and floating inputs on ``device``, in bf16 where the precision says so."""
    dtype = torch.bfloat16 if precision == "bf16" else None

    def move(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return value.to(device, dtype=dtype if dtype and value.is_floating_point() else value.dtype)
        if isinstance(value, (list, tuple)):
            return type(value)(move(v) for v in value)
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        return value

    model = case.model.to(device=device, dtype=dtype) if dtype else case.model.to(device)
    return Case(model, move(case.inputs), move(case.kwargs), move(case.train_kwargs), case.loss_fn)


def _optimizer(name: str, model: torch.nn.Module) -> torch.optim.Optimizer:
    """foreach: the multi-tensor step a GPU takes by default, on the CPU too: a few calls over
    tensor lists instead of several per parameter shape (hundreds of signatures more to replay)."""
    if name == "adamw":
        return torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, foreach=True)


def _step_options(entry: CorpusModel, case: Case, mode: str, precision: str) -> Dict[str, Any]:
    """What inventory and validate take besides the model and inputs."""
    train = mode == "training"
    options: Dict[str, Any] = dict(case.kwargs, **(case.train_kwargs if train else {}))
    options.update(train=train, name=f"{entry.name}:{mode}", autocast="bf16" if precision == "autocast" else None)
    if train:
        options.update(optimizer=_optimizer(entry.training or "sgd", case.model), loss_fn=case.loss_fn)
    return options


def round_trip(inventory_ops: List[Any]) -> Dict[str, Any]:
    """Every unique call's arguments parsed back by the argument language and dry-bound against
    its schema (opcost._core.signature_round_trip); ``pending`` where this build lacks it."""
    check = getattr(_core, "signature_round_trip", None)
    if check is None:
        return {"ok": 0, "failed": [], "pending": True}
    ok, failed = 0, []
    for op in inventory_ops:
        name = op.op + (f".{op.overload}" if op.overload else "")
        answer = check(name, op.args)
        if answer["ok"]:
            ok += 1
        else:
            failed.append({"signature": op.signature, "error": one_line(answer["error"] or "failed")})
    return {"ok": ok, "failed": failed, "pending": False}


@contextlib.contextmanager
def _errors_noted() -> Iterator[List[str]]:
    """The error notes validate logs (each a failed measurement, beginning with its call)."""
    notes: List[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            notes.append(record.getMessage())

    handler, logger = Collect(level=logging.ERROR), logging.getLogger("opcost")
    logger.addHandler(handler)
    try:
        yield notes
    finally:
        logger.removeHandler(handler)


def _why_missing(signature: str, notes: List[str]) -> str:
    for note in notes:
        if note.startswith(signature):
            return one_line(note[len(signature):].lstrip(": "))
    return "not measured, and no error was noted for it"


def replay_summary(doc: Dict[str, Any], notes: List[str]) -> Dict[str, Any]:
    """What validate's report says of each signature: replayed, or missing with its reason."""
    signatures = {row["name"] for row in doc["ops"]}
    missing = sorted({m["signature"] for m in doc["missing"]})
    other_errors = [one_line(n) for n in notes if not any(n.startswith(m) for m in missing)]
    return {"validated_signatures": len(signatures), "replayed": len(signatures - set(missing)),
            "not_replayed": [{"signature": s, "reason": _why_missing(s, notes)} for s in missing],
            "failures": int(doc.get("failures") or 0), "other_errors": other_errors[:5]}


def _figures(p: Any) -> Dict[str, Optional[float]]:
    return {"time_error": p.time_error, "paired_time_error": p.paired_time_error,
            "measured_time_us": p.measured_time_us, "predicted_time_us": p.time_us}


def _verdict(result: Dict[str, Any]) -> None:
    """passed, or failed with the first stage that fell short and why."""
    rt, replay = result["round_trip"], result.get("replay")
    if rt["failed"]:
        result.update(status="failed", stage="round_trip",
                      reason=f"{len(rt['failed'])} signature(s) do not round-trip: {rt['failed'][0]['error']}")
    elif replay and replay["not_replayed"]:
        first = replay["not_replayed"][0]
        result.update(status="failed", stage="replay",
                      reason=f"{len(replay['not_replayed'])} signature(s) not replayed: {first['reason']}")
    elif replay and (replay["failures"] or replay["other_errors"]):
        why = replay["other_errors"][0] if replay["other_errors"] else f"{replay['failures']} failure(s)"
        result.update(status="failed", stage="validate", reason=why)
    else:
        result.update(status="passed", stage="", reason="")


def run_case(entry: CorpusModel, mode: str, size: str, device: str, db: str) -> Dict[str, Any]:
    """The run's result; an exception of a stage becomes its status and reason, never a raise."""
    precision = _precision_of(entry, size)
    result: Dict[str, Any] = {"run": f"{entry.name}:{mode}", "model": entry.name, "source": entry.source,
                              "mode": mode, "precision": precision, "signatures": 0,
                              "round_trip": {"ok": 0, "failed": [], "pending": False}}
    start, stage = time.monotonic(), "build"
    stage_s = result["stage_seconds"] = {}

    def begin(next_stage: str) -> str:  # each stage's wall time, for the corpus's time budget
        stage_s[stage] = round(time.monotonic() - start - sum(stage_s.values()), 2)
        return next_stage

    try:
        torch.manual_seed(0)
        case = _on_device(entry.build(size), device, precision)
        case.model.train(mode == "training")
        stage = begin("inventory")
        inv = _api.inventory(case.model, *case.inputs, **_step_options(entry, case, mode, precision))
        result["signatures"] = inv.unique_signatures
        stage = begin("round_trip")
        result["round_trip"] = round_trip(inv.ops)
        stage = begin("validate")
        budgets = SHORT_BUDGETS if size == "tiny" else GPU_BUDGETS
        with _errors_noted() as notes:
            p = _api.validate(case.model, *case.inputs, db=db, **budgets,
                              **_step_options(entry, case, mode, precision))
        result["replay"] = replay_summary(p.to_dict(), notes)
        result.update(_figures(p))
        begin("")
        _verdict(result)
    except ModuleNotFoundError as e:  # the model zoo is not installed here: say which, and how
        result.update(status="failed", stage=stage,
                      reason=one_line(f"needs the package {e.name!r}, not installed here (pip install {e.name})"))
    except Exception as e:  # noqa: BLE001  (a model's failure is the corpus's answer, not a crash)
        result.update(status="failed", stage=stage, reason=one_line(f"{type(e).__name__}: {e}"))
    result["seconds"] = round(time.monotonic() - start, 2)
    return result
