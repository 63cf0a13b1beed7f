#!/usr/bin/env bash
# `opcost sweep --slurm` on a real single-node Slurm (Debian's slurm-wlm: munged, slurmctld and
# slurmd started by tests/tools/slurm_cluster.sh) against a throw-away PostgreSQL server: the
# printed sbatch script, then a 4-task job array of a small CPU sweep. Every item done once, by
# more than one task. Skips (exit 77), saying why, where Slurm or PostgreSQL cannot run here.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
tools=$(cd "$(dirname "$0")/tools" && pwd)
if ! base=$("$tools/postgres_cluster.sh" start "$dir/pg" 2>"$dir/pg.err"); then
  echo "SKIP: no PostgreSQL server for the test: $(head -1 "$dir/pg.err")"; exit 77
fi
trap '"$tools/slurm_cluster.sh" stop "$dir/slurm"; "$tools/postgres_cluster.sh" stop "$dir/pg"' EXIT
if ! conf=$("$tools/slurm_cluster.sh" start "$dir/slurm" 2>"$dir/slurm.err"); then
  echo "SKIP: Slurm cannot run here: $(tail -1 "$dir/slurm.err")"; exit 77
fi
export SLURM_CONF=$conf
db=$("$tools/postgres_cluster.sh" createdb "$dir/pg" slurm)
cat >"$dir/grid.yaml" <<'YAML'
name: slurm-check
op: aten::add
args: {self: "f32[{n}]", other: "f32[{n}]"}
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}
YAML
opts=(--device cpu --no-energy --max-time 0.2)

# 1. --dry-run prints the script: a 4-task array, no GPU asked on the CPU, each task one worker of
#    the same sweep on the same database.
cd "$dir"
"$bin" sweep grid.yaml --db "$db" "${opts[@]}" --slurm --array 4 --dry-run \
  --sbatch-option=--time=00:10:00 >"$dir/script" 2>"$dir/dry.err"
check "--slurm --dry-run prints a script" test $? -eq 0
check "... a 4-task job array" has "$dir/script" "^#SBATCH --array=0-3$"
check "... no GPU for a CPU sweep" lacks "$dir/script" "#SBATCH --gres"
check "... the extra #SBATCH line" has "$dir/script" "^#SBATCH --time=00:10:00$"
check "... each task one worker of the sweep, by absolute paths" \
  has "$dir/script" "^exec $bin sweep $dir/grid.yaml --db $db --device cpu --no-energy --max-time 0.2 --workers 1$"
check "... and nothing submitted" test -z "$(squeue -h 2>/dev/null)"
"$bin" sweep grid.yaml --db "$db" --no-energy --slurm --dry-run >"$dir/gpu-script" 2>/dev/null
check "a GPU sweep asks one GPU a task" has "$dir/gpu-script" "^#SBATCH --gres=gpu:1$"
"$bin" sweep grid.yaml --db "$dir/x.db" --slurm --dry-run >/dev/null 2>"$dir/sqlite.err"
check "--slurm refuses a SQLite file, naming the fix" has "$dir/sqlite.err" "give --db postgresql://"

# 2. Submitted: 4 tasks share the queue; every item is measured once.
"$bin" sweep grid.yaml --db "$db" "${opts[@]}" --slurm --array 4 >"$dir/submit.out" 2>"$dir/submit.err"
check "--slurm submits" test $? -eq 0
job=$(grep -o 'Slurm job [0-9]*' "$dir/submit.err" | grep -o '[0-9]*$')
check "... and names the job" test -n "$job"
check "... the script is kept beside" test -f "$dir/opcost-grid.sbatch"
for _ in $(seq 600); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.2
done
check "the job array finished" test -z "$(squeue -h -j "$job" 2>/dev/null)"
check "4 task logs" test "$(ls "$dir"/opcost-grid-"$job"_*.log 2>/dev/null | wc -l)" -eq 4
"$bin" sweep status grid.yaml --db "$db" "${opts[@]}" >"$dir/status" 2>&1
check "every item done" has "$dir/status" "done     16"
rows=$("$tools/postgres_cluster.sh" sql "$dir/pg" slurm "SELECT count(*), count(DISTINCT args_hash) FROM measurements")
check "... each stored once ($rows)" test "$rows" = "16|16"
tasks=$("$tools/postgres_cluster.sh" sql "$dir/pg" slurm "SELECT count(DISTINCT worker) FROM sweep_items")
check "... by more than one task ($tasks)" test "$tasks" -gt 1
finish
