#!/usr/bin/env bash
# The command line when things go wrong: writes that fail (a full disk, a read-only
# database), bad input of every kind, and the exit status of each case (README, "Exit status").
# A full disk is a file size limit (ulimit -f, with SIGXFSZ ignored so writes fail instead of
# killing the process) or /dev/full; a read-only database is one that another user owns.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
fast=(--device cpu --max-time 0.05 --no-energy)

db=$dir/ops.db
"$bin" measure --db "$db" "${fast[@]}" --spec /dev/stdin >/dev/null 2>&1 <<'YAML'
ops: ["aten::relu self=f32[64]", "aten::tanh self=f32[64]", "aten::gelu self=f32[64]", "aten::sigmoid self=f32[64]"]
YAML
check "a database to export" test "$("$bin" db list --db "$db" 2>/dev/null | grep -c aten::)" -eq 4

# 1. Exports onto a full disk fail with the path and the cause.
(trap '' XFSZ; ulimit -f 1; "$bin" db export --csv --db "$db" -o "$dir/full.csv") 2>"$dir/e1"
check "csv export onto a full disk exits 1" test $? -eq 1
check "csv export names the file and the cause" has "$dir/e1" "full.csv: cannot write: File too large"
check "a failed export leaves no partial file" test ! -e "$dir/full.csv"
check "and no temporary file" test -z "$(find "$dir" -maxdepth 1 -name '.full.csv.*')"
echo "the old export" >"$dir/old.csv"
(trap '' XFSZ; ulimit -f 1; "$bin" db export --csv --db "$db" -o "$dir/old.csv") 2>/dev/null
check "a failed export leaves the old file untouched" test "$(cat "$dir/old.csv")" = "the old export"
(trap '' XFSZ; ulimit -f 1; "$bin" db export --json --db "$db" -o "$dir/full.json") 2>"$dir/e2"
check "json export onto a full disk exits 1" test $? -eq 1
check "json export names the file" has "$dir/e2" "full.json: cannot write"
"$bin" db export --json --db "$db" >/dev/full 2>"$dir/e3"
check "json export to a full standard output exits 1" test $? -eq 1
check "it says standard output could not be written" has "$dir/e3" "standard output: cannot write: No space left on device"
"$bin" db export --csv --db "$db" -o "$dir/ok.csv" 2>"$dir/e4"
check "a whole export still works" test $? -eq 0 -a "$(wc -l <"$dir/ok.csv")" -eq 5
(trap '' XFSZ; ulimit -f 1; "$bin" inventory mnist-cnn --device cpu --json -o "$dir/inv.json") 2>"$dir/e5"
check "inventory -o onto a full disk exits 1 naming the file" has "$dir/e5" "inv.json: cannot write"

# 2. A database that cannot be written fails before anything is measured, naming its path.
ro=$dir/ro; mkdir -p "$ro"; cp "$db" "$ro/ro.db"
if [ "$(id -u)" -eq 0 ]; then
  as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }  # root writes anything
else
  as_other() { "$@"; }
fi
chmod 0555 "$ro"; chmod 0444 "$ro/ro.db"
as_other "$bin" measure aten::relu self=f32[64] "${fast[@]}" --db "$ro/ro.db" >"$dir/o6" 2>"$dir/e6"
check "a read-only database exits 2" test $? -eq 2
check "it names the path" has "$dir/e6" "ro/ro.db: cannot write"
check "and says what to do" has "$dir/e6" "permissions"
check "nothing was measured and thrown away" lacks "$dir/o6" "time/call"
as_other "$bin" db list --db "$ro/ro.db" >"$dir/o7" 2>/dev/null
check "a read-only database can still be listed" test "$(grep -c aten:: "$dir/o7")" -eq 4
chmod 0755 "$ro"; chmod 0644 "$ro/ro.db"
# A writable file in a read-only directory: SQLite cannot make its journal there. Found before
# measuring, not after ("not stored"), and validate says so instead of predicting nothing.
chmod 0666 "$ro/ro.db"; chmod 0555 "$ro"
as_other "$bin" measure aten::relu self=f32[64] "${fast[@]}" --db "$ro/ro.db" >"$dir/o6b" 2>"$dir/e6b"
check "a read-only directory exits 2" test $? -eq 2
check "it names the path" has "$dir/e6b" "ro/ro.db: cannot write"
check "before measuring: nothing printed" lacks "$dir/o6b" "time/call"
check "never 'not stored'" lacks "$dir/e6b" "not stored"
as_other "$bin" validate mnist-cnn --device cpu --batch 2 --max-time 0.05 --step-max-time 0.2 --no-energy \
  --db "$ro/ro.db" >"$dir/o6c" 2>"$dir/e6c"
check "validate on a read-only directory exits 2" test $? -eq 2
check "validate says it cannot write, in one line" test "$(grep -c "ro/ro.db: cannot write" "$dir/e6c")" -eq 1
check "validate predicts and compares nothing" lacks "$dir/o6c" "error"
chmod 0755 "$ro"; chmod 0644 "$ro/ro.db"

# 3. A spec run whose database fills the disk says so once, keeps the result it printed, and stops.
full=$dir/full.db
"$bin" measure aten::relu self=f32[8] "${fast[@]}" --db "$full" >/dev/null 2>&1
kb=$(( $(stat -c %s "$full") / 1024 ))
(trap '' XFSZ; ulimit -f "$kb"; "$bin" measure --db "$full" "${fast[@]}" --spec /dev/stdin >"$dir/o8" 2>"$dir/e8") <<'YAML'
ops: ["aten::relu self=f32[64]", "aten::tanh self=f32[64]", "aten::gelu self=f32[64]"]
YAML
check "a full database exits 1" test $? -eq 1
check "it says the database or disk is full, with the path" has "$dir/e8" "full.db: cannot .*database or disk is full"
check "once, not once per entry" test "$(grep -c "disk is full" "$dir/e8")" -eq 1
check "never 'no transaction is active'" lacks "$dir/e8" "no transaction"
check "the measurement it could not store is printed" has "$dir/o8" "aten::relu self=f32\[64\]"
check "and the run stops" has "$dir/e8" "stopped: nothing more can be stored; [0-9]* entries were not measured"
stored=$(sed -n 's/^opcost: \([0-9]*\) measured.*/\1/p' "$dir/e8")
check "the file keeps every row it took, and only those" \
  test "$("$bin" db list --db "$full" 2>/dev/null | grep -c aten::)" -eq "$((1 + stored))"

# 5. A positional value never silently replaces a named one.
"$bin" measure aten::relu self=f16[16,8] f32[3] "${fast[@]}" --no-store >/dev/null 2>"$dir/e9"
check "positional after named: exit 2" test $? -eq 2
check "positional after named: given twice" has "$dir/e9" "argument 'self' given twice"

# 6. Budgets must be positive.
"$bin" measure aten::relu self=f32[4] --max-time 0 --device cpu --no-store >/dev/null 2>"$dir/e10"
check "--max-time 0 is refused" test $? -eq 2
check "naming the option" has "$dir/e10" "max-time"
"$bin" measure aten::relu self=f32[4] --max-time -1 --device cpu --no-store >/dev/null 2>&1
check "--max-time -1 is refused" test $? -eq 2

# 9. Overloads are resolved from the arguments, and the choice is said.
"$bin" measure aten::add self=f32[64,64] other=f32[64,64] "${fast[@]}" --no-store >"$dir/o11" 2>"$dir/e11"
check "aten::add without an overload measures" test $? -eq 0
check "it says which overload it took" has "$dir/e11" "took aten::add.Tensor"
check "and measures that one" has "$dir/o11" "^aten::add.Tensor self=f32\[64,64\] other=f32\[64,64\]"

# 11. Databases are never made by accident.
"$bin" db list --db "" >/dev/null 2>"$dir/e12"
check "--db '' is refused" test $? -eq 2
check "--db '' says the path is empty" has "$dir/e12" "the path is empty"
"$bin" measure aten::relu self=f32[4] "${fast[@]}" --db "$dir/no/such/dir/x.db" >/dev/null 2>"$dir/e13"
check "a missing directory is refused" test $? -eq 2 -a ! -e "$dir/no"
check "naming it" has "$dir/e13" "the directory $dir/no/such/dir does not exist"
"$bin" db list --db "$dir/typo.db" >/dev/null 2>"$dir/e14"
check "db list of a mistyped path creates nothing" test $? -eq 2 -a ! -e "$dir/typo.db"
check "and says there is no database" has "$dir/e14" "typo.db: no database there"
"$bin" db export --csv --db "$dir/typo.db" >/dev/null 2>&1
check "db export of a mistyped path creates nothing" test ! -e "$dir/typo.db"

# 12. Huge shapes: one line, what they need, the fix.
"$bin" measure aten::relu self=f32[100000,100000,100] --device cpu --no-store >/dev/null 2>"$dir/e15"
check "huge shapes exit 2" test $? -eq 2
check "huge shapes: one line" lines "$dir/e15" 1
check "huge shapes: what they need" has "$dir/e15" "the inputs need .* of host memory to make, but .* is available"
"$bin" measure aten::relu self=f32[4611686018427387904,4] --device cpu --no-store >/dev/null 2>"$dir/e16"
check "an overflowing shape: one line, no backtrace" lines "$dir/e16" 1
check "an overflowing shape says so" has "$dir/e16" "more elements than a tensor can hold"

# 13. Every bad entry of a spec file is reported before anything is measured; the rest run.
cat >"$dir/mixed.yaml" <<'YAML'
ops:
  - aten::relu self=f32[4,
  - aten::relu self=f32[16]
  - op: [aten::tanh]
  - aten::tanhh self=f32[4]
  - aten::relu self=f32[4] bogus=1
YAML
"$bin" measure --spec "$dir/mixed.yaml" "${fast[@]}" --no-store >"$dir/o17" 2>"$dir/e17"
check "a spec with bad entries exits 2" test $? -eq 2
check "all four bad entries are reported" test "$(grep -c "^opcost: error: .*mixed.yaml:" "$dir/e17")" -eq 4
check "before the first measurement" test "$(grep -n '^\[1/1\]' "$dir/e17" | cut -d: -f1)" -gt 4
check "the good entry is measured" has "$dir/o17" "aten::relu self=f32\[16\]"
check "the list as 'op' is named as such" has "$dir/e17" "'op' must be one operator name"
check "the summary counts them" has "$dir/e17" "1 measured, 0 skipped, 4 failed (4 bad input)"
printf '' >"$dir/empty.yaml"
"$bin" measure --spec "$dir/empty.yaml" --device cpu --no-store >/dev/null 2>"$dir/e18"
check "an empty spec says it is empty" has "$dir/e18" "the spec file is empty"

# 14. Typos get a suggestion.
"$bin" measur aten::relu self=f32[4] >/dev/null 2>"$dir/e19"
check "a mistyped command exits 2" test $? -eq 2
check "a mistyped command: did you mean" has "$dir/e19" "unknown command 'measur' (did you mean measure?)"
"$bin" measure aten::relu self=f32[4] --max-tme 0.1 --device cpu --no-store >/dev/null 2>"$dir/e20"
check "a mistyped option: did you mean" has "$dir/e20" "unknown option '--max-tme' for opcost measure (did you mean --max-time?)"

# 15. Small messages.
"$bin" measure aten::relu "$(printf 'self=f32[4,\xff]')" --device cpu --no-store >/dev/null 2>"$dir/e21"
check "raw bytes are echoed escaped" has "$dir/e21" '\\xff'
"$bin" measure aten::relu self=u8[4]:range[-5,1000] --device cpu --no-store >/dev/null 2>"$dir/e22"
check "a range the dtype cannot hold is refused" has "$dir/e22" "outside what u8 holds"
"$bin" measure aten::relu self=f32[64] "${fast[@]}" --no-store --power-trace "$dir/pt.json" >/dev/null 2>"$dir/e23"
check "--power-trace on the CPU says why it wrote nothing" has "$dir/e23" "power-trace .*not written: no power samples"
check "--power-trace on the CPU leaves no empty file" test ! -e "$dir/pt.json"
"$bin" predict mnist-cnn --device cpu --batch 2 --db "$dir/none.db" >"$dir/o24" 2>"$dir/e24"
check "predict with no database exits 3" test $? -eq 3
check "predict with no database creates none" test ! -e "$dir/none.db"
check "predict with nothing measured predicts nothing, not 0 mJ" has "$dir/o24" "predicted: nothing: no operator"
check "no zero energy" lacks "$dir/o24" "energy 0 mJ"

# 10. `model` that reaches its target exits 0 and says so. A low target: on a loaded machine
# (ctest -j2) the step's time is noisy, and this checks the report, not the accuracy.
"$bin" model mnist-cnn --device cpu --batch 2 --target 0.01 --max-time 0.05 --step-max-time 0.3 --no-energy \
  --db "$dir/model.db" >"$dir/o25" 2>"$dir/e25"
check "model that met its target exits 0" test $? -eq 0
check "model says the target was met" has "$dir/o25" "target: 1% of the step's time: met"
check "model never calls a met target INCOMPLETE" lacks "$dir/o25" "INCOMPLETE"
"$bin" model mnist-cnn --device cpu --ops-energy-ci 2 --db "$dir/model.db" >/dev/null 2>"$dir/e25b"
check "an --ops-energy-ci outside 0..1 exits 2" test $? -eq 2
check "it names the option and its range" has "$dir/e25b" "--ops-energy-ci: must be a number from 0 to 1, not 2"

# 16. A slow measurement shows progress (plain lines when not on a terminal).
"$bin" measure aten::mm self=f32[128,128] mat2=f32[128,128] --device cpu --no-store --no-energy --max-time 4 \
  --target-ci 1e-9 >/dev/null 2>"$dir/e26"
check "a slow measurement reports progress" has "$dir/e26" "aten::mm self=f32\[128,128\] mat2=f32\[128,128\]: timing, .* samples"

# 17. Outputs never replace inputs: an export onto its own database is refused before anything
# is opened, whatever the spelling of the path (symbolic link, ./, a hard link), and the rows stay.
rows_before=$("$bin" db list --db "$db" 2>/dev/null | grep -c aten::)
ln -sf "$db" "$dir/link.db"; ln -f "$db" "$dir/hard.db"
for out in "$db" "$dir/link.db" "$dir/./ops.db" "$dir/hard.db"; do
  "$bin" db export --csv -o "$out" --db "$db" >/dev/null 2>"$dir/e27"
  check "export -o $out onto the database exits 2" test $? -eq 2
  check "export -o $out says it is the database" has "$dir/e27" "that is the database this command reads"
done
"$bin" db export --json -o "$db" --db "$dir/link.db" >/dev/null 2>&1
check "export through a link to the output is refused" test $? -eq 2
"$bin" db export --parquet "$dir/link.db" --db "$db" >/dev/null 2>"$dir/e28"
check "export --parquet onto the database exits 2" test $? -eq 2
check "the database still holds every row" \
  test "$("$bin" db list --db "$db" 2>/dev/null | grep -c aten::)" -eq "$rows_before" -a "$rows_before" -eq 4
check "the database is still SQLite" test "$(head -c 15 "$db")" = "SQLite format 3"
"$bin" db copy "$db" "$dir/link.db" >/dev/null 2>"$dir/e29"
check "db copy into itself is refused" test $? -eq 2
"$bin" measure --spec "$dir/mixed.yaml" --power-trace "$dir/mixed.yaml" "${fast[@]}" --no-store >/dev/null 2>"$dir/e30"
check "--power-trace onto the spec file is refused" has "$dir/e30" "that is the spec file this command reads"
check "the spec file is intact" has "$dir/mixed.yaml" "aten::relu self=f32\[16\]"
rm -f "$dir/link.db" "$dir/hard.db"

# 18. Nesting is bounded: 60000 levels on the command line (SIGSEGV before), 10^5 in a spec file.
deep=$(printf '%*s' 60000 '' | tr ' ' '['; printf 'f32[2]'; printf '%*s' 60000 '' | tr ' ' ']')
"$bin" measure aten::cat "tensors=$deep" --device cpu --no-store >/dev/null 2>"$dir/e31"
check "60000 nested lists exit 2, not 139" test $? -eq 2
check "the message names the argument and the limit" has "$dir/e31" "argument 'tensors': lists nest deeper than 32 levels"
check "in one short line" test "$(wc -l <"$dir/e31")" -eq 1 -a "$(wc -c <"$dir/e31")" -lt 400
{ printf 'ops:\n  - "aten::cat tensors='; printf '%*s' 100000 '' | tr ' ' '['; printf '1'
  printf '%*s' 100000 '' | tr ' ' ']'; printf '"\n'; } >"$dir/deep.yaml"
"$bin" measure --spec "$dir/deep.yaml" --device cpu --no-store >/dev/null 2>"$dir/e32"
check "10^5 nested lists in a spec exit 2" test $? -eq 2
check "naming the file and the limit" has "$dir/e32" "deep.yaml:2.*deeper than 32 levels"

# 19. Budgets: finite and in range, one short line naming the option (nan passed every check).
for bad in "--max-time nan" "--max-time inf" "--target-ci nan" "--max-time -1" "--energy-settle nan" \
  "--energy-max-time 1e999"; do
  # shellcheck disable=SC2086
  "$bin" measure aten::relu self=f32[4] --device cpu --no-store $bad >/dev/null 2>"$dir/e33"
  check "$bad exits 2" test $? -eq 2
  check "$bad names the option" has "$dir/e33" "${bad%% *}: must be a"
  check "$bad: no 300-digit bound" test "$(head -1 "$dir/e33" | wc -c)" -lt 200
done
"$bin" validate mnist-cnn --device cpu --step-max-time nan --db "$dir/model.db" >/dev/null 2>"$dir/e34"
check "validate --step-max-time nan exits 2" test $? -eq 2 -a "$(grep -c "step-max-time" "$dir/e34")" -ge 1
"$bin" sweep "$dir/mixed.yaml" --lease nan --dry-run >/dev/null 2>"$dir/e35"
check "sweep --lease nan exits 2" test $? -eq 2

# 20. Friction.
# A 10 MB argument: its echo is cut (it was twice its size on stderr).
{ printf 'ops:\n  - "aten::relu self=f32['; head -c 10000000 /dev/zero | tr '\0' '7'; printf 'x]"\n'; } >"$dir/huge.yaml"
"$bin" measure --spec "$dir/huge.yaml" --device cpu --no-store >/dev/null 2>"$dir/e36"
check "a 10 MB argument exits 2" test $? -eq 2
check "and its error is short" test "$(wc -c <"$dir/e36")" -lt 3000
# A locked database says so, and the fix (SQLite waits 5 s for the lock first).
if command -v python3 >/dev/null; then
  python3 - "$db" "$dir/locked" <<'PY' &
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[2], "w").close()
time.sleep(9)
PY
  locker=$!
  for _ in $(seq 50); do [ -e "$dir/locked" ] && break; sleep 0.1; done
  "$bin" db list --db "$db" >/dev/null 2>"$dir/e37"
  check "a locked database says it is locked by another process" has "$dir/e37" "locked by another process"
  check "and what to do" has "$dir/e37" "wait for that process"
  check "never 'is it an opcost database'" lacks "$dir/e37" "is it an opcost database"
  kill "$locker" 2>/dev/null; wait "$locker" 2>/dev/null
fi
# A damaged file is bad input (README: 2), for a read and for a measurement.
head -c 8192 /dev/urandom >"$dir/damaged.db"
"$bin" db list --db "$dir/damaged.db" >/dev/null 2>"$dir/e38"
check "db list of a damaged file exits 2" test $? -eq 2
check "it says the file is damaged or no opcost database" has "$dir/e38" "damaged or is not an opcost database"
"$bin" measure aten::relu self=f32[4] "${fast[@]}" --db "$dir/damaged.db" >/dev/null 2>&1
check "measure into a damaged file exits 2" test $? -eq 2
# On the CPU nothing speaks of GPU time.
"$bin" measure aten::relu self=f32[4] --device cpu --dry-run 2>"$dir/e39" >/dev/null
check "the CPU dry run speaks of the CPU" has "$dir/e39" "seconds of the CPU"
check "not of GPU-seconds" lacks "$dir/e39" "GPU"
check "the CPU prediction is no 'GPU time only'" lacks "$dir/o25" "GPU time only"
check "nor 'host only'" lacks "$dir/o25" "host only"
check "--no-energy is said as such" has "$dir/o25" "energy was switched off"
check "--no-energy blames no operator" lacks "$dir/o25" "has no energy figure"
# A timing loop its budget stopped shows that it missed its interval target.
"$bin" measure aten::relu self=f32[64] --device cpu --no-store --no-energy --max-time 0.05 --target-ci 1e-9 \
  >"$dir/o40" 2>/dev/null
check "a missed interval target is flagged" has "$dir/o40" "flags .*ci_target_missed"
check "predict with nothing measured prints no table of zeros" lacks "$dir/o24" " 0.0%"
check "and says what to run" has "$dir/o24" "run \`opcost validate\`"

# 21. A model with one call that cannot be replayed (issue 31, item 6): a TorchScript model whose
# Cholesky factorization the replay's random input (no positive-definite matrix) makes fail. One
# line names the model, the layer, the call and the fix; every other call is measured, stored
# and predicted; the result lists the call as missing with its layer and why; the exit status
# says some measurement failed (1), and predict afterwards that the prediction is partial (3).
python=${OPCOST_PYTHON:-}
if [ -n "$python" ] && "$python" -c "import torch" 2>/dev/null; then
  # From a file: TorchScript reads the model's source back, which standard input does not keep.
  cat >"$dir/make_chol.py" <<'PY'
import sys, torch

class Head(torch.nn.Module):
    def forward(self, x):
        return torch.linalg.cholesky(x.t() @ x + torch.eye(x.shape[1]))

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.head = torch.nn.Linear(8, 8), Head()

    def forward(self, x):
        return self.head(torch.relu(self.fc(x)))

torch.jit.script(Net().eval()).save(sys.argv[1])
PY
  "$python" "$dir/make_chol.py" "$dir/chol.pt"
  check "the TorchScript model is made" test -s "$dir/chol.pt"
  cdb=$dir/chol.db
  "$bin" validate "$dir/chol.pt" --input 'f32[4,8]' "${fast[@]}" --step-max-time 0.2 --db "$cdb" --json \
    >"$dir/o41" 2>"$dir/e41"
  check "validate of a model with a call that fails exits 1" test $? -eq 1
  check "one error line names the model, the layer, the call and the fix" test "$(grep -c \
    'opcost: error: .*chol.pt: layer head: aten::linalg_cholesky self=f32\[8,8\]: .*not positive-definite.*; fix: ' \
    "$dir/e41")" -eq 1
  check "and nothing else is an error, nor a traceback" test "$(grep -c 'error\|Exception raised\|frame #' "$dir/e41")" -eq 1
  check "the other calls were measured and stored, the step too; the failed one is missing with its layer" python3 -c "
import json, sqlite3
d = json.load(open('$dir/o41'))
ops = {r[0] for r in sqlite3.connect('$cdb').execute('SELECT op FROM measurements')}
assert {'aten::linear', 'aten::relu', 'aten::matmul', 'aten::eye'} <= ops and 'aten::linalg_cholesky' not in ops, ops
assert not d['complete'] and d['failures'] == 1 and d['failed_calls'] == 1 and d['measured']['time_us'] > 0, d
[m] = d['missing']
assert m['signature'] == 'aten::linalg_cholesky self=f32[8,8]' and m['layers'] == ['head'], m
assert 'positive-definite' in m['error'] and '; fix: ' in m['error'] and '\\n' not in m['error'], m
assert d['measured_calls'] == d['calls'] - 1, d"
  "$bin" validate "$dir/chol.pt" --input 'f32[4,8]' "${fast[@]}" --step-max-time 0.2 --db "$cdb" >"$dir/o42" 2>/dev/null
  check "the text lists it under INCOMPLETE with its layer and why" has "$dir/o42" \
    "aten::linalg_cholesky self=f32\[8,8\] ×1  in head"
  check "... and the reason" has "$dir/o42" "    failed: .*positive-definite"
  "$bin" predict "$dir/chol.pt" --input 'f32[4,8]' --device cpu --db "$cdb" --json >"$dir/o43" 2>"$dir/e43"
  check "predict afterwards exits 3 (incomplete), measuring nothing" test $? -eq 3
  check "its missing call has its layer and no error (nothing was tried)" python3 -c "
import json; d = json.load(open('$dir/o43'))
assert [(m['signature'], m['layers'], m['error']) for m in d['missing']] == [
    ('aten::linalg_cholesky self=f32[8,8]', ['head'], None)], d['missing']"
else
  echo "SKIPPED: a model with a call that fails (no \$OPCOST_PYTHON with torch to make its TorchScript file)"
fi

finish
