"""A database written by the released opcost (main at 2dc573c) opens, migrates and predicts as it did.

tests/data/fixture-2dc573c/ holds what that build made on the CPU (COMMAND says how): the database
(opcost.sqlite) and what `opcost predict mnist-cnn --json` printed on it (predict.json). This build
runs the same prediction on a copy read as it is (read-only, not migrated), on the copy migrated
in place, and on a `db copy` of it, and each must give the fixture's figures that come from the
database (the operators' costs and their interval, which calls are measured): the model's host
times are measured live and differ from run to run, so they are not compared.

Usage: fixture_test.py OPCOST_BIN FIXTURE_DIR WORK_DIR
"""
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys

WAITS_NOTE = " (the op waits for the device)"  # core/measurement.h: kWaitsForDeviceNote
SCHEMA_VERSION = "5"


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def run(opcost, work, *args):
    done = subprocess.run([opcost, *args], cwd=work, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        fail(f"opcost {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
    return done


def same_number(a, b):
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0)


def stored_figures(prediction):
    """The prediction's figures that come from the database, keyed for comparison."""
    out = {}
    for key in ("model", "mode", "input", "dtype", "calls", "measured_calls", "complete", "failures", "missing",
                "flagged", "capped"):
        out[key] = prediction[key]
    predicted = prediction["predicted"]
    for key in ("time_ci95_us", "energy_mJ", "energy_ci95_mJ", "gap_energy_mJ"):
        out["predicted." + key] = predicted[key]
    for table in ("ops", "layers"):
        for row in prediction[table]:
            for key in ("calls", "gpu_us", "energy_mJ", "missing_calls"):
                out[f"{table}[{row['name']}].{key}"] = row[key]
    return out


def compare(expected, got, what):
    want, have = stored_figures(expected), stored_figures(got)
    if set(want) != set(have):
        fail(f"{what}: other rows than the fixture's: missing {sorted(set(want) - set(have))}, "
             f"extra {sorted(set(have) - set(want))}")
    for key, value in want.items():
        other = have[key]
        if isinstance(value, float) or isinstance(other, float):
            if not same_number(value, other):
                fail(f"{what}: {key} is {other}, the fixture's {value}")
        elif value != other:
            fail(f"{what}: {key} is {other!r}, the fixture's {value!r}")
    print(f"ok: {what}: {len(want)} figures equal the fixture's")


def predict(opcost, work, db):
    command = ["--db", db, "predict", "mnist-cnn", "--json"]  # as COMMAND ran it
    return json.loads(run(opcost, work, *command).stdout)


def check_migrated(path, rows):
    with sqlite3.connect(path) as c:
        version = c.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]
        if version != SCHEMA_VERSION:
            fail(f"{path}: schema_version {version}, not {SCHEMA_VERSION}")
        got = c.execute("SELECT id, method, waits_for_device, settings_key, result_json FROM measurements").fetchall()
    if len(got) != rows:
        fail(f"{path}: {len(got)} rows, the fixture has {rows}")
    for row_id, method, waits, settings_key, document in got:
        expected = int(WAITS_NOTE in (method or ""))
        if waits != expected or json.loads(document).get("waits_for_device") != bool(expected):
            fail(f"{path}: row {row_id}: waits_for_device {waits} (document: "
                 f"{json.loads(document).get('waits_for_device')}), its method says {expected}")
        if settings_key is not None:
            fail(f"{path}: row {row_id} gained a settings_key ({settings_key}): it was stored without settings")
    print(f"ok: {path}: schema {SCHEMA_VERSION}, waits_for_device read from each of {rows} rows' note")


def main():
    opcost, fixture, work = (os.path.abspath(a) for a in sys.argv[1:4])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    expected = json.load(open(os.path.join(fixture, "predict.json")))
    pristine = os.path.join(work, "pristine.db")
    shutil.copyfile(os.path.join(fixture, "opcost.sqlite"), pristine)
    with sqlite3.connect(pristine) as c:
        rows = c.execute("SELECT COUNT(*) FROM measurements").fetchone()[0]
        ids = [r[0] for r in c.execute("SELECT id FROM measurements ORDER BY id")]
        # The newest unflagged row of a call `opcost measure` stored: what --resume must find.
        relu = c.execute("SELECT MAX(id) FROM measurements WHERE op = 'aten::relu' AND args = 'self=f32[256]' "
                         "AND flags = ''").fetchone()[0]
    if relu is None:
        fail("the fixture lacks its aten::relu self=f32[256] row (see COMMAND)")

    # 1. Read as it is: a read-only open migrates nothing, and reads the rows alike.
    old = os.path.join(work, "old.db")
    shutil.copyfile(pristine, old)
    compare(expected, predict(opcost, work, "old.db"), "predict on the unmigrated database")
    for row_id in ids:
        shown = json.loads(run(opcost, work, "--db", "old.db", "db", "show", str(row_id)).stdout)
        if shown.get("db_id") != row_id or "time_us" not in shown:
            fail(f"db show {row_id} printed another document: {str(shown)[:200]}")

    # 2. Migrated in place by a write (a --resume that finds the call measured: nothing is added).
    resumed = run(opcost, work, "--db", "old.db", "measure", "aten::relu", "self=f32[256]", "--max-time", "0.05",
                  "--resume")
    if f"already measured (row {relu})" not in resumed.stderr:
        fail(f"--resume on the fixture did not skip row {relu}: {resumed.stderr.strip()}")
    check_migrated(old, rows)
    compare(expected, predict(opcost, work, "old.db"), "predict on the migrated database")

    # 3. Copied (each row upgraded as it lands): the same again, and a second copy adds nothing.
    run(opcost, work, "db", "copy", "pristine.db", "copied.db")
    check_migrated(os.path.join(work, "copied.db"), rows)
    compare(expected, predict(opcost, work, "copied.db"), "predict on a db copy")
    again = run(opcost, work, "db", "copy", "pristine.db", "old.db")
    if f"copied 0 measurements" not in again.stderr or f"({rows} were there already)" not in again.stderr:
        fail(f"copying the fixture into its migrated self added rows: {again.stderr.strip()}")
    print("ok: every check passed")


if __name__ == "__main__":
    main()
