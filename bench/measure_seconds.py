#!/usr/bin/env python3
"""Where the measuring time of a database went (issue 25: a model characterised in a minute).

    python3 bench/measure_seconds.py DB.sqlite [--top N] [--rows]

Each row's `seconds` (its measurement's own wall time, from its first check to its last
loop) summed by kind: calls without device work, energy from shared counter windows, from a
loop of its own (duty-cycled or not), and by operator. What a validate's wall time holds beyond
their sum is the rest (input synthesis, kernel checks, shared loops, the step's measurements).
With --rows, every row after the sums: its seconds, kind, operator and arguments, and what its
method says after the timing (why it got its own loop, a duty cycle, a pool).
"""

import argparse
import collections
import sqlite3
import sys


def kind_of(device_work: str, method: str) -> str:
    if device_work and device_work.startswith("none"):
        return "no device work (host time only)"
    if "windows shared by" in method:
        return "energy in shared counter windows"
    if "duty" in method:
        return "energy from its own loop, duty-cycled too"
    return "energy from its own loop"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--rows", action="store_true", help="list every row, slowest first, with its method")
    args = ap.parse_args()
    try:
        con = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True)
        present = {r[1] for r in con.execute("PRAGMA table_info(measurements)")}
    except sqlite3.Error as e:
        print(f"{args.db}: cannot read it as an opcost database ({e}); give the file validate wrote (--db)",
              file=sys.stderr)
        return 2
    if "seconds" not in present:
        print(f"{args.db}: its rows carry no measuring seconds (no `seconds` column: an older opcost wrote them); "
              "measure them again to see where the time went", file=sys.stderr)
        return 2
    column = lambda name, empty: f"COALESCE({name}, {empty})" if name in present else empty  # noqa: E731
    rows = con.execute(f"SELECT op, {column('overload', repr(''))}, {column('device_work', repr(''))}, "
                       f"{column('method', repr(''))}, {column('seconds', '0')}, {column('args', repr(''))} "
                       "FROM measurements").fetchall()
    if not rows:
        print(f"{args.db}: no measurements", file=sys.stderr)
        return 1
    by_kind, by_op = collections.defaultdict(list), collections.defaultdict(list)
    for op, overload, work, method, seconds, _ in rows:
        by_kind[kind_of(work, method)].append(seconds)
        by_op[op + ("." + overload if overload else "")].append(seconds)
    total = sum(r[4] for r in rows)
    print(f"{len(rows)} rows, {total:.1f} s of measuring in them")
    print(f"{'kind':45s} {'rows':>5s} {'seconds':>8s} {'mean s':>7s}")
    for kind, s in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
        print(f"{kind:45s} {len(s):5d} {sum(s):8.1f} {sum(s) / len(s):7.3f}")
    print(f"\n{'operator':45s} {'rows':>5s} {'seconds':>8s} {'mean s':>7s}")
    for op, s in sorted(by_op.items(), key=lambda kv: -sum(kv[1]))[:args.top]:
        print(f"{op[:45]:45s} {len(s):5d} {sum(s):8.1f} {sum(s) / len(s):7.3f}")
    if args.rows:
        print(f"\n{'seconds':>7s}  kind / operator and arguments / method after its timing")
        for op, overload, work, method, seconds, call_args in sorted(rows, key=lambda r: -r[4]):
            name = op + ("." + overload if overload else "")
            # The timing's part of a method is the same for every row; what follows its first
            # "; " says how the energy was had.
            after = method.split("; ", 1)[1] if "; " in method else method
            print(f"{seconds:7.3f}  {kind_of(work, method)} / {name} {call_args[:160]} / {after[:600]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
