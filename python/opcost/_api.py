"""The package's functions: inventory, predict, validate, model_cost and measure of the user's
own model, in the user's own process, through the same C++ workflows as the command line."""

from __future__ import annotations

import contextlib
import json
import logging
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence

import torch

from . import _compiled, _core
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
        self._open: List[str] = []  # the scopes open now, innermost last

    def current(self) -> Optional[str]:
        """The innermost layer open now ("" at the top level), or None while layers are not named."""
        if not self._handles:
            return None
        return self._open[-1] if self._open else (self._root or "")

    def __call__(self, on: bool) -> None:
        if on and not self._handles and self._model is not None:
            self._register()
        elif not on:
            self.remove()

    def _register(self) -> None:
        def opener(name: str) -> Callable:
            def pre_hook(module, args):
                _core.open_layer_scope(name)
                self._open.append(name)
            return pre_hook

        def closer(module, args, output):
            _core.close_layer_scope()
            if self._open:
                self._open.pop()

        for name, module in self._model.named_modules():
            # A compiled submodule's wrapper opens its layer outside the compiled code; hooks on
            # the module it wraps would run inside, where dynamo breaks the graph at them (and
            # the step would no longer run the graph the user's does). Its descendants keep
            # theirs (an eager part between graph breaks names its layers): the region compiles
            # in the first step, before any hook, and torch 2.11 does not recompile for hooks
            # added later (skip_nnmodule_hook_guards), as for a whole model compiled.
            if name.split(".")[-1] == "_orig_mod" and name != "_orig_mod":
                continue
            # torch.compile's wrapper holds the model as `_orig_mod`: layers are named as the
            # model names them, and the wrapper's own module is the root.
            name = ".".join(part for part in name.split(".") if part != "_orig_mod")
            if not name:
                if not self._root or module is not self._model:
                    continue
                name = self._root
            self._handles.append(module.register_forward_pre_hook(opener(name)))
            # always_call: the scope closes even when the forward raises.
            self._handles.append(module.register_forward_hook(closer, always_call=True))

    def remove(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self._open.clear()


@contextlib.contextmanager
def _model_hooks(model: Any, d: Dict[str, Any]) -> Iterator[Dict[str, Any]]:
    """The description of a model for the core, with the hooks it turns on for observed steps:
    layer names (module hooks) and the records of torch.compile's generated kernels."""
    names = _LayerNames(model)
    kernels = _compiled.CompiledKernels(names.current)
    try:
        with _compiled.replays():
            yield dict(d, name_layers=names, watch_compiled=kernels)
    finally:
        kernels.remove()
        names.remove()  # also when the step raised with the hooks on


# The default loss's effect on a training step's energy (bench/results/2026-11-27-h100-training-loss/).
_DEFAULT_LOSS_NOTE = (
    "train=True without loss_fn: the loss is the output's sum, whose gradient is the same for every sample; "
    "the backward then draws less energy than a real loss's (resnet18's SGD step on the H100: 21% less than with "
    "cross entropy, the same kernels and time), while the operators' loops replay random values: pass loss_fn= "
    "(e.g. cross entropy against labels) for energy that stands for training")


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
    noted = []  # the default loss's note, said once a step function

    def train_step():
        # The modes the core sets around every step (RunnableModel::step), here too for the check
        # that runs it straight from Python: autograd on, whatever the caller's mode. Inference
        # mode is left with inference_mode(False); enable_grad() alone would not leave it.
        with torch.inference_mode(False), torch.enable_grad():
            out = forward()
            loss = loss_fn(out) if loss_fn else _loss_of(out)
            # A scalar output is taken for the model's own loss (a head's plain sum would be missed),
            # and an output carrying `.loss` has one.
            if (not noted and loss_fn is None and not isinstance(getattr(out, "loss", None), torch.Tensor)
                    and not (isinstance(out, torch.Tensor) and out.dim() == 0)):
                noted.append(True)
                log.info(_DEFAULT_LOSS_NOTE)
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


def _registry_defaults(command: str) -> Dict[str, Any]:
    """The options registry's defaults as ``command`` offers them (workflow/options.h): the keyword
    arguments' defaults below are these, never written twice."""
    return {spec["name"]: spec["default"] for spec in _core.option_specs(command)}


_MEASURE = _registry_defaults("measure")
_PREDICT = _registry_defaults("predict")
_VALIDATE = _registry_defaults("validate")


def _registry_options(command_defaults: Dict[str, Any], given: Dict[str, Any]) -> Dict[str, Any]:
    """The registry's options among a function's arguments (its ``locals()`` on entry), by the
    registry's names: the extension checks each (ValueError or TypeError naming it as Python and
    the command line spell it) and applies each on its own."""
    return {name: given[name] for name in command_defaults if name in given}


def _check_cache_bytes(cache_bytes: Optional[int]) -> None:
    if cache_bytes is not None and (not isinstance(cache_bytes, int) or isinstance(cache_bytes, bool)
                                    or cache_bytes <= 0):
        raise ValueError(f"cache_bytes={cache_bytes!r}: use a positive number of bytes, or None for the GPU's L2")


def inventory(model: Any, *inputs: Any, train: bool = False, loss_fn: Optional[Callable] = None,
              optimizer: Any = None, autocast: Optional[str] = None, name: Optional[str] = None,
              cache_bytes: Optional[int] = None, **kwargs: Any) -> Inventory:
    """Every ATen call one step of ``model(*inputs, **kwargs)`` makes, with its module path.

    ``model`` is an ``nn.Module`` or any callable (a whole training step). With ``train=True``
    the step is forward, loss (``loss_fn(output)``, else the sum of the output, which gives every
    sample the same gradient: its backward draws less energy than a real loss's, and the step
    says so once on the ``opcost`` logger) and backward,
    plus ``optimizer.step()`` when one is given; backward ops are attributed to the forward
    layer that created them. ``autocast`` ("bf16", "fp16") runs the step under autocast.
    On a GPU each call's inputs are classed as read from its L2 or from memory
    (``OpEntry.cold_args``); ``cache_bytes`` classes them against another size, on any device."""
    _check_cache_bytes(cache_bytes)
    d = _describe(model, inputs, kwargs, train, autocast, name)
    with _compiled.layer_provenance():  # a model torch.compile compiles on its first step
        step = _checked_step(_make_step(model, inputs, kwargs, train, loss_fn, optimizer, autocast,
                                        _device_of(model, inputs)), d)
        with _model_hooks(model, d) as described:
            out = _core.inventory(step, described, cache_bytes or 0)
    return Inventory(json.loads(out["json"]), out["text"])


def _predict(model: Any, inputs: Sequence[Any], kwargs: Dict[str, Any], *, command: str, options: Dict[str, Any],
             db: Optional[str], train: bool, loss_fn: Optional[Callable], optimizer: Any, autocast: Optional[str],
             name: Optional[str]):
    path, is_default = _db_path(db)
    options = dict(options, command=command, db=path, db_is_default=is_default)
    _core.check_options(command, options)  # refused before the model runs
    d = _describe(model, inputs, kwargs, train, autocast, name)
    with _compiled.layer_provenance():  # a model torch.compile compiles on its first step
        step = _checked_step(_make_step(model, inputs, kwargs, train, loss_fn, optimizer, autocast,
                                        _device_of(model, inputs)), d)
        with _model_hooks(model, d) as described:
            out = _core.predict(step, described, options, **_notes())
    return Prediction(json.loads(out["json"]), out["text"])


def predict(model: Any, *inputs: Any, db: Optional[str] = None, cache: str = _PREDICT["cache"],
            cache_bytes: Optional[int] = None, estimate: bool = False, cost_model: Optional[str] = None,
            train: bool = False,
            loss_fn: Optional[Callable] = None, optimizer: Any = None, autocast: Optional[str] = None,
            name: Optional[str] = None, **kwargs: Any) -> Prediction:
    """The step's time and energy predicted from the operator database ``db`` (default: the
    command line's). Nothing is measured: signatures the database lacks are listed in
    ``missing`` and count as zero (``complete`` is False).

    ``cache``: which operator measurements to use. ``"auto"`` takes each input as the model
    reads it on a GPU: from memory where the step touched more than the L2 holds since that data
    was last used (a weight read once a step), else from L2 (an activation just written); on the
    CPU all warm. ``cache_bytes`` classes them against that many bytes instead of the GPU's L2
    (None or 0: the L2). ``"warm"`` or ``"cold"``: every input reused, or rotated over 256 MiB.
    ``estimate``: where ``db`` has no row of a call, its cost estimated by the fitted cost model
    (``opcost.fit``; ``cost_model``: a model file, else the newest in ``db``), marked estimated
    in ``estimated`` and never stored (docs/estimate.md).
    The options are ``opcost predict``'s (``opcost._core.option_specs("predict")``); the result's
    ``settings`` records them."""
    options = _registry_options(_PREDICT, locals())
    return _predict(model, inputs, kwargs, command="predict", options=options, db=db, train=train, loss_fn=loss_fn,
                    optimizer=optimizer, autocast=autocast, name=name)


def validate(model: Any, *inputs: Any, db: Optional[str] = None, cache: str = _VALIDATE["cache"],
             cache_bytes: Optional[int] = None, estimate: bool = False, cost_model: Optional[str] = None,
             train: bool = False,
             loss_fn: Optional[Callable] = None, optimizer: Any = None, autocast: Optional[str] = None,
             name: Optional[str] = None, energy: bool = _VALIDATE["energy"],
             max_time: float = _VALIDATE["max_time"], target_ci: float = _VALIDATE["target_ci"],
             energy_max_time: float = _VALIDATE["energy_max_time"],
             energy_max_time_capped: float = _VALIDATE["energy_max_time_capped"],
             energy_settle: float = _VALIDATE["energy_settle"],
             energy_target_ci: float = _VALIDATE["energy_target_ci"],
             energy_min_windows: int = _VALIDATE["energy_min_windows"],
             energy_graphs: str = _VALIDATE["energy_graphs"],
             step_max_time: float = _VALIDATE["step_max_time"],
             short_loops_after: float = _VALIDATE["short_loops_after"],
             ops_energy_ci: float = _VALIDATE["ops_energy_ci"],
             shared_windows: bool = _VALIDATE["shared_windows"], own_loops: int = _VALIDATE["own_loops"],
             duty_cycle: bool = _VALIDATE["duty_cycle"], **kwargs: Any) -> Prediction:
    """Measures what the database lacks (stored as it goes), then the whole step, and returns
    the prediction beside the measurement (``time_error``, ``energy_error``).

    The options are ``opcost validate``'s, each taking effect on its own, checked before the
    model runs (ValueError, or TypeError for a wrong type, naming the keyword and its flag):
    per operator ``max_time`` and ``energy_max_time`` (``energy_max_time_capped`` at the power
    cap) in seconds, finite, above 0 and at most a day; ``target_ci`` and ``energy_target_ci``
    the relative 95% intervals its loops stop at; ``energy_settle`` seconds before energy windows
    count, at least ``energy_min_windows`` of them; ``energy_graphs`` ("auto": on CUDA an operator
    the GPU waits for has its energy loop replay a CUDA graph of its calls; "off");
    ``step_max_time`` for the whole step; ``energy=False`` skips every energy loop. Once the
    measured operators explain ``short_loops_after`` of the step (0 to 1; 0: from the first, 1: never), the rest get short
    loops, and each short loop's energy stops at the interval its share of the step needs for
    the operators together to add ``ops_energy_ci`` (relative 95%, 0 to 1; 0: each at 5%). On a
    GPU such operators share energy loops' counter windows, up to 16 columns a loop;
    ``shared_windows=False`` gives each a loop of its own, and the heaviest operators get loops of
    their own until ``own_loops`` have one or they explain half the step (fewer: more share
    loops; 0: all share). An operator that reaches the power cap
    in its own loop while the step stays below it has its energy measured again at the step's duty
    cycle; ``duty_cycle=False`` keeps the capped loop's figure.
    ``opcost._core.option_specs("validate")`` lists them all with their ranges; the result's
    ``settings`` records them."""
    options = _registry_options(_VALIDATE, locals())
    return _predict(model, inputs, kwargs, command="validate", options=options, db=db, train=train,
                    loss_fn=loss_fn, optimizer=optimizer, autocast=autocast, name=name)


def measure(op: str, *args: Any, device: str = _MEASURE["device"], cache: str = _MEASURE["cache"],
            seed: int = _MEASURE["seed"], autocast: Optional[str] = None,
            cold_footprint: int = _MEASURE["cold_footprint"], max_time: float = _MEASURE["max_time"],
            target_ci: float = _MEASURE["target_ci"], energy: bool = _MEASURE["energy"],
            energy_max_time: float = _MEASURE["energy_max_time"],
            energy_max_time_capped: float = _MEASURE["energy_max_time_capped"],
            energy_settle: float = _MEASURE["energy_settle"], energy_target_ci: float = _MEASURE["energy_target_ci"],
            energy_min_windows: int = _MEASURE["energy_min_windows"],
            energy_graphs: str = _MEASURE["energy_graphs"], db: Optional[str] = None, store: bool = True,
            **kwargs: Any) -> Measurement:
    """Measures one operator call replayed alone in a loop, as ``opcost measure`` does.

    Arguments are positional or by the schema's names, as opcost's argument language
    ("bf16[1024,768]", "i64[8]:range[0,100]") or as Python values: a tensor stands for its dtype
    and shape, lists, numbers, None and booleans for themselves::

        opcost.measure("aten::addmm", self="bf16[3072]", mat1="bf16[1024,768]", mat2="bf16[768,3072]")

    The options are ``opcost measure``'s (``opcost._core.option_specs("measure")`` lists them with
    their ranges), each taking effect on its own: ``device`` ("auto", "cpu", "cuda", "cuda:N"),
    ``cache`` ("warm", "cold", "cold:ARG,..." rotating inputs over ``cold_footprint`` bytes),
    ``seed`` of the input data, ``autocast`` ("bf16", "fp16"), the timing loop's ``max_time``
    seconds and ``target_ci`` (relative 95% interval), and the energy loop's (``energy=False``
    skips it) ``energy_max_time`` (``energy_max_time_capped`` at the power cap), ``energy_settle``,
    ``energy_target_ci``, ``energy_min_windows`` and ``energy_graphs`` ("auto": on CUDA, an op the
    GPU waits for, its host issue time above its GPU time, has its energy loop replay a CUDA graph
    of its calls, at the GPU's pace; "off": calls issued one by one). A bad value is a ValueError
    (TypeError for a wrong type) naming the keyword and its flag. The result's ``settings``
    records them."""
    options = _registry_options(_MEASURE, locals())
    tokens = [spec_of(a) for a in args] + [f"{k}={spec_of(v)}" for k, v in kwargs.items()]
    path, is_default = _db_path(db)
    options.update(store=bool(store), db=path, db_is_default=is_default)
    out = _core.measure(op, tokens, options)
    if out["resolution_note"]:
        log.info(out["resolution_note"])
    if out["not_stored"]:
        log.error("%s (the measurement is returned, but not stored)", out["not_stored"])
    return Measurement(json.loads(out["json"]), out["text"])
