"""The options registry from Python: every option a function takes is the registry's (same name,
same default), each takes effect on its own (it shows in the settings the run records, and no
other setting moves), and a bad value is refused in one line naming the keyword and its flag.
Runs are tiny (a 4-element add on the CPU, loops of a few hundredths of a second)."""

from __future__ import annotations

import inspect
import math

import pytest
import torch

import opcost
from opcost import _core

# A fast run that differs from the defaults only where speed needs it: each test below then
# changes ONE option from this base and checks that option alone moved.
BASE = dict(device="cpu", max_time=0.01, energy=False, energy_max_time=0.05, energy_max_time_capped=0.05,
            energy_settle=0.0, cold_footprint=1 << 20)
ADD = dict(self="f32[4]", other="f32[4]")

# A valid value other than BASE's and the default, per option.
OTHER = {"device": "auto", "cache": "cold", "seed": 7, "autocast": "bf16", "cold_footprint": 2 << 20,
         "max_time": 0.02, "target_ci": 0.5, "energy": True, "energy_max_time": 0.07,
         "energy_max_time_capped": 0.06, "energy_settle": 0.01, "energy_target_ci": 0.5, "energy_min_windows": 3,
         "energy_graphs": "off", "energy_group": 4,
         "cache_bytes": 4096, "step_max_time": 0.3, "short_loops_after": 0.5, "ops_energy_ci": 0.1,
         "shared_windows": False, "own_loops": 4, "duty_cycle": False,
         "estimate": True, "cost_model": __file__}  # --cost-model: a file that is there (checked as a model later)
# What a value reads as in the settings (the registry's canonical text).
TEXT = {"autocast": "bf16", "energy": "true", "shared_windows": "false", "duty_cycle": "false", "estimate": "true",
        "cold_footprint": str(2 << 20), "cache_bytes": "4096"}

# A bad value per option type (and the kind of error it is).
BAD = {"number": (-1.0, ValueError), "whole": (-1, ValueError), "bytes": (-5, ValueError),
       "text": ("bogus", ValueError), "flag": ("yes", TypeError)}


def specs(command: str):
    return _core.option_specs(command)


def names(command: str):
    return [s["name"] for s in specs(command)]


def settings_of(result) -> dict:
    return result.to_dict()["settings"]


def text(name: str, value) -> str:
    return TEXT.get(name, str(value))


def test_the_exported_table_has_what_the_faces_derive_from():
    # The shape __main__.py builds its argparse from (agreed in the log).
    keys = {"name", "flag", "type", "unit", "help", "default", "low", "low_included", "high", "zero_allowed",
            "choices", "flag_sets", "identity"}
    for command in ("measure", "sweep", "predict", "validate", "model", "compare"):
        table = specs(command)
        assert table and all(set(s) == keys for s in table), command
        assert len({s["name"] for s in table}) == len(table) and len({s["flag"] for s in table}) == len(table)
    assert {s["name"] for s in specs("validate")} < {s["name"] for s in specs("model")}  # model adds --target
    assert [s["default"] for s in specs("model") if s["name"] == "target"] == [0.9]
    assert {s["name"] for s in specs("measure") if s["identity"]} == {
        "seed", "max_time", "target_ci", "energy", "energy_max_time", "energy_max_time_capped", "energy_settle",
        "energy_target_ci", "energy_min_windows", "energy_graphs", "cold_footprint"}
    with pytest.raises(ValueError, match="unknown command 'nope'"):
        _core.option_specs("nope")


@pytest.mark.parametrize("function,command", [(opcost.measure, "measure"), (opcost.sweep, "sweep"),
                                              (opcost.sweep_status, "sweep"), (opcost.predict, "predict"),
                                              (opcost.validate, "validate"), (opcost.compare, "compare")])
def test_every_registry_option_is_a_keyword_with_the_registrys_default(function, command):
    parameters = inspect.signature(function).parameters
    for s in specs(command):
        assert s["name"] in parameters, f"{function.__name__} lacks {s['name']}"
        default = parameters[s["name"]].default
        # None stands for the registry's "none" (no autocast; the GPU's L2 for cache_bytes).
        assert default == s["default"] or (default is None and s["default"] in ("", 0)), s["name"]
        assert s["name"] in function.__doc__ or "option_specs" in function.__doc__


@pytest.fixture(scope="module")
def base_measurement():
    return opcost.measure("aten::add", store=False, **BASE, **ADD).to_dict()


@pytest.mark.parametrize("name", names("measure"))
def test_each_measure_option_takes_effect_on_its_own(base_measurement, name):
    base = base_measurement["settings"]
    m = opcost.measure("aten::add", store=False, **dict(BASE, **{name: OTHER[name]}), **ADD)
    after = settings_of(m)
    assert after[name] == text(name, OTHER[name]) != base[name]
    assert {k: v for k, v in after.items() if k != name} == {k: v for k, v in base.items() if k != name}
    # The identity key follows the settings that change the figure, and only those.
    identity = {s["name"] for s in specs("measure") if s["identity"]}
    assert (m.to_dict()["settings_key"] != base_measurement["settings_key"]) == (name in identity)
    if name == "energy":  # behaviour too: energy was measured, or the reason is no longer "switched off"
        assert "switched off" in base_measurement["energy_unavailable"]
        assert "switched off" not in (m.to_dict().get("energy_unavailable") or "")


def test_energy_max_time_alone_reaches_validate(tmp_path):
    # The case: energy_max_time given without max_time was dropped. Now it is the run's.
    net = torch.nn.Linear(4, 4).eval()
    val = opcost.validate(net, torch.randn(2, 4), db=tmp_path / "ops.db", max_time=0.01, step_max_time=0.05,
                          energy=False, energy_max_time=5)
    assert val.to_dict()["settings"]["energy_max_time"] == "5"
    assert val.to_dict()["settings"]["max_time"] == "0.01"


class Captured(Exception):
    """Stops a run where the extension would start it, with the settings its options make."""


@pytest.mark.parametrize("name", names("validate"))
def test_each_validate_option_takes_effect_on_its_own(monkeypatch, tmp_path, name):
    # Through the package's own path (signature → options → the extension's struct), stopped before
    # any measuring: the settings the C++ options struct holds, for the base and with one change.
    def capture(step, description, options, **notes):
        raise Captured(dict(_core.check_options("validate", options)))

    monkeypatch.setattr(opcost._api._core, "predict", capture)
    net, x = torch.nn.Linear(4, 4).eval(), torch.randn(2, 4)
    base_options = dict(max_time=0.01, step_max_time=0.05, energy=False)
    runs = []
    for change in ({}, {name: OTHER[name]}):
        with pytest.raises(Captured) as got:
            opcost.validate(net, x, db=tmp_path / "ops.db", **dict(base_options, **change))
        runs.append(got.value.args[0])
    base, after = runs
    assert after[name] == text(name, OTHER[name]) != base[name]
    assert {k: v for k, v in after.items() if k != name} == {k: v for k, v in base.items() if k != name}


@pytest.mark.parametrize("function", [opcost.sweep, opcost.sweep_status])
@pytest.mark.parametrize("name", names("sweep"))
def test_each_sweep_option_reaches_the_sweep_on_its_own(monkeypatch, tmp_path, function, name):
    seen = []

    def capture(file, options, *rest, **more):
        seen.append(dict(_core.check_options("sweep", options)))
        raise Captured()

    monkeypatch.setattr(opcost._sweep._core, function.__name__, capture)
    for change in ({}, {name: OTHER[name]}):
        with pytest.raises(Captured):
            function(tmp_path / "grid.yaml", db=tmp_path / "ops.db", **dict(BASE, **change))
    base, after = seen
    assert after[name] == text(name, OTHER[name]) != base[name]
    assert {k: v for k, v in after.items() if k != name} == {k: v for k, v in base.items() if k != name}


def one_line_naming(error: BaseException, spec: dict) -> bool:
    message = str(error)
    return "\n" not in message and f"{spec['name']} ({spec['flag']})" in message


@pytest.mark.parametrize("spec", specs("measure"), ids=lambda s: s["name"])
def test_bad_measure_values_are_refused_naming_both_spellings(tmp_path, spec):
    value, kind = BAD[spec["type"]]
    with pytest.raises(kind) as got:
        opcost.measure("aten::add", db=tmp_path / "ops.db", **dict(BASE, **{spec["name"]: value}), **ADD)
    assert one_line_naming(got.value, spec), got.value
    assert not (tmp_path / "ops.db").exists()  # refused before the database is opened
    if spec["type"] != "text":  # and a wrong type is a TypeError, also naming it
        with pytest.raises(TypeError) as got:
            opcost.measure("aten::add", store=False, **dict(BASE, **{spec["name"]: [1]}), **ADD)
        assert one_line_naming(got.value, spec), got.value


@pytest.mark.parametrize("spec", specs("validate"), ids=lambda s: s["name"])
def test_bad_validate_values_are_refused_before_the_model_runs(tmp_path, spec):
    calls = []

    def step(x):
        calls.append(1)
        return x + 1

    value, kind = BAD[spec["type"]]
    with pytest.raises(kind) as got:
        opcost.validate(step, torch.ones(2), db=tmp_path / "ops.db", **{spec["name"]: value})
    assert one_line_naming(got.value, spec), got.value
    assert not calls and not (tmp_path / "ops.db").exists()


def test_nan_and_infinity_are_refused_as_not_finite():
    for value in (math.nan, math.inf):
        with pytest.raises(ValueError, match=r"max_time \(--max-time\) must be a finite number"):
            opcost.measure("aten::add", store=False, **dict(BASE, max_time=value), **ADD)


def test_an_option_the_command_does_not_offer_is_refused_by_the_extension(tmp_path):
    options = {"command": "predict", "db": str(tmp_path / "ops.db"), "db_is_default": False, "max_time": 1.0}
    with pytest.raises(ValueError, match="opcost.predict takes no option 'max_time'"):
        _core.check_options("predict", options)


@pytest.mark.parametrize("spec", specs("compare"), ids=lambda s: s["name"])
def test_bad_compare_values_are_refused_before_any_variant_is_built(spec):
    built = []
    net = torch.nn.Linear(4, 4).eval()
    value, kind = BAD[spec["type"]]
    with pytest.raises(kind) as got:
        opcost.compare(net, torch.ones(2, 4), variants={"a": "fp32", "b": lambda m: built.append(m) or m},
                       **{spec["name"]: value})
    assert one_line_naming(got.value, spec), got.value
    assert built == []
