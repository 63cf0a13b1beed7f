"""The cost model (issue 26, must-have 6), on the CPU: a fit of each committed dataset reproduces
its stored held-out errors; a GPU's rates and roofline draws come from the rows meant for them;
the C++ evaluator that every estimate runs gives scikit-learn's own predictions for time, energy
and power, each relative to its call's base; estimates are marked and never stored as
measurements; a call outside the fit's data is flagged, one with no figure refused, one whose
base power is unknown given no energy and told why; and both command lines fit and estimate.

The datasets: tests/data/fit/h100-conv-mm-rows.csv, issue 13's H100 sweep (conv2d, mm and linear;
bench/results/2026-11-23-h100-sweep/measurements.csv) as it was committed, which has no
calibration rows and so no energy models; and tests/data/fit/h100-calibrated-rows.csv, a cut of
issue 26's H100 rows with their calibration rows (every family; energy and power models). The
errors a fit of each gives are in tests/data/fit/expected_held_out.json, written by
tests/data/fit/make_expected_held_out.py (its docstring says how and when to run it).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("sklearn", reason="the cost model's fit needs scikit-learn (pip install 'opcost[fit]')")

import sklearn  # noqa: E402
from sklearn.ensemble import GradientBoostingRegressor  # noqa: E402

from opcost import _core, _fit  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "fit"
ROWS = DATA / "h100-conv-mm-rows.csv"
CALIBRATED_ROWS = DATA / "h100-calibrated-rows.csv"
OPCOST_BIN = os.environ.get("OPCOST_BIN", str(REPO / "build" / "opcost"))
GPU = "NVIDIA H100 80GB HBM3"  # the rows' device
MM_1024 = "self=bf16[1024,1024] mat2=bf16[1024,1024]"  # a configuration the rows have
MM_4096 = "self=bf16[4096,4096] mat2=bf16[4096,4096]"  # compute-bound on an H100
ADD_1M = "self=f32[1048576] other=f32[1048576]"  # memory-bound


def _expected_module():
    spec = importlib.util.spec_from_file_location("make_expected_held_out", DATA / "make_expected_held_out.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(args, **kwargs):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, **kwargs)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def _measurements(db: Path) -> int:
    with sqlite3.connect(db) as c:
        return c.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]


def _without_created_at(model_json: str) -> dict:
    model = json.loads(model_json)
    model.pop("created_at")
    return model


@pytest.fixture(scope="module")
def raw_rows():
    return _fit.rows_from_csv(ROWS)


@pytest.fixture(scope="module")
def fitted(raw_rows):
    """One fit of the whole dataset, shared by the tests that read it (a fit takes seconds)."""
    return _fit.fit_rows(raw_rows)


@pytest.fixture(scope="module")
def model(fitted):
    return _core.CostModel.from_text(fitted.model_json, "the test's fit")


@pytest.fixture(scope="module")
def calibrated_fit():
    """One fit of the calibrated rows (every family, with energy and power), shared likewise."""
    return _fit.fit_rows(_fit.rows_from_csv(CALIBRATED_ROWS))


@pytest.fixture(scope="module")
def calibrated_model(calibrated_fit):
    return _core.CostModel.from_text(calibrated_fit.model_json, "the calibrated fit")


@pytest.fixture(scope="module")
def matmul_csv(raw_rows, tmp_path_factory):
    """The mm and linear rows alone: enough for a family, fitted in about a second."""
    path = tmp_path_factory.mktemp("fit") / "matmul.csv"
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(raw_rows[0]))
        writer.writeheader()
        writer.writerows(r for r in raw_rows if r["op"] in ("aten::mm", "aten::linear"))
    return path


@pytest.fixture(scope="module")
def python_fit(matmul_csv, tmp_path_factory):
    """`python -m opcost fit --csv ... -o model.json --no-store`: its result and the model's path."""
    folder = tmp_path_factory.mktemp("python-fit")
    out = folder / "model.json"
    env = dict(os.environ, OPCOST_DB=str(folder / "none.db"))
    result = _run([sys.executable, "-m", "opcost", "fit", "--csv", matmul_csv, "-o", out, "--no-store"], env=env)
    return result, out, folder


def _equal_within(actual, expected, where="") -> None:
    """Every number equal to rel 1e-9 (integers exactly), every key and text the same."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for key in expected:
            _equal_within(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=1e-9, abs=0), where
    else:
        assert actual == expected, where


def _expected_held_out(dataset: str) -> dict:
    expected = json.loads((DATA / "expected_held_out.json").read_text())
    if expected["scikit_learn"] != sklearn.__version__:
        pytest.skip(f"the expected errors were fitted by scikit-learn {expected['scikit_learn']}, this is "
                    f"{sklearn.__version__}: rerun tests/data/fit/make_expected_held_out.py where the change is meant")
    assert (expected["boosting"], expected["boosting_large"], expected["large_target_configurations"],
            expected["time_floor_us"], expected["bandwidth_min_bytes"],
            expected["near_roofline"]) == (_fit.BOOSTING, _fit.BOOSTING_LARGE, _fit.LARGE_TARGET_CONFIGURATIONS,
                                           _fit.TIME_FLOOR_US, _fit.BANDWIDTH_MIN_BYTES, _fit.NEAR_ROOFLINE), \
        "the fit's parameters changed: rerun tests/data/fit/make_expected_held_out.py and say why"
    return expected["datasets"][dataset]


def _check_held_out(fit: _fit.Fit, expected: dict) -> dict:
    """The refit's errors equal the committed ones, and so do those the stored model carries."""
    actual = _expected_module().held_out_errors(fit)
    _equal_within(actual, expected)
    model = json.loads(fit.model_json)
    assert model["data_hash"] == expected["data_hash"]
    for family, errors in expected["families"].items():
        targets = model["families"][family]["targets"]
        for target in ("time", "power", "energy", "host"):
            assert (target in targets) == (errors[target] is not None), family + target
            if errors[target] is not None:
                _equal_within(targets[target]["held_out"], errors[target], family + target)
        for target in _fit.SCALED_TARGETS:  # the interval of estimates scaled from another size
            scaled = errors["scaled_" + target]
            assert ("scaled" in targets.get(target, {})) == (scaled is not None), family + target
            if scaled is not None:
                stored = targets[target]["scaled"]
                _equal_within(dict(stored["held_out"], log_halfwidth_per_distance=stored["log_halfwidth_per_distance"]),
                              scaled, family + target + ".scaled")
        # One [min, max] pair per feature.
        assert len(model["families"][family]["ranges"]) == len(_core.cost_feature_names()) == 26
        # The GPU whose rows fitted it, with their count: an estimate elsewhere is carried from it.
        assert model["families"][family]["gpus"] == {GPU: model["families"][family]["n_train"]}, family
    return model


def test_a_refit_reproduces_the_committed_held_out_errors(fitted):
    model = _check_held_out(fitted, _expected_held_out(ROWS.name))
    # Both families of the rows are fitted, with every target. Without calibration rows the rates
    # come from all the rows; none is memory-bound (convolutions and GEMMs only), so the byte rate
    # is the best of the compute-bound ones, said so, and no memory-bound draw is known: only the
    # compute-bound calls have a base power, enough of them for energy and power models.
    assert sorted(model["families"]) == ["convolution", "matmul"]
    for family in model["families"].values():
        assert sorted(family["targets"]) == ["energy", "host", "power", "time"]
    gpu = model["gpus"][GPU]
    assert gpu["rates_from"] == "all its rows (no calibration rows)"
    assert gpu["bandwidth_from"].startswith("no memory-bound call: the best byte rate of compute-bound ones")
    assert gpu["memory_power_W"] is None
    assert gpu["compute_power_W"] > gpu["idle_power_W"] > 0


def test_a_refit_of_calibrated_rows_reproduces_its_errors_with_energy_for_every_family(calibrated_fit):
    model = _check_held_out(calibrated_fit, _expected_held_out(CALIBRATED_ROWS.name))
    assert sorted(model["families"]) == ["attention", "convolution", "data_movement", "elementwise", "embedding",
                                         "matmul", "normalization", "pooling", "reduction"]
    for name, family in model["families"].items():
        assert sorted(family["targets"]) == ["energy", "host", "power", "time"], name
    # The calibration copies move 1-2 GiB at the memory's rate; the GPU draws more at its FLOP
    # roofline than at its byte roofline, and both more than idle.
    gpu = model["gpus"][GPU]
    assert gpu["rates_from"] == "its calibration rows"
    assert gpu["bandwidth_from"] == "memory-bound calls moving at least 256 MiB"
    assert 2000 < gpu["achieved_GBps"] < 3400
    assert gpu["compute_power_W"] > gpu["memory_power_W"] > gpu["idle_power_W"] > 0
    assert model["time_floor_us"] == _core.TIME_FLOOR_US == 3.0
    # The table says which interval its scaled widths are: the model's own coverage.
    table = calibrated_fit.table()
    assert f"the {100 * model['coverage']:.0f}% interval of a scaled estimate" in table, table
    assert " at 2× " in table


def _raw(op, args, time_us, *, power_W=None, idle_W=None, dtype="f32", device="Made-up GPU"):
    """A row as `opcost db export --csv` writes it, of the columns the fit reads."""
    return {"op": op, "args": args, "time_median_us": repr(time_us), "device_name": device, "cache_mode": "warm",
            "dtype": dtype, "energy_per_call_mJ": "", "host_us_per_call": "",
            "power_W": "" if power_W is None else repr(power_W), "idle_power_W": "" if idle_W is None else repr(idle_W)}


def test_a_gpus_rates_and_roofline_draws_come_from_the_rows_meant_for_them():
    big = 1 << 26  # f32 elements: a copy reads and writes 256 MiB each, 512 MiB in all
    big_copy = f"self=f32[{big}] src=f32[{big}]"
    small_copy = "self=f32[131072] src=f32[131072]"  # 1 MiB: may run from the L2 cache
    mm = "self=bf16[4096,4096] mat2=bf16[4096,4096]"  # 2·4096³ FLOPs
    raw = [
        _raw("aten::copy_", big_copy, 200.0, power_W=500.0, idle_W=60.0),  # 2684 GB/s: the bandwidth
        _raw("aten::copy_", big_copy, 240.0, power_W=480.0, idle_W=70.0),  # 2237 GB/s, 83%: near it
        _raw("aten::copy_", big_copy, 400.0, power_W=200.0, idle_W=80.0),  # 1342 GB/s, 50%: not near
        _raw("aten::copy_", small_copy, 0.1, power_W=900.0),  # 10486 GB/s out of the L2: no bandwidth
        _raw("aten::mm", mm, 200.0, power_W=700.0, dtype="bf16"),  # 687 TFLOP/s: the FLOP rate
        _raw("aten::mm", mm, 230.0, power_W=650.0, dtype="bf16"),  # 87%: near it
        _raw("aten::mm", mm, 400.0, power_W=300.0, dtype="bf16"),  # 50%: not near
    ]
    rows, left_out = _fit._usable(raw)
    assert len(rows) == 7 and left_out == {}
    p = _fit.gpu_profiles(rows)["Made-up GPU"]
    assert p["achieved_GBps"] == pytest.approx(2 * 4 * big / 200.0 / 1e3)
    assert p["bandwidth_from"] == "memory-bound calls moving at least 256 MiB"
    assert p["rates_from"] == "all its rows (no calibration rows)"
    assert p["achieved_tflops"] == {"bf16": pytest.approx(2 * 4096**3 / 200.0 / 1e6)}
    assert p["idle_power_W"] == 70.0  # the median of the rows' idle draws
    assert p["compute_power_W"] == pytest.approx(675.0)  # the median of 700 and 650
    assert p["memory_power_W"] == pytest.approx(490.0)  # of 500 and 480; the small copy's 900 W is not
    # No call moves 256 MiB: the best of the smaller ones, said; no draw at the byte roofline.
    small = _fit.gpu_profiles(rows[3:])["Made-up GPU"]
    assert small["achieved_GBps"] == pytest.approx(2 * 4 * 131072 / 0.1 / 1e3)
    assert small["bandwidth_from"].startswith("no memory-bound call moved 256 MiB: the best of smaller ones")
    assert small["memory_power_W"] is None and small["idle_power_W"] is None
    assert small["compute_power_W"] == pytest.approx(675.0)


def test_a_pooled_energy_is_not_fitted_but_its_time_is():
    mm = "self=bf16[64,64] mat2=bf16[64,64]"
    pooled = _raw("aten::mm", mm, 5.0, power_W=300.0, dtype="bf16")
    pooled.update(energy_per_call_mJ="1.5", flags="throttled:hw_slowdown,energy_pooled:4")
    own = _raw("aten::mm", mm, 5.0, power_W=300.0, dtype="bf16")
    own.update(energy_per_call_mJ="1.5", flags="throttled:hw_slowdown")
    rows, left_out = _fit._usable([pooled, own])
    assert len(rows) == 2 and [r.time_us for r in rows] == [5.0, 5.0]
    assert rows[0].energy_mJ is None and rows[0].power_W is None  # its column's power, not its own
    assert rows[1].energy_mJ == 1.5 and rows[1].power_W == 300.0
    assert left_out == {"their energies only: pooled, times kept": 1}


def test_the_cpp_evaluator_reproduces_scikit_learn(raw_rows, model):
    """The matmul and convolution families' time fitted here as _fit fits them, predicted by
    scikit-learn, against the C++ walk of the exported trees (float32 comparisons included) for
    every row."""
    rows, _ = _fit._usable(raw_rows)
    profiles = _fit.gpu_profiles(rows)
    # matmul's 18 configurations get the small trees, convolution's 264 the deeper ones: both walked.
    for family, count, params in (("matmul", 48, _fit.BOOSTING), ("convolution", 264, _fit.BOOSTING_LARGE)):
        calls = [r for r in rows if r.work["family"] == family]
        assert len(calls) == count
        assert _fit.boosting_for(len({r.configuration for r in calls})) == params, family
        X, y, bases = [], [], []
        for r in calls:
            f = _core.cost_features(r.op, r.args, r.cache_mode, json.dumps(dict(profiles[r.device], name=r.device)))
            X.append(f["values"])
            assert f["base_us"] == f["roofline_us"] + _core.TIME_FLOOR_US
            bases.append(f["base_us"])
            y.append(math.log(r.time_us) - math.log(f["base_us"]))
        predicted = GradientBoostingRegressor(**params).fit(X, y).predict(X)
        assert len({round(p, 6) for p in predicted}) > 10  # the trees tell the rows apart: a real comparison
        for r, base, p in zip(calls, bases, predicted):
            estimate = model.estimate(r.op, r.args, r.cache_mode, r.device)
            assert estimate["time_us"]["estimate"] == pytest.approx(base * math.exp(p), rel=1e-9), f"{r.op} {r.args}"


def _base_power_W(features: dict, profile: dict, dtype: str) -> float:
    """cost_features.h's base power, worked out here: the draw of the call's roofline side for its
    roofline time and the idle draw for the 3 µs floor, over the base time."""
    compute_s = features["flops"] / (profile["achieved_tflops"][dtype] * 1e12) if features["flops"] else 0.0
    memory_s = features["bytes"] / (profile["achieved_GBps"] * 1e9)
    side_W = profile["compute_power_W"] if compute_s >= memory_s and features["flops"] > 0 else \
        profile["memory_power_W"]
    assert features["roofline_us"] == pytest.approx(max(compute_s, memory_s) * 1e6, rel=1e-12)
    return (features["roofline_us"] * side_W + 3.0 * profile["idle_power_W"]) / features["base_us"]


def test_the_cpp_evaluator_reproduces_scikit_learn_for_energy_and_power(calibrated_fit, calibrated_model):
    """The matmul family's energy and power, fitted here as _fit fits them (each relative to the
    call's base power), against the C++ estimate of every row: energy = base time × base power ×
    e^trees, power = base power × e^trees, each interval e^±q about it."""
    rows, _ = _fit._usable(_fit.rows_from_csv(CALIBRATED_ROWS))
    profile = json.loads(calibrated_fit.model_json)["gpus"][GPU]
    targets = json.loads(calibrated_fit.model_json)["families"]["matmul"]["targets"]
    matmul = [r for r in rows if r.work["family"] == "matmul"]
    X, energy_y, power_y, features = [], [], [], []
    for r in matmul:
        f = _core.cost_features(r.op, r.args, r.cache_mode, json.dumps(dict(profile, name=GPU)))
        assert f["base_power_W"] == pytest.approx(_base_power_W(f, profile, r.dtype), rel=1e-12)
        X.append(f["values"])
        features.append(f)
        energy_y.append(math.log(1e3 * r.energy_mJ / (f["base_us"] * f["base_power_W"])))
        power_y.append(math.log(r.power_W / f["base_power_W"]))
    # Both sides of the roofline are among the rows: both draws are used.
    assert {f["roofline_us"] > f["bytes"] / (profile["achieved_GBps"] * 1e3) for f in features} == {True, False}
    params = _fit.boosting_for(len({r.configuration for r in matmul}))
    energy_p = GradientBoostingRegressor(**params).fit(X, energy_y).predict(X)
    power_p = GradientBoostingRegressor(**params).fit(X, power_y).predict(X)
    q = targets["energy"]["interval_log_halfwidth"]
    assert q > 0
    for r, f, pe, pp in zip(matmul, features, energy_p, power_p):
        e = calibrated_model.estimate(r.op, r.args, r.cache_mode, GPU)
        energy = f["base_us"] * f["base_power_W"] * math.exp(pe) * 1e-3
        assert e["energy_mJ"]["estimate"] == pytest.approx(energy, rel=1e-9), f"{r.op} {r.args}"
        assert e["energy_mJ"]["low"] == pytest.approx(energy * math.exp(-q), rel=1e-9)
        assert e["energy_mJ"]["high"] == pytest.approx(energy * math.exp(q), rel=1e-9)
        assert e["power_W"] == pytest.approx(f["base_power_W"] * math.exp(pp), rel=1e-9), f"{r.op} {r.args}"
        assert e["notes"] == []


def test_without_the_draw_of_its_roofline_side_a_call_has_no_energy_and_a_note_says_why(calibrated_fit, tmp_path):
    full = json.loads(calibrated_fit.model_json)
    stripped = json.loads(calibrated_fit.model_json)
    stripped["gpus"][GPU]["memory_power_W"] = None  # rows with no copy near the byte roofline
    m = _core.CostModel.from_text(json.dumps(stripped), "no memory draw")
    add = m.estimate("aten::add", ADD_1M, "warm", GPU)
    assert add["energy_mJ"] is None and add["power_W"] is None
    assert add["time_us"]["estimate"] > 0 and add["host_us"] > 0
    assert len(add["notes"]) == 1 and add["notes"][0].startswith("no energy estimate: ") and GPU in add["notes"][0]
    # A compute-bound call needs the compute side's draw only.
    mm = m.estimate("aten::mm", MM_4096, "warm", GPU)
    assert mm["energy_mJ"]["estimate"] > 0 and mm["power_W"] > 0 and mm["notes"] == []
    assert mm == _core.CostModel.from_text(json.dumps(full), "full").estimate("aten::mm", MM_4096, "warm", GPU)
    # A family fitted without energy gives none and has nothing to say of it.
    for family in stripped["families"].values():
        family["targets"].pop("energy", None)
        family["targets"].pop("power", None)
    plain = _core.CostModel.from_text(json.dumps(stripped), "no energy").estimate("aten::mm", MM_1024, "warm", GPU)
    assert plain["energy_mJ"] is None and plain["power_W"] is None and plain["notes"] == []
    # The command line says it too.
    stripped = json.loads(calibrated_fit.model_json)
    stripped["gpus"][GPU]["memory_power_W"] = None
    path = tmp_path / "no-memory-draw.json"
    path.write_text(json.dumps(stripped))
    text = _run([OPCOST_BIN, "estimate", "aten::add", *ADD_1M.split(), "--model", path])
    assert text.returncode == 0, text.stderr
    assert "  energy  none" in text.stdout and "note: no energy estimate: " in text.stdout


def test_energy_and_power_are_each_estimated_without_the_other(calibrated_fit, tmp_path):
    for dropped, kept in (("power", "energy_mJ"), ("energy", "power_W")):
        model = json.loads(calibrated_fit.model_json)
        for family in model["families"].values():
            del family["targets"][dropped]
        path = tmp_path / f"no-{dropped}.json"
        path.write_text(json.dumps(model))
        e = _fit.estimate("aten::mm", MM_4096, cost_model=path)
        assert e[kept] is not None and e["energy_mJ" if dropped == "energy" else "power_W"] is None
        text = _run([OPCOST_BIN, "estimate", "aten::mm", *MM_4096.split(), "--model", path])
        assert text.returncode == 0, text.stderr
        energy_line = next(line for line in text.stdout.splitlines() if line.startswith("  energy"))
        if dropped == "power":
            assert " mJ" in energy_line and "power" not in energy_line, energy_line
        else:
            assert energy_line.startswith("  energy  none"), energy_line


def test_estimates_are_marked_and_never_stored_as_measurements(tmp_path, matmul_csv):
    db = tmp_path / "ops.db"
    measured = _run([OPCOST_BIN, "measure", "aten::relu", "self=f32[64]", "--device", "cpu", "--no-energy",
                     "--max-time", "0.05", "--db", db])
    assert measured.returncode == 0, measured.stderr
    assert _measurements(db) == 1

    result = _fit.fit(db, csv_files=[matmul_csv])
    assert result.stored_id is not None
    # The CPU row is the database's only elementwise configuration: too few for a model, said.
    assert "elementwise" in result.skipped and "fewer than" in result.skipped["elementwise"]
    with sqlite3.connect(db) as c:
        stored = c.execute("SELECT id, data_hash, model_json FROM cost_models").fetchall()
    assert stored == [(result.stored_id, result.data_hash, result.model_json)]
    assert _measurements(db) == 1  # the fit added no measurement

    estimate = _fit.estimate("aten::mm", MM_1024, gpu=GPU, db=str(db))
    assert estimate["estimated"] is True
    assert estimate["family"] == "matmul"
    time_us = estimate["time_us"]
    assert time_us["low"] < time_us["estimate"] < time_us["high"]
    # These rows have no calibration: no energy model (test_a_refit_reproduces_the_committed_held_out_errors).
    assert estimate["energy_mJ"] is None and estimate["power_W"] is None
    # The model knows the CPU's rates too (from its row): the GPU must be named.
    with pytest.raises(ValueError, match="name one"):
        _fit.estimate("aten::mm", MM_1024, db=str(db))

    text = _run([OPCOST_BIN, "estimate", "aten::mm", *MM_1024.split(), "--gpu", GPU, "--db", db])
    assert text.returncode == 0, text.stderr
    assert "estimated, not measured" in text.stdout
    as_json = _run([OPCOST_BIN, "estimate", "aten::mm", *MM_1024.split(), "--gpu", GPU, "--db", db, "--json"])
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["estimated"] is True
    assert document["time_us"]["estimate"] == pytest.approx(time_us["estimate"], rel=1e-12)
    listed = _run([OPCOST_BIN, "db", "list", "--db", db])
    assert listed.returncode == 0 and "aten::mm" not in listed.stdout
    assert _measurements(db) == 1  # nor did any estimate


def test_a_call_outside_the_fits_data_is_flagged(model):
    assert model.estimate("aten::mm", MM_1024, "warm", GPU)["out_of_range"] == []
    huge = model.estimate("aten::mm", "self=bf16[65536,65536] mat2=bf16[65536,65536]", "warm", GPU)
    assert huge["estimated"] is True
    assert any(why.startswith("log2_flops = ") for why in huge["out_of_range"]), huge["out_of_range"]
    # bmm is a matrix product, but the rows had mm and linear only.
    bmm = model.estimate("aten::bmm", "self=bf16[8,1024,1024] mat2=bf16[8,1024,1024]", "warm", GPU)
    assert "aten::bmm is not among the operators its matmul rows had" in bmm["out_of_range"]


def test_a_call_without_an_estimate_is_refused_in_one_line(model):
    with pytest.raises(ValueError, match="aten::topk: no estimate: its work is not counted"):
        model.estimate("aten::topk", "self=f32[4,8] k=2", "warm", GPU)
    with pytest.raises(ValueError, match="no elementwise rows"):
        model.estimate("aten::relu", "self=bf16[1000]", "warm", GPU)
    with pytest.raises(ValueError, match=f"--gpu NVIDIA H200: the cost model knows the rates of {GPU} only"):
        model.estimate("aten::mm", MM_1024, "warm", "NVIDIA H200")


def test_a_hostile_model_is_refused_in_one_line(fitted, tmp_path):
    hostile = json.loads(fitted.model_json)
    hostile["families"]["matmul"]["targets"]["time"]["trees"][0]["left"][0] = 0  # a loop
    with pytest.raises(ValueError) as refused:
        _core.CostModel.from_text(json.dumps(hostile), "hostile.json")
    message = str(refused.value)
    assert "\n" not in message
    where = "families.matmul.targets.time.trees[0] node 0"
    assert message.startswith(f"hostile.json: cost model, {where}: child 0"), message
    # A NaN, as Python's json writes it, is no JSON; through opcost.estimate's cost_model= too.
    hostile = json.loads(fitted.model_json)
    hostile["coverage"] = float("nan")
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(hostile))
    with pytest.raises(ValueError, match=r"nan\.json: not JSON"):
        _fit.estimate("aten::mm", MM_1024, cost_model=path)
    # A model fitted relative to another floor, or with a feature's range missing, is refused.
    other_floor = json.loads(fitted.model_json)
    other_floor["time_floor_us"] = 1.0
    with pytest.raises(ValueError, match="cost model, time_floor_us: fitted with another time floor"):
        _core.CostModel.from_text(json.dumps(other_floor), "floor.json")
    short = json.loads(fitted.model_json)
    short["families"]["matmul"]["ranges"].pop()
    features = len(_core.cost_feature_names())
    with pytest.raises(ValueError, match=rf"families\.matmul\.ranges: expected {features} \[min, max\] pairs"):
        _core.CostModel.from_text(json.dumps(short), "short.json")
    # A family fitted on a GPU the model has no rates of.
    stranger = json.loads(fitted.model_json)
    stranger["families"]["matmul"]["gpus"] = {"Some GPU": 3}
    with pytest.raises(ValueError, match=r"families\.matmul\.gpus: Some GPU has no rates"):
        _core.CostModel.from_text(json.dumps(stranger), "stranger.json")


def test_python_m_opcost_fit_writes_a_model_opcost_estimate_reads(python_fit):
    result, out, folder = python_fit
    assert result.returncode == 0, result.stderr
    assert "held-out errors" in result.stdout
    assert any(line.startswith("matmul ") for line in result.stdout.splitlines()), result.stdout
    assert not (folder / "none.db").exists()  # --no-store: no database made
    _core.CostModel.from_text(out.read_text(), str(out))

    text = _run([OPCOST_BIN, "estimate", "aten::mm", *MM_1024.split(), "--model", out])
    assert text.returncode == 0, text.stderr
    assert "estimated, not measured" in text.stdout and "matmul family" in text.stdout
    as_json = _run([OPCOST_BIN, "estimate", "aten::mm", *MM_1024.split(), "--model", out, "--json"])
    assert as_json.returncode == 0, as_json.stderr
    document = json.loads(as_json.stdout)
    assert document["estimated"] is True and document["gpu"] == GPU and document["out_of_range"] == []
    # Every figure with its interval: host time and power as time and energy.
    low, high = document["host_us_interval"]
    assert low < document["host_us"] < high


def test_opcost_estimate_without_a_model_exits_2_in_one_line(tmp_path, fitted):
    call = [OPCOST_BIN, "estimate", "aten::mm", *MM_1024.split()]
    missing = _run(call + ["--db", tmp_path / "none.db"])
    assert missing.returncode == 2
    assert "has no cost model; fit one (opcost fit" in _one_line(missing.stderr)
    db = tmp_path / "fresh.db"
    measured = _run([OPCOST_BIN, "measure", "aten::relu", "self=f32[64]", "--device", "cpu", "--no-energy",
                     "--max-time", "0.05", "--db", db])
    assert measured.returncode == 0, measured.stderr
    fresh = _run(call + ["--db", db])
    assert fresh.returncode == 2
    assert "has no cost model; fit one (opcost fit" in _one_line(fresh.stderr)
    with pytest.raises(_fit.FitError, match="no cost model stored; fit one first"):
        _fit.estimate("aten::mm", MM_1024, db=str(db))
    hostile = json.loads(fitted.model_json)
    hostile["families"]["matmul"]["targets"]["time"]["trees"][3]["feature"][0] = 999
    (tmp_path / "hostile.json").write_text(json.dumps(hostile))
    refused = _run(call + ["--model", tmp_path / "hostile.json"])
    assert refused.returncode == 2
    assert "trees[3] node 0: feature 999" in _one_line(refused.stderr)


def test_opcost_fit_runs_the_python_fit_and_refits_the_same_model(tmp_path, matmul_csv, python_fit):
    env = dict(os.environ, OPCOST_PYTHON=sys.executable, OPCOST_DB=str(tmp_path / "none.db"))
    out = tmp_path / "m.json"
    result = _run([OPCOST_BIN, "fit", "--csv", matmul_csv, "--no-store", "-o", out], env=env)
    assert result.returncode == 0, result.stderr
    assert "held-out errors" in result.stdout and "matmul " in result.stdout
    # The same rows fitted twice: the same model, tree for tree (only its creation time differs).
    assert _without_created_at(out.read_text()) == _without_created_at(python_fit[1].read_text())

    env["OPCOST_PYTHON"] = "/nonexistent/python"
    missing = _run([OPCOST_BIN, "fit", "--csv", matmul_csv, "--no-store"], env=env)
    assert missing.returncode == 2
    line = _one_line(missing.stderr)
    assert "/nonexistent/python" in line and "OPCOST_PYTHON" in line


def _mm_row(m: int, time_us: float, dtype: str = "f32", n: int = 64) -> "_fit._Row":
    row = _fit._Row(op="aten::mm", args=f"self={dtype}[{m},64] mat2={dtype}[64,{n}]", device="Made-up GPU",
                    cache_mode="warm", dtype=dtype, time_us=time_us, energy_mJ=None, host_us=None, power_W=None,
                    idle_W=None, work={})
    row.base_us = float(m)  # a base proportional to the size: y = log(time / m)
    return row


def test_scaled_estimates_residuals_are_each_calls_from_its_nearest_other_size():
    # M = 64, 128 (measured twice: their median), 512 of one call; M = 50, 100, 200 of another
    # (its mat2 is narrower: another weight, never its anchor): 100 is as near to 50 as to 200,
    # and the larger is taken. A bf16 call is another call too, with no other size of its own.
    rows = [_mm_row(64, 64.0), _mm_row(128, 140.0), _mm_row(128, 120.0), _mm_row(512, 1024.0),
            _mm_row(50, 55.0, n=32), _mm_row(100, 90.0, n=32), _mm_row(200, 260.0, n=32), _mm_row(64, 10.0, "bf16")]
    # Two repeats' median in log space: their geometric mean, √(140 · 120) ≈ 129.6 µs.
    y = {m: math.log(t / m) for m, t in ((64, 64.0), (128, math.sqrt(140.0 * 120.0)), (512, 1024.0), (50, 55.0),
                                          (100, 90.0), (200, 260.0))}
    residuals = _fit._scaled_residuals(rows, lambda r: math.log(r.time_us / r.base_us))
    # (estimate − measured in log space, |ln ratio|) of each distinct call.
    twice, four_times = math.log(2), math.log(4)
    expected = [(y[128] - y[64], twice), (y[64] - y[128], twice), (y[128] - y[512], four_times),
                (y[100] - y[50], twice), (y[200] - y[100], twice), (y[100] - y[200], twice)]
    assert len(residuals) == len(expected)
    for (r, d), (er, ed) in zip(sorted(residuals), sorted(expected)):
        assert (r, d) == (pytest.approx(er, rel=1e-12), pytest.approx(ed, rel=1e-12))
    # M = 128's scaled estimate from M = 64 is 64 µs × 128/64 = 128 µs against the 129.6 measured.
    assert math.expm1(y[64] - y[128]) == pytest.approx(128 / math.sqrt(140.0 * 120.0) - 1)
    # The interval is per unit of distance, ln 2 + |ln ratio|: the conformal quantile of
    # |residual| / distance.
    interval = _fit._scaled_interval(residuals, 0.5)
    ratios = sorted(abs(r) / (math.log(2) + d) for r, d in residuals)
    assert interval["log_halfwidth_per_distance"] == pytest.approx(ratios[math.ceil(7 * 0.5) - 1])
    assert interval["held_out"]["n_test"] == 6
