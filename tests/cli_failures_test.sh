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
check "it names the option and its range" has "$dir/e25b" "--ops-energy-ci: Value 2 not in range 0.000000 to 1.000000"

# 16. A slow measurement shows progress (plain lines when not on a terminal).
"$bin" measure aten::mm self=f32[128,128] mat2=f32[128,128] --device cpu --no-store --no-energy --max-time 4 \
  --target-ci 1e-9 >/dev/null 2>"$dir/e26"
check "a slow measurement reports progress" has "$dir/e26" "aten::mm self=f32\[128,128\] mat2=f32\[128,128\]: timing, .* samples"

finish
