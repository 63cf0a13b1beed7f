#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment that has only torch in it (the torch the project
# is built against, and what it requires, linked in): the package builds
# against that torch, imports from site-packages, inventories a model, measures an op, validates,
# sweeps (through worker processes of the installed package), traces (trace, trace_model) and
# writes an HTML report (the template compiled into the extension) and compares two variants.
#
# The tree is copied and laid out as bootstrap lays out a checkout (.venv/ and build/ inside),
# and built as bootstrap builds (RelWithDebInfo, where pip would choose Release): ccache then
# hashes the same relative paths and flags (CMakeLists.txt) and hands back the main build's
# objects, so the install costs a link, not a second build of LibTorch code (CI's time budget).
set -uo pipefail
src=$1; torch_python=$2; dir=$3; compiler=${4:-}
rm -rf "$dir"; mkdir -p "$dir/tree"
tree=$dir/tree
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked and new files, as a clone with the work in progress would have them.
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done | xargs -0 cp --parents -t "$tree") ||
    { echo "0 passed, 1 failed: cannot copy the source tree"; exit 1; }
else
  tar -C "$src" --exclude=./build --exclude=./.venv --exclude=./.deps --exclude=./.git -cf - . | tar -C "$tree" -xf - ||
    { echo "0 passed, 1 failed: cannot copy the source tree"; exit 1; }
fi
"$torch_python" -m venv "$tree/.venv" || { echo "0 passed, 1 failed: cannot make a venv"; exit 1; }
python=$tree/.venv/bin/python
log=$dir/pip.log
# Torch and the packages it requires, and nothing else, linked into the fresh venv from the torch
# the project was built against: the same files (their .dist-info too, so pip sees torch installed)
# without unpacking 4 GB of wheels again, and at the same paths relative to the tree as the main
# build's, which ccache needs to reuse its objects.
site=$("$python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
if ! "$torch_python" - "$site" >"$log" 2>&1 <<'PY'
import importlib.metadata as md, os, re, sys
site = sys.argv[1]
todo, seen, linked = ["torch"], set(), set()
while todo:
    name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
    if name in seen:
        continue
    seen.add(name)
    try:
        dist = md.distribution(name)
    except md.PackageNotFoundError:
        continue  # an optional or platform-specific requirement that is not installed
    for f in dist.files or []:
        top = f.parts[0]
        if top in linked or top.endswith(".pth") or top == ".." or top == "__pycache__":
            continue
        source = os.path.join(str(dist.locate_file("")), top)
        # What the venv has of its own (pip, setuptools) stays its own.
        if os.path.exists(source) and not os.path.lexists(os.path.join(site, top)):
            os.symlink(source, os.path.join(site, top))
            linked.add(top)
    for r in dist.requires or []:
        if "extra ==" not in r:
            todo.append(re.match(r"[A-Za-z0-9_.-]+", r).group(0))
print(f"linked {len(linked)} entries of {len(seen)} distributions")
PY
then
  tail -5 "$log"; echo "0 passed, 1 failed: cannot link torch into the fresh venv"; exit 1
fi
"$python" -c "import torch" >>"$log" 2>&1 || { tail -5 "$log"; echo "0 passed, 1 failed: torch does not import in the fresh venv"; exit 1; }
# The main build's compiler, by the same path: ccache hashes its name (c++ and g++ differ), and
# pip's build would otherwise take Python's own (sysconfig's CXX).
settings=(--config-settings=build-dir="$tree/build" --config-settings=cmake.build-type=RelWithDebInfo)
[ -n "$compiler" ] && settings+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER="$compiler")
started=$(date +%s)
if ! "$python" -m pip install -q "$tree" "${settings[@]}" >"$log" 2>&1; then
  tail -40 "$log"; echo "0 passed, 1 failed: pip install . failed"; exit 1
fi
echo "pip install . took $(($(date +%s) - started)) s"
cd "$dir"  # away from the source tree: the installed package is imported
"$python" - <<'PY'
import os, torch, opcost
lib = os.path.dirname(opcost._core.__file__)
assert "site-packages" in lib and ".venv" in lib, lib
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
# compare from the installed package: variants in rounds after its uncounted warm-up round.
c = opcost.compare(net, x, variants=("fp32", "bf16"), rounds=2, round_max_time=0.02, layers=False, energy=False)
assert [v["name"] for v in c.json["variants"]] == ["fp32", "bf16"] and c.json["options"]["warmup_rounds"] == 1, c.json
assert all(len(v["rounds"]) == 2 for v in c.json["variants"]), c.json
try:
    import matplotlib  # noqa: F401
except ImportError:  # a comparison's plot needs the extra too, and says so
    try:
        c.plot()
        raise AssertionError("Comparison.plot() without matplotlib")
    except ImportError as e:
        assert "pip install" in str(e), e
# A compiled model from the installed package: inductor's generated C++ kernel is an operator
# of the inventory, in its layer (the package's wrappers and the extension's records together).
gelu = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.GELU(), torch.nn.Linear(8, 4))
ci = opcost.inventory(torch.compile(gelu), torch.randn(2, 4))
generated = [o for o in ci.ops if o.op.startswith("compiled::")]
assert generated and all(o.layers == ("1",) for o in generated), [(o.op, o.layers) for o in ci.ops]
print(f"installed opcost {opcost.__version__} in {lib}, against torch {torch.__version__}")
PY
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
