"""python -m opcost: the package's command line, for models in an installed package or a file.

    python -m opcost inventory torchvision.models:resnet50 --input f32[8,3,224,224]
    python -m opcost validate my_model.py:build --input i64[1,128]:range[0,50257] --dtype bf16
    python -m opcost sweep models.yaml             # a model list with Python models (docs/sweeps.md)
    python -m opcost trace torchvision.models:resnet50 --input f32[32,3,224,224] -o r50.json.gz --table
    python -m opcost compare torchvision.models:resnet50 --input f32[8,3,224,224] --variants fp32,bf16,compile
    python -m opcost corpus --only 'timm/' --json corpus.json   # the model corpus's coverage (docs/corpus.md)

MODEL is ``package.module:callable`` or ``path/to/file.py:callable``; the callable, called with
no arguments, returns the model (an nn.Module) with random weights.

The commands and options are the command line's (``opcost``), read from its command table
(``_core.command_table``): a built-in or TorchScript model, ``measure``, ``db``, ``models`` and
``sweep status FILE`` run the command line's own code in this process, with its output; a
Python model runs here. ``corpus`` and ``-o`` of predict/validate are this package's own.

Errors are one line on standard error (``--traceback`` shows Python's traceback); Ctrl-C stops at
once, keeps what was stored, and exits 130, as the command line does.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from pathlib import Path

import opcost
from . import _core
from ._loading import UsageError, prepare_model

# The command line's exit status (README, "Exit status"); 130 (128 + SIGINT) is what a shell
# reports for the command line ended by Ctrl-C.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
MESSAGE_MAX_CHARS = 2000  # an error may quote its input: a huge one never floods standard error


def _one_line(e: BaseException) -> str:
    """The error as one line: without a traceback pybind11 or LibTorch appended to the message, its
    lines joined, cut in the middle past MESSAGE_MAX_CHARS. An error opcost did not raise itself
    (the model's own, past its first step) is named by its type."""
    text = str(e)
    for tail in ("\n\nAt:\n", "\nException raised from "):
        text = text.split(tail, 1)[0]
    text = re.sub(r"\s*\n\s*", " ", text).strip()
    if len(text) > MESSAGE_MAX_CHARS:
        half = MESSAGE_MAX_CHARS // 2
        text = f"{text[:half]}…({len(text)} characters)…{text[-half:]}"
    ours = (UsageError, ValueError, TypeError, OSError, RuntimeError)
    return text if isinstance(e, ours) and text else f"{type(e).__name__}: {text}"


def _exit_code(e: BaseException) -> int:
    """As the command line: bad input (the model, its inputs, an option, a database that cannot be
    written) 2, the rest 1."""
    if isinstance(e, opcost.DatabaseError):
        return EXIT_BAD_INPUT if getattr(e, "kind", "") == "read_only" else EXIT_FAILED
    return EXIT_BAD_INPUT if isinstance(e, (UsageError, ValueError, opcost.ModelError, TypeError)) else EXIT_FAILED


def _failure(e: BaseException) -> int:
    print(f"opcost: error: {_one_line(e)}", file=sys.stderr)
    return _exit_code(e)


def prepare(args):
    if not args.input:
        raise UsageError("give the model's inputs with --input, e.g. --input f32[8,3,224,224]")
    return prepare_model(args.model, args.input, args.dtype or "fp32", args.device or "auto", bool(args.train))


def _is_python_model(spec) -> bool:
    """``package.module:callable`` or ``file.py:callable``: a model this package builds; a built-in
    model's name or a TorchScript file is the command line's."""
    return bool(spec) and ":" in spec


def _refuse_unhandled(args, command: str, handled: set) -> None:
    """Every option given must take effect: one this path does not pass on is refused, by name."""
    for o in _COMMANDS[command]["options"]:
        if o["positional"] or not o["flags"]:
            continue
        dest = _dest(o)
        if getattr(args, dest, None) not in (None, False, []) and dest not in handled:
            raise UsageError(f"{o['flags'][-1]}: python -m opcost {command} does not take it for a Python model; "
                             f"the command line (opcost {command}) takes it for built-in and TorchScript models")


def sweep(args) -> int:
    handled = {"file", "db", "device", "cache", "seed", "max_time", "target_ci", "no_energy", "energy_max_time",
               "workers", "max_attempts", "progress_every", "force", "retry_failed", "max_items"}
    _refuse_unhandled(args, "sweep", handled)
    if not args.file:
        raise UsageError("sweep: name a grid file (opcost sweep grid.yaml), or `opcost sweep status FILE`")
    given = {k: v for k, v in dict(device=args.device, cache=args.cache, seed=_whole(args.seed),
                                   max_time=_number(args.max_time), target_ci=_number(args.target_ci),
                                   energy_max_time=_number(args.energy_max_time), workers=_whole(args.workers),
                                   max_attempts=_whole(args.max_attempts), progress_every=_number(args.progress_every),
                                   max_items=_whole(args.max_items)).items() if v is not None}
    r = opcost.sweep(args.file, db=args.db, energy=not args.no_energy, force=bool(args.force),
                     retry_failed=bool(args.retry_failed), **given)
    print(f"opcost: {r!r}", file=sys.stderr)
    if r.stopped:
        print(f"opcost: error: stopped: {r.stopped}", file=sys.stderr)
    return EXIT_FAILED if r.stopped or r.failed or r.rejected else EXIT_OK


def trace(args) -> int:
    handled = {"model", "input", "dtype", "device", "train", "autocast", "energy", "output", "table", "group_by",
               "sort_by", "limit", "json", "wait", "warmup", "steps", "repeat", "flops", "nvtx", "only_steps",
               "min_duration", "db", "html"}
    _refuse_unhandled(args, "trace", handled)
    model, inputs = prepare(args)
    sched = opcost.schedule(wait=_whole(args.wait, 0), warmup=_whole(args.warmup, 1), active=_whole(args.steps, 1),
                            repeat=_whole(args.repeat, 1))
    group_by = args.group_by or "op"
    t = opcost.trace_model(model, *inputs, schedule=sched, energy=bool(args.energy), db=args.db,
                           train=bool(args.train), autocast=args.autocast,
                           shapes=group_by == "shape", flops=bool(args.flops), nvtx=bool(args.nvtx))
    if args.only_steps:
        t = t.only_steps(args.only_steps)
    if args.output:
        t.export(args.output, _number(args.min_duration) or 0.0)
        r = t.run
        print(f"opcost: trace of {args.model} written to {args.output} ({r.steps} steps, {r.layers} layer "
              f"ranges, {r.calls} operator calls, {r.device_activities} device activities); open it in "
              "https://ui.perfetto.dev", file=sys.stderr)
    if args.html:  # the page of the table, as `opcost trace --html` writes it
        _core.write_report(t.run.table_json(group_by), args.model, args.html)
        print(f"opcost: report of {args.model} written to {args.html}", file=sys.stderr)
    if args.table or not (args.output or args.html):
        if args.json:  # the document `opcost trace --json` writes: rows, total, measured step, energy
            print(json.dumps(json.loads(t.run.table_json(group_by)), indent=1))
        else:
            sys.stdout.write(t.table(group_by, args.sort_by or "gpu", _whole(args.limit, 30)))
    return EXIT_OK


def corpus(args) -> int:
    """The model corpus through inventory, round trip and validate: the coverage table (docs/corpus.md)."""
    from . import _corpus, _corpus_table
    if args.timeout_per_model <= 0:
        raise UsageError(f"--timeout-per-model {args.timeout_per_model:g}: use a number of seconds above 0")
    floor = _corpus_table.load_floor(args.floor) if args.floor else None
    for key in ("size", "subset"):
        if floor and floor.get(key, getattr(args, key)) != getattr(args, key):
            raise UsageError(f"--floor {args.floor} is for --{key} {floor[key]}, not {getattr(args, key)}")
    runs = _corpus.select_runs(args.only, args.mode, args.size, args.subset)
    if not runs:
        raise UsageError(f"--only {args.only!r} --mode {args.mode} --subset {args.subset}: no run of the corpus matches")
    device = args.device if args.device != "auto" else ("cuda" if args.size == "gpu" else "cpu")
    settings = _corpus.Settings(args.size, device, args.timeout_per_model, 1 if device == "cpu" else 0)
    progress = (lambda text: print(f"opcost: corpus {text}", file=sys.stderr, flush=True))
    progress(f"{len(runs)} runs ({args.size}, {device}), at most {args.timeout_per_model:g} s each")
    results = _corpus.run_corpus(runs, settings, progress)
    covered = _corpus.covered_by_family([name for name, _ in runs])
    cov = _corpus_table.coverage(results)
    sys.stdout.write(_corpus_table.format_table(results, covered))
    sys.stdout.flush()
    if args.json:
        doc = {"environment": _corpus.environment(settings), "command": sys.argv, "coverage": cov,
               "covered_by_family": covered, "failures_by_cause": _corpus_table.failures_by_cause(results),
               "runs": results}
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
        print(f"opcost: corpus results written to {args.json}", file=sys.stderr)
    if floor is None:
        return EXIT_OK if cov["runs_passed"] == cov["runs"] else EXIT_FAILED
    whole = args.only is None and args.mode == "both"
    short = _corpus_table.below_floor(cov, floor, [f"{n}:{m}" for n, m in runs], whole)
    for line in short:
        print(f"opcost: error: coverage below the floor {args.floor}: {line}", file=sys.stderr)
    return EXIT_INCOMPLETE if short else EXIT_OK


def _registry_given(args, command: str) -> dict:
    """The options registry's options given on the command line for `command`, typed, by their
    Python names: what a Python model's predict or validate passes on, every one of them."""
    given = {}
    for spec in _core.option_specs(command):
        value = getattr(args, spec["flag"].lstrip("-").replace("-", "_"), None)
        if value in (None, False, []):
            continue
        if spec["type"] == "flag":
            given[spec["name"]] = spec["flag_sets"]
        elif spec["type"] == "number":
            given[spec["name"]] = _number(value)
        elif spec["type"] in ("whole", "bytes"):
            given[spec["name"]] = _whole(value)
        else:
            given[spec["name"]] = value
    return given


def model_command(args) -> int:
    """inventory, predict, validate of a Python model."""
    handled = {"model", "input", "dtype", "device", "train", "autocast", "json", "output", "db", "cache_bytes",
               "html"}
    if args.command != "inventory":
        handled |= {spec["flag"].lstrip("-").replace("-", "_") for spec in _core.option_specs(args.command)}
    _refuse_unhandled(args, args.command, handled)
    model, inputs = prepare(args)
    common = dict(train=bool(args.train), autocast=args.autocast, name=args.model)
    if args.command == "inventory":
        cache_bytes = _whole(args.cache_bytes)
        if cache_bytes is not None:
            common["cache_bytes"] = cache_bytes
        result = opcost.inventory(model, *inputs, **common)
    elif args.command == "predict":
        result = opcost.predict(model, *inputs, db=args.db, **_registry_given(args, "predict"), **common)
    else:
        result = opcost.validate(model, *inputs, db=args.db, **_registry_given(args, "validate"), **common)
    text = result.to_json() + "\n" if args.json else result.table()
    if args.output:
        Path(args.output).write_text(text)
        print(f"opcost: written to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if getattr(args, "html", None):  # the page, as the command line's --html writes it (not inventory's)
        _core.write_report(result.to_json(), args.model, args.html)
        print(f"opcost: report written to {args.html}", file=sys.stderr)
    if args.command == "inventory":
        return EXIT_OK
    if result.failures:  # as the command line: some measurements failed, the rest were stored
        return EXIT_FAILED
    return EXIT_OK if result.complete else EXIT_INCOMPLETE


def compare_command(args) -> int:
    """compare of a Python model: opcost.compare with the command line's options; torch.compile
    and int8 variants are this path's own (the command line's built-in models take the rest)."""
    handled = {"model", "input", "dtype", "device", "train", "variants", "json", "output"}
    handled |= {spec["flag"].lstrip("-").replace("-", "_") for spec in _core.option_specs("compare")}
    if (args.dtype and args.dtype != "fp32") or args.autocast:  # the command line's words for it
        raise UsageError("--dtype and --autocast: compare sets each variant's own; name them in --variants "
                         "(fp32,bf16,autocast-bf16)")
    _refuse_unhandled(args, "compare", handled)
    if not args.variants:
        raise UsageError("--variants: give the variants, comma-separated, the first the baseline "
                         "(--variants fp32,bf16,compile)")
    if args.output and Path(args.model.rpartition(":")[0]).resolve() == Path(args.output).resolve():
        raise UsageError(f"--output {args.output}: that is the model's file; write the report elsewhere")
    model, inputs = prepare(args)
    result = opcost.compare(model, *inputs, variants=args.variants, train=bool(args.train), name=args.model,
                            **_registry_given(args, "compare"))
    document = json.dumps(result.json, indent=2) + "\n"
    sys.stdout.write(document if args.json else result.text)
    sys.stdout.flush()
    if args.output:  # as the command line: the JSON report, beside what it prints
        Path(args.output).write_text(document)
        print(f"opcost: comparison written to {args.output}", file=sys.stderr)
    return EXIT_OK


def _number(text, default=None):
    """An option's text as a number; the workflow checks its range (one message for both faces)."""
    if text is None:
        return default
    try:
        return float(text)
    except ValueError:
        raise UsageError(f"{text!r}: use a number") from None


def _whole(text, default=None):
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{text!r}: use a whole number") from None


# The command line's command table (src/cli/command_table.cpp): every command and option of
# `opcost`, which this command line offers too, with the same spellings.
_TABLE = json.loads(_core.command_table())
_COMMANDS = {c["name"]: c for c in _TABLE["commands"]}
# What this command line adds to the table: the corpus (Python's model zoos), -o for predict and
# validate, --traceback everywhere, and `sweep --status FILE`, the package's spelling before it
# took the command line's `sweep status FILE` (kept as an alias).
PYTHON_ONLY_COMMANDS = ("corpus",)
PYTHON_ONLY_OPTIONS = {"predict": ["-o", "--output"], "validate": ["-o", "--output"], "sweep": ["--status"]}
# The commands run here, on a Python model; the rest (and built-in or TorchScript models) are the
# command line's own code, run in this process.
_PYTHON_PATHS = {"inventory": model_command, "predict": model_command, "validate": model_command, "trace": trace,
                 "compare": compare_command}


def _dest(option) -> str:
    if option["positional"]:
        return option["name"]
    long = [f for f in option["flags"] if f.startswith("--")]
    return (long or option["flags"])[0].lstrip("-").replace("-", "_")


def _add_table_options(p: argparse.ArgumentParser, command) -> None:
    """One argparse argument per option of the command line's command: its flags, its help and
    default as `opcost COMMAND --help` shows them. Values stay text: the workflows check them."""
    for o in command["options"]:
        help_text = argparse.SUPPRESS if o["hidden"] else (o["help"] or None)
        if help_text not in (None, argparse.SUPPRESS) and o["default"]:
            help_text += f" (default: {o['default']})"
        if o["positional"]:
            nargs = "*" if o["repeatable"] else (None if o["required"] else "?")
            p.add_argument(o["name"], nargs=nargs, help=help_text)
        elif not o["takes_value"]:
            p.add_argument(*o["flags"], dest=_dest(o), action="store_true", default=None, help=help_text)
        else:
            p.add_argument(*o["flags"], dest=_dest(o), action="append" if o["repeatable"] else "store",
                           default=None, help=help_text)


def _corpus_parser(sub, common) -> None:
    p = sub.add_parser("corpus", help="a corpus of models through inventory, round trip and validate: coverage",
                       parents=[common])
    p.add_argument("--size", default="tiny", choices=["tiny", "gpu"],
                   help="tiny configurations (CI, a CPU) or realistic ones (a GPU)")
    p.add_argument("--only", metavar="REGEX", help="only the runs whose model:mode matches (re.search)")
    p.add_argument("--mode", default="both", choices=["inference", "training", "both"])
    p.add_argument("--subset", default="all", choices=["all", "ci"],
                   help="the whole corpus, or the runs CI takes (a third of its time)")
    p.add_argument("--json", metavar="OUT", help="write every run's result and the coverage as JSON")
    p.add_argument("--floor", metavar="FILE",
                   help="exit 3 when coverage falls below this committed floor (tests/corpus/coverage_floor.json)")
    p.add_argument("--device", default="auto", help="auto (cpu for --size tiny, cuda for gpu), cpu, cuda, cuda:N")
    p.add_argument("--timeout-per-model", type=float, default=300.0, metavar="S",
                   help="a run not answered in S seconds has its worker killed and counts as failed")


def build_parser() -> argparse.ArgumentParser:
    """The command line: the command table's commands and options, and this package's own."""
    parser = argparse.ArgumentParser(prog="python -m opcost", description=__doc__.split("\n\n")[0])
    # Before or after the command; SUPPRESS: a command's default never overrides one given before it.
    traceback_help = "on an error or Ctrl-C, Python's traceback instead of one line"
    parser.add_argument("--traceback", action="store_true", help=traceback_help)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=traceback_help)
    _add_table_options(parser, _TABLE)  # --db, before the command
    # ... or after it, as the command line takes it.
    for o in _TABLE["options"]:
        common.add_argument(*o["flags"], dest=_dest(o), default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in _TABLE["commands"]:
        p = sub.add_parser(command["name"], help=command["help"], parents=[common])
        _add_table_options(p, command)
        subcommands = command["commands"]
        if subcommands and not any(o["positional"] for o in command["options"]):
            inner = p.add_subparsers(dest="subcommand", required=True)
            for s in subcommands:
                _add_table_options(inner.add_parser(s["name"], help=s["help"], parents=[common]), s)
        elif subcommands:  # `sweep status FILE` beside `sweep FILE`: main() picks the parser
            p.add_argument("--status", action="store_true",
                           help="alias of `sweep status FILE`: done / pending / failed items, with reasons")
        if command["name"] in ("predict", "validate"):
            p.add_argument("-o", "--output", help="write to this file (default: standard output)")
    _corpus_parser(sub, common)
    return parser


def fit_command(args) -> int:
    """`fit`: the cost model from the database's rows (and --csv files), stored there; the
    held-out errors as a table (docs/estimate.md)."""
    from . import _fit

    db = getattr(args, "db", None) or os.environ.get("OPCOST_DB") or _core.default_db_path()
    coverage = _number(args.coverage, _fit.COVERAGE)
    result = _fit.fit(db, csv_files=args.csv or [], train_gpus=args.train_gpu, store=not args.no_store,
                      output=args.output, coverage=coverage,
                      progress=lambda text: print(f"opcost: fit: {text}", file=sys.stderr, flush=True))
    print(result.table())
    if result.stored_id is not None:
        print(f"opcost: cost model {result.stored_id} stored in {_fit.display_location(db)}", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result.summary(), f, indent=1)
    return EXIT_OK


def _sweep_status_argv(argv):
    """`sweep status FILE ...` or its alias `sweep --status FILE ...`, as the command line's words;
    None for any other command line."""
    words = list(argv)
    at = next((i for i, w in enumerate(words) if not w.startswith("-") and w in _COMMANDS), None)
    if at is None or words[at] != "sweep":
        return None
    rest = [w for w in words[at + 1:] if w != "--traceback"]
    if "--status" in rest:
        rest.remove("--status")
        return words[:at] + ["sweep", "status"] + rest
    first = next((w for w in rest if not w.startswith("-")), None)
    return words[:at] + ["sweep"] + rest if first == "status" else None


def _command_line(argv) -> int:
    """The command line's own code, in this process, on the same words (without --traceback and -o)."""
    sys.stdout.flush()
    sys.stderr.flush()
    return _core.run_command_line([w for w in argv if w != "--traceback"])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    status_argv = _sweep_status_argv(argv)
    if status_argv is not None:  # runs no model: the command line's status, its text
        return _run(lambda: _command_line(status_argv), "--traceback" in argv)
    args = parser.parse_args(argv)
    logging.basicConfig(format="opcost: %(message)s", level=logging.INFO, stream=sys.stderr)
    if args.command == "corpus":
        run = lambda: corpus(args)  # noqa: E731
    elif args.command == "fit":  # the learning is scikit-learn's: here, not in the command line
        run = lambda: fit_command(args)  # noqa: E731
    elif args.command == "sweep":
        run = lambda: sweep(args)  # noqa: E731
    elif args.command in _PYTHON_PATHS and _is_python_model(getattr(args, "model", None)):
        run = lambda: _PYTHON_PATHS[args.command](args)  # noqa: E731
    elif getattr(args, "output", None) and args.command in PYTHON_ONLY_OPTIONS:
        raise SystemExit(_failure(UsageError(f"-o: for a Python model; `opcost {args.command}` prints to "
                                             "standard output")))
    else:
        run = lambda: _command_line(argv)  # noqa: E731
    return _run(run, args.traceback)


def _run(run, traceback: bool) -> int:
    try:
        return run()
    except KeyboardInterrupt:
        if traceback:
            raise
        print("opcost: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001  (every error is one line, as the command line's)
        if traceback:
            raise
        return _failure(e)


if __name__ == "__main__":
    sys.exit(main())
