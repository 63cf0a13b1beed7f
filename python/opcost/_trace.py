"""opcost.trace: a run of steps with every kernel tied to its operator call and layer, as a
Chrome trace for Perfetto and as tables in the manner of ``key_averages`` (docs/trace.md)::

    with opcost.trace(model, schedule=opcost.schedule(wait=1, warmup=1, active=3)) as t:
        for _ in range(10):
            train_step(); t.step()
    print(t.table(group_by="layer", sort_by="gpu")); t.export("run.json.gz")
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import torch

from . import _compiled, _core
from . import _plot
from ._api import _LayerNames, _checked_step, _db_path, _describe, _device_of, _make_step, _model_hooks, _name_of, \
    _notes

log = logging.getLogger("opcost")

_UNTIL_EXIT = 1 << 29  # "every step until the block ends": active steps of a schedule left out


@dataclass(frozen=True)
class Schedule:
    """torch.profiler.schedule's: per cycle, ``wait`` steps untraced, ``warmup`` steps traced and
    dropped (the profiler's start-up noise), ``active`` steps kept; ``repeat`` cycles."""

    wait: int = 0
    warmup: int = 1
    active: int = 1
    repeat: int = 1

    def __post_init__(self):
        if self.active < 1 or self.repeat < 1 or self.wait < 0 or self.warmup < 0:
            raise ValueError(f"schedule(wait={self.wait}, warmup={self.warmup}, active={self.active}, "
                             f"repeat={self.repeat}): active and repeat must be 1 or more, wait and warmup 0 or more")


def schedule(*, wait: int = 0, warmup: int = 1, active: int = 1, repeat: int = 1) -> Schedule:
    """Which steps of a traced loop are kept (see :class:`Schedule`)."""
    return Schedule(wait, warmup, active, repeat)


class Trace:
    """A traced block (``opcost.trace``). Call :meth:`step` after each step; after the block,
    :meth:`table` and :meth:`export` read the run."""

    def __init__(self, model: Any = None, *, schedule: Optional[Schedule] = None, shapes: bool = False,
                 flops: bool = False, nvtx: bool = False, device: str = "auto"):
        self._schedule = schedule or Schedule(warmup=0, active=_UNTIL_EXIT)
        self._shapes, self._flops, self._nvtx = shapes, flops, nvtx
        self._device = _resolve(device)
        self._layers = _LayerNames(model, root=_name_of(model) if model is not None else None)
        self._recorder = None
        self._run = None

    def __enter__(self) -> "Trace":
        s = self._schedule
        self._layers(True)
        self._recorder = _core.TraceRecorder(self._device.type, self._device.index or 0, s.wait, s.warmup, s.active,
                                             s.repeat, self._shapes or False, self._flops, self._nvtx)
        self._recorder.next_step()
        return self

    def step(self) -> None:
        """Marks the end of a step (as torch.profiler's ``prof.step()``)."""
        if self._recorder is None:
            raise RuntimeError("Trace.step() outside its `with` block")
        self._recorder.next_step()

    def __exit__(self, *exc) -> None:
        try:
            self._run = self._recorder.finish()
        finally:
            self._layers(False)
            self._recorder = None
        if self._run.counters_unavailable:
            log.info("opcost.trace: no power, clock or energy tracks: %s", self._run.counters_unavailable)
        if self._run.steps == 0 and exc[0] is None:
            s = self._schedule
            log.warning("opcost.trace: no step was kept: call t.step() after each step; the schedule keeps steps "
                        "%d to %d of each cycle (wait=%d, warmup=%d)", s.wait + s.warmup + 1,
                        s.wait + s.warmup + s.active, s.wait, s.warmup)

    @property
    def run(self):
        if self._run is None:
            raise RuntimeError("the trace is read after its `with` block")
        return self._run

    @classmethod
    def _of(cls, run, shapes: bool) -> "Trace":
        t = cls.__new__(cls)
        t._schedule, t._shapes, t._flops, t._device, t._layers, t._recorder = None, shapes, False, None, None, None
        t._run = run
        return t

    def only_steps(self, steps: str | int) -> "Trace":
        """The trace cut down to some of its kept steps (counted from 1: ``3`` or ``"2-4"``) and
        what ran in them, for a table or a file of a few steps of a long run."""
        return Trace._of(self.run.only_steps(str(steps)), self._shapes)

    @property
    def energy_why(self) -> str:
        """Why the tables have no energy, when energy was asked for (``trace_model(energy=True)``)."""
        return self.run.energy_why

    def table(self, group_by: str = "op", sort_by: str = "gpu", limit: int = _core.DEFAULTS["table_rows"]) -> str:
        """Rows per operator (``"op"``), per operator and input shapes (``"shape"``, when traced
        with ``shapes=True``) or per layer (``"layer"``): calls, CPU and GPU time, total and self;
        with energy (``trace_model(energy=True)``) each row's energy with its 95% interval and
        average power, and the check against the untraced step's measured energy. ``sort_by``:
        gpu, gpu_self, cpu, cpu_self, energy, energy_self, calls or name."""
        self._check_shapes(group_by)
        return self.run.table(group_by, sort_by, limit)

    def key_averages(self, group_by: str = "op") -> List[Dict[str, Any]]:
        """The table's rows as dicts (``name``, ``calls``, ``cpu_total_us``, ``cpu_self_us``,
        ``gpu_total_us``, ``gpu_self_us``, with energy ``energy_total_mJ``, ``energy_self_mJ``,
        their ``..._ci95_mJ`` and ``power_self_W``), the total last."""
        self._check_shapes(group_by)
        t = json.loads(self.run.table_json(group_by))
        return t["rows"] + [t["total"]]

    def plot(self, by: str = "layer", metric: Optional[str] = None, top: int = _plot.TOP_ROWS):
        """A matplotlib Figure (never shown) of the table's rows (``by="layer"`` or ``"op"``) as
        sorted bars: with energy (``trace_model(energy=True)``) each row's own energy with its 95%
        interval, its average power and the attributed energy against the measured; without,
        ``metric="gpu"`` or ``"cpu"``: each row's own GPU or CPU time (GPU where kernels ran).
        Needs matplotlib: ``pip install 'opcost[plot]'``."""
        if by not in ("layer", "op"):
            raise ValueError(f"by={by!r}: use 'layer' or 'op'")
        return _plot.trace_figure(json.loads(self.run.table_json(by)), metric=metric, top=top)

    def export(self, path: str | os.PathLike, min_duration_us: float = 0.0, layers: str = "") -> str:
        """Writes the trace for https://ui.perfetto.dev: Chrome JSON, or Perfetto's protobuf for a
        path ending in ``.pftrace``; gzip-compressed when it ends in ``.gz``.
        ``min_duration_us`` leaves shorter calls and kernels out; ``layers`` (a regular
        expression) keeps only the matching layers, their sublayers and what runs in them."""
        path = os.fspath(path)
        self.run.export(path, min_duration_us, layers)
        return path

    def _check_shapes(self, group_by: str) -> None:
        if group_by == "shape" and not self._shapes:
            raise ValueError("group_by='shape' needs the inputs' shapes: trace with opcost.trace(..., shapes=True)")

    def __repr__(self) -> str:
        if self._run is None:
            return "Trace(recording)" if self._recorder else "Trace(not started)"
        r = self._run
        return (f"Trace({r.steps} steps, {r.layers} layer ranges, {r.calls} operator calls, "
                f"{r.device_activities} device activities on {r.device})")


def trace(model: Any = None, *, schedule: Optional[Schedule] = None, shapes: bool = False, flops: bool = False,
          nvtx: bool = False, device: str = "auto") -> Trace:
    """Traces the steps of a ``with`` block. ``model`` (an ``nn.Module``) names the layers: each
    submodule's calls are tied to its ``named_modules()`` path, under the model's own name.
    Without a ``schedule`` every step of the block is kept. ``nvtx`` also opens an NVTX range
    for every step and layer, so that an nsys capture of the same run lines up with them."""
    return Trace(model, schedule=schedule, shapes=shapes, flops=flops, nvtx=nvtx, device=device)


def trace_model(model: Any, *inputs: Any, schedule: Optional[Schedule] = None, energy: bool = False,
                db: Optional[str] = None, cache: str = "auto", train: bool = False, loss_fn: Optional[Any] = None,
                optimizer: Any = None, autocast: Optional[str] = None, shapes: bool = False, flops: bool = False,
                nvtx: bool = False, name: Optional[str] = None, **kwargs: Any) -> Trace:
    """Traces steps of ``model(*inputs, **kwargs)`` that opcost runs itself, as ``validate``
    runs them (``train``, ``loss_fn``, ``optimizer``, ``autocast`` likewise): a warm-up step,
    then the ``schedule`` (default: one step traced and dropped, one kept). Returns the
    finished :class:`Trace`.

    ``energy=True`` (on a GPU) first validates the model into ``db``: every operator the
    database lacks is measured alone, with the GPU's power between kernels and the untraced
    step's time and energy. Each traced call is then charged with its operator's measured
    power over its kernels' time, and the GPU's idle time before them at the power between
    kernels (docs/trace.md); the tables get energy per operator and per layer, checked against
    the untraced step's measured energy. Without a GPU, ``energy_why`` says why there is none."""
    d = _describe(model, inputs, kwargs, train, autocast, name)
    with _compiled.layer_provenance():  # a model torch.compile compiles on its first step
        step = _checked_step(_make_step(model, inputs, kwargs, train, loss_fn, optimizer, autocast,
                                        _device_of(model, inputs)), d)
    s = schedule or Schedule()
    record = {"wait": s.wait, "warmup": s.warmup, "active": s.active, "repeat": s.repeat, "shapes": bool(shapes),
              "flops": bool(flops), "nvtx": bool(nvtx)}
    energy_options = None
    if energy:
        if cache not in ("auto", "warm", "cold"):
            raise ValueError(f"cache={cache!r}: use 'auto', 'warm' or 'cold'")
        path, is_default = _db_path(db)
        energy_options = {"db": path, "db_is_default": is_default, "cache": cache}
    with _model_hooks(model, d) as described:
        run = _core.trace_model(step, described, record, energy_options, **_notes())
    if energy and run.energy_why:
        log.info("opcost.trace_model: no energy per call: %s", run.energy_why)
    return Trace._of(run, bool(shapes))


def _resolve(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else torch.device("cpu")
    d = torch.device(device)
    if d.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}: this machine has no CUDA GPU (use device='cpu')")
    if d.type not in ("cuda", "cpu"):
        raise ValueError(f"device={device!r}: use 'auto', 'cpu', 'cuda' or 'cuda:N'")
    return d
