#!/usr/bin/env bash
# `opcost trace` end to end on the CPU: a built-in model's steps as a Chrome trace (plain and
# gzip) that parses back with nested layer ranges and every operator call inside a layer of
# its thread; tables whose totals are the sums of their rows; torch.profiler and nsys exports
# imported to the same ties, and opcost's own trace to the same tables; malformed events skipped and
# counted; -o onto the input refused; hostile files refused in one line under ulimit -v.
set -uo pipefail
bin=$1; dir=$2; nvtx_log=${3:-}  # an NVTX injection library (tests/tools/nvtx_log.cpp), when built
rm -rf "$dir"; mkdir -p "$dir"
source "$(dirname "$0")/check.sh"
python=${OPCOST_PYTHON:-python3}
data=$(cd "$(dirname "$0")" && pwd)/data/torch-profiler-small.json.gz

"$bin" trace resnet18 --batch 1 --device cpu --steps 2 --warmup 1 -o "$dir/r18.json.gz" 2>"$dir/e1" >"$dir/o1"
check "trace exits 0" test $? -eq 0
check "it says where the trace went and what it holds" has "$dir/e1" "written to $dir/r18.json.gz (2 steps, .* layer ranges, .* operator calls, 0 device activities)"
check "no table unless asked, with an output file" lines "$dir/o1" 0
# The trace file: Chrome trace JSON with nested layers, each call inside a layer on its thread.
cat >"$dir/check_trace.py" <<'PY'
import gzip, json, sys
doc = json.load(gzip.open(sys.argv[1], "rt"))
ev = [e for e in doc["traceEvents"] if e["ph"] == "X"]
layers = [e for e in ev if e["cat"] == "layer"]
ops = [e for e in ev if e["cat"] == "cpu_op"]
steps = [e for e in ev if e["cat"] == "step"]
assert len(steps) == 2, len(steps)
assert max(l["args"]["depth"] for l in layers) >= 2, "layers nest (resnet18 > layer1 > layer1.0 > conv1)"
for l in layers:  # every layer inside its parent, on one thread
    if l["args"]["depth"] > 0:
        assert any(p["tid"] == l["tid"] and p["args"]["depth"] == l["args"]["depth"] - 1 and
                   p["ts"] <= l["ts"] and l["ts"] + l["dur"] <= p["ts"] + p["dur"] + 1e-3 for p in layers), l
unplaced = [o["name"] for o in ops if not o["args"]["layer"] or not any(
    l["tid"] == o["tid"] and l["name"] == o["args"]["layer"] and l["ts"] <= o["ts"] and
    o["ts"] + o["dur"] <= l["ts"] + l["dur"] + 1e-3 for l in layers)]
assert not unplaced, unplaced
assert {"resnet18", "layer1.0.conv1", "fc"} <= {l["name"] for l in layers}
print(len(layers), len(ops))
PY
check "the trace parses back: steps, nested layers, every call inside its layer" "$python" "$dir/check_trace.py" "$dir/r18.json.gz"
"$bin" trace mnist-cnn --device cpu -o "$dir/m.json" --min-duration 1000000 2>/dev/null
check "a plain JSON trace; --min-duration leaves the short calls out" "$python" -c "
import json, sys; ev = json.load(open(sys.argv[1]))['traceEvents']
assert not [e for e in ev if e.get('cat') == 'cpu_op'] and [e for e in ev if e.get('cat') == 'layer']" "$dir/m.json"

"$bin" trace resnet18 --batch 1 --device cpu -o "$dir/l.json" --layers '^layer2\.0$' 2>/dev/null
check "--layers keeps the matching layers, their sublayers and the calls in them" "$python" -c "
import json, sys; ev = json.load(open(sys.argv[1]))['traceEvents']
layers = {e['name'] for e in ev if e.get('cat') == 'layer'}
assert 'layer2.0' in layers and 'layer2.0.conv1' in layers and all(l.startswith('layer2.0') for l in layers), layers
ops = [e for e in ev if e.get('cat') == 'cpu_op']
assert ops and all(e['args']['layer'].startswith('layer2.0') for e in ops)" "$dir/l.json"
"$bin" trace mnist-cnn --device cpu -o "$dir/x.json" --layers '(' 2>"$dir/e8"
check "a --layers that is not a regular expression: exit 2, before tracing" test $? -eq 2 -a ! -e "$dir/x.json"
check "... named" has "$dir/e8" "not a regular expression"

# --energy: energy per call is attributed on a GPU (the unit tests check the arithmetic). On the
# CPU the untraced step is measured, and the table says why there is no energy per layer and
# gives none: no figure is invented.
"$bin" trace mnist-cnn --device cpu --energy --json --db "$dir/en.db" >"$dir/en.json" 2>/dev/null
check "--energy measures the untraced step (time, with its interval)" "$python" -c "
import json, sys; t = json.load(open(sys.argv[1])); m = t['measured_step']
assert m['time_us'] > 0 and m['time_ci95_us'] >= 0
assert ('energy_mJ' in m) != ('energy_unavailable' in m), m
assert 'attributed on a GPU only' in t['energy_unavailable'] and 'energy' not in t, t.get('energy')
assert all('energy_total_mJ' not in r for r in t['rows'])" "$dir/en.json"
"$bin" trace --import "$data" --energy 2>"$dir/e9"
check "--energy with --import is refused" test $? -eq 2

# Training: backward calls take the layer of the forward call that made their autograd node.
"$bin" trace mnist-cnn --batch 4 --train --device cpu -o "$dir/train.json" 2>/dev/null
check "backward calls are tied to their forward layers" "$python" -c "
import json, sys; ops = [e for e in json.load(open(sys.argv[1]))['traceEvents'] if e.get('cat') == 'cpu_op']
layers = {e['args']['layer'] for e in ops if e['name'] == 'aten::convolution_backward'}
assert layers == {'conv1', 'conv2'}, layers" "$dir/train.json"

# Tables: the total row is the sum of the rows (per operator, per shape, per layer).
for group in op shape layer; do
  "$bin" trace resnet18 --batch 1 --device cpu --group-by "$group" --json --limit 0 >"$dir/t-$group.json" 2>/dev/null
  check "table by $group: totals are the sums of the rows" "$python" -c "
import json, sys; t = json.load(open(sys.argv[1]))
for k in ('calls', 'cpu_self_us', 'gpu_self_us'):
    assert abs(t['total'][k] - sum(r[k] for r in t['rows'])) < 1e-6 * max(1, t['total'][k]), k
assert t['rows'] and t['group_by'] == sys.argv[2].replace('shape', 'op+shape')" "$dir/t-$group.json" "$group"
done
check "by shape: rows carry their input shapes" grep -q '"shapes": "\[1, 3, 224, 224\]' "$dir/t-shape.json"
"$bin" trace mnist-cnn --device cpu --group-by layer --sort-by cpu_self >"$dir/t1" 2>/dev/null
check "the text table has a total and says how many steps" has "$dir/t1" "^total .*" && check "... steps" has "$dir/t1" "1 step traced"

# Import: torch.profiler's own export of a small model's two steps on the H100 (tests/data,
# made by bench/run_trace_check), tied kernel -> operator -> layer as expected.
"$bin" trace --import "$data" -o "$dir/imported.json" --table --group-by layer --json >"$dir/imp-layers.json" 2>"$dir/e5"
check "a torch.profiler export imports" test $? -eq 0
"$bin" trace --import "$data" --group-by op --json >"$dir/imp-ops.json" 2>/dev/null
check "imported: each kernel tied to its operator and layer, nothing untied" "$python" -c "
import gzip, json, sys
src = [e for e in json.load(gzip.open(sys.argv[1], 'rt'))['traceEvents'] if e.get('cat') == 'kernel']
ev = json.load(open(sys.argv[2]))['traceEvents']
ties = {(e['name'][:20], e['args'].get('op'), e['args'].get('layer')) for e in ev if e.get('cat') == 'kernel'}
assert ties == {('void implicit_convol', 'aten::conv2d', 'Conv2d_0'),
                ('void at::native::ele', 'aten::conv2d', 'Conv2d_0'),      # the bias add_, nested in conv2d
                ('void at::native::vec', 'aten::relu', 'ReLU_0'),
                ('void gemmSN_TN_kerne', 'aten::linear', 'Linear_0')}, ties
ops = {r['name']: r for r in json.load(open(sys.argv[3]))['rows']}
assert set(ops) == {'aten::conv2d', 'aten::relu', 'aten::flatten', 'aten::linear'} and ops['aten::linear']['calls'] == 2
t = json.load(open(sys.argv[4]))
assert t['untied'] == 0 and t['steps'] == 2
assert abs(t['total']['gpu_self_us'] - sum(e['dur'] for e in src)) < 1e-3, (t['total'], sum(e['dur'] for e in src))
" "$data" "$dir/imported.json" "$dir/imp-ops.json" "$dir/imp-layers.json"
# An nsys SQLite export of the same run (tests/data/make_nsys_export.py: built from nsys's
# documented schema, since nsys is not on the GPU machine) gives the same ties and tables.
nsys=$(dirname "$data")/nsys-small.sqlite
"$bin" trace --import "$nsys" -o "$dir/from-nsys.json" --table --json --group-by op >"$dir/nsys-ops.json" 2>"$dir/e10"
check "an nsys SQLite export imports, exit 0" test $? -eq 0
"$bin" trace --import "$nsys" --json --group-by layer >"$dir/nsys-layers.json" 2>/dev/null
check "... with the same kernel -> operator -> layer ties and tables as the torch.profiler export" "$python" -c "
import json, sys
ties = lambda p: sorted((e['name'], e['args'].get('op'), e['args'].get('layer'), e['ts']) for e in json.load(open(p))['traceEvents'] if e.get('cat') == 'kernel')
assert ties(sys.argv[1]) and [t[:3] for t in ties(sys.argv[1])] == [t[:3] for t in ties(sys.argv[2])]
rows = lambda p: sorted((r['name'], r['calls'], r['gpu_self_us'], r['cpu_self_us']) for r in json.load(open(p))['rows'])
def same(a, b):  # times within 5 ns: the two files round their clocks differently
    assert [r[:2] for r in a] == [r[:2] for r in b] and all(abs(x - y) < 5e-3 for p, q in zip(a, b) for x, y in zip(p[2:], q[2:])), (a, b)
same(rows(sys.argv[3]), rows(sys.argv[4]))
same(rows(sys.argv[5]), rows(sys.argv[6]))
" "$dir/from-nsys.json" "$dir/imported.json" "$dir/nsys-ops.json" "$dir/imp-ops.json" "$dir/nsys-layers.json" "$dir/imp-layers.json"
# Without correlation ids, the kernels are tied by the synchronisation that waited for them,
# and their rows say so.
"$python" - "$nsys" "$dir/no-corr.sqlite" <<'PY'
import shutil, sqlite3, sys
shutil.copy(sys.argv[1], sys.argv[2])
db = sqlite3.connect(sys.argv[2])
last_call, tid = db.execute("SELECT max(end), globalTid FROM NVTX_EVENTS WHERE text LIKE 'aten::%'").fetchone()
last_kernel = db.execute("SELECT max(end) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
db.execute("INSERT INTO StringIds VALUES (999, 'cudaDeviceSynchronize')")
db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, 0, 999, 0, NULL)", (last_call + 1, last_kernel + 10, tid))
db.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 0")
db.commit()
PY
"$bin" trace --import "$dir/no-corr.sqlite" --json >"$dir/no-corr.json" 2>/dev/null
check "kernels without correlation ids are inferred from the synchronisation after them" "$python" -c "
import json, sys
t = json.load(open(sys.argv[1])); rows = {r['name']: r for r in t['rows']}
assert t['untied'] == 0 and t['total']['inferred_activities'] == 8, t['total']
assert rows['(between synchronisations)']['calls'] == 0 and rows['(between synchronisations)']['device_activities'] == 8
assert t['total']['calls'] == 8" "$dir/no-corr.json"
"$python" -c "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('CREATE TABLE t (x)')" "$dir/other.sqlite"
"$bin" trace --import "$dir/other.sqlite" 2>"$dir/e11"
check "a SQLite file that is not an nsys export is refused, exit 2" test $? -eq 2
check "... saying what to record" has "$dir/e11" "no StringIds table: not an nsys export of a CUDA run; record with"
# --only-steps: the file and the tables keep only those steps and what ran in them.
"$bin" trace --import "$data" --only-steps 2 --json --group-by op -o "$dir/step2.json" --table >"$dir/step2-ops.json" 2>/dev/null
check "--only-steps 2 keeps the second step's calls and kernels" "$python" -c "
import json, sys
t, whole = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert t['steps'] == 1 and t['total']['calls'] * 2 == whole['total']['calls'], (t['total'], whole['total'])
assert 0 < t['total']['gpu_self_us'] < whole['total']['gpu_self_us'] and t['untied'] == 0
steps = {e['name'] for e in json.load(open(sys.argv[3]))['traceEvents'] if e.get('name', '').startswith('ProfilerStep')}
assert steps == {'ProfilerStep#1'}, steps" "$dir/step2-ops.json" "$dir/imp-ops.json" "$dir/step2.json"
"$bin" trace --import "$data" --only-steps 3 2>"$dir/e12"
check "--only-steps past the run's steps: exit 2, naming how many there are" test $? -eq 2 && check "... named" has "$dir/e12" "the run has 2 steps"

# --nvtx: an NVTX range for every step and layer, as nsys would record them.
if [ -n "$nvtx_log" ]; then
  NVTX_INJECTION64_PATH=$nvtx_log OPCOST_NVTX_LOG=$dir/nvtx.log "$bin" trace mnist-cnn --device cpu --nvtx --steps 2 \
    -o "$dir/nvtx.json" 2>/dev/null
  check "--nvtx exits 0" test $? -eq 0
  check "... with an NVTX range for every layer range and step of the trace, balanced" "$python" -c "
import json, sys
lines = open(sys.argv[1]).read().splitlines()
pushed = [l[5:] for l in lines if l.startswith('push ')]
assert len(pushed) == lines.count('pop'), 'unbalanced'
ev = [e for e in json.load(open(sys.argv[2]))['traceEvents'] if e.get('ph') == 'X']
layers = sorted(e['name'] for e in ev if e['cat'] == 'layer')
assert set(layers) == {'mnist-cnn', 'conv1', 'conv1_pool', 'conv2', 'conv2_pool', 'fc1_relu', 'fc1', 'fc2'}, layers
assert all(pushed.count(l) >= layers.count(l) for l in set(layers)), (pushed, layers)
assert {'ProfilerStep#1', 'ProfilerStep#2'} <= set(pushed), pushed
calls = [e['name'] for e in ev if e['cat'] == 'cpu_op']
assert all(any(p.split(',')[0] == c for p in pushed) for c in calls), 'each call is a range too, as emit_nvtx names it'" \
    "$dir/nvtx.log" "$dir/nvtx.json"
fi
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::x", "tid": 1, "ts": "12", "dur": 3},
  {"ph": "X", "cat": "cpu_op", "name": "aten::y", "tid": 1, "ts": 20, "dur": 3}]}' >"$dir/odd.json"
"$bin" trace --import "$dir/odd.json" --json >"$dir/odd-ops.json" 2>"$dir/e13"
check "an event with a field of another type is skipped, not the trace refused" "$python" -c "
import json, sys; rows = json.load(open(sys.argv[1]))['rows']
assert [r['name'] for r in rows] == ['aten::y'], rows" "$dir/odd-ops.json"
check "... counted, with the first one's place and fault, in one line" has "$dir/e13" \
  '1 malformed event skipped (the first, event 1 at byte 17: ts "12" is not a number)'
check "... one line" lines "$dir/e13" 1
# Fields that would wrap the totals (issue 30: "CPU total -9223372036854776.0 us", exit 0).
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a", "tid": 1, "ts": "abc", "dur": 1},
  {"ph": "X", "cat": "cpu_op", "name": "b", "tid": 1, "ts": 1, "dur": null},
  {"ph": "X", "cat": "cpu_op", "name": "c", "tid": 1, "ts": 1, "dur": -5},
  {"ph": "X", "cat": "cpu_op", "name": "d", "tid": 1, "ts": 1e308, "dur": 1}]}' >"$dir/all-bad.json"
"$bin" trace --import "$dir/all-bad.json" >"$dir/o14" 2>"$dir/e14"
check "a trace whose calls are all malformed is refused, exit 2" test $? -eq 2
check "... saying how many and the first" has "$dir/e14" "no valid operator calls: 4 events skipped as malformed, the first event 1 at byte 17: ts \"abc\" is not a number"
check "... and no table" lines "$dir/o14" 0
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "ok", "tid": 1, "ts": 1, "dur": 2},
  {"ph": "X", "cat": "cpu_op", "name": "c", "tid": 1, "ts": 1, "dur": -5}, {"ph": "X", "cat": "cpu_op", "name": "d", "tid": 1, "ts": 1e308, "dur": 1}]}' >"$dir/some-bad.json"
"$bin" trace --import "$dir/some-bad.json" --json >"$dir/some-bad-ops.json" 2>/dev/null
check "the good calls of a partly malformed trace keep their true total" "$python" -c "
import json, sys; t = json.load(open(sys.argv[1])); assert t['total']['cpu_total_us'] == 2.0 and t['total']['calls'] == 1, t['total']" "$dir/some-bad-ops.json"

# Outputs never replace inputs: -o onto the imported trace, by its name, a symbolic link or a
# hard link, is refused before anything is read, and the file stays as it was.
cp "$data" "$dir/same.json.gz"; ln -s same.json.gz "$dir/same-link.json.gz"; ln "$dir/same.json.gz" "$dir/same-hard.json.gz"
for out in "$dir/same.json.gz" "$dir/same-link.json.gz" "$dir/same-hard.json.gz" "$dir/../trace/same.json.gz"; do
  "$bin" trace --import "$dir/same.json.gz" -o "$out" 2>"$dir/e15"
  rc=$?
  check "-o $(basename "$out") onto the imported trace: exit 2" test $rc -eq 2
  check "... saying why, in one line" has "$dir/e15" "that is the trace this command reads"
  check "... and the trace is unchanged" cmp -s "$data" "$dir/same.json.gz"
done
# A write that fails half-way (the file size limit, as a full disk) leaves the old file whole
# and no temporary file behind: traces are written under a temporary name, renamed when done.
echo "the old file" >"$dir/old.json"
(trap '' XFSZ; ulimit -f 8; "$bin" trace --import "$data" -o "$dir/old.json" 2>"$dir/e16")
check "a write that fails half-way fails" test $? -ne 0
check "... naming the file" has "$dir/e16" "$dir/old.json: .*File too large"
check "... leaving the old file as it was" grep -qx "the old file" "$dir/old.json"
check "... and no temporary file" test -z "$(ls -A "$dir" | grep '\.tmp$')"

# opcost's own trace reads back to the same tables (its steps, layers, ties and backward
# calls' forward layers): not "0 steps traced".
"$bin" trace mnist-cnn --batch 4 --train --device cpu --steps 2 -o "$dir/own.json" --table --json --group-by layer \
  >"$dir/own-layers.json" 2>/dev/null
"$bin" trace --import "$dir/own.json" --json --group-by layer >"$dir/own-back.json" 2>"$dir/e17"
check "opcost's own trace imports, exit 0" test $? -eq 0
check "... with the same steps and layer rows" "$python" -c "
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert a['steps'] == b['steps'] == 2, (a['steps'], b['steps'])
rows = lambda t: sorted((r['name'], r['calls'], round(r['cpu_self_us'], 3), round(r['cpu_total_us'], 3)) for r in t['rows'])
assert rows(a) == rows(b), (rows(a), rows(b))
assert {'conv1', 'conv2', 'fc1'} <= {r['name'] for r in b['rows']}" "$dir/own-layers.json" "$dir/own-back.json"
"$bin" trace --import "$dir/own.json" >"$dir/own-back.txt" 2>/dev/null
check "... which says 2 steps traced" has "$dir/own-back.txt" "^2 steps traced"

# Bounded memory, whatever the file (docs/trace.md, "Limits"): under `ulimit -v` just above
# what the command needs to load LibTorch and import a small trace, /dev/zero and a gzip of
# 1 GiB of zeros are refused at byte 0 at once, a 1 GiB string in an event is refused by the
# event limit, and two 1 GiB strings outside traceEvents stream by (the import succeeds).
need_kB=
for kB in $(seq 1048576 262144 33554432); do
  # in a shell of its own, whose report of LibTorch aborting for want of memory goes to /dev/null
  if sh -c 'ulimit -v "$1" && "$2" trace --import "$3"; exit $?' _ "$kB" "$bin" "$data" >/dev/null 2>&1; then
    need_kB=$kB
    break
  fi
done
check "the command runs under some ulimit -v" test -n "$need_kB"
limit_kB=$((${need_kB:-0} + 524288))  # the import's own bound, with room: 512 MiB, half of one input
echo "trace import memory tests: ulimit -v $limit_kB kB (LibTorch and a small import need $need_kB kB)"
"$python" - "$dir" <<'PY'
import sys, zlib
def member(parts, out):
    c = zlib.compressobj(1, zlib.DEFLATED, 31)
    for p in parts:
        out.write(c.compress(p))
    out.write(c.flush())
def gib(ch):
    block = ch * (1 << 20)
    return (block for _ in range(1024))
ev = b'{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "tid": 1, "ts": 1, "dur": 2}'
d = sys.argv[1]
with open(d + "/zeros.gz", "wb") as out:
    member(gib(b"\0"), out)
with open(d + "/big-event.json.gz", "wb") as out:
    member([b'{"traceEvents": [{"ph": "X", "name": "'], out); member(gib(b"a"), out); member([b'"}]}'], out)
with open(d + "/big-outside.json.gz", "wb") as out:
    member([b'{"junk": "'], out); member(gib(b"a"), out)
    member([b'", "deviceProperties": [{"name": "'], out); member(gib(b"b"), out)
    member([b'"}], "traceEvents": [' + ev + b']}'], out)
PY
bounded() { (ulimit -v "$limit_kB"; timeout 60 "$bin" trace --import "$@"); }
bounded /dev/zero >/dev/null 2>"$dir/e18"
check "/dev/zero under ulimit -v: exit 2 at once" test $? -eq 2
check "... at byte 0, in one line" has "$dir/e18" "/dev/zero: not a Chrome trace: byte 0: a NUL byte"
check "... one line" lines "$dir/e18" 1
bounded "$dir/zeros.gz" >/dev/null 2>"$dir/e19"
check "a gzip of 1 GiB of zeros under ulimit -v: exit 2" test $? -eq 2
check "... at byte 0, in one line" has "$dir/e19" "zeros.gz: not a Chrome trace: byte 0: a NUL byte"
bounded "$dir/big-event.json.gz" >/dev/null 2>"$dir/e20"
check "a 1 GiB string in an event under ulimit -v: exit 2" test $? -eq 2
check "... the limit and the event's place, in one line" has "$dir/e20" "big-event.json.gz: event 1 (at byte 17) is over the limit of 8 MiB for one event"
check "... one line" lines "$dir/e20" 1
bounded "$dir/big-outside.json.gz" --json >"$dir/big-outside.json" 2>"$dir/e21"
check "2 GiB of strings outside traceEvents under ulimit -v: skipped as they stream, exit 0" test $? -eq 0
check "... the events read" "$python" -c "
import json, sys; assert json.load(open(sys.argv[1]))['total']['calls'] == 1" "$dir/big-outside.json"
rm -f "$dir"/zeros.gz "$dir"/big-*.json.gz
printf '{"traceEvents": []}' >"$dir/empty.json"
"$bin" trace --import "$dir/empty.json" 2>"$dir/e6"
check "a trace without operator calls is refused, exit 2" test $? -eq 2
check "... saying what to record" has "$dir/e6" "no operator calls (cpu_op events); profile with activities"
"$bin" trace 2>"$dir/e7"
check "neither a model nor --import: exit 2 with the fix" test $? -eq 2 && check "... named" has "$dir/e7" "name a model"

# Bad input: one line naming it, exit 2.
"$bin" trace mnist-cnn --device cpu --group-by kernel 2>"$dir/e2"
check "an unknown --group-by exits 2" test $? -eq 2
check "... naming it and what fits" has "$dir/e2" "group-by"
"$bin" trace mnist-cnn --device cpu -o "$dir/none/t.json.gz" 2>"$dir/e3"
check "an unwritable trace file fails" test $? -ne 0
check "... naming the file" has "$dir/e3" "$dir/none/t.json.gz"
check "... in one line" lines "$dir/e3" 1
"$bin" trace nosuchmodel --device cpu 2>"$dir/e4"
check "an unknown model exits 2" test $? -eq 2
finish
