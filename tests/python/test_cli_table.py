"""The two command lines are one table: `python -m opcost` offers every command and option of
`opcost` (src/cli/command_table.cpp), read from the same table, with the same spellings, and runs
the command line's own code where it has no Python path (the same output, byte for byte)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from opcost import _core
from opcost import __main__ as cli

OPCOST_BIN = os.environ.get("OPCOST_BIN", "build/opcost")
# What every parser of `python -m opcost` has beside the table's options: help, --traceback, and
# the global --db also after the command (as `opcost` takes it).
EVERY_PARSER = {"-h", "--help", "--traceback", "--db"}


def _subparsers(parser: argparse.ArgumentParser) -> dict:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> set:
    return {f for a in parser._actions for f in a.option_strings}


def _positionals(parser: argparse.ArgumentParser) -> list:
    return [a.dest for a in parser._actions
            if not a.option_strings and not isinstance(a, argparse._SubParsersAction)]


def _table_flags(command) -> set:
    return {f for o in command["options"] if not o["positional"] for f in o["flags"]}


def test_the_table_is_the_command_lines():
    table = json.loads(_core.command_table())
    names = [c["name"] for c in table["commands"]]
    assert names == ["measure", "sweep", "db", "trace", "inventory", "predict", "validate", "model", "compare", "fit",
                     "estimate", "models", "report"]
    help_text = subprocess.run([OPCOST_BIN, "--help"], capture_output=True, text=True).stdout
    for c in table["commands"]:  # as `opcost --help` lists them
        assert f"  {c['name']}" in help_text and c["help"] in help_text
    measure = next(c for c in table["commands"] if c["name"] == "measure")
    max_time = next(o for o in measure["options"] if "--max-time" in o["flags"])
    assert max_time["takes_value"] and max_time["default"] and not max_time["positional"]
    no_energy = next(o for o in measure["options"] if "--no-energy" in o["flags"])
    assert not no_energy["takes_value"] and not no_energy["repeatable"]


def test_python_offers_every_command_and_option_of_the_command_line():
    table = json.loads(_core.command_table())
    parser = cli.build_parser()
    commands = _subparsers(parser)
    assert set(commands) == {c["name"] for c in table["commands"]} | set(cli.PYTHON_ONLY_COMMANDS)
    assert _table_flags(table) <= _flags(parser)
    for c in table["commands"]:
        p = commands[c["name"]]
        extra = set(cli.PYTHON_ONLY_OPTIONS.get(c["name"], []))
        assert _table_flags(c) <= _flags(p), c["name"]
        assert _flags(p) - _table_flags(c) <= EVERY_PARSER | extra, c["name"]
        assert _positionals(p) == [o["name"] for o in c["options"] if o["positional"]], c["name"]
        inner = _subparsers(p)
        for s in c["commands"]:
            if inner:  # db list|show|export|copy
                assert _table_flags(s) <= _flags(inner[s["name"]]), (c["name"], s["name"])
        if c["commands"] and not inner:  # sweep: `sweep status FILE`, chosen before parsing
            assert [s["name"] for s in c["commands"]] == ["status"]


def _run(*args, **kwargs):
    return subprocess.run(list(args), capture_output=True, text=True, timeout=600, **kwargs)


def test_a_command_without_a_python_path_is_the_command_lines_own(tmp_path):
    py = _run(sys.executable, "-m", "opcost", "models")
    native = _run(OPCOST_BIN, "models")
    assert py.returncode == native.returncode == 0, py.stderr
    assert py.stdout == native.stdout and "resnet50" in py.stdout
    # Its errors and exit status too: a mistyped option is the command line's one line.
    bad = _run(sys.executable, "-m", "opcost", "db", "list", "--db", str(tmp_path / "none" / "x.db"))
    native_bad = _run(OPCOST_BIN, "db", "list", "--db", str(tmp_path / "none" / "x.db"))
    assert bad.returncode == native_bad.returncode != 0
    assert bad.stderr == native_bad.stderr


@pytest.mark.parametrize("spelling", [["status", "GRID"], ["GRID", "--status"]])
def test_sweep_status_takes_the_command_lines_form_and_the_alias(tmp_path, spelling):
    grid = tmp_path / "grid.yaml"
    grid.write_text("name: tiny\nop: aten::relu\nargs: {self: 'f32[{n}]'}\naxes: {n: [4, 8]}\n")
    words = [str(grid) if w == "GRID" else w for w in spelling]
    db = str(tmp_path / "ops.db")
    py = _run(sys.executable, "-m", "opcost", "sweep", *words, "--db", db, "--device", "cpu")
    native = _run(OPCOST_BIN, "sweep", "status", str(grid), "--db", db, "--device", "cpu")
    assert py.returncode == native.returncode == 0, py.stderr
    assert py.stdout == native.stdout and "pending" in py.stdout


def test_an_option_a_python_model_cannot_take_is_refused_by_name(tmp_path):
    (tmp_path / "nets.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(8, 4)\n")
    run = _run(sys.executable, "-m", "opcost", "inventory", f"{tmp_path / 'nets.py'}:build", "--input", "f32[2,8]",
               "--batch", "4")
    assert run.returncode == 2
    assert run.stderr.startswith("opcost: error: --batch: python -m opcost inventory does not take it")


def test_every_registry_option_reaches_a_python_models_validate(tmp_path):
    # Options the Python path used to refuse (--energy-max-time, --step-max-time, --target-ci):
    # each is passed on by its registry name and shows in the result's settings.
    (tmp_path / "nets.py").write_text("import torch\ndef build():\n    return torch.nn.Linear(8, 4)\n")
    run = _run(sys.executable, "-m", "opcost", "validate", f"{tmp_path / 'nets.py'}:build", "--input", "f32[2,8]",
               "--db", str(tmp_path / "ops.db"), "--device", "cpu", "--max-time", "0.02", "--step-max-time", "0.2",
               "--target-ci", "0.03", "--energy-max-time", "0.7", "--no-energy", "--json")
    assert run.returncode in (0, 3), run.stderr
    settings = json.loads(run.stdout)["settings"]
    assert (settings["step_max_time"], settings["target_ci"], settings["energy_max_time"], settings["energy"]) == (
        "0.2", "0.03", "0.7", "false"), settings
