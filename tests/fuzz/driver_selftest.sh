#!/usr/bin/env bash
# The fuzz driver catches each kind of finding (a crash, a hang, running out of memory, an
# undocumented exception), saves the input it failed on, reaches deep nesting by mutation from
# a shallow seed, and minimises a finding; a clean run passes. Uses fuzz_selftest, a target
# that fails on purpose (targets/fuzz_selftest.cpp).
# usage: driver_selftest.sh FUZZ_SELFTEST_BINARY WORK_DIR
set -uo pipefail
bin=$1 work=$2
source "$(dirname "$0")/../check.sh"
rm -rf "$work" && mkdir -p "$work/clean" "$work/shallow"

# expect_finding NAME CODE PATTERN INPUT [OPTIONS...]: the input fails with exit CODE, the
# report matches PATTERN, and the saved input is the input.
expect_finding() {
  local name=$1 code=$2 pattern=$3 input=$4; shift 4
  printf '%s' "$input" >"$work/$name.in"
  "$bin" --artifacts "$work/found-$name" "$@" "$work/$name.in" >"$work/$name.out" 2>&1
  local rc=$?
  check "$name: exit $code (got $rc)" test "$rc" -eq "$code"
  check "$name: report says $pattern" has "$work/$name.out" "$pattern"
  local saved
  saved=$(ls "$work/found-$name"/* 2>/dev/null | head -1)
  check "$name: input saved" test -n "$saved"
  check "$name: saved input is the input" cmp -s "$saved" "$work/$name.in"
}
expect_finding crash 71 "CRASH: signal SIGSEGV" "xx@CRASH@xx"
expect_finding hang 72 "HANG" "@HANG@" --timeout-s 1
expect_finding exception 74 "UNDOCUMENTED EXCEPTION: std::logic_error: thrown on purpose" "@THROW@"
expect_finding oom 73 "OUT OF MEMORY" "@OOM@" --memory-mb 512
check "crash: the stack is shown" has "$work/crash.out" "stack:"

# A clean corpus for two seconds (too short for the 1000 '[' the target refuses): exit 0 and a
# summary.
printf 'OK then' >"$work/clean/seed"
"$bin" --seconds 2 --max-len 500 --artifacts "$work/found-clean" "$work/clean" >"$work/clean.out" 2>&1
check "clean run passes" test $? -eq 0
check "clean run summarises" has "$work/clean.out" "mutated ones in"

# From "[x]", mutation reaches 1000 '[' in a row (the target then fails its check: SIGABRT).
printf '[x]' >"$work/shallow/seed"
"$bin" --seconds 60 --seed 7 --artifacts "$work/found-deep" "$work/shallow" >"$work/deep.out" 2>&1
check "deep nesting reached by mutation (exit 71)" test $? -eq 71
check "deep nesting: the target's check is shown" has "$work/deep.out" "1000 '\[' in a row"
check "deep nesting: a long run is shown folded" grep -q '<\[>{x[0-9]*}' "$work/deep.out"

# Minimising keeps failing the same way and removes the rest.
head -c 5000 /dev/zero | tr '\0' a >"$work/big.in" && printf @CRASH@ >>"$work/big.in" && head -c 5000 /dev/zero >>"$work/big.in"
"$bin" --minimize "$work/big.in" --seconds 60 >"$work/min.out" 2>&1
check "minimise: exit 0" test $? -eq 0
check "minimise: @CRASH@ alone is left" test "$(cat "$work/big.in.min")" = @CRASH@
# Options it does not know are refused, not ignored.
"$bin" --bogus "$work/clean" >"$work/usage.out" 2>&1
check "unknown option: exit 2" test $? -eq 2
check "unknown option: named" has "$work/usage.out" "unknown option --bogus"
finish
