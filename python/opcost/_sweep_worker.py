"""A sweep's worker process (``opcost.sweep`` starts it): claims the sweep's pending items from
the database and measures them, one JSON event per line on standard output. Not for direct use.

    OPCOST_DB=DATABASE python -m opcost._sweep_worker OPTIONS_JSON --sweep-name NAME --sweep-scope SCOPE
"""

import json
import os
import signal
import sys

import torch  # noqa: F401  (loads LibTorch before the extension that links it)

from . import _core


def main(argv) -> int:
    if len(argv) != 5 or argv[1] != "--sweep-name" or argv[3] != "--sweep-scope":
        print("usage: python -m opcost._sweep_worker OPTIONS_JSON --sweep-name NAME --sweep-scope SCOPE",
              file=sys.stderr)
        return 2
    # Ctrl-C ends the worker at once, as it ends the supervisor: the item in hand stays pending.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    options = json.loads(argv[0])
    # The database comes through the environment (opcost.sweep sets it), never argv: `ps` shows
    # every local user a command line, and a postgresql:// URL may hold a password.
    options["db"] = os.environ.get("OPCOST_DB", "")
    if not options["db"]:
        print("opcost._sweep_worker: $OPCOST_DB is not set (opcost.sweep sets it for its workers)", file=sys.stderr)
        return 2
    return _core.sweep_worker(options, argv[2], argv[4])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
