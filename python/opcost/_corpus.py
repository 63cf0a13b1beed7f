"""``python -m opcost corpus``: every run of the corpus (a model in one mode) in worker processes,
a few runs each, so that one model's crash, hang or memory never reaches the rest: a run that
outlives its time-out has its worker killed and is reported as such, and the next worker goes on
with the runs after it. Workers send each result as a JSON line on a pipe of their own (the
models may print anything on their standard output)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

RUNS_PER_WORKER = 12  # a fresh process this often: the memory of big models goes back to the system
LOG_TAIL_CHARS = 400  # of a crashed worker's output, in its run's reason
EVENT_MAX_BYTES = 8 << 20  # one result line; a worker sending more is broken


@dataclasses.dataclass(frozen=True)
class Settings:
    size: str
    device: str
    timeout_s: float
    threads: int  # torch's intra-op threads in each worker; 0: torch's default


def select_runs(only: Optional[str], mode: str, size: str = "tiny", subset: str = "all") -> List[Tuple[str, str]]:
    """(model name, mode) of every run of ``subset`` ("all", or "ci": CI_SUBSET) at ``size`` whose
    "model:mode" matches ``only`` (a regular expression)."""
    from ._corpus_models import CI_SUBSET, CORPUS
    try:
        pattern = re.compile(only or "")
    except re.error as e:
        raise ValueError(f"--only {only!r}: not a regular expression ({e})") from None
    modes = ("inference", "training") if mode == "both" else (mode,)
    runs = [(m.name, md) for m in CORPUS for md in m.modes(size) if md in modes]
    return [(n, md) for n, md in runs
            if pattern.search(f"{n}:{md}") and (subset == "all" or f"{n}:{md}" in CI_SUBSET)]


def covered_by_family(names: Sequence[str]) -> Dict[str, Tuple[str, ...]]:
    from ._corpus_models import by_name
    models = by_name()
    return {n: models[n].covers for n in dict.fromkeys(names) if models[n].covers}


# ------------------------------------------------------------------------------------ the worker

def _send(fd: int, event: Dict[str, Any]) -> None:
    data = (json.dumps(event) + "\n").encode()
    while data:
        data = data[os.write(fd, data):]


def worker_main(fd: int) -> int:
    """Runs the runs given as JSON on standard input, one result line each on ``fd``."""
    job = json.load(sys.stdin)
    import torch
    from ._corpus_models import by_name
    from ._corpus_run import run_case
    if job["threads"]:
        torch.set_num_threads(job["threads"])
    models = by_name()
    with tempfile.TemporaryDirectory(prefix="opcost-corpus-") as tmp:
        # One database for the worker's runs: a signature a run shares with an earlier one (a
        # model's training run repeats much of its inference) is replayed once, not again.
        db = os.path.join(tmp, "corpus.db")
        for name, mode in job["runs"]:
            _send(fd, {"start": f"{name}:{mode}"})
            _send(fd, {"result": run_case(models[name], mode, job["size"], job["device"], db)})
    return 0


# ------------------------------------------------------------------------------------ the parent

def _not_answered(run: str, status: str, reason: str, seconds: float) -> Dict[str, Any]:
    name, mode = run.rsplit(":", 1)
    return {"run": run, "model": name, "source": name.split("/", 1)[0], "mode": mode, "precision": "",
            "status": status, "stage": status, "reason": reason, "signatures": 0, "seconds": round(seconds, 2),
            "round_trip": {"ok": 0, "failed": [], "pending": False}}


class _Worker:
    """One worker process and the pipe it answers on."""

    def __init__(self, runs: Sequence[Tuple[str, str]], s: Settings, log_path: Path):
        read_fd, write_fd = os.pipe()
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
        self.log_path = log_path
        with open(log_path, "wb") as log:
            self.proc = subprocess.Popen([sys.executable, "-m", "opcost._corpus", "--worker", str(write_fd)],
                                         stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                         pass_fds=(write_fd,), env=env, start_new_session=True)
        os.close(write_fd)
        self.fd, self.buffer = read_fd, b""
        job = {"runs": list(runs), "size": s.size, "device": s.device, "threads": s.threads}
        self.proc.stdin.write(json.dumps(job).encode())
        self.proc.stdin.close()

    def next_event(self, deadline: float) -> Optional[Dict[str, Any]]:
        """The next event; None at the deadline or when the worker ended without one."""
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                return None
            chunk = os.read(self.fd, 1 << 16)
            if not chunk or len(self.buffer) > EVENT_MAX_BYTES:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def log_tail(self) -> str:
        try:
            text = self.log_path.read_bytes()[-4 * LOG_TAIL_CHARS:].decode(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return " | ".join(lines[-3:])[-LOG_TAIL_CHARS:]

    def stop(self) -> str:
        """Ends the worker (its own process group, which this object started); how it ended."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        return f"signal {-code}" if code < 0 else f"exit status {code}"


def _run_worker(runs: List[Tuple[str, str]], s: Settings, log_path: Path,
                report: Callable[[Dict[str, Any]], None]) -> int:
    """Runs as many of ``runs`` as the worker gets through; how many it answered for."""
    worker, answered = _Worker(runs, s, log_path), 0
    try:
        while answered < len(runs):
            run, started = f"{runs[answered][0]}:{runs[answered][1]}", time.monotonic()
            start = worker.next_event(started + 120)  # an import of torch and the model's library
            if not start or start.get("start") != run:
                report(_not_answered(run, "crashed", f"the worker ended before the run: {worker.log_tail()}", 0))
                return answered + 1
            started = time.monotonic()
            event = worker.next_event(started + s.timeout_s)
            if event is None or "result" not in event:
                timed_out = time.monotonic() - started >= s.timeout_s
                why = (f"no answer within --timeout-per-model {s.timeout_s:g} s" if timed_out
                       else f"the worker died ({worker.stop()}): {worker.log_tail()}")
                report(_not_answered(run, "timeout" if timed_out else "crashed", why, time.monotonic() - started))
                return answered + 1
            report(event["result"])
            answered += 1
        return answered
    finally:
        worker.stop()


def run_corpus(runs: Sequence[Tuple[str, str]], s: Settings,
               progress: Callable[[str], None] = lambda text: None) -> List[Dict[str, Any]]:
    """Every run's result, in order, through workers of RUNS_PER_WORKER runs each."""
    results: List[Dict[str, Any]] = []

    def report(result: Dict[str, Any]) -> None:
        results.append(result)
        progress(f"[{len(results)}/{len(runs)}] {result['run']}: {result['status']} ({result.get('seconds', 0):.1f} s)"
                 + (f" {result['stage']}: {result['reason'][:200]}" if result["status"] != "passed" else ""))

    with tempfile.TemporaryDirectory(prefix="opcost-corpus-logs-") as logs:
        done = 0
        while done < len(runs):
            chunk = list(runs[done:done + RUNS_PER_WORKER])
            done += _run_worker(chunk, s, Path(logs) / f"worker{done}.log", report)
    return results


def environment(s: Settings) -> Dict[str, Any]:
    import platform
    import torch
    versions = {"torch": torch.__version__}
    for lib in ("torchvision", "timm", "transformers"):
        try:
            versions[lib] = __import__(lib).__version__
        except ImportError:
            versions[lib] = None
    gpu = torch.cuda.get_device_name() if s.device.startswith("cuda") and torch.cuda.is_available() else None
    return {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "size": s.size, "device": s.device, "gpu": gpu, "host": platform.node(), "threads": s.threads,
            "timeout_per_model_s": s.timeout_s, "versions": versions}


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "--worker":
        return worker_main(int(argv[1]))
    print("opcost._corpus is run by `python -m opcost corpus`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
