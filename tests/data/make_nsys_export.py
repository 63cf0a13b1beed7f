#!/usr/bin/env python3
"""Makes tests/data/nsys-small.sqlite, an Nsight Systems SQLite export of the same two steps as
tests/data/torch-profiler-small.json.gz (a real torch.profiler run on the H100).

nsys is not installed on the GPU machine, so the export is built from the export's documented
schema (https://docs.nvidia.com/nsight-systems/ "SQLite Export Schema Reference"): the tables
and columns nsys writes, filled with that run's events as nsys would record them under
torch.autograd.profiler.emit_nvtx():
- each operator call is an NVTX push/pop range (eventType 59) named as emit_nvtx names it
  ("aten::conv2d, seq = 5, sizes = [[4, 3, 32, 32], [8, 3, 3, 3], [8]]");
- each module range a plain NVTX range ("Conv2d_0", as `opcost trace --nvtx` opens layers);
  each ProfilerStep#N range one too;
- CUDA runtime calls (CUPTI_ACTIVITY_KIND_RUNTIME) and kernels (CUPTI_ACTIVITY_KIND_KERNEL) keep
  the run's CUPTI correlation ids; names go to StringIds;
- threads are serialized as nsys does: globalTid = pid << 24 | tid.

    python3 tests/data/make_nsys_export.py tests/data/torch-profiler-small.json.gz tests/data/nsys-small.sqlite
"""
import gzip
import json
import os
import sqlite3
import sys

SCHEMA = """
CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE TARGET_INFO_GPU (id INTEGER NOT NULL, name TEXT NOT NULL, busLocation TEXT, isDiscrete INTEGER,
  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER,
  computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER REFERENCES StringIds(id), domainId INTEGER, uint64Value INTEGER, int64Value INTEGER,
  doubleValue REAL, uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL REFERENCES StringIds(id),
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL REFERENCES StringIds(id), shortName INTEGER NOT NULL REFERENCES StringIds(id),
  mangledName INTEGER REFERENCES StringIds(id), launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
"""
NVTX_PUSH_POP_RANGE = 59
RUNTIME_CLASS = 1  # eventClass of CUDA runtime API calls


def main(src: str, dst: str) -> None:
    doc = json.load(gzip.open(src, "rt"))
    events = [e for e in doc["traceEvents"] if e.get("ph") == "X" and isinstance(e.get("tid"), int)]
    base = min(e["ts"] for e in events)
    ns = lambda us: int(round((us - base) * 1000))  # nsys times: ns from the session's start
    if os.path.exists(dst):
        os.remove(dst)
    db = sqlite3.connect(dst)
    db.executescript(SCHEMA)
    strings = {}

    def sid(text):
        if text not in strings:
            strings[text] = len(strings) + 1
            db.execute("INSERT INTO StringIds VALUES (?, ?)", (strings[text], text))
        return strings[text]

    def gtid(e):
        return (int(e["pid"]) << 24) | int(e["tid"])

    db.execute("INSERT INTO TARGET_INFO_GPU (id, name) VALUES (0, ?)", (doc["deviceProperties"][0]["name"],))
    for e in events:
        cat, name, a = e.get("cat"), e["name"], e.get("args", {})
        start, end = ns(e["ts"]), ns(e["ts"] + e["dur"])
        nvtx = None
        if cat == "cpu_op":  # as emit_nvtx names a call
            nvtx = name
            if a.get("Sequence number") is not None:
                nvtx += f", seq = {a['Sequence number']}"
            if "Input Dims" in a:
                nvtx += ", sizes = [" + ", ".join(str(d) if isinstance(d, list) else "[]" for d in a["Input Dims"]) + "]"
        elif cat == "user_annotation":
            nvtx = name
        elif cat == "python_function" and name.startswith("nn.Module: "):
            nvtx = name[len("nn.Module: "):]
        if nvtx is not None:
            db.execute("INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, endGlobalTid) "
                       "VALUES (?, ?, ?, ?, ?, ?)", (start, end, NVTX_PUSH_POP_RANGE, nvtx, gtid(e), gtid(e)))
        elif cat == "cuda_runtime":
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, ?, ?, ?, ?, 0, NULL)",
                       (start, end, RUNTIME_CLASS, gtid(e), a.get("correlation", 0), sid(name)))
        elif cat == "kernel":
            grid, block = a.get("grid", [1, 1, 1]), a.get("block", [1, 1, 1])
            db.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, "
                       "correlationId, globalPid, demangledName, shortName, registersPerThread, gridX, gridY, gridZ, "
                       "blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, "
                       "localMemoryTotal, gridId) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, 0)",
                       (start, end, a.get("device", 0), a.get("context", 1), a.get("stream", 7), a["correlation"],
                        int(doc["traceEvents"][0].get("pid", 0)) << 24, sid(name), sid(name.split("(")[0]),
                        a.get("registers per thread", 0), *grid, *block, a.get("shared memory", 0), 0))
    db.commit()
    db.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
