"""opcost.sweep on CPU tensors: a grid's items measured through worker processes with their
state in the database, a failing item recorded while the sweep goes on, the progress lines when
the stream is not a terminal, the status with its reasons (never running a model), an interrupt
of the parent alone, and the database kept off the workers' command lines."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import opcost

GRID = """
name: py-grid
op: aten::mm
args: {self: "f32[8,{k}]", mat2: "f32[16,4]"}
axes: {k: [16, 8, 16]}
data: [normal, {zeros: 0.25}]
"""
FAST = dict(device="cpu", energy=False, max_time=0.05)


def test_a_sweep_measures_each_item_once_and_records_the_failures(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    db = tmp_path / "ops.db"
    out = io.StringIO()
    r = opcost.sweep(grid, db=db, stream=out, progress_every=0, **FAST)
    # k=16 twice is one item: 2 distinct shapes × 2 data settings = 4 items, k=8 fails.
    assert (r.name, r.items, r.measured, r.failed, r.crashes) == ("py-grid", 4, 2, 2, 0)
    assert (r.done, r.failed_total, r.pending) == (2, 2, 0)
    lines = out.getvalue().splitlines()
    assert lines[0] == "py-grid: 0 of 4 items (0%)"
    assert lines[-1].startswith("py-grid: 4 of 4 items (100%), ")
    assert "\r" not in out.getvalue()  # not a terminal: plain lines
    s = opcost.sweep_status(grid, db=db, **FAST)
    assert (s.done, s.failed, s.pending) == (2, 2, 0)
    assert all("cannot be multiplied" in why for _, why in s.failures)
    assert {call for call, _ in s.failures} == {"aten::mm self=f32[8,8] mat2=f32[16,4]",
                                                "aten::mm self=f32[8,8]:zeros[0.25] mat2=f32[16,4]:zeros[0.25]"}
    assert s.seconds_left is None or s.seconds_left == 0
    again = opcost.sweep(grid, db=db, progress=False, **FAST)
    assert (again.measured, again.failed) == (0, 0)
    retried = opcost.sweep(grid, db=db, progress=False, retry_failed=True, workers=2, **FAST)
    assert (retried.measured, retried.failed) == (0, 2)
    forced = opcost.sweep(grid, db=db, progress=False, force=True, workers=3, **FAST)
    assert (forced.measured, forced.failed, forced.crashes) == (2, 2, 0)


def test_items_measured_together_are_each_stored_once_and_refusals_fail_alone(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    db = tmp_path / "ops.db"
    out = io.StringIO()
    r = opcost.sweep(grid, db=db, stream=out, progress_every=0, energy_group=4, **FAST)
    assert (r.items, r.measured, r.failed, r.crashes) == (4, 2, 2, 0)
    # All four claimed before any was done: a progress line for each start at 0 of 4.
    assert out.getvalue().splitlines().count("py-grid: 0 of 4 items (0%)") >= 4
    rows = r.rows()
    assert len(rows) == 2 and len({row["args"] for row in rows}) == 2
    # Not part of an item's key: a status at another group sees the same items done.
    s = opcost.sweep_status(grid, db=db, energy_group=1, **FAST)
    assert (s.done, s.failed, s.pending) == (2, 2, 0)
    with pytest.raises(ValueError, match=r"energy_group \(--energy-group\)"):
        opcost.sweep(grid, db=db, progress=False, energy_group=65, **FAST)


def test_sweep_errors_name_the_file_and_the_fix(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("op: aten::mm\naxes: {k: []}\n")
    with pytest.raises(ValueError, match="bad.yaml: axes.k must be a non-empty list"):
        opcost.sweep(bad, db=tmp_path / "x.db", **FAST)
    with pytest.raises(ValueError, match="force and retry_failed"):
        opcost.sweep(bad, db=tmp_path / "x.db", force=True, retry_failed=True, **FAST)
    assert not (tmp_path / "x.db").exists()


def test_workers_that_cannot_start_stop_the_sweep_and_lose_nothing(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(GRID)
    options = opcost._sweep._options(tmp_path / "ops.db", dict(device="cpu", max_time=0.05, energy=False))
    out = opcost._core.sweep(str(grid), options, "none", ["/bin/false"], lambda text, error: None,
                             lambda *a: None)
    assert out["crashes"] == 3
    assert "3 worker processes in a row ended (exited with status 1) before taking an item" in out["stopped"]
    assert out["after"]["pending"] == 4  # every item is still there for the next run
    assert out["after"]["failed"] == 0


def test_a_model_list_takes_python_models_and_measures_shared_signatures_once(tmp_path):
    (tmp_path / "nets.py").write_text(
        "import torch\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())\n")
    models = tmp_path / "models.yaml"
    models.write_text("name: py-models\n"
                      "models:\n"
                      "  - {model: 'nets.py:build', input: 'f32[4,16]', batch: [1, 2]}\n"
                      "  - {model: 'nets.py:build', input: 'f32[4,16]', train: true}\n")
    r = opcost.sweep(models, db=tmp_path / "ops.db", progress=False, **FAST)
    inference = opcost.inventory(torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()),
                                 torch.randn(4, 16))
    train = opcost.inventory(torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()),
                             torch.randn(4, 16), train=True)
    unique = {o.signature for o in inference.ops} | {o.signature for o in train.ops}
    # batch is a built-in model's key: both Python configurations run the same inputs, so
    # their signatures are one set; the training step adds its backward calls.
    assert (r.items, r.measured, r.failed) == (len(unique), len(unique), 0)
    assert opcost.sweep_status(models, db=tmp_path / "ops.db", **FAST).done == len(unique)


def test_python_m_opcost_sweep_runs_a_list_with_python_models(tmp_path):
    (tmp_path / "nets.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(8, 4)\n")
    models = tmp_path / "models.yaml"
    models.write_text("models: [{model: 'nets.py:build', input: 'f32[2,8]'}]\n")
    base = [sys.executable, "-m", "opcost", "sweep", str(models), "--db", str(tmp_path / "ops.db"), "--device",
            "cpu", "--no-energy", "--max-time", "0.05", "--target-ci", "0.05", "--seed", "3"]
    run = subprocess.run(base + ["--progress-every", "0", "--max-attempts", "1"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "this run measured" in run.stderr
    assert re.search(r"models: \d+ of \d+ items", run.stderr), run.stderr  # progress lines, not a terminal
    status = subprocess.run(base + ["--status"], capture_output=True, text=True)
    assert status.returncode == 0, status.stderr
    # The command line's status (`sweep --status` is the alias of `sweep status FILE`), its text.
    assert re.search(r"sweep models \(.*\): (\d+) items.*\n.*\n  done     \1\n  failed   0\n  pending  0\n",
                     status.stdout), status.stdout
    # The settings are part of each item's key: at another target the items are not measured.
    other = subprocess.run(base[:-4] + ["--status"], capture_output=True, text=True)
    assert re.search(r"  done     0\n  failed   0\n", other.stdout), other.stdout
    assert re.search(r"elsewhere \d+ items of this sweep at other settings", other.stdout), other.stdout
    # Status runs no model: the list's model file is not even imported, whether the list ran at
    # these settings, at others, or never in this database.
    marker = tmp_path / "imported"
    (tmp_path / "nets.py").write_text(f"open({str(marker)!r}, 'a').write('imported')\n"
                                      "import torch\ndef build():\n    return torch.nn.Linear(8, 4)\n")
    for status_args in (base + ["--status"], base[:-4] + ["--status"],
                        base[:6] + [str(tmp_path / "fresh.db")] + base[7:] + ["--status"]):
        run = subprocess.run(status_args, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
    assert not marker.exists(), "sweep --status imported the list's model file"
    bad = subprocess.run(base[:4] + [str(tmp_path / "none.yaml")], capture_output=True, text=True)
    assert bad.returncode == 2 and "none.yaml" in bad.stderr


def _children(pid: int) -> list:
    """The processes whose parent is ``pid`` (from /proc)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


SLOW = dict(device="cpu", energy=False, max_time=0.5, target_ci=1e-6)  # each item loops its whole budget


def test_an_interrupt_of_the_parent_alone_stops_the_workers_and_puts_their_items_back(tmp_path):
    grid = tmp_path / "slow.yaml"
    grid.write_text('name: slow\nop: aten::mm\nargs: {self: "f32[{n},64]", mat2: "f32[64,64]"}\n'
                    f"axes: {{n: [{', '.join(str(n) for n in range(60, 84))}]}}\n")
    db = tmp_path / "ops.db"
    script = textwrap.dedent(f"""
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)  # even where SIGINT came ignored
        import opcost
        try:
            opcost.sweep({str(grid)!r}, db={str(db)!r}, workers=2, progress=False, **{SLOW!r})
        except KeyboardInterrupt:
            print("KeyboardInterrupt reached the caller", flush=True)
        else:
            print("the sweep ended uninterrupted", flush=True)
        """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        workers, running = [], 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and parent.poll() is None:
            workers = _children(parent.pid)
            if db.exists() and len(workers) == 2:
                running = opcost.sweep_status(grid, db=db, **SLOW).running
                if running:
                    break
            time.sleep(0.1)
        assert running, f"no worker took an item: {parent.communicate()[1] if parent.poll() is not None else ''}"
        # The database is in each worker's environment, not on its command line (ps shows that).
        for pid in workers:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                assert str(db).encode() not in f.read()
            with open(f"/proc/{pid}/environ", "rb") as f:
                assert f"OPCOST_DB={db}".encode() in f.read().split(b"\0")
        os.kill(parent.pid, signal.SIGINT)  # the parent alone, as a notebook's interrupt does
        out, err = parent.communicate(timeout=60)
    finally:
        if parent.poll() is None:
            parent.kill()
    assert "KeyboardInterrupt reached the caller" in out, err
    assert not any(_alive(pid) for pid in workers), "a worker outlived the interrupted sweep"
    s = opcost.sweep_status(grid, db=db, **SLOW)
    assert s.running == 0, "items left running by workers that are gone"
    assert s.pending > 0 and s.done + s.failed + s.pending == s.items == 24
