#!/usr/bin/env bash
# The tree stays formatted (.clang-format). Layout differs between clang-format releases, so
# the check runs with the release the tree was formatted with (14, Debian 12's) and is
# skipped, saying so, with any other.
set -uo pipefail
cd "$1"
cf=$(command -v clang-format || true)
if [ -z "$cf" ] || ! "$cf" --version | grep -q "version 14\."; then
  echo "skipped: needs clang-format 14 (found: ${cf:+$("$cf" --version)}${cf:-none})"
  exit 77
fi
files=$(git ls-files '*.cpp' '*.h' 2>/dev/null)
[ -n "$files" ] || { echo "skipped: not a git checkout"; exit 77; }
# shellcheck disable=SC2086
if "$cf" --dry-run -Werror $files 2>"${TMPDIR:-/tmp}/opcost-format.log"; then
  echo "formatted: $(echo "$files" | wc -w) files"
else
  grep -m 20 "error:" "${TMPDIR:-/tmp}/opcost-format.log"
  echo "run: clang-format -i \$(git ls-files '*.cpp' '*.h')"
  echo "not formatted"
  exit 1
fi
