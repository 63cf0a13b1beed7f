"""The model corpus (docs/corpus.md): CI's subset of the tiny corpus through `python -m opcost
corpus` on the CPU against the committed floor (tests/corpus/coverage_floor.json), a run past its
time-out isolated from the next, and the coverage table's formatting and floor check on results
written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from opcost import _corpus, _corpus_models, _corpus_table

FLOOR = Path(__file__).with_name("coverage_floor.json")
# The corpus's own budget is ctest's TIMEOUT (tests/CMakeLists.txt); this only stops a lost run.
CORPUS_TIMEOUT_S = 1800


def corpus(*args: str, timeout: float = CORPUS_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "opcost", "corpus", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=timeout)


def test_the_tiny_corpus_stays_at_or_above_its_floor(tmp_path):
    out = tmp_path / "corpus.json"
    run = corpus("--size", "tiny", "--subset", "ci", "--json", str(out), "--floor", str(FLOOR),
                 "--timeout-per-model", "240")
    sys.stderr.write(run.stdout)  # the table, in the test's log when it fails
    doc = json.loads(out.read_text())
    floor, cov = json.loads(FLOOR.read_text()), doc["coverage"]
    # Every run of the corpus has a result (a hang or a crash is a result too, never a lost run).
    assert {r["run"] for r in doc["runs"]} == set(_corpus_models.CI_SUBSET)
    assert run.returncode == 0, run.stderr[-3000:]
    for key in _corpus_table.FLOOR_COUNTS:
        assert cov[key] >= floor[key], (key, cov[key], floor[key])
    assert not set(floor["passed"]) - set(cov["passed"]), sorted(set(floor["passed"]) - set(cov["passed"]))
    assert _corpus_table.summary_line(cov) in run.stdout


def test_a_run_past_its_time_out_is_killed_and_the_next_one_still_runs(tmp_path):
    # 0.5 s is less than any run takes (validate's paired rounds alone take a second): both
    # runs time out, each in its own worker, and the command still answers for both.
    out = tmp_path / "corpus.json"
    run = corpus("--only", r"handwritten/(inplace|views):inference$", "--timeout-per-model", "0.5",
                 "--json", str(out), timeout=300)
    assert run.returncode == 1, run.stderr  # failures, and no floor given
    runs = json.loads(out.read_text())["runs"]
    assert [(r["run"], r["status"]) for r in runs] == [("handwritten/inplace:inference", "timeout"),
                                                       ("handwritten/views:inference", "timeout")]
    assert "no answer within --timeout-per-model 0.5 s" in runs[0]["reason"]


@pytest.mark.parametrize("args, message", [
    (["--only", "("], "not a regular expression"),
    (["--only", "no-such-model"], "no run of the corpus matches"),
    (["--timeout-per-model", "0"], "use a number of seconds above 0"),
])
def test_bad_options_are_one_line_errors(args, message):
    run = corpus(*args, timeout=120)
    assert run.returncode == 2 and message in run.stderr and len(run.stderr.strip().splitlines()) == 1, run.stderr


def test_a_file_that_is_no_floor_is_refused(tmp_path):
    bad = tmp_path / "floor.json"
    bad.write_text('{"runs_passed": "many"}')
    run = corpus("--floor", str(bad), "--only", "handwritten/einsum:inference", timeout=120)
    assert run.returncode == 2 and "expected {runs_passed" in run.stderr, run.stderr


# ---------------------------------------------------------------------------------------- the table

def result(run: str, status: str = "passed", stage: str = "", reason: str = "", replayed=(5, 5), ok=5,
           failed=0, pending=False):
    model, mode = run.rsplit(":", 1)
    return {"run": run, "model": model, "source": model.split("/")[0], "mode": mode, "precision": "fp32",
            "status": status, "stage": stage, "reason": reason, "signatures": replayed[1], "seconds": 1.5,
            "round_trip": {"ok": ok, "failed": [{"signature": "s", "error": "e"}] * failed, "pending": pending},
            "replay": {"replayed": replayed[0], "validated_signatures": replayed[1], "not_replayed": [],
                       "failures": 0, "other_errors": []}, "paired_time_error": 0.125}


RESULTS = [
    result("tv/a:inference"),
    result("tv/a:training", "failed", "replay", "2 signature(s) not replayed: aten::index_put_ rejected the "
           "arguments self=f32[4,16] indices=[i64[4]]: index 7 is out of bounds", replayed=(3, 5)),
    result("tv/b:inference", "failed", "replay", "1 signature(s) not replayed: aten::index_put_ rejected the "
           "arguments self=f32[8,32] indices=[i64[9]]: index 12 is out of bounds", replayed=(9, 10)),
    result("hf/c:inference", "timeout", "timeout", "no answer within --timeout-per-model 5 s", replayed=(0, 0)),
]


def test_coverage_counts_runs_models_signatures_and_round_trips():
    cov = _corpus_table.coverage(RESULTS)
    assert (cov["runs"], cov["runs_passed"], cov["models"], cov["models_passed"]) == (4, 1, 3, 0)
    assert (cov["signatures_replayed"], cov["signatures"]) == (17, 20)
    assert (cov["round_trips_ok"], cov["round_trips_checked"], cov["round_trip_pending"]) == (20, 20, False)
    assert cov["passed"] == ["tv/a:inference"]


def test_the_table_has_a_row_per_run_the_families_and_failures_grouped_by_cause():
    text = _corpus_table.format_table(RESULTS, {"tv/a": ("a2", "a3")})
    lines = text.splitlines()
    assert lines[0].split() == ["run", "precision", "status", "replayed", "round", "trip", "time", "err", "s",
                                "reason"]
    assert lines[1].split()[:7] == ["tv/a:inference", "fp32", "passed", "5/5", "5/5", "+12%", "2"]
    assert lines[2].split()[3] == "3/5"
    assert "  tv/a: a2, a3" in lines
    # The two index_put_ failures differ only in shapes and numbers: one cause, two runs, first.
    at = lines.index("failures by cause:")
    assert lines[at + 1].startswith("  2 × replay: aten::index_put_ rejected the arguments self=T indices=[T]")
    assert lines[at + 2].strip() == "tv/a:training, tv/b:inference"
    assert lines[at + 3].startswith("  1 × timeout: no answer within --timeout-per-model N s")
    assert lines[-1] == ("runs passed 1/4, models passed 0/3, signatures replayed 17/20, round trips 20/20")


def test_a_long_reason_is_cut_in_the_table_but_kept_in_the_result():
    long = result("tv/d:inference", "failed", "inventory", "x" * 500)
    row = _corpus_table.format_table([long]).splitlines()[1]
    assert row.endswith("x" * (_corpus_table.TABLE_REASON_CHARS - 1) + "…") and long["reason"] == "x" * 500


def test_round_trips_pending_say_so():
    cov = _corpus_table.coverage([result("tv/a:inference", ok=0, pending=True)])
    assert cov["round_trip_pending"] and cov["round_trips_checked"] == 0
    assert "round trips pending" in _corpus_table.summary_line(cov)
    assert "pending" in _corpus_table.format_table([result("tv/a:inference", ok=0, pending=True)]).splitlines()[1]


def test_below_floor_names_a_dropped_count_and_a_run_that_stopped_passing():
    cov = _corpus_table.coverage(RESULTS)
    floor = {"runs_passed": 2, "models_passed": 0, "signatures_replayed": 17,
             "passed": ["tv/a:inference", "tv/b:inference"]}
    selected = [r["run"] for r in RESULTS]
    assert _corpus_table.below_floor(cov, floor, selected, whole_corpus=True) == [
        "runs_passed 1 < 2", "tv/b:inference passed at the floor, not now"]
    # A part of the corpus (--only) is held to its own runs only, not to the whole's counts.
    assert _corpus_table.below_floor(cov, floor, ["tv/a:inference"], whole_corpus=False) == []


def test_load_floor_refuses_what_is_not_a_floor(tmp_path):
    path = tmp_path / "floor.json"
    for text in ("[1, 2]", '{"passed": [1]}', "not json"):
        path.write_text(text)
        with pytest.raises(ValueError, match="--floor"):
            _corpus_table.load_floor(path)
    with pytest.raises(ValueError, match="--floor"):
        _corpus_table.load_floor(tmp_path / "missing.json")


def test_the_corpus_has_unique_names_enough_training_runs_and_a_ci_subset_of_its_runs():
    names = [m.name for m in _corpus_models.CORPUS]
    assert len(names) == len(set(names))
    for size in _corpus_models.SIZES:
        assert sum("training" in m.modes(size) for m in _corpus_models.CORPUS) >= 20
    tiny_runs = {f"{n}:{mode}" for n, mode in _corpus.select_runs(None, "both", "tiny")}
    assert _corpus_models.CI_SUBSET <= tiny_runs, sorted(_corpus_models.CI_SUBSET - tiny_runs)
    with pytest.raises(ValueError, match="size='huge'"):
        _corpus_models.CORPUS[0].build("huge")


def test_select_runs_matches_model_and_mode():
    assert _corpus.select_runs("handwritten/einsum", "both") == [("handwritten/einsum", "inference"),
                                                                  ("handwritten/einsum", "training")]
    assert _corpus.select_runs("handwritten/einsum:training", "both") == [("handwritten/einsum", "training")]
    assert _corpus.select_runs("handwritten/einsum", "inference") == [("handwritten/einsum", "inference")]
    # resnet50 trains at GPU sizes only; CI's subset leaves its inference run out too.
    assert _corpus.select_runs("torchvision/resnet50:", "both", "tiny") == [("torchvision/resnet50", "inference")]
    assert len(_corpus.select_runs("torchvision/resnet50:", "both", "gpu")) == 2
    assert _corpus.select_runs("torchvision/resnet50:", "both", "tiny", "ci") == []


def test_a_model_zoo_that_is_not_installed_is_named_with_the_command_that_installs_it(tmp_path):
    from opcost import _corpus_run

    def build(size):
        raise ModuleNotFoundError("No module named 'somezoo'", name="somezoo")

    r = _corpus_run.run_case(_corpus_models.CorpusModel("somezoo/net", build), "inference", "tiny", "cpu",
                             str(tmp_path / "ops.db"))
    assert r["status"] == "failed" and r["stage"] == "build", r
    assert "'somezoo'" in r["reason"] and "pip install somezoo" in r["reason"], r["reason"]
