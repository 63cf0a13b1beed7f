"""Sweeps from Python: ``opcost.sweep`` runs a grid or a model list as ``opcost sweep`` does (its
state in the database, worker processes, a crashed item isolated), with a progress bar."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, TextIO, Tuple

from . import _core
from ._export import export_rows
from ._api import _db_path, _registry_defaults, _registry_options

log = logging.getLogger("opcost")


@dataclass
class SweepResult:
    """How far a sweep got: this run's figures and the sweep's items in the database after it."""

    name: str
    items: int
    measured: int  # in this run
    failed: int  # in this run
    crashes: int  # worker processes that died (their items are failed)
    seconds: float
    done: int  # in the database, after this run
    pending: int
    failed_total: int
    stopped: str = ""  # why it stopped before every item was tried
    rejected: List[Tuple[str, str]] = field(default_factory=list)  # items the op's schema refuses: (call, why)
    # The database the sweep stored into (a URL may hold a password: kept out of the repr).
    db: Optional[str] = field(default=None, repr=False, compare=False)

    def rows(self) -> List[Dict[str, Any]]:
        """Every row this sweep measured, from its database, as ``opcost db export --sweep NAME
        --json`` gives them: one result document per measurement, its ``axes`` among its fields."""
        if not self.db:
            raise ValueError(f"sweep {self.name!r}: this result does not know its database (opcost.sweep sets it)")
        return _export_rows(self.db, self.name)

    def plot(self, x: str, y: str = "time_us", hue: Optional[str] = None):
        """A matplotlib Figure (never shown) of the sweep's rows: ``y`` (time_us, energy_mJ or
        power_W per call) against the axis ``x``, a series per value of the axis ``hue``, each
        point with its 95% interval. Needs matplotlib: ``pip install 'opcost[plot]'``."""
        from ._plot import sweep_figure

        return sweep_figure(self.rows(), x=x, y=y, hue=hue)

    def __repr__(self) -> str:
        return (f"<SweepResult {self.name}: {self.done} of {self.items} items done, {self.failed_total} failed, "
                f"{self.pending} pending; this run measured {self.measured} and failed {self.failed} "
                f"in {self.seconds:.1f} s>")


@dataclass
class SweepStatus:
    """A sweep's items in the database: done, failed (with reasons), pending, and the pace so far."""

    name: str
    items: int
    done: int
    failed: int
    pending: int
    running: int
    mean_seconds_per_item: float  # 0 when nothing is done yet
    failures: List[Tuple[str, str]]  # (call, reason)
    elsewhere: int = 0  # the sweep's items at other settings or on another device (not counted above)
    never_run: int = 0  # of ``pending``: items of the file never run at these settings

    @property
    def seconds_left(self) -> Optional[float]:
        """About how long the pending items take at the pace so far (None before any is done)."""
        if not self.mean_seconds_per_item:
            return None
        return self.mean_seconds_per_item * (self.pending + self.running)


class _Progress:
    """In tqdm's manner on a terminal (one line rewritten); plain lines every ``every_s`` otherwise."""

    def __init__(self, stream: TextIO, every_s: float):
        self.stream, self.every_s, self.last, self.shown = stream, every_s, -1e9, 0
        self.terminal = hasattr(stream, "isatty") and stream.isatty()
        self.final: Optional[str] = None

    def __call__(self, label: str, done: int, before: int, total: int, elapsed_s: float) -> None:
        text = _core.progress_text(label, done, total, elapsed_s, self.terminal, before)
        if self.terminal:
            self.stream.write("\r" + text + " " * max(0, self.shown - len(text)))
            self.shown = len(text)
        else:
            self.final = text
            if time.monotonic() - self.last < self.every_s:
                return
            self.last = time.monotonic()
            self.stream.write(text + "\n")
            self.final = None
        self.stream.flush()

    def close(self) -> None:
        if self.terminal and self.shown:
            self.stream.write("\n")
        elif self.final:
            self.stream.write(self.final + "\n")
        self.stream.flush()


_SWEEP = _registry_defaults("sweep")


def _options(db: Optional[str | os.PathLike], settings: Dict[str, Any]) -> Dict[str, Any]:
    """A sweep's options for the extension: the registry's (``settings``, by its names; the
    extension checks each) and the database. The settings are part of every item's key."""
    path, is_default = _db_path(db)
    return dict(_registry_options(_SWEEP, settings), store=True, db=path, db_is_default=is_default)


def _max_items(n: int) -> int:
    """``max_items``: the items a sweep file may make, counted before any is made (``--max-items``)."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 1_000_000_000:
        raise ValueError(f"max_items={n!r}: use a whole number from 1 to 1000000000 (the default is {_core.DEFAULTS['max_items']})")
    return n


def sweep(path: str | os.PathLike, *, db: Optional[str] = None, device: str = _SWEEP["device"],
          cache: str = _SWEEP["cache"], seed: int = _SWEEP["seed"], autocast: Optional[str] = None,
          cold_footprint: int = _SWEEP["cold_footprint"], max_time: float = _SWEEP["max_time"],
          target_ci: float = _SWEEP["target_ci"], energy: bool = _SWEEP["energy"],
          energy_max_time: float = _SWEEP["energy_max_time"],
          energy_max_time_capped: float = _SWEEP["energy_max_time_capped"],
          energy_settle: float = _SWEEP["energy_settle"], energy_target_ci: float = _SWEEP["energy_target_ci"],
          energy_min_windows: int = _SWEEP["energy_min_windows"], energy_graphs: str = _SWEEP["energy_graphs"],
          energy_group: int = _SWEEP["energy_group"], force: bool = False, retry_failed: bool = False,
          workers: int = 1, max_attempts: int = _core.DEFAULTS["max_attempts"], progress: bool = True,
          progress_every: float = _core.DEFAULTS["progress_every"],
          stream: Optional[TextIO] = None, max_items: int = _core.DEFAULTS["max_items"]) -> SweepResult:
    """Measures every item of a sweep file (a grid or a model list, docs/sweeps.md) that the
    database does not have yet, as ``opcost sweep`` does. Run it again to go on after a stop. A
    file that would make more than ``max_items`` items is refused before any is made.
    A model list may name Python models (``package.module:callable``, ``file.py:callable``).
    The measuring options are ``opcost sweep``'s (``opcost._core.option_specs("sweep")``), each
    taking effect on its own and part of every item's key.

    ``energy_group`` items are measured together: each timed alone, their energies split from
    one loop's shared counter windows (0, the default: 16 where the energy counter is slow, as
    NVML's on a GPU, else 1); it is not part of an item's key.

    ``force`` measures every item again; ``retry_failed`` the failed ones. ``workers`` processes
    measure at once, one per GPU (on the CPU they share it); an item whose worker dies
    ``max_attempts`` times is failed, earlier deaths retry it. The workers get ``db`` through
    their environment ($OPCOST_DB), never on their command line. Ctrl-C (a notebook's
    interrupt too) stops the workers, puts the items they held back to pending and raises
    ``KeyboardInterrupt``; run the sweep again to go on. Progress goes to
    ``stream`` (standard error): a bar on a terminal, a line every ``progress_every`` seconds
    otherwise; notes and failures go to the ``opcost`` logger::

        result = opcost.sweep("conv2d-grid.yaml", db="ops.db")
        print(result, opcost.sweep_status("conv2d-grid.yaml", db="ops.db").failures)
    """
    settings = dict(locals())
    if force and retry_failed:
        raise ValueError("force and retry_failed: choose one (force measures everything again)")
    if workers < 1 or max_attempts < 1:
        raise ValueError("workers and max_attempts are 1 or more")
    options = _options(db, settings)
    options["max_items"] = _max_items(max_items)
    # The database reaches the workers as $OPCOST_DB (the sweep sets it in their environment),
    # never on their command line, which `ps` shows every local user: a URL's password with it.
    worker = [sys.executable, "-m", "opcost._sweep_worker",
              json.dumps({k: v for k, v in options.items() if k != "db"})]
    bar = _Progress(stream or sys.stderr, progress_every) if progress else None

    def note(text: str, is_error: bool) -> None:
        if bar and bar.terminal and bar.shown:
            bar.stream.write("\r" + " " * bar.shown + "\r")
            bar.shown = 0
        (log.error if is_error else log.info)(text)

    try:
        out = _core.sweep(os.fspath(path), options, "all" if force else "failed" if retry_failed else "none", worker,
                          note, bar or (lambda *a: None), _python_signatures, int(workers), int(max_attempts))
    finally:
        if bar:
            bar.close()
    after = out["after"]
    return SweepResult(name=out["name"], items=out["items"], measured=out["measured"], failed=out["failed"],
                       crashes=out["crashes"], seconds=out["seconds"], done=after["done"],
                       pending=after["pending"] + after["running"], failed_total=after["failed"],
                       stopped=out["stopped"], rejected=[tuple(r) for r in out["rejected"]], db=options["db"])


def _export_rows(db: str, sweep_name: str) -> List[Dict[str, Any]]:
    """The sweep's rows, as `opcost db export --json --sweep NAME` gives them."""
    def read(path: str) -> List[Dict[str, Any]]:
        with open(path) as f:
            return json.load(f)

    return export_rows(db, ["--json", "--sweep", sweep_name], read, f"sweep {sweep_name!r}: its rows")


def sweep_status(path: str | os.PathLike, *, db: Optional[str] = None, device: str = _SWEEP["device"],
                 cache: str = _SWEEP["cache"], seed: int = _SWEEP["seed"], autocast: Optional[str] = None,
                 cold_footprint: int = _SWEEP["cold_footprint"], max_time: float = _SWEEP["max_time"],
                 target_ci: float = _SWEEP["target_ci"], energy: bool = _SWEEP["energy"],
                 energy_max_time: float = _SWEEP["energy_max_time"],
                 energy_max_time_capped: float = _SWEEP["energy_max_time_capped"],
                 energy_settle: float = _SWEEP["energy_settle"], energy_target_ci: float = _SWEEP["energy_target_ci"],
                 energy_min_windows: int = _SWEEP["energy_min_windows"],
                 energy_graphs: str = _SWEEP["energy_graphs"], energy_group: int = _SWEEP["energy_group"],
                 max_items: int = _core.DEFAULTS["max_items"]) -> SweepStatus:
    """A sweep's items in the database (``opcost sweep status``). The measurement settings are part
    of an item's key: give the ones the sweep ran with (``opcost._core.option_specs("sweep")``
    lists them; ``identity`` marks those in the key). A model list's models are never run (nor
    their files imported) for a status: its items are those the database has at these settings,
    none (``items == 0``) before a sweep of it ran at them."""
    options = _options(db, dict(locals()))
    options["max_items"] = _max_items(max_items)
    s = _core.sweep_status(os.fspath(path), options)
    return SweepStatus(name=s["name"], items=s["items"], done=s["done"], failed=s["failed"],
                       pending=s["pending"] + s["not_enrolled"], running=s["running"],
                       mean_seconds_per_item=s["mean_seconds_per_item"], failures=[tuple(f) for f in s["failures"]],
                       elsewhere=s["elsewhere"], never_run=s["not_enrolled"])


def _python_signatures(config: Dict[str, Any]) -> Dict[str, Any]:
    """A model list's Python model (``package.module:callable``): built, run once observed, and its
    inventory's signatures returned to the sweep's plan."""
    from ._api import inventory
    from ._loading import prepare_model

    model, inputs = prepare_model(config["model"], config["inputs"], config["dtype"], config["device"],
                                  config["train"])
    inv = inventory(model, *inputs, train=config["train"], autocast=config["autocast"] or None,
                    name=config["label"])
    return {"calls": [(e.signature, e.count) for e in inv.ops], "autocast": inv.to_dict().get("autocast") or ""}
