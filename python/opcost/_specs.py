"""Tensors and values in opcost's argument language ("f32[8,3,224,224]", "i64[1,128]:range[0,50257]")."""

from __future__ import annotations

import re
from typing import Any, Sequence

import torch

_DTYPES = {
    "f64": torch.float64, "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
    "bool": torch.bool, "c64": torch.complex64, "c128": torch.complex128,
}
_ALIASES = {"fp32": "f32", "float32": "f32", "float": "f32", "fp16": "f16", "half": "f16", "float16": "f16",
            "bfloat16": "bf16", "fp64": "f64", "float64": "f64", "double": "f64", "int64": "i64", "long": "i64",
            "int32": "i32", "int": "i32", "uint8": "u8"}
_CODES = {v: k for k, v in _DTYPES.items()}
_SPEC = re.compile(r"^(?P<dtype>[a-z0-9]+)\[(?P<shape>[0-9, ]*)\](?::range\[(?P<lo>-?[0-9.e+-]+),(?P<hi>-?[0-9.e+-]+)\])?$")


def dtype_code(dtype: torch.dtype) -> str:
    return _CODES.get(dtype, str(dtype).replace("torch.", ""))


def model_dtype_name(dtype: torch.dtype) -> str:
    """The name the workflows use for a model's dtype: fp32, bf16, fp16."""
    return {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, dtype_code(dtype))


def canonical_dtype(name: str) -> str:
    name = name.lower()
    name = _ALIASES.get(name, name)
    if name not in _DTYPES:
        raise ValueError(f"unknown dtype {name!r} (known: {', '.join(_DTYPES)})")
    return name


def tensor_from_spec(spec: str, device: str | torch.device = "cpu", generator: torch.Generator | None = None):
    """A tensor of the spec's dtype and shape with seeded random data (integers in :range[lo,hi))."""
    m = _SPEC.match(spec.replace(" ", ""))
    if not m:
        raise ValueError(f"input {spec!r} is not a tensor spec like f32[8,3,224,224] or i64[1,128]:range[0,50257]")
    dtype = _DTYPES[canonical_dtype(m["dtype"])]
    shape = [int(d) for d in m["shape"].split(",") if d]
    g = generator or torch.Generator().manual_seed(0)
    if dtype.is_floating_point or dtype.is_complex:
        t = torch.randn(shape, generator=g, dtype=torch.float32)
        if m["lo"] is not None:
            lo, hi = float(m["lo"]), float(m["hi"])
            t = torch.rand(shape, generator=g) * (hi - lo) + lo
        t = t.to(dtype)
    else:
        lo, hi = (int(float(m["lo"])), int(float(m["hi"]))) if m["lo"] is not None else (0, 2 if dtype == torch.bool else 16)
        t = torch.randint(lo, hi, shape, generator=g).to(dtype)
    return t.to(device)


def spec_of(value: Any) -> str:
    """A value as opcost's argument language writes it."""
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
    if isinstance(value, torch.dtype):
        return dtype_code(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(spec_of(v) for v in value) + "]"
    return str(value)


def input_signature(inputs: Sequence[Any]) -> str:
    return ",".join(spec_of(x) for x in inputs) or "()"
