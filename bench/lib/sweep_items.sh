# Sourced by the sweep benchmarks: sweep_items GRID SCRATCH_DB prints how many items the sweep
# file makes (opcost sweep --dry-run, against a scratch SQLite file), or says why not and fails.
sweep_items() {
  local said n
  said=$(build/opcost sweep "$1" --dry-run --db "$2" 2>&1) || true
  n=$(sed -n 's/.*: \([0-9][0-9]*\) items (.*/\1/p' <<<"$said")
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then  # opcost's own first line says what is wrong
    echo "sweep_items: opcost sweep $1 --dry-run gave no item count: $(head -1 <<<"$said")" >&2
    return 1
  fi
  echo "$n"
}
