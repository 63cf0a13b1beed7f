"""Hostile sweep files from Python: the binding reads them with the same core as the command
line, so a deep `where` is a ValueError (it killed the interpreter with a segmentation fault),
and a huge grid is refused before anything is expanded, also under a memory cap."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

import opcost

CPU = dict(device="cpu", energy=False)


def _grid(tmp_path, where: str):
    path = tmp_path / "deep.yaml"
    path.write_text(f'op: aten::relu\nargs: {{self: "f32[4]"}}\nwhere: "{where}"\n')
    return path


@pytest.mark.parametrize("where", ["(" * 100_000 + "1 == 1" + ")" * 100_000, "not " * 100_000 + "true",
                                   "-" * 200_000 + "1 == 1"])
def test_deep_nesting_is_a_value_error_not_a_crash(tmp_path, where):
    path = _grid(tmp_path, where)
    for call in (opcost.sweep_status, opcost.sweep):
        with pytest.raises(ValueError) as e:
            call(path, db=tmp_path / "x.db", **CPU)
        message = str(e.value)
        assert "nested more than 200 levels deep" in message and "\n" not in message and len(message) < 1000
    assert not (tmp_path / "x.db").exists()


def test_int64_overflow_is_refused(tmp_path):
    with pytest.raises(ValueError, match="2 \\*\\* 64 does not fit in a 64-bit integer"):
        opcost.sweep_status(_grid(tmp_path, "2 ** 64 == 0"), db=tmp_path / "x.db", **CPU)


def test_max_items_is_the_callers_limit(tmp_path):
    path = tmp_path / "g.yaml"
    path.write_text('op: aten::relu\nargs: {self: "f32[{a}]"}\naxes: {a: [1, 2, 3], b: [1, 2]}\n')
    with pytest.raises(ValueError, match="6 combinations .* more than the 5 items"):
        opcost.sweep_status(path, db=tmp_path / "x.db", max_items=5, **CPU)
    assert opcost.sweep_status(path, db=tmp_path / "x.db", max_items=6, **CPU).items == 3  # b is unused: 3 calls
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="max_items="):
            opcost.sweep_status(path, db=tmp_path / "x.db", max_items=bad, **CPU)


def test_a_huge_grid_is_refused_under_a_memory_cap(tmp_path):
    """10^10 items: refused at once in a process whose address space is capped at what it uses
    after importing opcost plus 1 GiB (the expansion grew to 12-15 GB before)."""
    values = ", ".join(str(i) for i in range(100))
    path = tmp_path / "big.yaml"
    path.write_text(f'op: aten::relu\nargs: {{self: "f32[{{a}}]"}}\n'
                    f"axes: {{a: [{values}], b: [{values}], c: [{values}], d: [{values}], e: [{values}]}}\n")
    script = textwrap.dedent(f"""
        import resource, sys
        import opcost
        vm_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:"))
        cap = vm_kib * 1024 + (1 << 30)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        try:
            opcost.sweep_status({str(path)!r}, db={str(tmp_path / "x.db")!r}, device="cpu", energy=False)
        except ValueError as e:
            print(e)
            sys.exit(0)
        sys.exit(1)
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "big.yaml: 10000000000 combinations" in r.stdout and r.stdout.count("\n") == 1
