"""opcost.compare on the CPU: variants of a small model (built-in, a user's function, a user's
model, int8, torch.compile) side by side; the baseline without a difference; per-layer rows
matched by module path; the user's model left as it was; bad variants refused by name; the
result's tables and DataFrames; python -m opcost compare. Budgets are tiny: nothing is timed."""

import copy
import json
import subprocess
import sys
import time

import pytest
import torch

import opcost

# Two rounds (the fewest with an interval), short loops, two traced steps a variant.
FAST = dict(rounds=2, round_max_time=0.02, layer_steps=2)


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(4 * 8 * 8, 5)

    def forward(self, x):
        return self.head(self.act(self.conv(x)).flatten(1))


def small():
    torch.manual_seed(0)
    return ConvNet().eval(), torch.randn(2, 3, 8, 8)


@pytest.fixture(scope="module")
def side_by_side():
    """One comparison of five variants, shared by the tests that read it (each run costs seconds)."""
    model, x = small()
    before = copy.deepcopy(model.state_dict())
    user_model = copy.deepcopy(model)
    r = opcost.compare(model, x, variants={"fp32": "fp32", "bf16": "bf16", "channels_last": "channels_last",
                                           "mine_bf16": lambda m: m.to(torch.bfloat16), "mine": user_model},
                       **FAST)
    return r, model, before


NAMES = ["fp32", "bf16", "channels_last", "mine_bf16", "mine"]


def test_every_variant_is_in_the_table_and_the_baseline_has_no_difference(side_by_side):
    r, _, _ = side_by_side
    assert r.variants == NAMES and r.baseline == "fp32"
    step = r.table(by="step")
    for name in NAMES:
        assert any(line.startswith(name + " ") for line in step.splitlines()), name
    doc = r.json
    assert doc["kind"] == "compare" and doc["options"]["rounds"] == 2 and doc["options"]["layer_steps"] == 2
    by_name = {v["name"]: v for v in doc["variants"]}
    assert by_name["fp32"]["time_vs_baseline"] is None and by_name["fp32"]["energy_vs_baseline"] is None
    for name in NAMES[1:]:
        d = by_name[name]["time_vs_baseline"]
        assert d["samples"] == 2 and d["baseline"] > 0 and isinstance(d["significant"], bool)
        assert d["relative_ci95"] is not None and d["relative_ci95"] >= 0
    for v in doc["variants"]:
        assert len(v["rounds"]) == 2 and v["time_us"]["mean"] > 0 and v["time_us"]["samples"] == 2
    # The CPU has no energy counter: said, never shown as 0.
    assert r.energy_why and all(v["energy_mJ"] is None for v in doc["variants"])
    assert repr(r).startswith("<opcost.Comparison ConvNet: fp32 ") and "(baseline)" in repr(r)


def test_each_variant_runs_its_own_inputs_and_descriptions(side_by_side):
    r, _, _ = side_by_side
    by_name = {v["name"]: v for v in r.json["variants"]}
    assert by_name["fp32"]["input"].startswith("f32[")
    # bf16 and the user's function that makes the model bf16: the floating input follows.
    assert by_name["bf16"]["input"].startswith("bf16[") and by_name["mine_bf16"]["input"].startswith("bf16[")
    assert by_name["mine"]["input"] == by_name["fp32"]["input"]
    assert "<lambda>" in by_name["mine_bf16"]["description"] and "ConvNet" in by_name["mine"]["description"]
    assert by_name["channels_last"]["description"]


def test_the_users_model_is_left_as_it_was(side_by_side):
    _, model, before = side_by_side
    for name, p in model.state_dict().items():
        assert p.dtype == torch.float32, name
        assert torch.equal(p, before[name]), name
    assert model.conv.weight.is_contiguous()  # not turned channels_last


def test_layers_are_matched_by_module_path(side_by_side):
    r, _, _ = side_by_side
    layers = r.json["layers"]
    assert layers is not None and r.layers_why is None
    assert layers["variants"] == NAMES and layers["baseline"] == "fp32"
    rows = {row["layer"]: row for row in layers["rows"]}
    for path in ("conv", "act", "head"):
        matching = [name for name in rows if name == path or name.endswith("." + path) or name.endswith("/" + path)]
        assert matching, (path, list(rows))
        row = rows[matching[0]]
        # Every variant runs a copy (or the model) with the same module paths: one row, all present.
        assert row["presence"] == "" and all(row["variants"][n] is not None for n in NAMES), row
        assert row["variants"]["fp32"]["time_vs_baseline"] is None
        assert row["variants"]["bf16"]["time_vs_baseline"]["samples"] == 2
        assert row["variants"]["fp32"]["calls_per_step"] >= 1
    assert r.table(by="layer").startswith("per layer")
    assert "per layer" not in r.table(by="step") and r.table() == r.text == str(r)


def test_to_pandas_has_a_row_per_variant_and_per_layer_and_variant(side_by_side):
    pytest.importorskip("pandas")
    r, _, _ = side_by_side
    step = r.to_pandas()
    assert list(step["variant"]) == NAMES and list(step["baseline"]) == [True] + [False] * 4
    assert step.loc[0, "time_vs_baseline"] is None or step["time_vs_baseline"].isna()[0]
    assert not step["time_vs_baseline"][1:].isna().any() and (step["time_us"] > 0).all()
    for column in ("time_ci95_us", "time_vs_baseline_ci95", "time_significant", "energy_mJ"):
        assert column in step.columns
    layer = r.to_pandas(by="layer")
    assert len(layer) == len(r.json["layers"]["rows"]) * len(NAMES)
    assert set(layer["variant"]) == set(NAMES) and layer["present"].all()
    with pytest.raises(ValueError, match="by='op'"):
        r.to_pandas(by="op")
    with pytest.raises(ValueError, match="by='op'"):
        r.table(by="op")


def test_a_comparison_becomes_a_report_page_embedding_it(side_by_side, tmp_path):
    import re
    r = side_by_side[0]
    page = opcost.report(r, tmp_path / "compare.html").read_text()
    m = re.search(r'<script id="opcost-data" type="application/json">(.*?)</script', page, re.S)
    envelope = json.loads(m.group(1))
    assert envelope["kind"] == "compare"
    assert envelope["data"] == r.json


def test_int8_quantises_the_linears_on_the_cpu():
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    r = opcost.compare(model, torch.randn(4, 16), variants=("fp32", "int8"), layers=False, **FAST)
    int8 = r.json["variants"][1]
    assert int8["name"] == "int8" and "fbgemm" in int8["description"]
    assert r.layers_why and r.json["layers"] is None and r.to_pandas(by="layer").empty
    assert all(type(m) is torch.nn.Linear for m in (model[0], model[2]))  # the user's linears stay


def test_int8_compiled_on_the_cpu_runs_and_says_it_is_compiled_in_pieces():
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()
    model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).eval()
    r = opcost.compare(model, torch.randn(4, 16), variants=("fp32", "int8+compile"), layers=False, **FAST)
    variant = r.json["variants"][1]
    assert "fbgemm" in variant["description"] and "the graph breaks at each int8 linear" in variant["description"]
    assert variant["time_us"]["mean"] > 0 and len(variant["rounds"]) == 2, variant
    assert sum(counters["graph_break"].values()) > 0  # as the description says


def test_a_comma_separated_string_names_the_variants():
    model, x = small()
    r = opcost.compare(model, x, variants="fp32, autocast-bf16", layers=False, **FAST)
    assert r.variants == ["fp32", "autocast-bf16"]


@pytest.mark.parametrize("variants, error, match", [
    (("fp32", "bf17"), ValueError, "variants: variant 'bf17': 'bf17' is not a variant"),
    (("fp32", "b" * 100_000), ValueError, "variants: variant name of 100000 characters"),
    (("fp32", "fp32"), ValueError, "variants: the name 'fp32' is given twice"),
    (("fp32",), ValueError, "variants: 1 given; give at least two"),
    ({"fp32": "fp32", "odd": 3}, TypeError, r"variants\['odd'\]"),
    ((1, 2), TypeError, "variants: int values are not variant names"),
    (42, TypeError, "variants=int"),
    ({"fp32": "fp32", "bad\nname": "bf16"}, ValueError, "variants: the name"),
    ({"fp32": "fp32", "raises": lambda m: 1 / 0}, ValueError,
     r"variants\['raises'\]: the function .* ZeroDivisionError"),
    ({"fp32": "fp32", "none": lambda m: None}, TypeError, r"variants\['none'\]: .* returned NoneType"),
    ({"fp32": "fp32", "meta": lambda m: m.to("meta")}, ValueError, r"variants\['meta'\] runs on meta"),
])
def test_bad_variants_are_refused_by_name(variants, error, match):
    model, x = small()
    with pytest.raises(error, match=match) as raised:
        opcost.compare(model, x, variants=variants, **FAST)
    assert len(str(raised.value)) < 1000 and "\n" not in str(raised.value)  # one line, never the input's size


def test_bad_options_name_the_option_and_its_flag():
    model, x = small()
    with pytest.raises(ValueError, match=r"rounds \(--rounds\)"):
        opcost.compare(model, x, rounds=1, layers=False, round_max_time=0.02)
    with pytest.raises(ValueError, match=r"round_max_time \(--round-max-time\)"):
        opcost.compare(model, x, rounds=2, layers=False, round_max_time=-1.0)
    with pytest.raises(TypeError, match=r"energy \(--no-energy\)"):
        opcost.compare(model, x, energy="no", **FAST)


class Counted(torch.nn.Module):
    """ConvNet counting its calls: the calls no counted round explains are the uncounted ones."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.calls = inner, 0

    def forward(self, x):
        self.calls += 1
        return self.inner(x)


def test_warmup_rounds_run_every_variant_and_are_not_counted():
    uncounted = {}
    for warmup in (0, 1):
        model, x = small()
        mine = Counted(copy.deepcopy(model))
        r = opcost.compare(model, x, variants={"fp32": "fp32", "mine": mine}, layers=False, energy=False,
                           rounds=2, warmup_rounds=warmup, round_max_time=0.02)
        rounds = next(v for v in r.json["variants"] if v["name"] == "mine")["rounds"]
        assert len(rounds) == 2 and r.json["options"]["warmup_rounds"] == warmup
        uncounted[warmup] = mine.calls - sum(m["steps"] for m in rounds)
        assert f"after {warmup} warm-up round" in r.text.splitlines()[0]
    assert uncounted[1] > uncounted[0]  # the warm-up round ran the variant, and none of it was counted


def test_warmup_rounds_are_bounded_and_named_when_refused():
    model, x = small()
    with pytest.raises(ValueError, match=r"warmup_rounds \(--warmup-rounds\) must be a whole number from 0 to 100"):
        opcost.compare(model, x, warmup_rounds=101, **FAST)
    # A number that is not whole, as every registry option refuses it (validate's energy_min_windows too).
    with pytest.raises(ValueError, match=r"warmup_rounds \(--warmup-rounds\) must be a whole number .*not 1.5"):
        opcost.compare(model, x, warmup_rounds=1.5, **FAST)
    with pytest.raises(TypeError, match=r"warmup_rounds \(--warmup-rounds\)"):
        opcost.compare(model, x, warmup_rounds="1", **FAST)
    assert opcost._core.compare_defaults()["warmup_rounds"] == 1


def test_bad_options_are_refused_before_any_variant_is_built():
    built = []
    model, x = small()
    with pytest.raises(ValueError, match=r"rounds \(--rounds\)"):
        opcost.compare(model, x, variants={"fp32": "fp32", "spy": lambda m: built.append(m) or m}, rounds=1)
    assert built == []  # no copy made, nothing compiled, before the refusal


def test_a_variant_that_fails_on_its_inputs_is_named():
    model, x = small()
    with pytest.raises(opcost.ModelError, match="variant 'narrow' of ConvNet"):
        opcost.compare(model, x, variants={"fp32": "fp32", "narrow": lambda m: torch.nn.Linear(3, 3)}, **FAST)


def test_int8_refuses_training_with_the_reason():
    model = torch.nn.Sequential(torch.nn.Linear(8, 4))
    with pytest.raises(ValueError, match=r"variants\['int8'\]: int8 .* no backward"):
        opcost.compare(model, torch.randn(2, 8), variants=("fp32", "int8"), train=True, **FAST)


def test_training_gives_a_converted_copy_its_own_optimizer():
    model, x = small()
    model.train()
    before = model.head.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    r = opcost.compare(model, x, variants=("fp32", "bf16"), train=True, optimizer=optimizer, layers=False, **FAST)
    assert r.json["train"] is True and r.variants == ["fp32", "bf16"]
    # The fp32 baseline trains the model itself (as validate does); the bf16 copy never touches it.
    assert model.head.weight.dtype == torch.float32 and not torch.equal(model.head.weight, before)
    assert optimizer.param_groups[0]["params"][0] is model.conv.weight


def _compiles_here() -> tuple:
    """Whether torch.compile (inductor's C++ on the CPU) works here, and how long it took."""
    start = time.monotonic()
    try:
        model, x = small()
        with torch.inference_mode():
            ok = torch.allclose(torch.compile(model)(x), model(x), atol=1e-5)
    except Exception as e:  # no compiler, or inductor failing: the test says why it skips
        return False, f"torch.compile failed here: {type(e).__name__}: {str(e)[:200]}"
    return ok, f"{time.monotonic() - start:.1f} s"


def test_a_compiled_variant_is_compared_and_its_layers_show_as_absent():
    ok, why = _compiles_here()
    if not ok:
        pytest.skip(why)
    model, x = small()
    r = opcost.compare(model, x, variants=("fp32", "compile"), **FAST)
    compiled = r.json["variants"][1]
    assert compiled["name"] == "compile" and compiled["time_vs_baseline"]["samples"] == 2
    rows = r.json["layers"]["rows"]
    # The compiled code runs no module hooks: its calls land on the model's top level, and the
    # eager layers are marked absent in it, never shown as 0.
    eager_only = [row for row in rows if row["variants"]["compile"] is None]
    assert eager_only and all(row["presence"] for row in eager_only)
    assert any(row["variants"]["compile"] is not None for row in rows)
    assert "absent" in r.table(by="layer")
    # After torch.compile has run in the process, device "auto" still finds the GPUs CUDA has (it
    # once took the accelerator registry's 8 on a machine without one, and failed on CUDA).
    m = opcost.measure("aten::add", device="auto", energy=False, store=False, max_time=0.01,
                       self="f32[4]", other="f32[4]")
    assert json.loads(m.to_json())["device_kind"] == ("cuda" if torch.cuda.is_available() else "cpu")


NETS = ("import torch\n"
        "def build():\n"
        "    return torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU())\n")


def _cli(*words):
    return subprocess.run([sys.executable, "-m", "opcost", "compare", *words], capture_output=True, text=True,
                          timeout=300)


def test_python_m_opcost_compare_runs_a_python_model(tmp_path):
    (tmp_path / "nets.py").write_text(NETS)
    out = tmp_path / "cmp.json"
    nets = f"{tmp_path / 'nets.py'}:build"
    run = _cli(nets, "--input", "f32[2,3,8,8]", "--device", "cpu", "--variants", "fp32,bf16", "--rounds", "2",
               "--round-max-time", "0.02", "--layer-steps", "2", "-o", str(out))
    assert run.returncode == 0, run.stderr
    assert "bf16" in run.stdout and "per layer" in run.stdout and "written to" in run.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "compare" and [v["name"] for v in doc["variants"]] == ["fp32", "bf16"]
    assert doc["model"] == nets
    as_json = _cli(nets, "--input", "f32[2,3,8,8]", "--device", "cpu", "--variants", "fp32,fp16", "--rounds", "2",
                   "--round-max-time", "0.02", "--no-layers", "--json")
    assert as_json.returncode == 0, as_json.stderr
    doc = json.loads(as_json.stdout)
    assert doc["layers"] is None and doc["options"]["layers"] is False


@pytest.mark.parametrize("words, message", [
    (["--variants", "fp32"], "at least two"),
    (["--variants", "fp32,bf16", "--batch", "4"], "--batch"),
    (["--variants", "fp32,bf16", "--dtype", "bf16"], "--dtype and --autocast"),
    (["--variants", "fp32,bf16", "--rounds", "1"], "--rounds"),
    ([], "--variants"),
])
def test_python_m_opcost_compare_refuses_bad_input_in_one_line(tmp_path, words, message):
    (tmp_path / "nets.py").write_text(NETS)
    run = _cli(f"{tmp_path / 'nets.py'}:build", "--input", "f32[2,3,8,8]", "--device", "cpu", "--round-max-time",
               "0.02", *words)
    assert run.returncode == 2, (run.stdout, run.stderr)
    lines = [line for line in run.stderr.splitlines() if line.startswith("opcost: error:")]
    assert len(lines) == 1 and message in lines[0], run.stderr
    assert "Traceback" not in run.stderr


def test_python_m_opcost_compare_runs_a_built_in_model_through_the_command_line():
    # A built-in model is the command line's: compile is Python's, and the refusal says where to run it.
    run = _cli("mnist-cnn", "--device", "cpu", "--variants", "fp32,compile")
    assert run.returncode == 2 and "python -m opcost compare MODULE:ATTR" in run.stderr, run.stderr


def test_int8_linears_for_a_gpu_multiply_with_int_mm_and_stay_close():
    # The GPU's int8 variant (torch._int_mm runs on the CPU too): linears whose sizes are
    # multiples of 8 are replaced, others kept; the output stays within int8's rounding.
    from opcost import _compare
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    x = torch.randn(5, 64)  # fewer than 17 rows: padded for torch._int_mm
    with torch.no_grad():
        want = model(x)
        assert _compare.int8_linears(model) == 1  # 128 -> 10 does not fit
        assert isinstance(model[0], _compare.Int8Linear) and type(model[2]) is torch.nn.Linear
        got = model(x)
    assert got.shape == want.shape
    assert float((got - want).abs().max() / want.abs().max()) < 0.03
    ops = {o.op for o in opcost.inventory(model, x).ops}
    assert "aten::_int_mm" in ops, ops
