#!/usr/bin/env python3
"""Trace import and write throughput against Holistic Trace Analysis (issue 12, must-have 5).

A real torch.profiler trace (bench/make_profiler_trace.py: torchvision resnet50 on the H100) is
repeated step by step, with times shifted and ids offset, into one trace of at least
--target-mb megabytes. Then, each --repeat times, alone, timed on the wall clock with its peak
resident memory (the child's, from wait4):
- `opcost_trace_io` (bench/trace_io.cpp, torch-free): opcost's importer, then its writer;
- `opcost trace --import BIG --table`: the command line (LibTorch loaded too);
- Holistic Trace Analysis: `TraceAnalysis(trace_dir=...)`, which parses the trace.

    python3 bench/trace_import_bench.py SEED.json.gz OUT_DIR [--build build] [--hta-python PY]
"""
import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

ID_KEYS = ("External id", "correlation", "Python id", "Python parent id", "Sequence number", "Ev Idx")


def enlarge(seed: str, out: str, target_mb: float) -> dict:
    doc = json.load(gzip.open(seed, "rt"))
    events = doc["traceEvents"]
    timed = [e for e in events if isinstance(e.get("ts"), (int, float))]
    t0 = min(e["ts"] for e in timed)
    span = max(e["ts"] + e.get("dur", 0) for e in timed) - t0 + 1000.0
    ids = [e["args"][k] for e in events for k in ID_KEYS if isinstance(e.get("args", {}).get(k), int)]
    ids += [e["id"] for e in events if isinstance(e.get("id"), int)]
    id_step = max(ids) + 1
    steps = sum(1 for e in events if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") == "user_annotation")
    seed_mb = len(json.dumps(doc)) / 1e6
    copies = max(1, int(target_mb / seed_mb) + 1)
    big = []
    for r in range(copies):
        for e in events:
            if r == 0 or isinstance(e.get("ts"), (int, float)):
                c = dict(e)
                if r:
                    c["ts"] = e["ts"] + r * span
                    if isinstance(e.get("id"), int):
                        c["id"] = e["id"] + r * id_step
                    if "args" in e:
                        c["args"] = dict(e["args"])
                        for k in ID_KEYS:
                            if isinstance(c["args"].get(k), int) and c["args"][k] >= 0:
                                c["args"][k] += r * id_step
                    if c.get("name", "").startswith("ProfilerStep#"):
                        c["name"] = "ProfilerStep#%d" % (int(c["name"][13:]) + r * steps)
                big.append(c)
    doc["traceEvents"] = big
    with open(out, "w") as f:
        json.dump(doc, f)
    return {"seed": seed, "seed_MB": seed_mb, "copies": copies, "steps": steps * copies, "events": len(big),
            "MB": os.path.getsize(out) / 1e6}


def run(cmd) -> dict:
    """One process, alone: its wall time, its output, and its peak resident memory (GNU time)."""
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "peak_rss_kB=%M", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{cmd}: exit {p.returncode}: {p.stderr[-2000:]}")
    peak = [line for line in p.stderr.splitlines() if line.startswith("peak_rss_kB=")][-1]
    return {"wall_s": wall, "stdout": p.stdout, "peak_rss_MB": int(peak.split("=")[1]) / 1024}


HTA_SCRIPT = """
import resource, sys, time
t0 = time.perf_counter()
from hta.trace_analysis import TraceAnalysis
t1 = time.perf_counter()
a = TraceAnalysis(trace_dir=sys.argv[1])
t2 = time.perf_counter()
df = a.t.get_trace(0)
print({"import_hta_s": t1 - t0, "parse_s": t2 - t1, "events": len(df),
       "peak_rss_MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
"""


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("seed")
    p.add_argument("out")
    p.add_argument("--build", default="build")
    p.add_argument("--hta-python", default=sys.executable)
    p.add_argument("--target-mb", type=float, default=220)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--no-hta", action="store_true",
                   help="opcost alone (a trace big enough that its written file is itself over 200 MB)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    work = os.path.join(a.out, "work")
    os.makedirs(work, exist_ok=True)
    big = os.path.join(work, "rank-0.json")
    result = {"trace": enlarge(a.seed, big, a.target_mb), "machine": os.uname().nodename, "cpus": os.cpu_count()}
    print(json.dumps(result["trace"]), flush=True)
    mb = result["trace"]["MB"]
    # Each tool alone; opcost's importer in-process figures come from its own report.
    io_runs = []
    for _ in range(a.repeat):
        r = run([os.path.join(a.build, "bench", "opcost_trace_io"), big, os.path.join(work, "written.json")])
        io_runs.append(json.loads(r["stdout"]))
    result["opcost_trace_io"] = io_runs
    cli = [run([os.path.join(a.build, "opcost"), "trace", "--import", big, "--table", "--limit", "5"])
           for _ in range(a.repeat)]
    result["opcost_cli"] = [{"wall_s": r["wall_s"], "peak_rss_MB": r["peak_rss_MB"]} for r in cli]
    result["opcost_cli_table"] = cli[-1]["stdout"]
    hta_runs = []
    for _ in range(0 if a.no_hta else a.repeat):
        r = run([a.hta_python, "-c", HTA_SCRIPT, work])
        hta_runs.append(dict(eval(r["stdout"].strip().splitlines()[-1]), wall_s=r["wall_s"],
                             process_peak_rss_MB=r["peak_rss_MB"]))
    result["hta"] = hta_runs
    imp = statistics.median(r["import_s"] for r in io_runs)
    wr = statistics.median(r["write_s"] for r in io_runs)
    hta = statistics.median(r["parse_s"] for r in hta_runs) if hta_runs else float("nan")
    result["summary"] = {
        "trace_MB": mb,
        "opcost_import_s": imp, "opcost_import_MB_per_s": mb / imp,
        "opcost_import_peak_rss_MB": max(r["peak_rss_after_import_MB"] for r in io_runs),
        "opcost_write_s": wr, "opcost_write_MB_per_s": statistics.median(r["write_MB_per_s"] for r in io_runs),
        "opcost_written_MB": io_runs[0]["output_MB"],
        "opcost_cli_wall_s": statistics.median(r["wall_s"] for r in cli),
        "opcost_cli_peak_rss_MB": max(r["peak_rss_MB"] for r in cli),
        "hta_parse_s": hta, "hta_MB_per_s": mb / hta,
        "hta_peak_rss_MB": max((r["process_peak_rss_MB"] for r in hta_runs), default=float("nan")),
        "speedup_import_vs_hta": hta / imp,
        "speedup_cli_vs_hta": hta / statistics.median(r["wall_s"] for r in cli),
    }
    with open(os.path.join(a.out, "trace_import_bench.json" if hta_runs else "trace_write_bench.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["summary"], indent=1))
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
