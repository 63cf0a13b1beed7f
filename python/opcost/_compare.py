"""opcost.compare: variants of one model (fp32 against bf16, autocast, channels_last, torch.compile,
int8, the user's own) side by side, through the C++ workflow the command line's ``opcost compare``
runs (src/workflow/compare.h, docs/compare.md)::

    r = opcost.compare(model, x, variants=("fp32", "bf16", "channels_last", "compile"))
    r = opcost.compare(model, x, variants={"eager": "fp32", "compiled": torch.compile(model),
                                           "bf16": lambda m: m.to(torch.bfloat16)})
    print(r.table(by="layer")); r.to_pandas()

This module builds each variant's model, inputs and step; the workflow measures them.
"""

from __future__ import annotations

import contextlib
import copy
import json
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import torch

from . import _compiled, _core
from ._api import _checked_step, _describe, _device_of, _make_step, _model_hooks, _name_of, _notes
from ._results import Comparison

# The workflow's defaults (CompareOptions in src/workflow/compare.h): the keyword arguments'
# defaults below are these, never written twice.
_DEFAULTS = _core.compare_defaults()

# Each variant holds a deep copy of the model where it converts it: a bound keeps a long list
# from exhausting memory, and no table of more columns reads.
MAX_VARIANTS = 32
NAME_MAX_CHARS = 64  # a variant's name heads a column of the table

_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
_INT8_DESCRIPTION = "; on the CPU: torch.ao.quantization.quantize_dynamic, PyTorch's fbgemm/x86 int8 kernels"
# Dynamo cannot trace quantize_dynamic's packed weights (a ScriptObject): it breaks the graph at
# each quantised linear, which then runs eagerly between compiled pieces.
_INT8_COMPILE_CPU_DESCRIPTION = "; compiled in pieces: the graph breaks at each int8 linear (its packed weights)"
_INT8_GPU_DESCRIPTION = ("; on a GPU: nn.Linear layers (sizes multiples of 8) with int8 weights per output channel "
                         "and int8 activations per row, multiplied by torch._int_mm (int32 accumulation)")


@dataclass
class _Variant:
    name: str
    description: str
    model: Any          # what the step calls
    layers_of: Any      # the module whose submodules name the layers (see _layer_module)
    inputs: Tuple[Any, ...]
    kwargs: Dict[str, Any]
    autocast: Optional[str]
    optimizer: Any


def _where(name: str) -> str:
    return f"variants[{name!r}]"


def _copy(model: Any, name: str) -> Any:
    """A deep copy to convert, so that the user's model stays as it was."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"{_where(name)} converts an nn.Module, and the model is {type(model).__name__}; give "
                        "this variant as a model or a function of the model instead")
    try:
        return copy.deepcopy(model)
    except Exception as e:
        raise ValueError(f"{_where(name)}: the model cannot be copied to convert it (copy.deepcopy raised "
                         f"{type(e).__name__}: {e}); give the variant as a model instead") from e


def _map_tensors(values: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``values`` with ``fn`` applied to every tensor inside lists, tuples and dicts."""
    if isinstance(values, torch.Tensor):
        return fn(values)
    if isinstance(values, (list, tuple)) and not hasattr(values, "_fields"):
        return type(values)(_map_tensors(v, fn) for v in values)
    if isinstance(values, dict):
        return {k: _map_tensors(v, fn) for k, v in values.items()}
    return values


def _cast_floating(inputs: Tuple[Any, ...], kwargs: Dict[str, Any], dtype: torch.dtype):
    def cast(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype) if t.is_floating_point() and t.dtype != dtype else t
    return _map_tensors(tuple(inputs), cast), _map_tensors(dict(kwargs), cast)


def _channels_last(inputs: Tuple[Any, ...], kwargs: Dict[str, Any]):
    def to_cl(t: torch.Tensor) -> torch.Tensor:
        return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t
    return _map_tensors(tuple(inputs), to_cl), _map_tensors(dict(kwargs), to_cl)


def _float_dtype(model: Any) -> Optional[torch.dtype]:
    if isinstance(model, torch.nn.Module):
        for p in model.parameters():
            if p.is_floating_point():
                return p.dtype
    return None


def _layer_module(model: Any) -> Any:
    # A compiled model (torch.compile's OptimizedModule) names its submodules "_orig_mod.0",
    # ...: the layers are named on the module it wraps, so that their paths match the other
    # variants'. Its compiled code does not run the forward hooks that name the layers, so its
    # calls land on the model's top level and its layers show as absent (docs/compare.md).
    return getattr(model, "_orig_mod", model)


def _weights_device(model: Any) -> Optional[torch.device]:
    if isinstance(model, torch.nn.Module):
        for t in model.parameters():
            return t.device
        for t in model.buffers():
            return t.device
    return None


def _shares_parameters(a: Any, b: Any) -> bool:
    pa = next(iter(a.parameters()), None) if isinstance(a, torch.nn.Module) else None
    pb = next(iter(b.parameters()), None) if isinstance(b, torch.nn.Module) else None
    return pa is pb


def _optimizer_for(optimizer: Any, variant_model: Any, model: Any, name: str) -> Any:
    """The optimizer of a variant's step: the one given where the variant trains the model's own
    parameters; for a converted copy, a fresh one of its class and settings over the copy's (the
    given one would step the user's parameters, which the copy's backward leaves without
    gradients)."""
    if optimizer is None:
        return None
    if not isinstance(optimizer, torch.optim.Optimizer):
        if not callable(optimizer):
            raise TypeError(f"optimizer={type(optimizer).__name__}: give a torch.optim.Optimizer or a function of "
                            "the parameters that makes one (lambda params: torch.optim.AdamW(params, lr=1e-3))")
        try:
            return optimizer(list(variant_model.parameters()))
        except Exception as e:
            raise ValueError(f"optimizer: making {_where(name)}'s optimizer raised {type(e).__name__}: {e}") from e
    if _shares_parameters(variant_model, model):
        return optimizer
    if len(optimizer.param_groups) != 1:
        raise ValueError(f"optimizer: {_where(name)} trains a copy of the model, which needs an optimizer of its own, "
                         f"and this one has {len(optimizer.param_groups)} parameter groups; pass optimizer= as a "
                         "function of the parameters (lambda params: torch.optim.AdamW(params, lr=1e-3))")
    try:
        return type(optimizer)(variant_model.parameters(), **optimizer.defaults)
    except Exception as e:
        raise ValueError(f"optimizer: {type(optimizer).__name__}(parameters, **its defaults) for {_where(name)}'s copy "
                         f"raised {type(e).__name__}: {e}; pass optimizer= as a function of the parameters") from e


def _parse(text: str, where: str) -> Dict[str, Any]:
    try:
        return _core.parse_variant(text)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _builtin(name: str, text: str, model: Any, inputs: Tuple[Any, ...], kwargs: Dict[str, Any], train: bool,
             device: torch.device) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any], Optional[str], str]:
    """A built-in variant (``_core.parse_variant``'s vocabulary), applied in the order dtype,
    channels_last, int8, compile: (model, inputs, kwargs, autocast, description)."""
    s = _parse(text, _where(name))
    m, description = model, s["description"]
    if s["dtype"] != "fp32":
        m = _copy(model, name).to(_DTYPES[s["dtype"]])
        inputs, kwargs = _cast_floating(inputs, kwargs, _DTYPES[s["dtype"]])
    if s["channels_last"]:
        m = (m if m is not model else _copy(model, name)).to(memory_format=torch.channels_last)
        inputs, kwargs = _channels_last(inputs, kwargs)
    if s["int8"]:
        m = _int8(m if m is not model else _copy(model, name), name, train, device)
        if device.type == "cpu":
            description += _INT8_DESCRIPTION
        else:  # the core's words are the CPU's quantisation (per-tensor activations)
            description = description.replace(" (dynamic, per-tensor activations)", "") + _INT8_GPU_DESCRIPTION
    if s["compile"]:
        m = torch.compile(m, mode=s["compile_mode"] or None)
        if s["int8"] and device.type == "cpu":
            description += _INT8_COMPILE_CPU_DESCRIPTION
    return m, inputs, kwargs, s["autocast"] or None, description


class Int8Linear(torch.nn.Module):
    """An ``nn.Linear`` in int8 for a GPU: weights quantised once per output channel, activations
    per row at each call (symmetric, to [-127, 127]), multiplied by ``torch._int_mm`` (int8 inputs,
    int32 accumulation) and rescaled to the input's dtype, bias added. ``torch._int_mm`` on CUDA
    takes more than 16 rows: fewer are padded with zero rows."""

    _MIN_ROWS = 17

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=1e-12) / 127
        self.register_buffer("weight_t", (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8).t().contiguous())
        self.register_buffer("weight_scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().clone())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    @staticmethod
    def fits(linear: torch.nn.Linear) -> bool:
        """torch._int_mm's CUDA kernels take sizes that are multiples of 8."""
        return linear.in_features % 8 == 0 and linear.out_features % 8 == 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, self.in_features)
        n = rows.shape[0]
        if n < self._MIN_ROWS:
            rows = torch.nn.functional.pad(rows, (0, 0, 0, self._MIN_ROWS - n))
        x_scale = rows.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / 127
        q = (rows.float() / x_scale).round().clamp(-127, 127).to(torch.int8)
        y = torch._int_mm(q, self.weight_t)[:n].float() * x_scale[:n] * self.weight_scale
        if self.bias is not None:
            y = y + self.bias.float()
        return y.to(x.dtype).reshape(*x.shape[:-1], self.out_features)


def int8_linears(model: torch.nn.Module) -> int:
    """Replaces, in place, every ``nn.Linear`` whose sizes fit ``torch._int_mm`` by an
    ``Int8Linear``; returns how many it replaced."""
    replaced = 0
    for parent in list(model.modules()):
        for child_name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear and Int8Linear.fits(child):
                setattr(parent, child_name, Int8Linear(child))
                replaced += 1
    return replaced


def _int8(model: Any, name: str, train: bool, device: torch.device) -> Any:
    if train:
        raise ValueError(f"{_where(name)}: int8 (dynamic quantisation) has no backward; compare it with "
                         "train=False")
    if device.type != "cpu":
        if not hasattr(torch, "_int_mm"):
            raise ValueError(f"{_where(name)}: this torch ({torch.__version__}) has no torch._int_mm; int8 on a "
                             "GPU needs it")
        if int8_linears(model) == 0:
            raise ValueError(f"{_where(name)}: int8 on a GPU quantises nn.Linear layers whose sizes are "
                             "multiples of 8, and the model has none")
        return model
    quantize_dynamic = getattr(getattr(torch.ao, "quantization", None), "quantize_dynamic", None)
    if quantize_dynamic is None:
        raise ValueError(f"{_where(name)}: this torch ({torch.__version__}) has no "
                         "torch.ao.quantization.quantize_dynamic; int8 needs it")
    with warnings.catch_warnings():
        # torch.ao.quantization announces its move to torchao; the kernels are still torch's.
        warnings.simplefilter("ignore", DeprecationWarning)
        return quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)


def _user(name: str, spec: Any, model: Any, inputs: Tuple[Any, ...],
          kwargs: Dict[str, Any]) -> Tuple[Any, Tuple[Any, ...], Dict[str, Any], str]:
    """A user's variant: a model as it is, or a function of (a copy of) the model. Floating inputs
    follow the variant's dtype where it differs from the model's (``lambda m: m.half()``)."""
    if isinstance(spec, torch.nn.Module):
        m = spec
        orig = _layer_module(spec)
        description = (f"the given model, torch.compile of {type(orig).__name__}" if orig is not spec
                       else f"the given model, {type(spec).__name__}")
    else:
        label = getattr(spec, "__qualname__", None) or type(spec).__name__
        given = _copy(model, name) if isinstance(model, torch.nn.Module) else model
        try:
            m = spec(given)
        except Exception as e:
            raise ValueError(f"{_where(name)}: the function {label} raised {type(e).__name__}: {e}") from e
        if not callable(m):
            raise TypeError(f"{_where(name)}: the function {label} returned {type(m).__name__}, not a model; "
                            "return the variant's model (lambda m: m.to(torch.bfloat16))")
        description = f"{label}(a copy of the model)"
    dtype, base = _float_dtype(m), _float_dtype(model)
    if dtype is not None and base is not None and dtype != base:
        inputs, kwargs = _cast_floating(inputs, kwargs, dtype)
    return m, inputs, kwargs, description


def _named_specs(variants: Any) -> List[Tuple[str, Any]]:
    """(name, spec) pairs: a dict as given, a sequence of built-in names (or one comma-separated
    string) each named by its canonical name."""
    if isinstance(variants, str):
        variants = [v.strip() for v in variants.split(",")]
    if isinstance(variants, Mapping):
        pairs = list(variants.items())
    elif isinstance(variants, Sequence):
        pairs = []
        for v in variants:
            if not isinstance(v, str):
                raise TypeError(f"variants: {type(v).__name__} values are not variant names; give names ('bf16'), or "
                                "a dict of name: name, model or function of the model")
            pairs.append((_parse(v, "variants")["name"], v))
    else:
        raise TypeError(f"variants={type(variants).__name__}: give a sequence of names ('fp32', 'bf16') or a dict "
                        "of name: name, model or function of the model")
    if len(pairs) < 2:
        raise ValueError(f"variants: {len(pairs)} given; give at least two (the first is the baseline)")
    if len(pairs) > MAX_VARIANTS:
        raise ValueError(f"variants: {len(pairs)} given; compare at most {MAX_VARIANTS} at a time")
    seen = set()
    for name, spec in pairs:
        if not isinstance(name, str) or not name or len(name) > NAME_MAX_CHARS or not name.isprintable():
            raise ValueError(f"variants: the name {str(name)[:NAME_MAX_CHARS]!r} cannot head a column; name each "
                             f"variant with 1 to {NAME_MAX_CHARS} printable characters")
        if name in seen:
            raise ValueError(f"variants: the name {name!r} is given twice; name each variant once")
        seen.add(name)
        if not isinstance(spec, str) and not callable(spec):
            raise TypeError(f"{_where(name)} = {type(spec).__name__}: give a built-in name ('bf16'), a model, or a "
                            "function of the model that returns the variant's model")
    return pairs


def _build(name: str, spec: Any, model: Any, inputs: Tuple[Any, ...], kwargs: Dict[str, Any], train: bool,
           optimizer: Any, device: torch.device) -> _Variant:
    autocast = None
    if isinstance(spec, str):
        m, v_inputs, v_kwargs, autocast, description = _builtin(name, spec, model, inputs, kwargs, train, device)
    else:
        m, v_inputs, v_kwargs, description = _user(name, spec, model, inputs, kwargs)
    # The variant's weights where it has any (a function may have moved them), else its inputs.
    v_device = _weights_device(m) or _device_of(m, v_inputs)
    if v_device != device:
        raise ValueError(f"{_where(name)} runs on {v_device}, the model on {device}; put every variant on one device")
    return _Variant(name, description, m, _layer_module(m), v_inputs, v_kwargs, autocast,
                    _optimizer_for(optimizer, m, model, name) if train else None)


def compare(model: Any, *inputs: Any, variants: Any = ("fp32", "bf16"), train: bool = False,
            loss_fn: Optional[Callable] = None, optimizer: Any = None, name: Optional[str] = None,
            rounds: int = _DEFAULTS["rounds"], warmup_rounds: int = _DEFAULTS["warmup_rounds"],
            round_max_time: float = _DEFAULTS["round_max_time"],
            energy: bool = _DEFAULTS["energy"], layers: bool = _DEFAULTS["layers"],
            layer_steps: int = _DEFAULTS["layer_steps"], layer_rows: int = _DEFAULTS["layer_rows"],
            **kwargs: Any) -> Comparison:
    """Variants of ``model(*inputs, **kwargs)`` side by side: each one's step time and energy
    measured in ``rounds`` interleaved rounds (``round_max_time`` seconds a variant a round) after
    ``warmup_rounds`` rounds that are not counted, the difference to the first variant (the baseline) paired by round, with its 95% interval; and,
    with ``layers``, each variant's ``layer_steps`` traced steps per layer, matched by module
    path (``layer_rows``: rows of the text table, 0 for all). ``energy=False`` skips the energy.

    ``variants``: built-in names (``"fp32"``, ``"bf16"``, ``"fp16"``, ``"autocast-bf16"``,
    ``"autocast-fp16"``, ``"channels_last"``, ``"compile"``, ``"compile:MODE"``, ``"int8"`` (the
    CPU's), and ``+`` combinations such as ``"bf16+channels_last"``), or a dict of name: spec,
    where a spec is a built-in name, a model used as it is (``torch.compile(model)``), or a
    function of a copy of the model returning the variant's model (``lambda m: m.half()``).
    Converted variants are copies: ``model`` itself is never changed (with ``train=True``, the
    variants that run it as it is step its weights, as validate does; a copy gets an optimizer of
    the given one's class and settings, or ``optimizer`` may be a function of the parameters).
    Each variant runs once first, outside any timing (torch.compile compiles there); an error
    names the variant. See docs/compare.md."""
    options = {"rounds": rounds, "warmup_rounds": warmup_rounds, "round_max_time": round_max_time, "energy": energy, "layers": layers,
               "layer_steps": layer_steps, "layer_rows": layer_rows}
    _core.check_compare_options(options)  # refused before any variant is built (or compiled)
    device = _device_of(model, inputs)
    base_name = name or _name_of(model)
    entries = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(_compiled.layer_provenance())  # a compiled variant compiles on its first step
        built = [_build(n, spec, model, tuple(inputs), dict(kwargs), train, optimizer, device)
                 for n, spec in _named_specs(variants)]
        for v in built:
            # Every variant's root layer has the model's name: rows are matched by module path.
            d = _describe(v.model, v.inputs, v.kwargs, train, v.autocast, base_name)
            step = _make_step(v.model, v.inputs, v.kwargs, train, loss_fn, v.optimizer, v.autocast, device)
            step = _checked_step(step, dict(d, name=f"variant {v.name!r} of {base_name}"))
            described = stack.enter_context(_model_hooks(v.layers_of, d))
            entries.append({"name": v.name, "description": v.description, "step": step, "model": described})
        out = _core.compare(entries, options, **_notes())
    return Comparison(json.loads(out["json"]), out["text"])
