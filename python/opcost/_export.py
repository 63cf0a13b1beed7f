"""A database's rows through the command line's own `db export`, run in this process: the
database (a URL perhaps with its password) never on a command line another user sees."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Callable, List, TypeVar

from . import _core

T = TypeVar("T")


def export_rows(db: str, export_args: List[str], read: Callable[[str], T], what: str) -> T:
    """`opcost --db DB db export EXPORT_ARGS -o FILE` into a temporary file, read by ``read(path)``.
    Its note on standard error is kept for the error, which names ``what`` was exported."""
    with tempfile.TemporaryDirectory(prefix="opcost-export-") as folder:
        out, log_path = os.path.join(folder, "rows"), os.path.join(folder, "stderr.txt")
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            with open(log_path, "w") as log_file:
                os.dup2(log_file.fileno(), 2)
                rc = _core.run_command_line(["--db", db, "db", "export", *export_args, "-o", out])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        if rc != 0:
            with open(log_path, errors="replace") as f:
                why = " ".join(f.read(2000).split()).removeprefix("opcost: error: ")
            raise RuntimeError(f"{what} could not be exported: {why}")
        return read(out)
