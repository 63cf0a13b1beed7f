"""The package's functions: inventory, predict, validate, model_cost and measure of the user's
own model, in the user's own process, through the same C++ workflows as the command line."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import numbers
import os
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

import torch

from . import _core
from ._results import Inventory, Measurement, Prediction
from ._specs import input_signature, model_dtype_name, spec_of

log = logging.getLogger("opcost")


class ModelError(RuntimeError):
    """The model (or step callable) failed on its inputs; the message names it and the inputs."""


def _name_of(model: Any) -> str:
    if isinstance(model, torch.nn.Module):
        return type(model).__name__
    return getattr(model, "__qualname__", None) or getattr(model, "__name__", None) or type(model).__name__


def _tensors(values: Any) -> Iterator[torch.Tensor]:
    if isinstance(values, torch.Tensor):
        yield values
    elif isinstance(values, (list, tuple)):
        for v in values:
            yield from _tensors(v)
    elif isinstance(values, dict):
        for v in values.values():
            yield from _tensors(v)


def _device_of(model: Any, inputs: Sequence[Any]) -> torch.device:
    for t in _tensors(list(inputs)):
        return t.device
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            return p.device
    return torch.device("cpu")


class _LayerNames:
    """Names each submodule's ATen calls as ``named_modules()`` names it: while on, every
    submodule's forward runs inside a layer scope of that name (the root module's own code is
    the model's top level, "(top)"). The C++ workflow turns it on for the one step whose calls
    it records, and off for every other: the hooks move each module off PyTorch's fast call
    path, which would slow the steps that are timed."""

    def __init__(self, model: Any, root: Optional[str] = None):
        self._model = model if isinstance(model, torch.nn.Module) else None
        self._root = root  # a name for the root module's scope too (a trace's outermost layer)
        self._handles: list = []

    def __call__(self, on: bool) -> None:
        if on and not self._handles and self._model is not None:
            self._register()
        elif not on:
            self.remove()

    def _register(self) -> None:
        def opener(name: str) -> Callable:
            def pre_hook(module, args):
                _core.open_layer_scope(name)
            return pre_hook

        def closer(module, args, output):
            _core.close_layer_scope()

        for name, module in self._model.named_modules():
            if not name:
                if not self._root:
                    continue
                name = self._root
            self._handles.append(module.register_forward_pre_hook(opener(name)))
            # always_call: the scope closes even when the forward raises.
            self._handles.append(module.register_forward_hook(closer, always_call=True))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()


@contextlib.contextmanager
def _layer_names(model: Any) -> Iterator[_LayerNames]:
    names = _LayerNames(model)
    try:
        yield names
    finally:
        names.remove()  # also when the step raised with the hooks on


def _loss_of(output: Any) -> torch.Tensor:
    if isinstance(output, torch.Tensor):
        return output.float().sum()
    if hasattr(output, "loss") and isinstance(getattr(output, "loss"), torch.Tensor):
        return output.loss
    tensors = [t for t in _tensors(output if not hasattr(output, "to_tuple") else output.to_tuple())
               if t.is_floating_point()]
    if not tensors:
        raise ModelError("train=True: the model's output has no floating-point tensor to take a loss of; "
                         "pass loss_fn=")
    return sum(t.float().sum() for t in tensors)


def _make_step(model: Any, inputs: Sequence[Any], kwargs: Dict[str, Any], train: bool,
               loss_fn: Optional[Callable], optimizer: Any, autocast: Optional[str],
               device: torch.device) -> Callable[[], None]:
    if not callable(model):
        raise TypeError(f"{model!r} is not a model: pass an nn.Module or a callable that runs one step")
    amp = None
    if autocast:
        dtype = {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp16": torch.float16,
                 "f16": torch.float16, "float16": torch.float16, "half": torch.float16}.get(autocast)
        if dtype is None:
            raise ValueError(f"autocast={autocast!r}: use 'bf16' or 'fp16'")
        amp = (device.type, dtype)

    def forward():
        if amp:
            with torch.autocast(amp[0], dtype=amp[1]):
                return model(*inputs, **kwargs)
        return model(*inputs, **kwargs)

    if not train:
        def step():
            with torch.inference_mode():
                forward()
        return step

    def train_step():
        # The modes the core sets around every step (RunnableModel::step), here too for the check
        # that runs it straight from Python: autograd on, whatever the caller's mode. Inference
        # mode is left with inference_mode(False); enable_grad() alone would not leave it.
        with torch.inference_mode(False), torch.enable_grad():
            out = forward()
            loss = loss_fn(out) if loss_fn else _loss_of(out)
            loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        elif isinstance(model, torch.nn.Module):
            model.zero_grad(set_to_none=True)
    return train_step


def _describe(model: Any, inputs: Sequence[Any], kwargs: Dict[str, Any], train: bool, autocast: Optional[str],
              name: Optional[str]) -> Dict[str, Any]:
    device = _device_of(model, inputs)
    dtype = "fp32"
    parameters = 0
    if isinstance(model, torch.nn.Module):
        params = list(model.parameters())
        parameters = sum(p.numel() for p in params)
        floating = [p for p in params if p.is_floating_point()]
        if floating:
            dtype = model_dtype_name(floating[0].dtype)
    signature = input_signature(list(inputs) + list(kwargs.values()))
    return {"name": name or _name_of(model), "input": signature, "device_kind": device.type,
            "device_index": device.index or 0, "device": str(device), "parameters": int(parameters),
            "dtype": dtype, "train": bool(train), "autocast": autocast or ""}


def _checked_step(step: Callable[[], None], d: Dict[str, Any]) -> Callable[[], None]:
    """Runs the step once in Python first: a model that fails on its inputs fails here, with
    its name and inputs, before anything is observed or measured. The step returned fails the
    same way later too (a model that fails on its second call): a ModelError, whichever step
    it was. KeyboardInterrupt is no Exception: it passes, and stops the run."""
    def failed(e: Exception) -> ModelError:
        return ModelError(f"{d['name']}({d['input']}) raised {type(e).__name__}: {e} "
                          f"(check the inputs' shapes, dtypes and device against the model)")

    try:
        step()
    except Exception as e:
        raise failed(e) from e

    def checked() -> None:
        try:
            step()
        except Exception as e:
            raise failed(e) from e
    return checked


def _notes() -> Dict[str, Callable]:
    def note(text: str, is_error: bool) -> None:
        (log.error if is_error else log.info)(text)

    def progress(text: str) -> None:
        if text:
            log.debug(text)
    return {"note": note, "progress": progress}


def _db_path(db: Optional[str | os.PathLike]) -> tuple[str, bool]:
    if db is None:
        return _core.default_db_path(), not os.environ.get("OPCOST_DB")
    path = os.fspath(db)
    if not path:
        raise ValueError("db='': the path is empty; give a file, or leave db out for the default database")
    return path, False


# A day per measurement: a larger budget is a mistake (or a loop that never ends), as is a budget
# that is not a finite number above 0; the extension checks again, this names the keyword first.
MAX_BUDGET_S = 86400.0


def _seconds(name: str, value: Any) -> float:
    """A budget in seconds, checked: finite, above 0, at most a day."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r}: use a number of seconds")
    if not (math.isfinite(value) and 0 < value <= MAX_BUDGET_S):
        raise ValueError(f"{name}={value!r}: use a number of seconds above 0 and at most {MAX_BUDGET_S:g}")
    return float(value)


def _fraction(name: str, value: Any, *, zero_ok: bool = True) -> float:
    """A share or a relative interval: from 0 (or above 0) to 1; NaN is neither."""
    valid = "from 0 to 1" if zero_ok else "above 0 and at most 1"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name}={value!r}: use a number {valid}")
    if not (0 <= value <= 1) or (not zero_ok and value == 0):
        raise ValueError(f"{name}={value!r}: use a number {valid}")
    return float(value)


def _check_cache_bytes(cache_bytes: Optional[int]) -> None:
    if cache_bytes is not None and (not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool)
                                    or cache_bytes <= 0):
        raise ValueError(f"cache_bytes={cache_bytes!r}: use a positive number of bytes, or None for the GPU's L2")


def inventory(model: Any, *inputs: Any, train: bool = False, loss_fn: Optional[Callable] = None,
              optimizer: Any = None, autocast: Optional[str] = None, name: Optional[str] = None,
              cache_bytes: Optional[int] = None, **kwargs: Any) -> Inventory:
    """Every ATen call one step of ``model(*inputs, **kwargs)`` makes, with its module path.

    ``model`` is an ``nn.Module`` or any callable (a whole training step). With ``train=True``
    the step is forward, loss (``loss_fn(output)``, else the sum of the output) and backward,
    plus ``optimizer.step()`` when one is given; backward ops are attributed to the forward
    layer that created them. ``autocast`` ("bf16", "fp16") runs the step under autocast.
    On a GPU each call's inputs are classed as read from its L2 or from memory
    (``OpEntry.cold_args``); ``cache_bytes`` classes them against another size, on any device."""
    _check_cache_bytes(cache_bytes)
    d = _describe(model, inputs, kwargs, train, autocast, name)
    step = _checked_step(_make_step(model, inputs, kwargs, train, loss_fn, optimizer, autocast,
                                    _device_of(model, inputs)), d)
    with _layer_names(model) as names:
        out = _core.inventory(step, dict(d, name_layers=names), cache_bytes or 0)
    return Inventory(json.loads(out["json"]), out["text"])


def _predict(model: Any, inputs: Sequence[Any], kwargs: Dict[str, Any], *, measure: bool, target: float,
             db: Optional[str], cache: str, cache_bytes: Optional[int], train: bool, loss_fn: Optional[Callable],
             optimizer: Any,
             autocast: Optional[str], name: Optional[str], energy: bool, budgets: Optional[Dict[str, float]]):
    d = _describe(model, inputs, kwargs, train, autocast, name)
    step = _checked_step(_make_step(model, inputs, kwargs, train, loss_fn, optimizer, autocast,
                                    _device_of(model, inputs)), d)
    path, is_default = _db_path(db)
    if cache not in ("auto", "warm", "cold"):
        raise ValueError(f"cache={cache!r}: use 'auto', 'warm' or 'cold'")
    _check_cache_bytes(cache_bytes)
    options = {"measure": measure, "target": float(target), "db": path, "db_is_default": is_default,
               "cache": cache, "cache_bytes": cache_bytes or 0, "energy": bool(energy), "max_time": None}
    options.update({k: float(v) for k, v in (budgets or {}).items()})
    with _layer_names(model) as names:
        out = _core.predict(step, dict(d, name_layers=names), options, **_notes())
    return Prediction(json.loads(out["json"]), out["text"])


def predict(model: Any, *inputs: Any, db: Optional[str] = None, cache: str = "auto",
            cache_bytes: Optional[int] = None, train: bool = False,
            loss_fn: Optional[Callable] = None, optimizer: Any = None, autocast: Optional[str] = None,
            name: Optional[str] = None, **kwargs: Any) -> Prediction:
    """The step's time and energy predicted from the operator database ``db`` (default: the
    command line's). Nothing is measured: signatures the database lacks are listed in
    ``missing`` and count as zero (``complete`` is False).

    ``cache``: which operator measurements to use. ``"auto"`` takes each input as the model
    reads it on a GPU: from memory where the step touched more than the L2 holds since that data
    was last used (a weight read once a step), else from L2 (an activation just written); on the
    CPU all warm. ``cache_bytes`` classes them against that many bytes instead of the GPU's L2.
    ``"warm"`` or ``"cold"``: every input reused, or rotated over 256 MiB."""
    return _predict(model, inputs, kwargs, measure=False, target=0, db=db, cache=cache, cache_bytes=cache_bytes,
                    train=train, loss_fn=loss_fn,
                    optimizer=optimizer, autocast=autocast, name=name, energy=True, budgets=None)


def validate(model: Any, *inputs: Any, db: Optional[str] = None, cache: str = "auto",
             cache_bytes: Optional[int] = None, train: bool = False,
             loss_fn: Optional[Callable] = None, optimizer: Any = None, autocast: Optional[str] = None,
             name: Optional[str] = None, energy: bool = True, max_time: Optional[float] = None,
             energy_max_time: float = 2.0, energy_max_time_capped: float = 3.5, step_max_time: float = 3.0,
             short_loops_after: Optional[float] = None, ops_energy_ci: Optional[float] = None,
             **kwargs: Any) -> Prediction:
    """Measures what the database lacks (stored as it goes), then the whole step, and returns
    the prediction beside the measurement (``time_error``, ``energy_error``). Budgets are per
    operator in seconds, finite, above 0 and at most a day (else ValueError naming the keyword);
    ``max_time`` None keeps the command line's defaults.

    As ``opcost validate --short-loops-after --ops-energy-ci``: once the measured operators
    explain ``short_loops_after`` of the step (0 to 1; 0: from the first, 1: never), the rest
    get short loops, and each short loop's energy stops at the interval its share of the step
    needs for the operators together to add ``ops_energy_ci`` (relative 95%, 0 to 1; 0: each at
    5%). None keeps the command line's defaults."""
    # Every budget is checked, also those that max_time=None leaves at the command line's defaults.
    given = {"energy_max_time": _seconds("energy_max_time", energy_max_time),
             "energy_max_time_capped": _seconds("energy_max_time_capped", energy_max_time_capped),
             "step_max_time": _seconds("step_max_time", step_max_time)}
    budgets: Dict[str, float] = {}
    if max_time is not None:
        budgets = dict(given, max_time=_seconds("max_time", max_time))
    for key, value in (("short_loops_after", short_loops_after), ("ops_energy_ci", ops_energy_ci)):
        if value is not None:
            budgets[key] = _fraction(key, value)
    return _predict(model, inputs, kwargs, measure=True, target=0, db=db, cache=cache, cache_bytes=cache_bytes,
                    train=train, loss_fn=loss_fn,
                    optimizer=optimizer, autocast=autocast, name=name, energy=energy, budgets=budgets)


def measure(op: str, *args: Any, device: str = "auto", cache: str = "warm", seed: int = 0,
            autocast: Optional[str] = None, max_time: float = 1.0, target_ci: float = 0.01,
            energy: bool = True, energy_max_time: float = 2.0, db: Optional[str] = None, store: bool = True,
            **kwargs: Any) -> Measurement:
    """Measures one operator call replayed alone in a loop, as ``opcost measure`` does.

    Arguments are positional or by the schema's names, as opcost's argument language
    ("bf16[1024,768]", "i64[8]:range[0,100]") or as Python values: a tensor stands for its dtype
    and shape, lists, numbers, None and booleans for themselves::

        opcost.measure("aten::addmm", self="bf16[3072]", mat1="bf16[1024,768]", mat2="bf16[768,3072]")
    """
    max_time, energy_max_time = _seconds("max_time", max_time), _seconds("energy_max_time", energy_max_time)
    target_ci = _fraction("target_ci", target_ci, zero_ok=False)
    tokens = [spec_of(a) for a in args] + [f"{k}={spec_of(v)}" for k, v in kwargs.items()]
    path, is_default = _db_path(db)
    options = {"device": device, "cache": cache, "seed": int(seed), "autocast": autocast or "",
               "max_time": float(max_time), "target_ci": float(target_ci), "energy": bool(energy),
               "energy_max_time": float(energy_max_time), "store": bool(store), "db": path,
               "db_is_default": is_default}
    out = _core.measure(op, tokens, options)
    if out["resolution_note"]:
        log.info(out["resolution_note"])
    if out["not_stored"]:
        log.error("%s (the measurement is returned, but not stored)", out["not_stored"])
    return Measurement(json.loads(out["json"]), out["text"])
