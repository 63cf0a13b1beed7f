#!/usr/bin/env bash
# End-to-end checks of the command line: output, errors a user can act on, the database
# subcommands, and a spec run that goes on past a bad entry.
set -uo pipefail
bin=$1; dir=$2
rm -rf "$dir"; mkdir -p "$dir"
db=$dir/cli.db
source "$(dirname "$0")/check.sh"

"$bin" measure aten::relu self=f32[256] --device cpu --db "$db" --max-time 0.1 >"$dir/o1" 2>"$dir/e1"
check "measure exits 0" test $? -eq 0
check "text names the op" has "$dir/o1" "aten::relu self=f32\[256\]"
check "text has time CI" has "$dir/o1" "95% CI"
check "energy unavailable or given" grep -qE "energy/call +(unavailable: .+|[0-9])" "$dir/o1"
check "stored row reported" has "$dir/e1" "stored as row 1"

"$bin" measure aten::add.Tensor self=f32[8,8] other=f32[8] alpha=2 --device cpu --db "$db" --max-time 0.1 --json >"$dir/o2" 2>/dev/null
check "json parses with required keys" python3 -c "
import json,sys; d=json.load(open('$dir/o2'))
for k in ['op','overload','args','device','time_us','power_W','clocks_MHz','temperature_C','flags','db_id']: assert k in d, k
for k in ['median','mean','ci95_low','ci95_high','samples']: assert k in d['time_us'], k
assert ('energy_mJ' in d) != ('energy_unavailable' in d)
assert d['overload']=='Tensor' and d['args']=='self=f32[8,8] other=f32[8] alpha=2' and d['db_id']==2"

"$bin" measure aten::conv2dd input=f32[1] --device cpu --db "$db" >/dev/null 2>"$dir/e3"
check "unknown op exits non-zero" test $? -ne 0
check "unknown op suggests" has "$dir/e3" "did you mean"

"$bin" measure aten::conv2d input=f32[1,3,8,8] weight=f32[4,5,3,3] --device cpu --db "$db" >/dev/null 2>"$dir/e4"
check "rejected shapes carry the op's text" has "$dir/e4" "rejected the arguments"

cat >"$dir/spec.yaml" <<'YAML'
ops:
  - aten::relu self=f32[64]
  - aten::mm self=f32[4,5] mat2=f32[6,7]
  - op: aten::gelu
    args: {self: "f32[64]", approximate: tanh}
YAML
"$bin" measure --spec "$dir/spec.yaml" --device cpu --db "$db" --max-time 0.1 >"$dir/o5" 2>"$dir/e5"
check "spec with a bad entry exits 2 (bad input)" test $? -eq 2
check "spec goes on past the bad entry" has "$dir/o5" "aten::gelu self=f32\[64\] approximate=tanh"
check "spec error names file and entry" has "$dir/e5" "spec.yaml:3 (ops\[1\])"
check "spec summary" has "$dir/e5" "2 measured, 0 skipped, 1 failed"

"$bin" measure --spec "$dir/spec.yaml" --device cpu --db "$db" --resume --max-time 0.1 >/dev/null 2>"$dir/e6"
check "resume skips measured ops" has "$dir/e6" "0 measured, 2 skipped, 1 failed"

printf 'ops: [\n  {op: aten::relu\n' >"$dir/bad.yaml"
"$bin" measure --spec "$dir/bad.yaml" --device cpu --db "$db" >/dev/null 2>"$dir/e7"
check "malformed yaml names the line" grep -q "bad.yaml:[0-9]*:[0-9]*: malformed" "$dir/e7"

"$bin" db list --db "$db" >"$dir/o8" 2>/dev/null
check "db list shows rows" test "$(grep -c 'aten::' "$dir/o8")" -eq 4
"$bin" db show 2 --db "$db" >"$dir/o9"
check "db show prints the document" python3 -c "import json; assert json.load(open('$dir/o9'))['db_id']==2"
"$bin" db show 99 --db "$db" >/dev/null 2>"$dir/e10"
check "db show of a missing row" has "$dir/e10" "no row 99"
"$bin" db export --csv --db "$db" -o "$dir/all.csv"
check "csv export has header and 4 rows" test "$(wc -l <"$dir/all.csv")" -eq 5
"$bin" db export --json --db "$db" >"$dir/all.json"
check "json export has 4 documents" python3 -c "import json; assert len(json.load(open('$dir/all.json')))==4"

# Inventory: the models list, a JSON inventory, and measuring it as a spec file.
"$bin" models >"$dir/o11"
check "models lists resnet50 with its parameter count" grep -qE "^resnet50 +25557032 " "$dir/o11"
"$bin" inventory mnist-cnn --device cpu --batch 2 --json -o "$dir/inv.json" 2>"$dir/e12"
check "inventory -o reports what it wrote" has "$dir/e12" "10 calls, 10 unique signatures"
check "inventory json has layers and totals" python3 -c "
import json; d=json.load(open('$dir/inv.json'))
assert d['totals']=={'calls':10,'unique_signatures':10,'layers':8}, d['totals']
ops={}
[ops.setdefault(o['op'], o) for o in d['ops']]
assert ops['aten::linear']['layers']==['fc1'] and ops['aten::conv2d']['count']==1 and d['parameters']==431080"
check "on the CPU the inventory classes no inputs" python3 -c "
import json; d=json.load(open('$dir/inv.json')); assert d['cache_bytes']==0 and not any(o['cold_args'] for o in d['ops'])"
# Against a cache smaller than fc1's weight (1.6 MB), that weight is read from memory: the table
# says so, the JSON names it, and the classed inventory still measures as a spec.
"$bin" inventory mnist-cnn --device cpu --batch 2 --cache-bytes 64KiB >"$dir/o12b" 2>/dev/null
check "inventory --cache-bytes: a summary line" has "$dir/o12b" "inputs classed against a 64.0 KiB cache: [1-9][0-9]* of 10 signatures read some from memory"
check "... and the cold arguments under their signature" has "$dir/o12b" "from memory, not L2: weight"
"$bin" inventory mnist-cnn --device cpu --batch 2 --cache-bytes 64KiB --json -o "$dir/inv12c.json" 2>/dev/null
check "... fc1's weight cold in the JSON, its input warm" python3 -c "
import json; d=json.load(open('$dir/inv12c.json'))
fc1=[o for o in d['ops'] if o['op']=='aten::linear' and o['layers']==['fc1']][0]
assert d['cache_bytes']==65536 and 'weight' in fc1['cold_args'] and 'input' not in fc1['cold_args'], fc1"
"$bin" measure --spec "$dir/inv12c.json" --device cpu --db "$dir/inv12c.db" --no-energy --max-time 0.02 >/dev/null 2>&1
check "measure --spec of a classed inventory rotates the inputs it names" python3 -c "
import json, sqlite3
d=json.load(open('$dir/inv12c.json'))
want=sorted('cold:'+','.join(o['cold_args']) if o['cold_args'] else 'warm' for o in d['ops'])
got=sorted(r[0] for r in sqlite3.connect('$dir/inv12c.db').execute('SELECT cache_mode FROM measurements'))
assert got==want and any(m.startswith('cold:') for m in got), (got, want)"
"$bin" measure aten::mm "self=f32[4,4]" "mat2=f32[4,4]" --device cpu --db "$dir/inv12c.db" --no-energy --max-time 0.01 \
  --cache cold:mat2 >/dev/null 2>&1
check "measure --cache cold:ARG is taken and stored" python3 -c "
import sqlite3; assert sqlite3.connect('$dir/inv12c.db').execute('SELECT count(*) FROM measurements WHERE cache_mode=\"cold:mat2\"').fetchone()[0]==1"
"$bin" measure aten::mm "self=f32[4,4]" "mat2=f32[4,4]" --device cpu --no-store --cache tepid >/dev/null 2>"$dir/e12e"
check "a bad --cache says what fits" has "$dir/e12e" "use warm, cold, or cold:<argument>"
"$bin" inventory mnist-cnn --device cpu --cache-bytes lots >/dev/null 2>"$dir/e12d"
check "a bad --cache-bytes is refused, naming the option" has "$dir/e12d" "cache-bytes"
"$bin" measure --spec "$dir/inv.json" --device cpu --no-store --no-energy --max-time 0.02 >/dev/null 2>"$dir/e13"
check "every inventory signature measures" has "$dir/e13" "10 measured, 0 skipped, 0 failed"
"$bin" inventory mnist-cnn --device cpu --train >"$dir/o14" 2>/dev/null
check "train inventory has backward ops by layer" grep -q "aten::convolution_backward (bwd)" "$dir/o14"
"$bin" inventory resnet50 --input f32[1,3,224,224] --device cpu >/dev/null 2>"$dir/e15"
check "built-in model with --input says what fits" has "$dir/e15" "size its input with --batch"
"$bin" inventory mnist-cnn --device cpu --autocast fp16 --json -o "$dir/inv16.json" 2>/dev/null
check "an autocast inventory names its dtype as measurements store it" python3 -c "
import json; assert json.load(open('$dir/inv16.json'))['autocast']=='f16'"
"$bin" inventory mnist-cnn --device cpu --dtype bf16 --autocast fp16 >/dev/null 2>"$dir/e16"
check "autocast of a bf16 model is refused" has "$dir/e16" "drop --autocast"

# Predict / validate on the CPU: missing operators are reported (exit 3), validate measures
# them and the whole step, and a second predict is complete from the database alone.
pdb=$dir/predict.db
"$bin" predict mnist-cnn --device cpu --batch 2 --db "$pdb" >"$dir/o17" 2>/dev/null
check "predict of an empty database exits 3" test $? -eq 3
check "predict lists the missing operators" has "$dir/o17" "INCOMPLETE: 10 of 10 signatures"
"$bin" validate mnist-cnn --device cpu --batch 2 --db "$pdb" --max-time 0.05 --step-max-time 0.3 --json >"$dir/o18" 2>/dev/null
check "validate measures and compares" python3 -c "
import json; d=json.load(open('$dir/o18'))
assert d['complete'] and d['measured_calls']==10, d['missing']
import math; assert d['measured']['time_us']>0 and math.isfinite(d['error']['time']), d['error']  # timings are never asserted
assert d['predicted']['time_us']>0 and d['explained']['time']>0
assert {l['name'] for l in d['layers']} >= {'conv1','conv2','fc1','fc2'}
p=d['paired']; assert p['rounds']>=5 and len(p['measured_us'])==p['rounds'] and min(p['measured_us'])>0, p
assert p['time_error_low']<=p['time_error_median']<=p['time_error_high'] and d['error']['headline'] in ('paired','unpaired')
h=d['host']; assert h['rounds']>=5 and h['plain_step_us']>0 and h['in_calls_us']>0, h
assert d['measured']['before_ops_time_us']>0 and 'drift' in d['measured'], d['measured']
assert d['kernels']['checked'] is False, d['kernels']
assert d['cache']=='auto' and d['cache_auto']['why']=='on the CPU every input is warm', d['cache_auto']"
"$bin" predict mnist-cnn --device cpu --batch 2 --db "$pdb" >"$dir/o19" 2>/dev/null
check "predict from the database alone is complete" test $? -eq 0
# Inputs classed against a cache smaller than the step: the weights come from memory, and
# those signatures are measured again with their weights rotated.
"$bin" validate mnist-cnn --device cpu --batch 2 --db "$pdb" --cache-bytes 64KiB --max-time 0.05 \
  --step-max-time 0.3 --json >"$dir/o20" 2>/dev/null
check "validate --cache-bytes measures cold weights apart" python3 -c "
import json, sqlite3; d=json.load(open('$dir/o20'))
assert d['complete'] and d['cache_auto']=={'l2_bytes': 65536, 'signatures_with_cold_inputs': d['cache_auto']['signatures_with_cold_inputs']}, d['cache_auto']
assert d['cache_auto']['signatures_with_cold_inputs']>=3, d['cache_auto']
cold=[o for o in d['ops'] if '(from memory: ' in o['name']]
assert len(cold)==d['cache_auto']['signatures_with_cold_inputs'], [o['name'] for o in d['ops']]
modes={r[0] for r in sqlite3.connect('$pdb').execute('SELECT cache_mode FROM measurements WHERE op=\"aten::linear\"')}
assert 'warm' in modes and any(m.startswith('cold:') and 'weight' in m for m in modes), modes"
"$bin" validate mnist-cnn --device cpu --batch 2 --db "$pdb" --cache lukewarm >"$dir/o21" 2>"$dir/e21"
check "an unknown --cache is refused" has "$dir/e21" "lukewarm"

# Strings that hold commas, spaces or quotes are quoted, on the command line as in a spec file,
# and the stored signature reads back as the same call (issue 31: einsum's equation).
"$bin" measure aten::einsum 'equation="bd, de->be"' 'tensors=[f32[4,16], f32[16,8]]' --device cpu --db "$dir/s.db" \
  --max-time 0.05 --json >"$dir/o22" 2>"$dir/e22"
check "einsum with a quoted equation measures" test $? -eq 0
check "its signature keeps the quotes" python3 -c "
import json; d=json.load(open('$dir/o22')); assert d['args']=='equation=\"bd, de->be\" tensors=[f32[4,16],f32[16,8]]', d['args']"
printf 'ops:\n  - aten::einsum equation="bd, de->be" tensors=[f32[4,16],f32[16,8]]\n  - op: aten::mul.Scalar\n    args: {self: "c64[8]", other: 1.5-2.0j}\n' >"$dir/strings.yaml"
"$bin" measure --spec "$dir/strings.yaml" --device cpu --db "$dir/s.db" --resume --max-time 0.05 >/dev/null 2>"$dir/e23"
check "a spec's quoted string and complex scalar: the einsum found measured, the complex one measured" \
  has "$dir/e23" "1 measured, 1 skipped, 0 failed"

finish
