"""python -m opcost: the package's command line, for models in an installed package or a file.

    python -m opcost inventory torchvision.models:resnet50 --input f32[8,3,224,224]
    python -m opcost validate my_model.py:build --input i64[1,128]:range[0,50257] --dtype bf16
    python -m opcost sweep models.yaml             # a model list with Python models (docs/sweeps.md)
    python -m opcost trace torchvision.models:resnet50 --input f32[32,3,224,224] -o r50.json.gz --table
    python -m opcost corpus --only 'timm/' --json corpus.json   # the model corpus's coverage (docs/corpus.md)

MODEL is ``package.module:callable`` or ``path/to/file.py:callable``; the callable, called with
no arguments, returns the model (an nn.Module) with random weights.

Errors are one line on standard error (``--traceback`` shows Python's traceback); Ctrl-C stops at
once, keeps what was stored, and exits 130, as the command line does.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from pathlib import Path

import opcost
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
    return prepare_model(args.model, args.input, args.dtype, args.device, args.train)


def sweep(args) -> int:
    # The item key's settings, the same for a run and its --status (docs/sweeps.md)
    loops = dict(db=args.db, device=args.device, cache=args.cache, seed=args.seed, max_time=args.max_time,
                 target_ci=args.target_ci, energy=not args.no_energy, energy_max_time=args.energy_max_time)
    if args.status:
        s = opcost.sweep_status(args.file, **loops)
        left = f", about {s.seconds_left:.0f} s left" if s.seconds_left else ""
        print(f"sweep {s.name}: {s.items} items: {s.done} done, {s.failed} failed, {s.pending} pending, "
              f"{s.running} running{left}")
        if s.elsewhere:
            print(f"{s.elsewhere} items of this sweep at other settings or on another device are not counted: "
                  "pass the options the sweep ran with")
        for call, why in s.failures:
            print(f"failed: {call}\n  {why}")
        return EXIT_OK
    r = opcost.sweep(args.file, workers=args.workers, max_attempts=args.max_attempts, force=args.force,
                     retry_failed=args.retry_failed, progress_every=args.progress_every, **loops)
    print(f"opcost: {r!r}", file=sys.stderr)
    if r.stopped:
        print(f"opcost: error: stopped: {r.stopped}", file=sys.stderr)
    return EXIT_FAILED if r.stopped or r.failed or r.rejected else EXIT_OK


def trace(args) -> int:
    model, inputs = prepare(args)
    sched = opcost.schedule(wait=args.wait, warmup=args.warmup, active=args.steps, repeat=args.repeat)
    t = opcost.trace_model(model, *inputs, schedule=sched, energy=args.energy, db=args.db, cache=args.cache,
                           train=args.train, autocast=args.autocast, shapes=args.group_by == "shape",
                           flops=args.flops, nvtx=args.nvtx)
    if args.only_steps:
        t = t.only_steps(args.only_steps)
    if args.output:
        t.export(args.output, args.min_duration)
        r = t.run
        print(f"opcost: trace of {args.model} written to {args.output} ({r.steps} steps, {r.layers} layer "
              f"ranges, {r.calls} operator calls, {r.device_activities} device activities); open it in "
              "https://ui.perfetto.dev", file=sys.stderr)
    if args.table or not args.output:
        if args.json:  # the document `opcost trace --json` writes: rows, total, measured step, energy
            print(json.dumps(json.loads(t.run.table_json(args.group_by)), indent=1))
        else:
            sys.stdout.write(t.table(args.group_by, args.sort_by, args.limit))
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


def model_command(args) -> int:
    """inventory, predict, validate."""
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
    if args.command == "inventory":
        return EXIT_OK
    if result.failures:  # as the command line: some measurements failed, the rest were stored
        return EXIT_FAILED
    return EXIT_OK if result.complete else EXIT_INCOMPLETE


def _model_arguments(p: argparse.ArgumentParser) -> None:
    """The model and how to run it: what inventory, predict, validate and trace share."""
    p.add_argument("model", help="package.module:callable or file.py:callable")
    p.add_argument("--input", action="append", default=[], help="one tensor spec per forward argument")
    p.add_argument("--dtype", default="fp32", help="model dtype: fp32, bf16 or fp16")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda, cuda:N")
    p.add_argument("--train", action="store_true", help="forward, loss (the output's sum) and backward")
    p.add_argument("--autocast", help="run the model under autocast to bf16 or fp16")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m opcost", description=__doc__.split("\n\n")[0])
    # Before or after the command; SUPPRESS: a command's default never overrides one given before it.
    traceback_help = "on an error or Ctrl-C, Python's traceback instead of one line"
    parser.add_argument("--traceback", action="store_true", help=traceback_help)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS, help=traceback_help)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in [("inventory", "every ATen call of one step, by layer"),
                            ("predict", "the step's time and energy from the database"),
                            ("validate", "measure what the database lacks and the step; compare")]:
        p = sub.add_parser(name, help=help_text, parents=[common])
        _model_arguments(p)
        p.add_argument("--json", action="store_true", help="print JSON")
        p.add_argument("-o", "--output", help="write to this file (default: standard output)")
        if name != "inventory":
            p.add_argument("--db", help="the database (default: $OPCOST_DB or ~/.local/share/opcost/opcost.db)")
            p.add_argument("--cache", default="auto", choices=["auto", "warm", "cold"],
                           help="operator inputs as the model reads them (auto), or all warm or all cold")
        if name == "validate":
            p.add_argument("--max-time", type=float, help="timing budget per operator, seconds")
            p.add_argument("--no-energy", action="store_true", help="skip the energy loops")
    p = sub.add_parser("sweep", help="measure a grid or a model list (Python models too), resumably",
                       parents=[common])
    p.add_argument("file", help="the sweep file (docs/sweeps.md)")
    p.add_argument("--status", action="store_true", help="done / pending / failed items, with reasons")
    p.add_argument("--db", help="the database (default: $OPCOST_DB or ~/.local/share/opcost/opcost.db)")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu, cuda")
    p.add_argument("--workers", type=int, default=1, help="worker processes at once, one per GPU")
    p.add_argument("--max-attempts", type=int, default=2, help="an item whose worker dies this often is failed")
    p.add_argument("--progress-every", type=float, default=10.0, metavar="S",
                   help="a progress line every S seconds when standard error is not a terminal")
    p.add_argument("--cache", default="warm", choices=["warm", "cold"])
    p.add_argument("--seed", type=int, default=0, help="the inputs' random seed")
    p.add_argument("--max-time", type=float, default=1.0, help="timing budget per item, seconds")
    p.add_argument("--target-ci", type=float, default=0.01, help="stop timing at this relative 95%% CI half-width")
    p.add_argument("--no-energy", action="store_true", help="skip the energy loops")
    p.add_argument("--energy-max-time", type=float, default=2.0, help="energy budget per item, seconds")
    again = p.add_mutually_exclusive_group()
    again.add_argument("--force", action="store_true", help="measure every item again")
    again.add_argument("--retry-failed", action="store_true", help="measure the failed items again")
    p = sub.add_parser("trace", help="every kernel tied to its operator and layer: a Chrome trace and tables",
                       parents=[common])
    _model_arguments(p)
    p.add_argument("--energy", action="store_true",
                   help="energy per operator and layer: first measure, as validate does, what the database lacks and "
                        "the untraced step (on a GPU)")
    p.add_argument("--db", help="the database for --energy (default: $OPCOST_DB or ~/.local/share/opcost/opcost.db)")
    p.add_argument("--cache", default="auto", choices=["auto", "warm", "cold"],
                   help="--energy: operator inputs as the model reads them (auto), or all warm or all cold")
    p.add_argument("-o", "--output", help="trace file to write: Chrome JSON (.json) or Perfetto's protobuf "
                                          "(.pftrace), gzip-compressed when it ends in .gz")
    p.add_argument("--table", action="store_true", help="print the table too (the default without --output)")
    p.add_argument("--group-by", default="op", choices=["op", "shape", "layer"], help="table rows")
    p.add_argument("--sort-by", default="gpu",
                   choices=["gpu", "gpu_total", "gpu_self", "cpu", "cpu_total", "cpu_self", "energy", "energy_total",
                            "energy_self", "calls", "name"])
    p.add_argument("--limit", type=int, default=30, help="table rows to show (0: all)")
    p.add_argument("--json", action="store_true", help="the table's rows as JSON")
    p.add_argument("--wait", type=int, default=0, help="steps run untraced first, in each cycle")
    p.add_argument("--warmup", type=int, default=1, help="steps traced and dropped, in each cycle")
    p.add_argument("--steps", type=int, default=1, help="steps kept, in each cycle")
    p.add_argument("--repeat", type=int, default=1, help="cycles")
    p.add_argument("--flops", action="store_true", help="the profiler's FLOP estimates")
    p.add_argument("--nvtx", action="store_true",
                   help="NVTX ranges for every step and layer, so that an nsys capture of the same run lines up")
    p.add_argument("--only-steps", metavar="A[-B]",
                   help="only these kept steps (counted from 1) in the trace file and the table")
    p.add_argument("--min-duration", type=float, default=0.0, metavar="US",
                   help="leave calls and kernels shorter than this many microseconds out of the trace file")
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
    args = parser.parse_args(argv)
    logging.basicConfig(format="opcost: %(message)s", level=logging.INFO, stream=sys.stderr)
    run = {"sweep": sweep, "trace": trace, "corpus": corpus}.get(args.command, model_command)
    try:
        return run(args)
    except KeyboardInterrupt:
        if args.traceback:
            raise
        print("opcost: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001  (every error is one line, as the command line's)
        if args.traceback:
            raise
        return _failure(e)


if __name__ == "__main__":
    sys.exit(main())
