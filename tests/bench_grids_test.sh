#!/usr/bin/env bash
# Every committed sweep grid (bench/grids/**/*.yaml) is read and expanded here, on the CPU, as
# the lent GPU machine will read it: none fails to parse, no item is one its operator's schema
# refuses, and where bench/grids/fit/README.md's tables count a file's items, the grid makes
# that many. A grid found broken here costs no device time.
set -uo pipefail
bin=$1; dir=$2; repo=$3
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
readme="$repo/bench/grids/fit/README.md"
grids=0
while IFS= read -r -d '' grid; do
  grids=$((grids+1))
  rel=${grid#"$repo/bench/grids/"}
  "$bin" sweep "$grid" --dry-run --db "$dir/dry.db" >"$dir/out" 2>"$dir/err"
  check "$rel: --dry-run exits 0" test $? -eq 0
  check "$rel: no item its schema refuses" has "$dir/err" ", 0 the op's schema refuses"
  items=$(grep -oE ": [0-9]+ items \(" "$dir/err" | grep -oE "[0-9]+")
  # Its row in the README's tables: | file | op | family | items | … |, the file relative to fit/.
  listed=$(awk -F'|' -v f="${rel#fit/}" '{ gsub(/ /, "", $2) } $2 == f { gsub(/ /, "", $5); print $5 }' "$readme")
  if [ -n "$listed" ]; then
    check "$rel: $items items, as bench/grids/fit/README.md counts ($listed)" test "$items" = "$listed"
  fi
done < <(find "$repo/bench/grids" -name '*.yaml' -print0 | sort -z)
check "the grids were found" test "$grids" -ge 35
# Every file a table names is there, and each table's **total** row sums the rows above it.
while read -r kind name a b; do
  case $kind in
    file) check "README's $name is a grid of bench/grids/fit" test -f "$repo/bench/grids/fit/$name" ;;
    total) check "a README table's total ($b) is the sum of its rows ($a)" test "$a" = "$b" ;;
  esac
done < <(awk -F'|' '
  { f = $2; n = $5; gsub(/ /, "", f); gsub(/[ *]/, "", n) }
  f ~ /\.yaml$/ { print "file", f; sum += n }
  f == "**total**" { print "total -", sum, n; sum = 0 }' "$readme")
finish
