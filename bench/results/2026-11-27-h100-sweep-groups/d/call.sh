#!/usr/bin/env bash
# Stop 53, call d: the final commit on the GPU: the conv2d grid's batch-8 part swept in groups
# (the default) into a fresh database, and validate's resnet50 b32 (issue 25's case).
set -uo pipefail
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start )) s] $*"; }
R=$(mktemp -d); mkdir -p "$R/d"
trap 'rm -f "$R"/d/*.db "$R"/d/*.db-* "$R"/d/db-*.sqlite*; tar -czf "$OUT/d.tgz" -C "$R" d' EXIT
cp .gpu/commit.txt "$R/d/commit.txt"
{ nvidia-smi; python3 -c 'import torch; print(torch.__version__)'; date -u; } > "$R/d/env.txt" 2>&1
eval "$(bash .gpu/deps/unpack-debs)"
say build
timeout 220 scripts/gpu-build > "$R/d/build.txt" 2>&1; say "build rc=$?"; tail -2 "$R/d/build.txt"
export PYTHONPATH=build/python
G="$R/d/conv2d-b8.yaml"
sed -e 's/^name: conv2d-resnet$/name: conv2d-resnet-b8/' -e 's/batch: \[1, 8, 32\]/batch: [8]/' examples/conv2d-grid.yaml > "$G"
python3 bench/sweep_bench.py run "$R/d/grouped.db" "$G" --deadline 150 > "$R/d/run-grouped.txt" 2>&1
tail -1 "$R/d/run-grouped.txt"
mkdir -p "$R/d/grouped"
python3 bench/sweep_bench.py summarize "$R/d/grouped.db" "$R/d/grouped" "$G" > /dev/null 2>&1
build/opcost db export --csv --db "$R/d/grouped.db" -o "$R/d/grouped/rows.csv" 2>/dev/null
grep -E "per item, mean|energy within" "$R/d/grouped/summary.md"
left=$(( 560 - ($(date +%s) - start) ))
say "resnet50 with $left s"
timeout $left python3 bench/energy_speed.py run "$R/d" --only '^resnet50-b32$' --timeout $((left - 10)) > "$R/d/run-resnet50.txt" 2>&1
python3 bench/energy_speed.py summarize "$R/d" 2>/dev/null; tail -3 "$R/d/summary.md" 2>/dev/null
