"""python -m opcost: the package's command line, for models in an installed package or a file.

    python -m opcost inventory torchvision.models:resnet50 --input f32[8,3,224,224]
    python -m opcost validate my_model.py:build --input i64[1,128]:range[0,50257] --dtype bf16

MODEL is ``package.module:callable`` or ``path/to/file.py:callable``; the callable, called with
no arguments, returns the model (an nn.Module) with random weights.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import logging
import sys
from pathlib import Path

import torch

import opcost
from ._specs import tensor_from_spec, torch_dtype

# The command line's exit status (README, "Exit status").
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INCOMPLETE = 0, 1, 2, 3


class UsageError(Exception):
    pass


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


def prepare(args):
    model = load_model(args.model)
    if not args.input:
        raise UsageError("give the model's inputs with --input, e.g. --input f32[8,3,224,224]")
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if device.type == "cpu":
            logging.getLogger("opcost").warning("no CUDA GPU found; running on the CPU")
    else:
        device = torch.device(args.device)
    try:
        inputs = [tensor_from_spec(spec, device) for spec in args.input]
    except ValueError as e:
        raise UsageError(str(e)) from e
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
        try:
            dtype = torch_dtype(args.dtype)
        except ValueError:
            dtype = None
        if dtype not in (torch.float32, torch.bfloat16, torch.float16):
            raise UsageError(f"--dtype {args.dtype}: use fp32, bf16 or fp16")
        model = model.to(dtype)
        inputs = [x.to(dtype) if x.is_floating_point() else x for x in inputs]
        model.train(args.train)
    return model, inputs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opcost", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in [("inventory", "every ATen call of one step, by layer"),
                            ("predict", "the step's time and energy from the database"),
                            ("validate", "measure what the database lacks and the step; compare")]:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("model", help="package.module:callable or file.py:callable")
        p.add_argument("--input", action="append", default=[], help="one tensor spec per forward argument")
        p.add_argument("--dtype", default="fp32", help="model dtype: fp32, bf16 or fp16")
        p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
        p.add_argument("--train", action="store_true", help="forward, loss and backward")
        p.add_argument("--autocast", help="run the model under autocast to bf16 or fp16")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("-o", "--output", help="write to this file (default: standard output)")
        if name != "inventory":
            p.add_argument("--db", help="the database (default: $OPCOST_DB or ~/.local/share/opcost/opcost.db)")
            p.add_argument("--cache", default="warm", choices=["warm", "cold"])
        if name == "validate":
            p.add_argument("--max-time", type=float, help="timing budget per operator, seconds")
            p.add_argument("--no-energy", action="store_true", help="skip the energy loops")
    args = parser.parse_args(argv)
    logging.basicConfig(format="opcost: %(message)s", level=logging.INFO, stream=sys.stderr)
    try:
        model, inputs = prepare(args)
        common = dict(train=args.train, autocast=args.autocast, name=args.model)
        if args.command == "inventory":
            result = opcost.inventory(model, *inputs, **common)
        elif args.command == "predict":
            result = opcost.predict(model, *inputs, db=args.db, cache=args.cache, **common)
        else:
            result = opcost.validate(model, *inputs, db=args.db, cache=args.cache, energy=not args.no_energy,
                                     max_time=args.max_time, **common)
        text = result.to_json() + "\n" if args.json else result.table()
        if args.output:
            Path(args.output).write_text(text)
            print(f"opcost: written to {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
            sys.stdout.flush()
    except (UsageError, ValueError, opcost.ModelError, TypeError) as e:
        print(f"opcost: error: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (OSError, RuntimeError) as e:
        print(f"opcost: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    if args.command != "inventory" and not result.complete:
        return EXIT_INCOMPLETE
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
