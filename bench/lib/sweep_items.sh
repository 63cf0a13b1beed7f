# Sourced by the sweep benchmarks: sweep_items GRID SCRATCH_DB prints how many items the sweep
# file makes (opcost sweep --dry-run, against a scratch SQLite file), or says why not and fails.
sweep_items() {
  local n
  n=$(build/opcost sweep "$1" --dry-run --db "$2" 2>&1 | sed -n 's/.*: \([0-9][0-9]*\) items (.*/\1/p')
  if ! [[ "$n" =~ ^[1-9][0-9]*$ ]]; then
    echo "sweep_items: build/opcost sweep $1 --dry-run named no item count; is build/opcost built, and the file a sweep?" >&2
    return 1
  fi
  echo "$n"
}
