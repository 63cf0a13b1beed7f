# The shell tests' checks, sourced by each: `check NAME COMMAND...` counts a pass or prints the
# failure; `finish` prints the counts and fails the script when any check did.
pass=0; fail=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $name"; fi
}
has() { grep -q -- "$2" "$1"; }
lacks() { ! grep -q -- "$2" "$1"; }
lines() { test "$(wc -l <"$1")" -eq "$2"; }
finish() {
  echo "$pass passed, $fail failed"
  test "$fail" -eq 0
}
