"""What the Python GPU checks share: each case runs on its own (a failed one is reported, the
others still run), one line each, then "N passed, M failed" and the exit status."""
import sys

results = []


def case(name, fn):
    try:
        fn()
        results.append(True)
        print(f"ok: {name}", flush=True)
    except Exception as e:  # a failed case is reported, the others still run
        results.append(False)
        print(f"FAILED: {name}: {type(e).__name__}: {e}", flush=True)


def finish():
    print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
    sys.exit(0 if all(results) else 1)
