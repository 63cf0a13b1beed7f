"""Ctrl-C and bad input from Python, on CPU tensors: SIGINT stops a run at once and reaches the
caller as KeyboardInterrupt (what was stored is kept, the operator in progress is not stored),
`python -m opcost` says one line and exits 130 on Ctrl-C and one line on a model's failure, and
budgets that are not finite numbers above 0 are refused before anything runs."""

from __future__ import annotations

import math
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

import opcost
from opcost import _core

# 30 linear layers of distinct widths, a ReLU after each: 60 signatures, each measured for at least
# its warm-up, so a run that goes on after Ctrl-C takes many seconds more.
MANY_OPS = textwrap.dedent("""
    import torch

    def build():
        layers = []
        for i in range(30):
            layers += [torch.nn.Linear(16 + i, 17 + i), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers).eval()
""")
SIGNATURES = 60
# A hang guard, not a timing: an interrupted run stops within one measured batch (milliseconds);
# the run it interrupts has tens of seconds left.
STOP_WITHIN_S = 5


class Child:
    """A Python process whose standard error is read line by line as it comes."""

    def __init__(self, argv, stdout: Path):
        self.stdout = stdout
        with open(stdout, "w") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        self.lines: list = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float = 120) -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                self._reader.join(5)
                break
            time.sleep(0.01)
        self.proc.kill()
        pytest.fail(f"no line with {text!r}; standard error:\n" + "\n".join(self.lines))

    def interrupt(self):
        """SIGINT, as Ctrl-C sends it; returns (exit status, seconds until it ended, stdout)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail("still running 60 s after SIGINT; standard error:\n" + "\n".join(self.lines))
        seconds = time.monotonic() - t0
        self._reader.join(5)
        return self.proc.returncode, seconds, self.stdout.read_text()

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)


def operator_lines(lines) -> int:
    """validate's "[k/N] signature ×count" notes: operators started."""
    return sum(1 for line in lines if line.startswith("opcost: [") and f"/{SIGNATURES}] " in line)


def stored_rows(db: Path) -> int:
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return c.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]


def many_ops_model(tmp_path: Path) -> Path:
    path = tmp_path / "many_ops.py"
    path.write_text(MANY_OPS)
    return path


def load_many_ops(path: Path):
    namespace: dict = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    return namespace["build"]()


def test_ctrl_c_stops_validate_keeps_what_was_stored_and_raises_keyboard_interrupt(tmp_path):
    model, db = many_ops_model(tmp_path), tmp_path / "ops.db"
    script = textwrap.dedent(f"""
        import logging, sys, torch, opcost
        logging.basicConfig(level=logging.INFO, format="opcost: %(message)s", stream=sys.stderr)
        namespace = {{}}
        exec(open({str(model)!r}).read(), namespace)
        net = namespace["build"]()
        try:
            opcost.validate(net, torch.randn(4, 16), db={str(db)!r}, max_time=30, step_max_time=1, energy=False,
                            short_loops_after=1)  # full loops: each operator long enough to be interrupted
        except KeyboardInterrupt:
            print("caller: KeyboardInterrupt", file=sys.stderr, flush=True)
            sys.exit(42)
        print("caller: the run went on to its end", file=sys.stderr)
    """)
    child = Child([sys.executable, "-c", script], tmp_path / "stdout")
    child.wait_for(f"[3/{SIGNATURES}]")  # the step and two operators are stored, the third is running
    status, seconds, _ = child.interrupt()
    assert status == 42, child.stderr
    assert seconds < STOP_WITHIN_S, child.stderr
    assert "<EMPTY MESSAGE>" not in child.stderr and "KeyboardInterrupt:" not in child.stderr, child.stderr
    started = operator_lines(child.lines)
    assert 3 <= started < 10, child.stderr  # no run through the other 50-odd operators
    assert child.stderr.count("measuring the whole step") == 1  # not its second measurement, after the operators
    # The step's row and each operator finished before Ctrl-C; the one it interrupted is not stored.
    prediction = opcost.predict(load_many_ops(model), torch.randn(4, 16), db=db)
    measured_ops = SIGNATURES - len(prediction.missing)
    assert started - 1 <= measured_ops <= started, (measured_ops, started, child.stderr)
    assert stored_rows(db) == measured_ops + 1  # + the step's own row
    # What was stored is used: validating again measures only what is missing.
    assert not prediction.complete and prediction.time_us > 0


def test_ctrl_c_abandons_a_measurement_in_progress(tmp_path):
    db = tmp_path / "ops.db"
    # A 1e-9 target is never met: the loop would run its whole minute.
    script = textwrap.dedent(f"""
        import sys, opcost
        print("measuring", file=sys.stderr, flush=True)
        try:
            opcost.measure("aten::mm", self="f32[64,64]", mat2="f32[64,64]", device="cpu", max_time=60,
                           target_ci=1e-9, energy=False, db={str(db)!r})
        except KeyboardInterrupt:
            print("caller: KeyboardInterrupt", file=sys.stderr, flush=True)
            sys.exit(42)
    """)
    child = Child([sys.executable, "-c", script], tmp_path / "stdout")
    child.wait_for("measuring")
    time.sleep(1.5)  # inside the timing loop
    status, seconds, _ = child.interrupt()
    assert status == 42, child.stderr
    assert seconds < STOP_WITHIN_S, child.stderr
    assert not db.exists() or stored_rows(db) == 0  # abandoned, not stored


def run_module(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "opcost", *args], capture_output=True, text=True, **kwargs)


def test_python_m_opcost_says_interrupted_and_exits_130(tmp_path):
    model, db = many_ops_model(tmp_path), tmp_path / "ops.db"
    child = Child([sys.executable, "-m", "opcost", "validate", f"{model}:build", "--input", "f32[4,16]", "--device",
                   "cpu", "--db", str(db), "--no-energy", "--max-time", "30", "--short-loops-after", "1"],
                  tmp_path / "stdout")
    child.wait_for(f"[2/{SIGNATURES}]")
    status, seconds, stdout = child.interrupt()
    assert status == 130, child.stderr
    assert seconds < STOP_WITHIN_S, child.stderr
    assert child.lines[-1] == "opcost: interrupted", child.stderr
    assert "Traceback" not in child.stderr and "<EMPTY MESSAGE>" not in child.stderr, child.stderr
    assert stdout == ""  # no report of a run cut short
    assert stored_rows(db) >= 2  # the step and the first operator


FLAKY = textwrap.dedent("""
    import torch

    class Flaky(torch.nn.Module):
        calls = 0

        def forward(self, x):
            self.calls += 1
            if self.calls > 1:  # past the first step, which opcost checks on its own
                raise AssertionError("boom on call 2\\nand a second line")
            return x * 2

    def build():
        return Flaky()
""")


def test_python_m_opcost_says_a_model_failure_in_one_line(tmp_path):
    (tmp_path / "flaky.py").write_text(FLAKY)
    argv = ["inventory", f"{tmp_path / 'flaky.py'}:build", "--input", "f32[2,2]", "--device", "cpu"]
    run = run_module(*argv)
    lines = [line for line in run.stderr.splitlines() if "no CUDA GPU" not in line]
    assert run.returncode == 2, run.stderr  # the model cannot be used: bad input, as the command line's
    assert len(lines) == 1 and lines[0].startswith("opcost: error: "), run.stderr
    assert "raised AssertionError: boom on call 2 and a second line" in lines[0]
    assert "At:" not in run.stderr and "Traceback" not in run.stderr
    debug = run_module("--traceback", *argv)
    assert debug.returncode != 0 and "Traceback (most recent call last)" in debug.stderr
    assert "AssertionError: boom on call 2" in debug.stderr
    after = run_module(*argv, "--traceback")  # after the command too
    assert "Traceback (most recent call last)" in after.stderr


def test_a_model_failing_past_its_first_step_is_a_model_error():
    flaky: dict = {}
    exec(FLAKY, flaky)
    with pytest.raises(opcost.ModelError, match=r"raised AssertionError: boom on call 2") as caught:
        opcost.inventory(flaky["build"](), torch.randn(2, 2))
    assert isinstance(caught.value.__cause__, AssertionError)  # the model's own error, chained


BAD_BUDGETS = [-1, 0, math.nan, math.inf, -math.inf]


def flag(keyword: str) -> str:
    """The command line's spelling of a keyword, which every refusal names beside it."""
    return keyword.replace("_", "-")


class Counting(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x + 1


@pytest.mark.parametrize("keyword", ["max_time", "energy_max_time", "energy_max_time_capped", "step_max_time"])
@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_validate_refuses_budgets_that_are_not_finite_and_positive(tmp_path, keyword, value):
    net = Counting()
    refusal = rf"{keyword} \(--{flag(keyword)}\) must be a (finite )?number above 0 and at most 86400 seconds, not "
    with pytest.raises(ValueError, match=refusal):
        opcost.validate(net, torch.ones(2), db=tmp_path / "ops.db", **{keyword: value})
    assert net.calls == 0 and not (tmp_path / "ops.db").exists()  # refused up front: nothing ran
    with pytest.raises(TypeError, match=keyword):
        opcost.validate(net, torch.ones(2), db=tmp_path / "ops.db", **{keyword: "1"})


@pytest.mark.parametrize("keyword", ["short_loops_after", "ops_energy_ci"])
@pytest.mark.parametrize("value", [-1, 1.5, math.nan, math.inf])
def test_validate_refuses_shares_outside_0_to_1(tmp_path, keyword, value):
    refusal = rf"{keyword} \(--{flag(keyword)}\) must be a (finite )?number from 0 to 1, not "
    with pytest.raises(ValueError, match=refusal):
        opcost.validate(Counting(), torch.ones(2), db=tmp_path / "ops.db", **{keyword: value})


@pytest.mark.parametrize("keyword", ["max_time", "energy_max_time", "target_ci"])
@pytest.mark.parametrize("value", BAD_BUDGETS)
def test_measure_refuses_budgets_that_are_not_finite_and_positive(tmp_path, keyword, value):
    with pytest.raises(ValueError, match=rf"{keyword} \(--{flag(keyword)}\) must be a (finite )?number "):
        opcost.measure("aten::add", self="f32[4]", other="f32[4]", device="cpu", db=tmp_path / "ops.db",
                       **{keyword: value})
    assert not (tmp_path / "ops.db").exists()
    with pytest.raises(ValueError, match=r"target_ci \(--target-ci\) must be a number above 0 and at most 1, not 2"):
        opcost.measure("aten::add", self="f32[4]", other="f32[4]", device="cpu", store=False, target_ci=2)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1.0, 0.0])
def test_the_extension_refuses_bad_budgets_that_bypass_the_package(tmp_path, value):
    # What a caller of the extension (a sweep's options) might pass: never a bad_function_call.
    options = {"device": "cpu", "cache": "warm", "seed": 0, "autocast": "", "max_time": value, "target_ci": 0.01,
               "energy": False, "energy_max_time": 2.0, "store": False, "db": str(tmp_path / "ops.db"),
               "db_is_default": False}
    with pytest.raises(ValueError, match=r"max_time \(--max-time\) must be a"):
        _core.measure("aten::add", ["self=f32[4]", "other=f32[4]"], options)


def test_keyboard_interrupt_from_a_progress_note_stops_the_run(tmp_path, caplog):
    # KeyboardInterrupt raised in Python code the run calls back (here a logging handler, as a
    # signal landing there would) ends the run, not the operator alone.
    import logging

    class Interrupting(logging.Handler):
        def emit(self, record):
            if record.getMessage().startswith("[2/"):
                raise KeyboardInterrupt

    handler = Interrupting()
    logger = logging.getLogger("opcost")
    logger.addHandler(handler)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    model = many_ops_model(tmp_path)
    try:
        with pytest.raises(KeyboardInterrupt):
            opcost.validate(load_many_ops(model), torch.randn(4, 16), db=tmp_path / "ops.db", max_time=0.02,
                            step_max_time=0.2, energy=False)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)
    assert not any("[3/" in r.getMessage() for r in caplog.records), caplog.text
    assert not any("KeyboardInterrupt" in r.getMessage() for r in caplog.records), caplog.text
    prediction = opcost.predict(load_many_ops(model), torch.randn(4, 16), db=tmp_path / "ops.db")
    assert SIGNATURES - len(prediction.missing) == 1  # the first operator, stored before the interrupt
