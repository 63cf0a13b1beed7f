#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment that has only torch in it (the version the
# project is built against, from pip's cache when bootstrap has fetched it): the package builds
# against that torch, imports from site-packages, inventories a model, measures an op, validates,
# sweeps (through worker processes of the installed package), traces (trace, trace_model) and
# writes an HTML report (the template compiled into the extension).
set -uo pipefail
src=$1; torch_python=$2; dir=$3
rm -rf "$dir"; mkdir -p "$dir"
"$torch_python" -m venv "$dir/venv" || { echo "0 passed, 1 failed: cannot make a venv"; exit 1; }
log=$dir/pip.log
version=$("$torch_python" -c "import torch; print(torch.__version__.split('+')[0])")
if ! "$dir/venv/bin/python" -m pip install -q "torch==$version" >"$log" 2>&1; then
  tail -5 "$log"; echo "skipped: torch $version cannot be installed into a fresh venv here (no index, no cache)"
  exit 77
fi
if ! "$dir/venv/bin/python" -m pip install -q "$src" >"$log" 2>&1; then
  tail -40 "$log"; echo "0 passed, 1 failed: pip install . failed"; exit 1
fi
cd "$dir"  # away from the source tree: the installed package is imported
"$dir/venv/bin/python" - <<'PY'
import os, torch, opcost
lib = os.path.dirname(opcost._core.__file__)
assert "site-packages" in lib and "venv" in lib, lib
inv = opcost.inventory(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), torch.randn(2, 4))
assert inv.calls == 2 and inv.layers == ["0", "1"], (inv.calls, inv.layers)
m = opcost.measure("aten::relu", self="f32[64]", device="cpu", store=False, max_time=0.05, energy=False)
assert m.time_us > 0 and m.op == "aten::relu", m
# The workflow end to end from the installed package: measured, predicted, paired.
p = opcost.validate(torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), torch.randn(2, 4), db="ops.db",
                    max_time=0.02, step_max_time=0.2, energy=False)
assert p.complete and p.measured_time_us > 0 and p.paired_time_error is not None, p
assert p.paired_energy_error is None and p.headline in ("paired", "unpaired"), p
# A sweep: its workers are `python -m opcost._sweep_worker` from the installed package.
import pathlib
pathlib.Path("grid.yaml").write_text('op: aten::relu\nargs: {self: "f32[{n}]"}\naxes: {n: [4, 8]}\n')
r = opcost.sweep("grid.yaml", db="ops.db", device="cpu", energy=False, max_time=0.02, progress=False)
assert (r.items, r.measured, r.failed, r.crashes) == (2, 2, 0, 0), r
# A trace: the installed extension's recorder, layers from module hooks, a gzip Chrome trace.
import gzip, json
net, x = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()), torch.randn(2, 4)
with opcost.trace(net, device="cpu") as t:
    with torch.inference_mode():
        net(x)
    t.step()
rows = t.key_averages("layer")
assert {r["name"] for r in rows} == {"Sequential", "0", "1", "total"}, rows
events = json.load(gzip.open(t.export("t.json.gz"), "rt"))["traceEvents"]
assert {e["args"]["layer"] for e in events if e.get("cat") == "cpu_op"} == {"0", "1"}, events
# trace_model runs the schedule itself; on the CPU --energy says why there is none; a step cut;
# Perfetto's protobuf (its first byte: Trace.packet, length-delimited).
tm = opcost.trace_model(net, x, schedule=opcost.schedule(active=2), energy=True, db="ops.db")
assert tm.run.steps == 2 and "GPU only" in tm.energy_why, tm.energy_why
assert open(tm.only_steps(2).export("t.pftrace"), "rb").read(1) == b"\x0a"
# The report's template is compiled into the installed extension; the plots need matplotlib, an
# extra this venv lacks: the error says how to install it.
html = opcost.report(p, "validate.html").read_text()
assert html.count('id="opcost-data"') == 1 and '"kind":"validate"' in html.replace(" ", ""), html[:300]
try:
    import matplotlib  # noqa: F401
except ImportError:
    try:
        p.plot()
        raise AssertionError("plot() without matplotlib")
    except ImportError as e:
        assert "pip install" in str(e), e
print(f"installed opcost {opcost.__version__} in {lib}, against torch {torch.__version__}")
PY
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
