#!/usr/bin/env bash
# `opcost sweep --slurm`: first the script alone (no server needed): hostile names and options
# never become shell commands, values no task can use are refused, no password is written;
# then, against a throw-away PostgreSQL server, a submission that fails (the script kept, 0600,
# without the password); then on a real single-node Slurm (Debian's slurm-wlm: munged,
# slurmctld and slurmd started by tests/tools/slurm_cluster.sh) a 4-task job array of a small
# CPU sweep, the database reaching the tasks through the environment. Every item done once, by
# more than one task. Skips (exit 77), saying why, where Slurm or PostgreSQL cannot run here.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
tools=$(cd "$(dirname "$0")/tools" && pwd)
cat >"$dir/grid.yaml" <<'YAML'
name: slurm-check
op: aten::add
args: {self: "f32[{n}]", other: "f32[{n}]"}
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}
YAML
opts=(--device cpu --no-energy --max-time 0.2)
secret=S3cret-Slurm-pw

# 0. The script alone (--dry-run connects to nothing). A sweep file whose name holds newlines
#    and shell commands, and the same in an option's value equal to the file's name.
cd "$dir"
hostile=$'nl\ntouch pwned-name\n$(touch pwned-subst)\n.yaml'
cp grid.yaml "$hostile"
fake="postgresql://me:$secret@db.invalid/opcost"
"$bin" sweep "$hostile" --db "$fake" "${opts[@]}" --slurm --array 2 --dry-run >"$dir/hostile.sbatch" 2>"$dir/hostile.err"
check "--dry-run of a hostile file name prints a script" test $? -eq 0
check "... with no password in it" lacks "$dir/hostile.sbatch" "$secret"
check "... its #SBATCH lines of safe characters only" test -z "$(grep '^#SBATCH' "$dir/hostile.sbatch" | grep -v '^#SBATCH --[a-z-]*=[A-Za-z0-9._%:-]*$')"
# Nothing made by a payload: no file named pwned… in the test's directory or the empty one the
# script runs in (the hostile file's own name starts with "nl").
nothing_made() { test -z "$(ls -A "$dir/run-header")$(find "$dir" -maxdepth 2 -name 'pwned*')"; }
# Its header run by bash (the lines before the task's exec) in an empty directory creates nothing.
mkdir -p "$dir/run-header"
sed '/^exec /,$d' "$dir/hostile.sbatch" >"$dir/header.sh"
(cd "$dir/run-header" && OPCOST_DB=x bash "$dir/header.sh" >/dev/null 2>&1)
check "the header, run by bash, creates nothing" nothing_made
# The whole script with `exec` caught by a function (bash looks functions up before builtins):
# the words the task would run, each ended by a NUL.
run_script() {  # the script $1, its exec caught: its words go to $2
  (cd "$dir/run-header" && OPCOST_DB=x bash -c 'out=$1; exec() { printf "%s\0" "$@" >"$out"; }; source "$2"' _ "$2" "$1")
}
run_script "$dir/hostile.sbatch" "$dir/words"
check "the whole script creates nothing either" nothing_made
check "... and runs the sweep of that very file, each word whole" \
  cmp -s "$dir/words" <(printf '%s\0' "$bin" sweep "$hostile" "${opts[@]}" --workers 1)
cp grid.yaml cpu
"$bin" sweep cpu --db "$fake" --device cpu --no-energy --slurm --dry-run >"$dir/cpu.sbatch" 2>/dev/null
run_script "$dir/cpu.sbatch" "$dir/cpu-words"
check "an option's value equal to the file's name stays in its place" \
  cmp -s "$dir/cpu-words" <(printf '%s\0' "$bin" sweep cpu --device cpu --no-energy --workers 1)
check "... the task starts in the submission's directory" has "$dir/cpu.sbatch" "^cd $dir$"
check "... reads the database from \$OPCOST_DB only" has "$dir/cpu.sbatch" 'if \[ -z "${OPCOST_DB:-}" \]'
# Refusals, each one line naming the value and the fix; nothing written.
refused() {  # refused NAME PATTERN ARGS...: exit 2, one line matching PATTERN, no script
  local name=$1 pattern=$2; shift 2
  "$bin" sweep grid.yaml --db "$fake" --slurm --dry-run "$@" >"$dir/refused.out" 2>"$dir/refused.err"
  local rc=$?
  check "$name: exit 2 ($rc)" test $rc -eq 2
  check "$name: one line saying why" test "$(wc -l <"$dir/refused.err")" -eq 1 -a "$(grep -c -- "$pattern" "$dir/refused.err")" -eq 1
  check "$name: no script" test ! -s "$dir/refused.out"
}
refused "an --sbatch-option holding a newline" "a #SBATCH line ends there" $'--sbatch-option=--time=1\ntouch pwned-option'
refused "an --sbatch-option that is no option" "is not an sbatch option" "--sbatch-option=touch"
refused "--export without the database" "keep ALL or name OPCOST_DB" "--sbatch-option=--export=NONE"
refused "--device cuda:1 (a task has one GPU)" "give --device cuda" --device cuda:1
refused "an unknown --device" "use auto, cpu, cuda or cuda:N" --device 'cpu;touch pwned'
refused "an unknown --cache" "use cold:<argument>" --cache 'cold:x y'
check "no refusal ran anything" nothing_made

if ! base=$("$tools/postgres_cluster.sh" start "$dir/pg" 2>"$dir/pg.err"); then
  echo "SKIP: no PostgreSQL server for the rest of the test: $(head -1 "$dir/pg.err")"; finish || exit 1; exit 77
fi
trap '"$tools/slurm_cluster.sh" stop "$dir/slurm"; "$tools/postgres_cluster.sh" stop "$dir/pg"' EXIT
db=$("$tools/postgres_cluster.sh" createdb "$dir/pg" slurm)
# The test server trusts local users: a password in the URL is sent only if asked, and is the
# secret that must appear nowhere.
pwdb=${db/opcost@/opcost:$secret@}

# 0b. sbatch cannot run (not on PATH): the script is kept, 0600, without the password, whether the
#     URL came on the command line or from $OPCOST_DB; the message has no password either.
PATH=/nonexistent "$bin" sweep grid.yaml --db "$pwdb" "${opts[@]}" --slurm 2>"$dir/nosbatch.err"
check "no sbatch: exit 1" test $? -eq 1
check "... one line, naming the kept script" test "$(wc -l <"$dir/nosbatch.err")" -eq 1 -a "$(grep -c "opcost-grid.sbatch is kept, without the password" "$dir/nosbatch.err")" -eq 1
check "... without the password" lacks "$dir/nosbatch.err" "$secret"
check "the script is 0600" test "$(stat -c %a "$dir/opcost-grid.sbatch")" = 600
check "... and holds no password" lacks "$dir/opcost-grid.sbatch" "$secret"
rm -f "$dir/opcost-grid.sbatch"
OPCOST_DB=$pwdb PATH=/nonexistent "$bin" sweep grid.yaml "${opts[@]}" --slurm 2>"$dir/nosbatch-env.err"
check "the URL from \$OPCOST_DB: no password in the script" lacks "$dir/opcost-grid.sbatch" "$secret"
check "... which is 0600" test "$(stat -c %a "$dir/opcost-grid.sbatch")" = 600
check "... nor in the message" lacks "$dir/nosbatch-env.err" "$secret"

if ! conf=$("$tools/slurm_cluster.sh" start "$dir/slurm" 2>"$dir/slurm.err"); then
  echo "SKIP: Slurm cannot run here: $(tail -1 "$dir/slurm.err")"; finish || exit 1; exit 77
fi
export SLURM_CONF=$conf

# 1. --dry-run prints the script: a 4-task array, no GPU asked on the CPU, each task one worker of
#    the same sweep on the same database.
"$bin" sweep grid.yaml --db "$db" "${opts[@]}" --slurm --array 4 --dry-run \
  --sbatch-option=--time=00:10:00 >"$dir/script" 2>"$dir/dry.err"
check "--slurm --dry-run prints a script" test $? -eq 0
check "... a 4-task job array" has "$dir/script" "^#SBATCH --array=0-3$"
check "... no GPU for a CPU sweep" lacks "$dir/script" "#SBATCH --gres"
check "... the extra #SBATCH line" has "$dir/script" "^#SBATCH --time=00:10:00$"
check "... each task one worker of the sweep, in the submission's directory" \
  has "$dir/script" "^exec $bin sweep grid.yaml --device cpu --no-energy --max-time 0.2 --workers 1$"
check "... and nothing submitted" test -z "$(squeue -h 2>/dev/null)"
"$bin" sweep grid.yaml --db "$db" --no-energy --slurm --dry-run >"$dir/gpu-script" 2>/dev/null
check "a GPU sweep asks one GPU a task" has "$dir/gpu-script" "^#SBATCH --gres=gpu:1$"
"$bin" sweep grid.yaml --db "$dir/x.db" --slurm --dry-run >/dev/null 2>"$dir/sqlite.err"
check "--slurm refuses a SQLite file, naming the fix" has "$dir/sqlite.err" "give --db postgresql://"

# 2. Submitted: 4 tasks share the queue; every item is measured once. The URL, password and all,
#    reaches them only through sbatch's environment.
"$bin" sweep grid.yaml --db "$pwdb" "${opts[@]}" --slurm --array 4 >"$dir/submit.out" 2>"$dir/submit.err"
check "--slurm submits" test $? -eq 0
check "... saying no password" lacks "$dir/submit.err" "$secret"
check "... from a 0600 script without it" test "$(stat -c %a "$dir/opcost-grid.sbatch")" = 600 -a -z "$(grep -l "$secret" "$dir/opcost-grid.sbatch")"
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
