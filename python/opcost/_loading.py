"""Models named as ``package.module:callable`` or ``path/to/file.py:callable``, built with
random weights and moved to a device and dtype, with inputs from tensor specs: what
``python -m opcost`` and a sweep's model list take."""

from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
from pathlib import Path
from typing import Any, List, Sequence, Tuple

import torch

from ._specs import tensor_from_spec, torch_dtype


class UsageError(ValueError):
    """A model reference, input or option that cannot be used as given."""


def load_model(ref: str):
    module_name, sep, attr = ref.rpartition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"model {ref!r}: write package.module:callable or file.py:callable")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name)
            if not path.is_file():
                raise UsageError(f"model {ref!r}: no file {path}")
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except UsageError:
        raise
    except Exception as e:
        raise UsageError(f"model {ref!r}: cannot import {module_name}: {type(e).__name__}: {e}") from e
    factory = getattr(module, attr, None)
    if factory is None:
        near = [n for n in dir(module) if n.lower() == attr.lower() or n.lower().startswith(attr.lower()[:4])][:5]
        raise UsageError(f"model {ref!r}: {module_name} has no {attr!r}" + (f" (did you mean {', '.join(near)}?)"
                                                                            if near else ""))
    if not callable(factory):
        raise UsageError(f"model {ref!r}: {attr} is not callable")
    try:
        model = factory()
    except Exception as e:
        raise UsageError(f"model {ref!r}: {attr}() raised {type(e).__name__}: {e}") from e
    if not callable(model):
        raise UsageError(f"model {ref!r}: {attr}() returned {type(model).__name__}, not a model")
    return model


def prepare_model(ref: str, input_specs: Sequence[str], dtype_name: str = "fp32", device_name: str = "auto",
                  train: bool = False) -> Tuple[Any, List[torch.Tensor]]:
    """The model ``ref`` on the device, in the dtype, with inputs made from ``input_specs``."""
    model = load_model(ref)
    if not input_specs:
        raise UsageError(f"model {ref!r}: give its inputs, e.g. f32[8,3,224,224]")
    if device_name == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device.type == "cpu":
            logging.getLogger("opcost").warning("no CUDA GPU found; running on the CPU")
    else:
        device = torch.device(device_name)
    try:
        inputs = [tensor_from_spec(spec, device) for spec in input_specs]
    except ValueError as e:
        raise UsageError(str(e)) from e
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        try:
            dtype = torch_dtype(dtype_name)
        except ValueError:
            dtype = None
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise UsageError(f"dtype {dtype_name}: use fp32, bf16 or fp16")
        model = model.to(dtype)
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
        model.train(train)
    return model, inputs
