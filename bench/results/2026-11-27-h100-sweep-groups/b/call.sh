#!/usr/bin/env bash
# Stop 53, call b: the conv2d grid (examples/conv2d-grid.yaml) swept at the defaults, its items'
# energies in shared counter windows (--energy-group's default: 16 on a GPU), then with
# --energy-group 1 (each its own loop, as before) until the deadline; per-item GPU seconds and
# the two energies of the same items compared (issue 25, must-have 5).
set -uo pipefail
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start )) s] $*"; }
R=$(mktemp -d); mkdir -p "$R/b"
trap 'tar -czf "$OUT/b.tgz" -C "$R" b' EXIT
cp .gpu/commit.txt "$R/b/commit.txt"
{ nvidia-smi; nvidia-smi -q -d POWER,CLOCK | head -60; python3 -c 'import torch; print(torch.__version__)'; date -u; } > "$R/b/env.txt" 2>&1
eval "$(bash .gpu/deps/unpack-debs)"
say build
timeout 220 scripts/gpu-build > "$R/b/build.txt" 2>&1; say "build rc=$?"; tail -2 "$R/b/build.txt"
export PYTHONPATH=build/python
G=examples/conv2d-grid.yaml
say grouped
python3 bench/sweep_bench.py run "$R/b/grouped.db" $G --deadline 300 > "$R/b/run-grouped.txt" 2>&1
say "grouped done"; tail -2 "$R/b/run-grouped.txt"
left=$(( 560 - ($(date +%s) - start) ))
say "alone with $left s"
python3 bench/sweep_bench.py run "$R/b/alone.db" $G --deadline $left --opcost-arg=--energy-group=1 > "$R/b/run-alone.txt" 2>&1
say "alone done"; tail -2 "$R/b/run-alone.txt"
for d in grouped alone; do
  mkdir -p "$R/b/$d"
  python3 bench/sweep_bench.py summarize "$R/b/$d.db" "$R/b/$d" $G > /dev/null 2>&1
  build/opcost db export --csv --db "$R/b/$d.db" -o "$R/b/$d/rows.csv" 2>/dev/null
done
python3 bench/sweep_bench.py agree "$R/b/grouped.db" "$R/b/alone.db" "$R/b/agree.json" 2>&1 | head -30
rm -f "$R"/a/*.db "$R"/a/*.db-*
grep -E "per item, mean|within" "$R"/a/grouped/summary.md "$R"/a/alone/summary.md
