#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment that has torch (the torch the project is
# built against, made visible to it by a .pth file instead of a second 2 GB install): the
# package builds against that torch, imports, and inventories a model.
set -uo pipefail
src=$1; torch_python=$2; dir=$3
rm -rf "$dir"; mkdir -p "$dir"
"$torch_python" -m venv "$dir/venv" || { echo "0 passed, 1 failed: cannot make a venv"; exit 1; }
site=$("$dir/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$torch_python" -c "import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))" >"$site/user-torch.pth"
log=$dir/pip.log
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
print(f"installed opcost {opcost.__version__} in {lib}, against torch {torch.__version__}")
PY
rc=$?
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
