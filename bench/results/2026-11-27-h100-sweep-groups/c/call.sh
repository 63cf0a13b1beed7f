#!/usr/bin/env bash
# Stop 53, call c: how far energies per call move between runs. The conv2d grid at batch 8 (88
# items) swept four times in a row into fresh databases: each item in its own loop
# (--energy-group 1), in shared windows (the default), own loops again, shared again.
set -uo pipefail
start=$(date +%s)
say() { echo "[$(( $(date +%s) - start )) s] $*"; }
R=$(mktemp -d); mkdir -p "$R/c"
trap 'tar -czf "$OUT/c.tgz" -C "$R" c' EXIT
cp .gpu/commit.txt "$R/c/commit.txt"
{ nvidia-smi; python3 -c 'import torch; print(torch.__version__)'; date -u; } > "$R/c/env.txt" 2>&1
eval "$(bash .gpu/deps/unpack-debs)"
say build
timeout 220 scripts/gpu-build > "$R/c/build.txt" 2>&1; say "build rc=$?"; tail -2 "$R/c/build.txt"
export PYTHONPATH=build/python
G="$R/c/conv2d-b8.yaml"
sed -e 's/^name: conv2d-resnet$/name: conv2d-resnet-b8/' -e 's/batch: \[1, 8, 32\]/batch: [8]/' examples/conv2d-grid.yaml > "$G"
build/opcost sweep "$G" --dry-run --db "$R/c/dry.db" 2>&1 | tail -1
for run in alone1 grouped1 alone2 grouped2; do
  extra=(); [[ $run == alone* ]] && extra=(--opcost-arg=--energy-group=1)
  left=$(( 570 - ($(date +%s) - start) ))
  say "$run with $left s"
  python3 bench/sweep_bench.py run "$R/c/$run.db" "$G" --deadline $((left > 150 ? 150 : left)) "${extra[@]}" > "$R/c/run-$run.txt" 2>&1
  tail -1 "$R/c/run-$run.txt"
  mkdir -p "$R/c/$run"
  python3 bench/sweep_bench.py summarize "$R/c/$run.db" "$R/c/$run" "$G" > /dev/null 2>&1
  build/opcost db export --csv --db "$R/c/$run.db" -o "$R/c/$run/rows.csv" 2>/dev/null
done
for pair in "alone2 alone1" "grouped2 grouped1" "grouped1 alone1" "grouped1 alone2" "grouped2 alone2"; do
  set -- $pair
  python3 bench/sweep_bench.py agree "$R/c/$1.db" "$R/c/$2.db" "$R/c/agree-$1-$2.json" 2>&1 | grep -E '"energy_within|"median"|abs_diff' | tr -d '\n'; echo " $pair"
done
rm -f "$R"/c/*.db "$R"/c/*.db-*
