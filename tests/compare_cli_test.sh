#!/usr/bin/env bash
# `opcost compare` end to end on the CPU: a built-in model's variants in interleaved rounds, the
# baseline's differences absent and the others' paired over the rounds, per-layer rows matched by
# module path across variants; the text table; bad variants and Python-only ones refused in one line.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
python=${OPCOST_PYTHON:-python3}
short=(--device cpu --rounds 3 --round-max-time 0.02 --layer-steps 2)

"$bin" compare mnist-cnn "${short[@]}" --variants fp32,bf16,channels_last --json -o "$dir/c.json" >"$dir/o1" 2>"$dir/e1"
check "compare exits 0" test $? -eq 0
check "the JSON printed is the JSON written" cmp -s "$dir/o1" "$dir/c.json"
cat >"$dir/check.py" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["kind"] == "compare" and r["baseline"] == "fp32", r["baseline"]
names = [v["name"] for v in r["variants"]]
assert names == ["fp32", "bf16", "channels_last"], names
base, bf16, cl = r["variants"]
assert base["time_vs_baseline"] is None and base["energy_vs_baseline"] is None
for v in r["variants"]:
    assert len(v["rounds"]) == 3 and all(x["time_us"] > 0 for x in v["rounds"]), v["rounds"]
    assert v["time_us"]["samples"] == 3 and v["time_us"]["ci95"] is not None
for v in (bf16, cl):
    d = v["time_vs_baseline"]
    assert d["samples"] == 3 and d["relative_ci95"] is not None, d
    # Paired by round: the mean of the rounds' differences is the difference of the means.
    assert abs(d["delta"] - (v["time_us"]["mean"] - base["time_us"]["mean"])) < 1e-6 * base["time_us"]["mean"], d
assert "weights and floating inputs in bfloat16" in bf16["description"], bf16["description"]
# On the CPU energy is there for every variant (RAPL) or for none, with why.
assert (r["energy_why"] == "") == all(v["energy_mJ"] is not None for v in r["variants"]), r["energy_why"]
layers = {row["layer"]: row for row in r["layers"]["rows"]}
assert r["layers"]["time_kind"] == "cpu"
for layer in ("conv1", "conv2", "fc1", "fc2"):
    row = layers[layer]
    assert row["presence"] == "", row
    assert all(row["variants"][n]["time_us"]["samples"] == 2 for n in names), row
    assert row["variants"]["fp32"]["time_vs_baseline"] is None
    assert row["variants"]["bf16"]["time_vs_baseline"]["samples"] == 2
print("ok")
PY
check "the report: variants, paired differences, layers matched by path" \
  bash -c "'$python' '$dir/check.py' '$dir/c.json' >'$dir/p1' 2>&1"
[ -s "$dir/p1" ] && grep -v '^ok$' "$dir/p1" | head -5

"$bin" compare mnist-cnn "${short[@]}" --variants fp32,bf16 --layer-rows 2 >"$dir/o2" 2>"$dir/e2"
check "the text names the model, rounds and baseline" has "$dir/o2" "compare: mnist-cnn (inference, f32\[1,1,28,28\]) on .*, 3 interleaved rounds of 0.02 s a variant after 1 warm-up round;"
check "... a row per variant" has "$dir/o2" "^bf16 "
check "... the legend of ~" has "$dir/o2" "~: the 95% interval includes 0"
check "... the per-layer table, cut to --layer-rows" has "$dir/o2" "more layers: the JSON has them all"
check "... no colour when not a terminal" lacks "$dir/o2" $'\x1b'

# Bad input: one line each, naming the fix.
one_line() { test "$(wc -l <"$1")" -eq 1; }
"$bin" compare mnist-cnn "${short[@]}" --variants fp32,bf17 >/dev/null 2>"$dir/e3"
check "an unknown variant is refused" test $? -ne 0
check "... naming it and the known ones" has "$dir/e3" "'bf17' is not a variant; use fp32, bf16"
check "... in one line" one_line "$dir/e3"
"$bin" compare mnist-cnn "${short[@]}" --variants fp32,compile >/dev/null 2>"$dir/e4"
check "compile is Python's: refused with where to run it" has "$dir/e4" "python -m opcost compare"
"$bin" compare mnist-cnn "${short[@]}" --variants fp32 >/dev/null 2>"$dir/e5"
check "one variant is refused" has "$dir/e5" "give at least two"
"$bin" compare mnist-cnn "${short[@]}" --dtype bf16 --variants fp32,bf16 >/dev/null 2>"$dir/e6"
check "--dtype is refused: the variants set it" has "$dir/e6" "name them in --variants"
"$bin" compare distilgpt2 --seq 8 "${short[@]}" --variants fp32,channels_last >/dev/null 2>"$dir/e7"
check "channels_last on a token model is refused, naming the variant" has "$dir/e7" "variant channels_last: channels_last orders image models"
"$bin" compare mnist-cnn "${short[@]}" --rounds 1 --variants fp32,bf16 >/dev/null 2>"$dir/e8"
check "one round is refused (no interval)" test $? -ne 0
"$bin" compare mnist-cnn "${short[@]}" --warmup-rounds 101 --variants fp32,bf16 >/dev/null 2>"$dir/e10"
check "too many warm-up rounds are refused, naming the flag" has "$dir/e10" "--warmup-rounds: must be a whole number from 0 to 100, not 101"
"$bin" compare mnist-cnn "${short[@]}" --variants fp32,bf16 -o "$dir" >/dev/null 2>"$dir/e9"
check "an --output that cannot be written is refused" test $? -ne 0
finish
