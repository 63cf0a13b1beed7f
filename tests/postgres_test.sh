#!/usr/bin/env bash
# opcost on PostgreSQL, end to end on the CPU, against a throw-away server this test starts
# (tests/tools/postgres_cluster.sh: initdb and pg_ctl in a temporary directory, a Unix socket,
# a user that is not root):
#   - the engine-independent unit tests (database, sweep queue) on the server;
#   - measure, db list/show/export on a postgresql:// database;
#   - the queue under 8 sweeps started at once (8 "nodes" of one worker): every item done
#     exactly once;
#   - one sweep of 8, then 16 workers, one of them killed with SIGKILL: nothing lost or stored
#     twice, and the queue's rate printed (issue 33's CPU part);
#   - kill -9 of a sweep and its worker mid-item: another node's worker takes the item when its
#     lease runs out, and it completes, once;
#   - db copy SQLite -> PostgreSQL -> SQLite: the same rows and sweep columns; copying again
#     adds nothing;
#   - a URL's password in no message, listing or worker command line (`ps`), CLI and Python.
# Skips (exit 77) where no PostgreSQL server programs are installed, saying so.
set -uo pipefail
bin=$1; core_tests=$2; dir=$3
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
cluster=$(dirname "$0")/tools/postgres_cluster.sh
if ! base=$("$cluster" start "$dir/pg" 2>"$dir/pg-start.err"); then
  if grep -q "no initdb" "$dir/pg-start.err"; then
    echo "SKIP: $(cat "$dir/pg-start.err")"
    exit 77
  fi
  cat "$dir/pg-start.err"; exit 1
fi
trap '"$cluster" stop "$dir/pg"' EXIT
newdb() { "$cluster" createdb "$dir/pg" "$1"; }
fast=(--device cpu --no-energy --max-time 0.05)
slow=(--device cpu --no-energy --max-time 0.6 --target-ci 0.000001)
rows() { "$bin" db export --csv --db "$1" 2>/dev/null | tail -n +2 | wc -l; }
distinct_args() { "$bin" db export --json --db "$1" 2>/dev/null | grep -o '"args_hash":"[0-9a-f]*"' | sort -u | wc -l; }

# 1. The unit tests of both engines, now with a server.
OPCOST_TEST_POSTGRES=$base "$core_tests" --gtest_filter='Engines/*' --gtest_brief=1 >"$dir/unit.log" 2>&1
check "database and queue unit tests pass on PostgreSQL" test $? -eq 0
check "... and none of them skipped" lacks "$dir/unit.log" "SKIPPED"

# 2. The commands on a postgresql:// database.
url=$(newdb cli)
"$bin" measure aten::relu self=f32[64] --db "$url" "${fast[@]}" >/dev/null 2>"$dir/m.err"
check "measure stores into PostgreSQL" test $? -eq 0
check "... and says where" has "$dir/m.err" "stored as row 1 in postgresql://opcost@"
"$bin" db list --db "$url" >"$dir/list" 2>&1
check "db list reads it" has "$dir/list" "aten::relu"
"$bin" db show 1 --db "$url" >"$dir/show" 2>&1
check "db show reads the document" has "$dir/show" '"op": "aten::relu"'
"$bin" db list --db "${base}/nosuchdb" >"$dir/bad" 2>&1
check "an unknown database is one line naming it" test "$(wc -l <"$dir/bad")" -eq 1 -a "$(grep -c 'nosuchdb: cannot connect' "$dir/bad")" -eq 1
# The server trusts local users, so a password in the URL is never asked for: it is the secret
# that no message or listing may show.
secret=S3cret-PG-pw
pw() { echo "${1/opcost@/opcost:$secret@}"; }
"$bin" db list --db "$(pw "$url")" >"$dir/pw-list" 2>&1
check "db list with a password in the URL reads it" has "$dir/pw-list" "aten::relu"
check "... and names the database without the password" has "$dir/pw-list" "rows in postgresql://opcost:\*\*\*@"
"$bin" db show 99999 --db "$(pw "$url")" >"$dir/pw-show" 2>&1
check "db show of a missing row names the database without the password" has "$dir/pw-show" "no row 99999 in postgresql://opcost:\*\*\*@"
"$bin" measure aten::relu self=f32[64] --db "$(pw "$url")" "${fast[@]}" >/dev/null 2>"$dir/pw-m.err"
"$bin" db list --db "$(pw "$base")/nosuchdb" >"$dir/pw-bad" 2>&1
OPCOST_DB=$(pw "$url") "$bin" db list --db "" >"$dir/pw-empty" 2>&1
check "no message shows the password" test -z "$(grep -l "$secret" "$dir"/pw-list "$dir"/pw-show "$dir"/pw-m.err "$dir"/pw-bad "$dir"/pw-empty)"

# 3. Eight sweeps at once on one database (eight nodes of one worker each): every item exactly once.
cat >"$dir/grid.yaml" <<'YAML'
name: queue-check
op: aten::add
args: {self: "f32[{n}]", other: "f32[{n}]"}
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32]}
YAML
q=$(newdb queue)
pids=()
for i in $(seq 8); do
  "$bin" sweep "$dir/grid.yaml" --db "$q" "${fast[@]}" --progress-every 0 >"$dir/q$i.out" 2>"$dir/q$i.err" &
  pids+=($!)
done
ok=0
for p in "${pids[@]}"; do wait "$p" || ok=1; done
check "eight concurrent sweeps all succeed" test $ok -eq 0
check "every item is stored once: 32 rows" test "$(rows "$q")" -eq 32
check "... of 32 distinct calls" test "$(distinct_args "$q")" -eq 32
"$bin" sweep status "$dir/grid.yaml" --db "$q" "${fast[@]}" >"$dir/qs" 2>&1
check "status: 32 done" has "$dir/qs" "done     32"
workers=$(grep -o 'workers  [0-9]*' "$dir/qs" | grep -o '[0-9]*$')
check "more than one worker took items (${workers:-1})" test "${workers:-1}" -gt 1

# 3b. One sweep of 8, then 16 workers on the one server (what issue 33's GPUs would run, on CPU
# tensors), one worker killed with SIGKILL mid-run: no item lost or stored twice, and the queue's
# rate printed so that a slowdown shows in the log.
cat >"$dir/wide.yaml" <<'YAML'
name: queue-wide
op: aten::mul
args: {self: "f32[{n}]", other: "f32[{n}]"}
axes: {n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48]}
YAML
for n in 8 16; do
  w=$(newdb "wide$n")
  started=$(date +%s.%N)
  "$bin" sweep "$dir/wide.yaml" --db "$w" "${fast[@]}" --workers "$n" --progress-every 0 >/dev/null 2>"$dir/w$n.err" &
  sweep=$!
  # Once every worker runs and a few items are done (a status poll loads LibTorch: too slow for
  # a sweep of seconds; pgrep and the progress lines are not), the newest worker is killed.
  for _ in $(seq 600); do
    [ "$(pgrep -c -f -- "--worker --sweep-name queue-wide")" -ge "$n" ] && grep -q " of 48 items" "$dir/w$n.err" && break
    sleep 0.05
  done
  pkill -9 -n -f -- "--worker --sweep-name queue-wide"
  killed=$?
  wait $sweep
  status=$?
  elapsed=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  check "$n workers: a worker was killed mid-run" test $killed -eq 0
  check "$n workers: the sweep still exits 0 (the item went back)" test $status -eq 0
  check "$n workers: every item stored once: 48 rows of 48 distinct calls" \
    test "$(rows "$w")" -eq 48 -a "$(distinct_args "$w")" -eq 48
  check "$n workers: the crash is counted" has "$dir/w$n.err" "1 worker crash"
  echo "queue: $n workers, 48 items claimed and completed in $elapsed s ($(awk -v t="$elapsed" 'BEGIN { printf "%.1f", 48 / t }') items/s, one worker killed)"
done

# 4. A node lost mid-item: its sweep and worker are killed with SIGKILL while another node's sweep
#    runs. The other takes the item when the lease runs out; each item is stored once.
cat >"$dir/slow.yaml" <<'YAML'
name: lease-check
op: aten::mul
args: {self: "f32[{n}]", other: "f32[{n}]"}
axes: {n: [1, 2, 3, 4, 5, 6]}
YAML
k=$(newdb lease)
"$bin" sweep "$dir/slow.yaml" --db "$k" "${slow[@]}" --lease 3 --progress-every 0 >/dev/null 2>"$dir/lost.err" &
lost=$!
for _ in $(seq 100); do
  "$bin" sweep status "$dir/slow.yaml" --db "$k" "${slow[@]}" 2>/dev/null | grep -q "running: " && break
  sleep 0.1
done
"$bin" sweep "$dir/slow.yaml" --db "$k" "${slow[@]}" --lease 3 --progress-every 0 >/dev/null 2>"$dir/survivor.err" &
survivor=$!
sleep 0.5
kill -9 "$lost"  # its worker dies with it (it asked for SIGKILL when its parent dies)
wait "$lost" 2>/dev/null
wait "$survivor"
check "the surviving node's sweep finishes" test $? -eq 0
"$bin" sweep status "$dir/slow.yaml" --db "$k" "${slow[@]}" >"$dir/ks" 2>&1
check "every item done, the lost node's too" has "$dir/ks" "done     6"
check "... each stored once" test "$(rows "$k")" -eq 6 -a "$(distinct_args "$k")" -eq 6
# Taken again after its lease: its second attempt. Or, when the surviving sweep starts after the
# kill, put back by it at once: a claim stopped from outside is no attempt, so its first.
attempts=$("$cluster" sql "$dir/pg" lease "SELECT max(attempts) FROM sweep_items")
check "the lost item was taken again, as its first or second attempt (not $attempts)" \
  test "$attempts" -ge 1 -a "$attempts" -le 2

# 4b. The workers of a sweep get the database through their environment: `ps`, which every local
#     user may run, shows no password on any command line while they measure, whether the URL
#     came with --db or from $OPCOST_DB. (The supervisor's own --db is what the user typed.)
s=$(newdb secrets)
ps_while_workers() {  # ps_while_workers OUT PATTERN PID: the process list while PATTERN's processes run
  local seen=0
  for _ in $(seq 600); do
    if pgrep -f -- "$2" >/dev/null; then ps -eo args >>"$1"; seen=1; fi
    kill -0 "$3" 2>/dev/null || break
    sleep 0.05
  done
  test $seen -eq 1
}
"$bin" sweep "$dir/grid.yaml" --db "$(pw "$s")" "${fast[@]}" --workers 2 --progress-every 0 >/dev/null 2>"$dir/pw-sweep.err" &
sweep=$!
check "ps saw the sweep's workers (--db)" ps_while_workers "$dir/pw-ps" "--worker --sweep-name queue-check" $sweep
wait $sweep
check "... which measured every item" test $? -eq 0 -a "$(rows "$s")" -eq 32
check "... no worker's command line held the password" test -z "$(grep -- "--worker --sweep-name" "$dir/pw-ps" | grep -- "$secret")"
check "... nor any message" lacks "$dir/pw-sweep.err" "$secret"
s2=$(newdb secrets_env)
OPCOST_DB=$(pw "$s2") "$bin" sweep "$dir/grid.yaml" "${fast[@]}" --workers 2 --progress-every 0 >/dev/null 2>"$dir/pw-env.err" &
sweep=$!
check "ps saw the sweep's workers (\$OPCOST_DB)" ps_while_workers "$dir/pw-env-ps" "--worker --sweep-name queue-check" $sweep
wait $sweep
check "... which measured every item" test $? -eq 0 -a "$(rows "$s2")" -eq 32
check "... no command line at all held the password" lacks "$dir/pw-env-ps" "$secret"
check "... nor any message" lacks "$dir/pw-env.err" "$secret"

# 5. db copy: SQLite -> PostgreSQL -> SQLite gives the same rows and the same sweep columns.
"$bin" sweep "$dir/grid.yaml" --db "$dir/local.db" "${fast[@]}" --progress-every 0 >/dev/null 2>&1
"$bin" measure aten::relu self=f32[7] --db "$dir/local.db" "${fast[@]}" >/dev/null 2>&1
c=$(newdb copy)
"$bin" db copy "$dir/local.db" "$c" 2>"$dir/c1"
check "db copy into PostgreSQL" has "$dir/c1" "copied 33 measurements"
"$bin" db copy "$dir/local.db" "$c" 2>"$dir/c2"
check "copying again adds nothing" has "$dir/c2" "copied 0 measurements .* (33 were there already)"
"$bin" db copy "$c" "$dir/back.db" 2>"$dir/c3"
check "db copy back into a new SQLite file" has "$dir/c3" "copied 33 measurements"
"$bin" db export --csv --db "$dir/local.db" >"$dir/local.csv"
"$bin" db export --csv --db "$dir/back.db" >"$dir/back.csv"
check "the round trip keeps every row, column and axis" cmp -s "$dir/local.csv" "$dir/back.csv"
check "... the sweep's axes among them" test "$(grep -c ',queue-check,' "$dir/back.csv")" -eq 32
"$bin" sweep "$dir/grid.yaml" --db "$c" "${fast[@]}" 2>"$dir/c4"
check "the copied sweep state says it is done" has "$dir/c4" "nothing to measure: 32 items done"

# 6. From Python: opcost.sweep into a postgresql:// database (where the extension is built).
if [ -n "${OPCOST_PYTHON:-}" ] && PYTHONPATH=${OPCOST_PYTHONPATH:-} "$OPCOST_PYTHON" -c "import opcost" 2>/dev/null; then
  py=$(newdb python)
  # The URL, with a password, in the script's environment (not on its command line: `ps` would
  # show it there); its workers must not show it either.
  PY_DB=$(pw "$py") PYTHONPATH=${OPCOST_PYTHONPATH:-} "$OPCOST_PYTHON" - "$dir/grid.yaml" \
    >"$dir/py.out" 2>"$dir/py.err" <<'PY' &
import os, sys
import opcost
db = os.environ["PY_DB"]
r = opcost.sweep(sys.argv[1], db=db, device="cpu", energy=False, max_time=0.05, workers=2, progress=False)
s = opcost.sweep_status(sys.argv[1], db=db, device="cpu", energy=False, max_time=0.05)
print("measured", r.measured, "done", s.done)
PY
  pysweep=$!
  check "ps saw the Python sweep's workers" ps_while_workers "$dir/py-ps" "opcost[.]_sweep_worker" $pysweep
  wait $pysweep
  check "opcost.sweep from Python into PostgreSQL, 2 workers" has "$dir/py.out" "measured 32 done 32"
  check "... every call stored once" test "$(rows "$py")" -eq 32 -a "$(distinct_args "$py")" -eq 32
  check "... no worker's command line held the password" lacks "$dir/py-ps" "$secret"
  check "... nor any message" lacks "$dir/py.err" "$secret"
else
  echo "SKIPPED: the Python check (no opcost extension for \$OPCOST_PYTHON)"
fi

finish
