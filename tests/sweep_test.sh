#!/usr/bin/env bash
# `opcost sweep` end to end on the CPU: state in the database, a failing item recorded while
# the sweep goes on, a crashing worker isolated, kill -9 of the whole sweep then resume
# (nothing lost, nothing measured twice), the progress lines when not on a terminal.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
rows() { "$bin" db export --csv --db "$1" 2>/dev/null | tail -n +2 | wc -l; }
distinct_args() { "$bin" db export --json --db "$1" 2>/dev/null | grep -o '"args_hash":"[0-9a-f]*"' | sort -u | wc -l; }
# Waits until `sweep status` (with the sweep's options, after the pattern) shows the pattern (at
# most about 60 s). The tests wait for an item
# in hand ("running: "), which a sweep of slow items shows nearly all the time, so the polls of
# a loaded machine still land on one.
wait_for() {
  for _ in $(seq 120); do
    "$bin" sweep status "$1" --db "$2" "${@:4}" 2>/dev/null | grep -qE "$3" && return 0
    sleep 0.1
  done
  return 1
}
fast=(--device cpu --no-energy --max-time 0.05)
# Each item's timing loop runs its whole budget: slow enough to be killed mid-item.
slow=(--device cpu --no-energy --max-time 0.5 --target-ci 0.000001)

# 1. A grid with one item the op refuses at run time: recorded as failed, the others measured.
cat >"$dir/mm.yaml" <<'YAML'
name: mm-check
op: aten::mm
args: {self: "f32[8,{k}]", mat2: "f32[16,{n}]"}
axes: {k: [16, 8], n: [4, 8]}
data: [normal, {zeros: 0.5}]
YAML
"$bin" sweep "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" --progress-every 0 >"$dir/o1" 2>"$dir/e1"
check "a sweep with a failing item exits 1" test $? -eq 1
check "the failure is reported with its item" has "$dir/e1" "failed: aten::mm self=f32\[8,8\] mat2=f32\[16,4\]"
check "... and the op's reason" has "$dir/e1" "mat1 and mat2 shapes cannot be multiplied (8x8 and 16x4)"
check "the progress lines (not a terminal) count the items" has "$dir/e1" "mm-check: 8 of 8 items (100%)"
check "the summary counts done and failed" has "$dir/e1" "4 measured and 4 failed in this run"
"$bin" sweep status "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" >"$dir/s1"
check "status: 4 done" has "$dir/s1" "done     4"
check "status: 4 failed, with reasons" test "$(grep -c 'cannot be multiplied' "$dir/s1")" -eq 4
check "the data axis reached the database" test "$(rows "$dir/a.db")" -eq 4 -a "$(distinct_args "$dir/a.db")" -eq 4
"$bin" sweep status "$dir/mm.yaml" --db "$dir/a.db" --device cpu --no-energy >"$dir/s1b"
check "status at other settings counts none of them" has "$dir/s1b" "done     0"
check "... and says the sweep has items at other settings" has "$dir/s1b" "elsewhere 8 items of this sweep at other settings"
# One story, not "pending 8 (8 not yet in the database)" beside "elsewhere 8": the counts are
# said to be at the options shown, which are those given.
check "... the counts said to be at the options given" has "$dir/s1b" "^  at       --device cpu --cache warm --seed 0 --max-time 1 --target-ci 0.01 --no-energy"
check "... its pending ones never run at them" has "$dir/s1b" "pending  8 (8 never run at these options)"
check "... and not said missing from the database" lacks "$dir/s1b" "not yet in the database"
check "zeros are in the stored signature" test "$("$bin" db list --db "$dir/a.db" 2>/dev/null | grep -c ':zeros\[0.5\]')" -eq 2

# 2. Run again: nothing to do; --retry-failed tries the failed again; --force measures all.
"$bin" sweep "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" 2>"$dir/e2"
check "a finished sweep exits 0" test $? -eq 0
check "a finished sweep measures nothing" has "$dir/e2" "nothing to measure: 4 items done and 4 failed"
check "... and still 4 rows" test "$(rows "$dir/a.db")" -eq 4
"$bin" sweep "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" --retry-failed 2>"$dir/e3"
check "--retry-failed tries only the failed" has "$dir/e3" "0 measured and 4 failed in this run"
"$bin" sweep "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" --force 2>"$dir/e4"
check "--force measures everything again" has "$dir/e4" "4 measured and 4 failed in this run"
check "... adding 4 rows" test "$(rows "$dir/a.db")" -eq 8
"$bin" sweep "$dir/mm.yaml" --db "$dir/a.db" "${fast[@]}" --dry-run >"$dir/o5" 2>"$dir/e5"
check "--dry-run lists every item" test "$(wc -l <"$dir/o5")" -eq 8
check "--dry-run says what is left and bounds the time" has "$dir/e5" "8 items .*4 done and 4 failed in .*0 to measure"

# 3. A worker killed mid-item (a crash): that item is failed with what happened, the rest go on.
cat >"$dir/slow.yaml" <<'YAML'
name: slow
op: aten::mm
args: {self: "f32[{n},64]", mat2: "f32[64,64]"}
axes: {n: [60, 61, 62, 63, 64, 65, 66, 67, 68, 69]}
YAML
# Starts a sweep of slow.yaml into DB with the extra options, kills its worker mid-item once a
# few items are done, and leaves the sweep's exit status in $status.
# $in_hand: the items the frozen worker must hold (1 unless set: a group's are claimed one by one).
kill_a_worker_mid_run() {
  local db=$1 err=$2 want=${in_hand:-1}; shift 2
  "$bin" sweep "$dir/slow.yaml" --db "$db" "${slow[@]}" "$@" 2>"$err" &
  local sweep=$!
  check "the sweep of $db has an item in hand" wait_for "$dir/slow.yaml" "$db" "^running: " "${slow[@]}" "$@"
  # The worker is frozen before the kill and the database asked again: on a loaded machine the
  # item seen above may be over by now, and a kill between two items fails none (CI saw that).
  local held=false
  for _ in $(seq 50); do
    pkill -STOP -P "$sweep" -f -- "--worker --sweep-name"
    if [ "$("$bin" sweep status "$dir/slow.yaml" --db "$db" "${slow[@]}" "$@" 2>/dev/null | grep -c "^running: ")" -eq "$want" ]; then
      held=true
      break
    fi
    pkill -CONT -P "$sweep" -f -- "--worker --sweep-name"
    sleep 0.05
  done
  check "the frozen worker of $db holds an item" $held
  pkill -9 -P "$sweep" -f -- "--worker --sweep-name"
  wait $sweep
  status=$?
}
# 3a. Killed once (from outside, a lost node): the item goes back and a fresh worker does it.
kill_a_worker_mid_run "$dir/r.db" "$dir/e6"
check "a worker killed once: the sweep still exits 0" test $status -eq 0
check "... says the item goes back" has "$dir/e6" "the worker process was killed by signal 9 (Killed) while measuring it; it goes back for another try"
check "... and does it" has "$dir/e6" "10 measured and 0 failed in this run (.*, 1 worker crash)"
# 3b. An item that kills its worker every time is isolated: with --max-attempts 1, at once.
kill_a_worker_mid_run "$dir/c.db" "$dir/e6b" --max-attempts 1
check "a crashed item makes the sweep exit 1" test $status -eq 1
check "the crash is reported" has "$dir/e6b" "the worker process was killed by signal 9 (Killed) while measuring it (again); the sweep goes on"
"$bin" sweep status "$dir/slow.yaml" --db "$dir/c.db" "${slow[@]}" >"$dir/s6"
check "status: 9 done after the crash" has "$dir/s6" "done     9"
check "status: the crashed item failed, with why" has "$dir/s6" "was killed by signal 9"

# 3c. Items measured together (--energy-group 5) when their worker is killed: the death is none
# of theirs for sure, so none fails even at --max-attempts 1; each is measured again, alone.
in_hand=5 kill_a_worker_mid_run "$dir/g5.db" "$dir/e6c" --max-attempts 1 --energy-group 5
check "a worker killed holding a group: exit 0" test $status -eq 0
check "... says the group goes back, alone" has "$dir/e6c" "while measuring 5 items together; each goes back for another try, alone"
check "... and measures them all" has "$dir/e6c" "10 measured and 0 failed in this run (.*, 1 worker crash)"
check "... each once" test "$(rows "$dir/g5.db")" -eq 10 -a "$(distinct_args "$dir/g5.db")" -eq 10
# A group with items the op refuses: those fail, the others are measured.
"$bin" sweep "$dir/mm.yaml" --db "$dir/g8.db" "${fast[@]}" --energy-group 8 --progress-every 0 2>"$dir/e6d"
check "a group of 8 with 4 refused items: 4 measured, 4 failed" has "$dir/e6d" "4 measured and 4 failed in this run"
# Every item was claimed before any was done (the progress line of each start: 0 of 8), where
# one at a time the first is done before the second starts.
check "... all 8 claimed together" test "$(grep -c "mm-check: 0 of 8 items (0%)" "$dir/e6d")" -ge 8
check "... not so one at a time" test "$(grep -c "mm-check: 0 of 8 items (0%)" "$dir/e1")" -le 2
check "... the refusal named with its item" has "$dir/e6d" "failed: aten::mm self=f32\[8,8\] mat2=f32\[16,4\]"
"$bin" sweep "$dir/mm.yaml" --db "$dir/g8.db" "${fast[@]}" --energy-group 65 2>"$dir/e6e"
check "--energy-group past 64 is refused, naming the bound" has "$dir/e6e" "energy-group: must be a whole number from 0 to 64, not 65"

# 4. kill -9 of the whole sweep (supervisor and worker), then resume: every item measured once.
setsid "$bin" sweep "$dir/slow.yaml" --db "$dir/k.db" "${slow[@]}" >/dev/null 2>&1 &
group=$!
check "the sweep has an item in hand (to kill it mid-run)" wait_for "$dir/slow.yaml" "$dir/k.db" "^running: " "${slow[@]}"
kill -9 -- -"$group"
wait $group 2>/dev/null
"$bin" sweep status "$dir/slow.yaml" --db "$dir/k.db" "${slow[@]}" >"$dir/s7"
check "the killed sweep left items to do" grep -qE "done +[0-9]$" "$dir/s7"
before=$(rows "$dir/k.db")
"$bin" sweep "$dir/slow.yaml" --db "$dir/k.db" "${slow[@]}" 2>"$dir/e8"
check "the resumed sweep exits 0" test $? -eq 0
check "it measured only what was left" has "$dir/e8" "$((10 - before)) measured and 0 failed in this run"
"$bin" sweep status "$dir/slow.yaml" --db "$dir/k.db" "${slow[@]}" >"$dir/s8"
check "every item done" has "$dir/s8" "done     10"
check "nothing measured twice" test "$(rows "$dir/k.db")" -eq 10 -a "$(distinct_args "$dir/k.db")" -eq 10

# 4b. Eight workers at once on the CPU: every item once; one of them killed mid-item, its item
# done by another.
cat >"$dir/many.yaml" <<'YAML'
name: many
op: aten::mm
args: {self: "f32[{n},64]", mat2: "f32[64,64]"}
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]}
YAML
many=(--device cpu --no-energy --max-time 2 --target-ci 0.000001)
"$bin" sweep "$dir/many.yaml" --db "$dir/w.db" "${many[@]}" --workers 8 2>"$dir/e20" &
sweep=$!
# Each item loops for its whole 2 s, so 24 items on 8 workers take 6 s or more: a worker that
# status shows with an item is killed while it measures it.
check "eight workers have items in hand" wait_for "$dir/many.yaml" "$dir/w.db" "^running: " "${many[@]}"
# Its worker processes, found by their command line (asking status for one with an item in hand
# raced: on a loaded machine a status call takes seconds, and the sweep could end meanwhile).
victim=$(pgrep -P "$sweep" -f -- "--worker --sweep-name" | head -1)
check "a worker to kill" test -n "$victim"
# The database reaches a worker through its environment, never its command line (which `ps`
# shows every local user): no --db among its words, $OPCOST_DB naming the sweep's database.
check "... whose command line has no --db" test -n "$(ps -o args= -p "$victim" | grep -v -- "--db\|w\.db")"
check "... and whose environment names the database" \
  grep -qxF "OPCOST_DB=$dir/w.db" <(tr '\0' '\n' <"/proc/$victim/environ" 2>/dev/null)
kill -9 "$victim"
wait $sweep
check "eight workers, one killed: exit 0" test $? -eq 0
# Killed mid-item, its item goes back; a loaded machine may let it finish the item first (the
# crash is then counted with no item lost: the checks below).
check "... its item went back, or it died between items" has "$dir/e20" "it goes back for another try\\|1 worker crash"
"$bin" sweep status "$dir/many.yaml" --db "$dir/w.db" "${many[@]}" >"$dir/s20"
check "eight workers: all 24 done" has "$dir/s20" "done     24"
check "... by more than one worker" grep -qE "workers  ([2-9]) " "$dir/s20"
check "eight workers: each item measured exactly once" test "$(rows "$dir/w.db")" -eq 24 -a "$(distinct_args "$dir/w.db")" -eq 24
"$bin" sweep "$dir/many.yaml" --db "$dir/x.db" --device cuda:1 --workers 2 2>"$dir/e21"
check "--workers with one named GPU is refused" has "$dir/e21" "names one GPU, and --workers 2 spreads"

# 5. Export: one row per measurement, the sweep and one column per axis; Parquet read back.
"$bin" db export --csv --db "$dir/a.db" --sweep mm-check -o "$dir/a.csv" 2>/dev/null
check "the CSV has the sweep and its axes as columns" grep -q ",sweep,axis_data,axis_k,axis_n$" "$dir/a.csv"
check "... one row per measurement (8 after --force)" test "$(tail -n +2 "$dir/a.csv" | wc -l)" -eq 8
check "... with the axis values" grep -q ",mm-check,zeros=0.5,16,8$" "$dir/a.csv"
"$bin" db export --json --db "$dir/a.db" --sweep nope >/dev/null 2>"$dir/e11"
check "an unknown sweep exits 2" test $? -eq 2
check "an unknown sweep lists the known ones" has "$dir/e11" "no such sweep in .*(its sweeps: mm-check)"
if [ -n "${OPCOST_PYTHON:-}" ] && "$OPCOST_PYTHON" -c "import pyarrow, pandas" 2>/dev/null; then
  "$bin" db export --db "$dir/a.db" --sweep mm-check --parquet "$dir/a.parquet" 2>"$dir/e12"
  check "Parquet export exits 0" test $? -eq 0
  "$OPCOST_PYTHON" - "$dir/a.parquet" >"$dir/o12" <<'PY'
import sys, pandas as pd
d = pd.read_parquet(sys.argv[1])
print(len(d), sorted(d["axis_data"].unique()), d["axis_k"].dtype, d["time_mean_us"].dtype,
      int((d["args"].str.contains(":zeros") == (d["axis_data"] == "zeros=0.5")).all()))
PY
  check "Parquet reads back in pandas: rows, axes, types" grep -qx "8 \['normal', 'zeros=0.5'\] int64 float64 1" "$dir/o12"
else
  echo "SKIPPED: Parquet round trip (no Python with pyarrow and pandas in \$OPCOST_PYTHON)"
fi
OPCOST_PYTHON=/nonexistent/python "$bin" db export --db "$dir/a.db" --parquet "$dir/b.parquet" 2>"$dir/e13"
check "Parquet without Python exits 2 and says the fix" test $? -eq 2
check "... naming OPCOST_PYTHON" has "$dir/e13" "set OPCOST_PYTHON"

# 6. A model list: every configuration's unique signatures, each measured once across them.
cat >"$dir/models.yaml" <<'YAML'
name: small-models
models:
  - {model: mnist-cnn, batch: [2, 4]}
  - {model: mnist-cnn, batch: 2, train: true}
YAML
"$bin" inventory mnist-cnn --batch 2 --device cpu --json >"$dir/inv1.json" 2>/dev/null
"$bin" inventory mnist-cnn --batch 4 --device cpu --json >"$dir/inv2.json" 2>/dev/null
"$bin" inventory mnist-cnn --batch 2 --train --device cpu --json >"$dir/inv3.json" 2>/dev/null
unique=$(python3 -c '
import json, sys
print(len({(o["op"], o.get("overload", ""), o["args"]) for f in sys.argv[1:] for o in json.load(open(f))["ops"]}))
' "$dir"/inv[123].json)
"$bin" sweep "$dir/models.yaml" --db "$dir/m.db" "${fast[@]}" 2>"$dir/e14"
check "a model list sweep exits 0" test $? -eq 0
"$bin" db export --csv --db "$dir/m.db" --sweep small-models -o "$dir/m.csv" 2>/dev/null
check "one row per unique signature over the models" test "$(tail -n +2 "$dir/m.csv" | wc -l)" -eq "$unique"
check "signatures shared by two models are measured once, and say so" grep -q ",small-models,.*,mnist-cnn batch=2,2$" "$dir/m.csv"
"$bin" sweep "$dir/models.yaml" --db "$dir/m.db" "${fast[@]}" 2>"$dir/e15"
check "a model list run again measures nothing" has "$dir/e15" "nothing to measure"
"$bin" sweep status "$dir/models.yaml" --db "$dir/m.db" "${fast[@]}" >"$dir/s15"
check "a model list's status reads the database, not the models" has "$dir/s15" "items (as the database has them"
check "... with every item done" grep -qE "done +$unique$" "$dir/s15"

printf 'models: [{model: "torchvision.models:resnet18", input: "f32[1,3,32,32]"}]\n' >"$dir/pymodels.yaml"
"$bin" sweep "$dir/pymodels.yaml" --db "$dir/p.db" "${fast[@]}" 2>"$dir/e17"
check "a Python model in the CLI's model list exits 2" test $? -eq 2
check "... and says to sweep it from Python" has "$dir/e17" "is a Python model; sweep this list from Python, which can run it: python -m opcost sweep .*pymodels.yaml"

# 7. A grid of zips, filters and broadcasts: listed by --dry-run, its rejected shapes recorded
# while the rest go on, its expression errors naming the item.
cat >"$dir/grid.yaml" <<'GRID'
name: add-grid
op: aten::add.Tensor
args: {self: "f32[{n},{m}]", other: "f32[{k}]", alpha: "{alpha}"}
axes: {n: [4, 64], alpha: [1, 2]}
zip: [{m: [8, 16], k: [8, 3]}]
where: "n * m <= 512"
GRID
"$bin" sweep "$dir/grid.yaml" --dry-run --db "$dir/g.db" "${fast[@]}" >"$dir/g1" 2>"$dir/ge1"
check "grid dry run exits 0" test $? -eq 0
check "grid dry run lists the 6 items" test "$(wc -l <"$dir/g1")" -eq 6
check "grid dry run first item" test "$(head -1 "$dir/g1")" = "aten::add.Tensor self=f32[4,8] other=f32[8] alpha=1"
check "grid dry run counts the filtered" has "$dir/ge1" "6 items (2 combinations filtered out"
check "grid dry run bounds the GPU time" has "$dir/ge1" "6 to measure, at most about"
"$bin" sweep "$dir/grid.yaml" --db "$dir/g.db" "${fast[@]}" 2>"$dir/ge2"
check "grid run goes on past the shapes that do not broadcast" has "$dir/ge2" "4 measured and 2 failed in this run"
printf 'op: aten::relu\nargs: {self: "f32[{n // m}]"}\naxes: {n: [4], m: [0]}\n' >"$dir/bad-grid.yaml"
"$bin" sweep "$dir/bad-grid.yaml" --db "$dir/g.db" "${fast[@]}" 2>"$dir/ge4"
check "a grid with a failing expression exits 2" test $? -eq 2
check "... naming the item and the cause" grep -q "(item n=4, m=0).*division by zero" "$dir/ge4"
printf 'op: aten::relu\nargs: {self: "f32[{n}]"}\naxes: {n: [4]}\nwhere: "n > 10"\n' >"$dir/empty-grid.yaml"
"$bin" sweep "$dir/empty-grid.yaml" --db "$dir/g.db" "${fast[@]}" 2>"$dir/ge5"
check "a grid filtered to nothing exits 2" test $? -eq 2
check "... and says so" has "$dir/ge5" "filters out all 1 combinations"

# 8. Bad input: a file that is no grid, and status of a sweep never run.
printf 'op: aten::mm\nargs: {self: "f32[4,4]"}\naxes: {n: []}\n' >"$dir/bad.yaml"
"$bin" sweep "$dir/bad.yaml" --db "$dir/b.db" "${fast[@]}" 2>"$dir/e9"
check "a bad grid exits 2" test $? -eq 2
check "a bad grid names the file and the key" has "$dir/e9" "bad.yaml: axes.n must be a non-empty list"
check "a bad grid creates no database" test ! -e "$dir/b.db"
"$bin" sweep status "$dir/mm.yaml" --db "$dir/none.db" >"$dir/s10"
"$bin" sweep "$dir/mm.yaml" --db "$dir/none.db" --max-time 1 --max-time 2 2>"$dir/e16"
check "a repeated option is named as such, not as an unknown command" has "$dir/e16" "--max-time: At Most 1 required"
check "status of a sweep never run: all pending" has "$dir/s10" "pending  8 (8 never run at these options)"

finish
