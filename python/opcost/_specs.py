"""Tensors and values in opcost's argument language ("f32[8,3,224,224]", "i64[1,128]:range[0,50257]").
Specs are parsed by the C++ parser every face uses; this only makes the tensors."""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from . import _core

# Every spelling opcost accepts ("f32", "fp32", "float32", ...) -> its torch dtype.
_TORCH_DTYPES = {name: getattr(torch, torch_name) for name, torch_name in _core.dtype_torch_names().items()
                 if hasattr(torch, torch_name)}
_CODES = {}
for _name, _dtype in _TORCH_DTYPES.items():
    _CODES.setdefault(_dtype, _name)  # the canonical code comes first


def dtype_code(dtype: torch.dtype) -> str:
    return _CODES.get(dtype, str(dtype).replace("torch.", ""))


def torch_dtype(name: str) -> torch.dtype:
    dtype = _TORCH_DTYPES.get(name.lower())
    if dtype is None:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(sorted(set(_CODES.values())))})")
    return dtype


def model_dtype_name(dtype: torch.dtype) -> str:
    """The name the workflows use for a model's dtype: fp32, bf16, fp16."""
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, dtype_code(dtype))


def tensor_from_spec(spec: str, device: str | torch.device = "cpu", generator: torch.Generator | None = None):
    """A tensor of the spec's dtype and shape with seeded random data (values in :range[lo,hi);
    integers otherwise in [0, 16))."""
    s = _core.tensor_spec(spec)
    dtype = torch_dtype(s["dtype"])
    shape, g = s["shape"], generator or torch.Generator().manual_seed(0)
    lo, hi = s["range"] if s["range"] else (None, None)
    if dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=g) if lo is None else torch.rand(shape, generator=g) * (hi - lo) + lo
    else:
        lo, hi = (int(lo), int(hi)) if lo is not None else (0, 2 if dtype == torch.bool else 16)
        t = torch.randint(lo, hi, shape, generator=g)
    return t.to(dtype).to(s["device"] or device)


def spec_of(value: Any) -> str:
    """A value as opcost's argument language writes it. A str is taken as the language's own text
    (``"f32[2,3]"``, ``"tanh"``); a string argument holding commas, spaces or quotes is written in
    quotes inside it: ``'"bd,de->be"'``."""
    if isinstance(value, torch.Tensor):
        spec = f"{dtype_code(value.dtype)}[{','.join(str(d) for d in value.shape)}]"
        if not value.is_contiguous():
            spec += f":stride[{','.join(str(s) for s in value.stride())}]"
        return spec
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, complex):  # Python's own spelling, as the language reads it: 1.5-2.0j
        sign = "-" if math.copysign(1.0, value.imag) < 0 else "+"
        return f"{value.real!r}{sign}{abs(value.imag)!r}j"
    if isinstance(value, torch.dtype):
        return dtype_code(value)
    if isinstance(value, (torch.device, torch.memory_format, torch.layout)):
        return str(value).removeprefix("torch.")
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(spec_of(v) for v in value) + "]"
    return str(value)


def input_signature(inputs: Sequence[Any]) -> str:
    return ",".join(spec_of(x) for x in inputs) or "()"
