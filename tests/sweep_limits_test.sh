#!/usr/bin/env bash
# Hostile sweep files through the command line: grids too large to expand (run under a memory
# cap, where expanding them first would die), nesting that would overflow the stack, integers
# that would wrap, input echoed without bound. Each must end in one line of stderr naming the
# file and the fix, exit 2. Runs on the CPU; measures nothing.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
cpu=(--device cpu --no-energy)

# The address space the binary needs for a dry run of a small grid, plus 1 GiB: the huge grids
# of the issue grew to 12-15 GB before being killed; refused before expanding, they fit.
values() { seq -s, 0 $(($1 - 1)); }
printf 'op: aten::relu\nargs: {self: "f32[{a}]"}\naxes: {a: [1, 2]}\n' >"$dir/small.yaml"
"$bin" sweep "$dir/small.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}" >"$dir/small.out" 2>"$dir/small.err" &
pid=$!
peak_kib=0
while kill -0 "$pid" 2>/dev/null; do
  vm=$(awk '/^VmPeak:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
  [ "${vm:-0}" -gt "$peak_kib" ] && peak_kib=$vm
  sleep 0.02
done
wait "$pid"
check "the small grid's dry run works" test $? -eq 0 -a "$(wc -l <"$dir/small.out")" -eq 2
cap_kib=$((peak_kib + 1024 * 1024))
capped() { (ulimit -v "$cap_kib" && "$bin" "$@"); }

# One line on stderr, exit 2, containing the text.
refused() {  # refused NAME TEXT ARGS...
  local name=$1 text=$2; shift 2
  capped "$@" >"$dir/out" 2>"$dir/err"
  local rc=$?
  check "$name: exit 2 (was $rc)" test "$rc" -eq 2
  check "$name: one line" test "$(wc -l <"$dir/err")" -eq 1
  check "$name: says '$text'" has "$dir/err" "$text"
  check "$name: short" test "$(wc -c <"$dir/err")" -lt 1500
}

# 1. 5 axes × 100 values (10^10 items), and 6 axes sharing one 1000-value list through an anchor.
printf 'op: aten::relu\nargs: {self: "f32[{a}]"}\naxes: {a: [%s], b: [%s], c: [%s], d: [%s], e: [%s]}\n' \
  "$(values 100)" "$(values 100)" "$(values 100)" "$(values 100)" "$(values 100)" >"$dir/big.yaml"
printf 'op: aten::relu\nargs: {self: "f32[{a}]"}\naxes: {a: &v [%s], b: *v, c: *v, d: *v, e: *v, f: *v}\n' \
  "$(values 1000)" >"$dir/anchor.yaml"
check "the anchored grid is a few KB" test "$(wc -c <"$dir/anchor.yaml")" -lt 6000
refused "10^10 dry run" "big.yaml: 10000000000 combinations (a 100 × b 100" sweep "$dir/big.yaml" --dry-run \
  --db "$dir/x.db" "${cpu[@]}"
check "... names the option that raises the limit" has "$dir/err" "more than the 1000000 items a sweep may have.*--max-items"
refused "10^10 status" "10000000000 combinations" sweep status "$dir/big.yaml" --db "$dir/x.db" "${cpu[@]}"
refused "10^10 sweep" "10000000000 combinations" sweep "$dir/big.yaml" --db "$dir/x.db" "${cpu[@]}"
check "... creates no database" test ! -e "$dir/x.db"
refused "anchored 10^18" "anchor.yaml: 1000000000000000000 combinations" sweep "$dir/anchor.yaml" --dry-run \
  --db "$dir/x.db" "${cpu[@]}"

# 2. --max-items: the caller's limit, `where` counted as keeping everything.
printf 'op: aten::relu\nargs: {self: "f32[{a},{b}]"}\naxes: {a: [%s], b: [%s]}\nwhere: "a > b"\n' \
  "$(values 20)" "$(values 10)" >"$dir/mid.yaml"
refused "--max-items 100" "200 combinations (a 20 × b 10;" sweep "$dir/mid.yaml" --dry-run --max-items 100 \
  --db "$dir/x.db" "${cpu[@]}"
capped sweep "$dir/mid.yaml" --dry-run --max-items 200 --db "$dir/x.db" "${cpu[@]}" >"$dir/mid.out" 2>"$dir/mid.err"
check "--max-items 200 lets it through" test $? -eq 0 -a "$(wc -l <"$dir/mid.out")" -eq 145
capped sweep "$dir/mid.yaml" --dry-run --max-items 0 --db "$dir/x.db" "${cpu[@]}" 2>"$dir/err"
check "--max-items 0 is refused as bad input" test $? -eq 2

# 3. 10^4 items in a dry run: made one at a time (and quickly, though no time is asserted).
printf 'op: aten::relu\nargs: {self: "f32[{a},{b}]"}\naxes: {a: [%s], b: [%s]}\n' "$(seq -s, 1 100)" \
  "$(seq -s, 1 100)" >"$dir/ten4.yaml"
capped sweep "$dir/ten4.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}" >"$dir/ten4.out" 2>"$dir/ten4.err"
check "10^4 items under the cap" test $? -eq 0 -a "$(wc -l <"$dir/ten4.out")" -eq 10000

# 4. Nesting in `where`: a bounded depth, not a segmentation fault.
nest() { local s; s=$(printf "%${2}s" "" | sed "s/ /$1/g"); echo "$s"; }
printf 'op: aten::relu\nargs: {self: "f32[4]"}\nwhere: "%s1 == 1%s"\n' "$(nest '(' 100000)" "$(nest ')' 100000)" \
  >"$dir/parens.yaml"
printf 'op: aten::relu\nargs: {self: "f32[4]"}\nwhere: "%strue"\n' "$(nest 'not ' 100000)" >"$dir/not.yaml"
printf 'op: aten::relu\nargs: {self: "f32[4]"}\nwhere: "%s1 == 1"\n' "$(nest '-' 200000)" >"$dir/minus.yaml"
for f in parens not minus; do
  refused "$f nested 10^5" "nested more than 200 levels deep" sweep "$dir/$f.yaml" --dry-run --db "$dir/x.db" \
    "${cpu[@]}"
  check "$f: names the file and the position" has "$dir/err" "$f.yaml: expression \".*\", at character [0-9]"
done

# 5. Integers beyond int64 are refused, not wrapped (2 ** 64 == 0 held before).
printf 'op: aten::relu\nargs: {self: "f32[4]"}\naxes: {n: [1]}\nwhere: "9223372036854775807 + n > 0"\n' \
  >"$dir/wrap.yaml"
refused "int64 overflow" "9223372036854775807 + 1 does not fit in a 64-bit integer" sweep "$dir/wrap.yaml" \
  --dry-run --db "$dir/x.db" "${cpu[@]}"
check "... names the item" has "$dir/err" "wrap.yaml (item n=1): expression"
printf 'op: aten::relu\nargs: {self: "f32[4]"}\nwhere: "10 ** 10 ** 10 > 0"\n' >"$dir/pow.yaml"
refused "10 ** 10 ** 10" "does not fit in a 64-bit integer" sweep "$dir/pow.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}"

# 6. A long input is cut in the message (a 10 MB string gave 20 MB of stderr).
{ printf 'op: aten::relu\nargs: {self: "f32[4]"}\nwhere: "'; head -c 600000 /dev/zero | tr '\0' 'x'; printf '"\n'; } \
  >"$dir/long.yaml"
refused "600 KB unknown name" "unknown name 'xxx" sweep "$dir/long.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}"

# 7. What YAML would drop silently.
printf 'op: aten::relu\nargs: {self: "f32[{n}]"}\naxes: {n: [1, 2], n: [3]}\n' >"$dir/dup.yaml"
refused "duplicate key" "axes: 'n' is given twice" sweep "$dir/dup.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}"
printf 'op: aten::relu\nargs: {self: "f32[{n}]"}\naxes: {n: [1, 2], data: [1]}\n' >"$dir/data.yaml"
refused "axis named data" "'data' is reserved" sweep "$dir/data.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}"

# 8. The dry run says what it checked: the schema, not whether the shapes go together.
printf 'op: aten::mm\nargs: {self: "f32[8,{k}]", mat2: "f32[16,4]"}\naxes: {k: [8, 16]}\n' >"$dir/mm.yaml"
"$bin" sweep "$dir/mm.yaml" --dry-run --db "$dir/x.db" "${cpu[@]}" >"$dir/mm.out" 2>"$dir/mm.err"
check "the dry run says only the schema was checked" has "$dir/mm.err" \
  "0 the op's schema refuses; whether the op accepts the shapes shows as each item runs"

finish
