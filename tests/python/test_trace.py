"""opcost.trace from Python on the CPU: layers from module hooks, nested; the schedule; tables
that add up; the Chrome trace parses back; python -m opcost trace."""

import gzip
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import opcost


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.act = torch.nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.Sequential(Block(), Block())
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.head(self.blocks(x).flatten(1))


def traced(schedule=None, steps=5, **kw):
    model, x = Net().eval(), torch.randn(8, 16)
    with opcost.trace(model, schedule=schedule, device="cpu", **kw) as t:
        for _ in range(steps):
            with torch.inference_mode():
                model(x)
            t.step()
    return t


def test_the_schedule_keeps_its_active_steps_and_every_call_has_its_layer(tmp_path):
    t = traced(opcost.schedule(wait=1, warmup=1, active=2), steps=6)
    assert t.run.steps == 2
    path = t.export(tmp_path / "net.json.gz")
    events = [e for e in json.load(gzip.open(path, "rt"))["traceEvents"] if e["ph"] == "X"]
    layers = {e["name"]: e for e in events if e["cat"] == "layer"}
    assert {"Net", "blocks", "blocks.0", "blocks.0.fc", "blocks.1.act", "head"} <= set(layers)
    assert layers["blocks.0.fc"]["args"]["depth"] == 3  # Net > blocks > blocks.0 > blocks.0.fc
    ops = [e for e in events if e["cat"] == "cpu_op"]
    assert ops and all(e["args"]["layer"] for e in ops), [e["name"] for e in ops if not e["args"]["layer"]]
    assert {e["args"]["layer"] for e in ops if e["name"] == "aten::linear"} == {"blocks.0.fc", "blocks.1.fc", "head"}
    assert len([e for e in ops if e["name"] == "aten::linear"]) == 3 * 2  # two kept steps


@pytest.mark.parametrize("group_by", ["op", "layer", "shape"])
def test_table_totals_are_the_sums_of_their_rows(group_by):
    t = traced(shapes=True)
    rows = t.key_averages(group_by)
    total, rows = rows[-1], rows[:-1]
    for k in ("calls", "cpu_self_us", "gpu_self_us"):
        assert total[k] == pytest.approx(sum(r[k] for r in rows))
    text = t.table(group_by, sort_by="cpu_self", limit=2)
    assert "total" in text and "more rows" in text
    if group_by == "shape":
        assert any(r.get("shapes", "").startswith("[8, 16]") for r in rows)


def test_misuse_is_named():
    with pytest.raises(ValueError, match="active and repeat must be 1 or more"):
        opcost.schedule(active=0)
    with pytest.raises(ValueError, match="shapes=True"):
        traced().table("shape")
    with pytest.raises(ValueError, match="sort by 'joules'"):
        traced().table("op", sort_by="joules")
    with pytest.raises(RuntimeError, match="after its `with` block"):
        with opcost.trace(device="cpu") as t:
            t.table()


def test_trace_model_runs_the_schedule_itself_and_says_why_the_cpu_has_no_energy(tmp_path, caplog):
    model, x = Net().eval(), torch.randn(8, 16)
    with caplog.at_level(logging.INFO, logger="opcost"):
        t = opcost.trace_model(model, x, schedule=opcost.schedule(warmup=1, active=3), energy=True,
                               db=tmp_path / "ops.db")
    assert t.run.steps == 3
    rows = {r["name"]: r for r in t.key_averages("layer")}
    assert rows["Net"]["gpu_total_us"] == 0 and rows["blocks.1.fc"]["calls"] == 3
    assert "energy_total_mJ" not in rows["Net"]  # nothing is invented on the CPU
    assert "attributed on a GPU only" in t.energy_why and t.energy_why in caplog.text
    text = t.table("layer", sort_by="energy")
    assert "untraced step, measured:" in text and "no energy per layer" in text
    trained = opcost.trace_model(Net(), x, train=True)  # forward, the output's sum, backward
    assert trained.run.steps == 1
    assert {"aten::linear", "aten::mm", "aten::threshold_backward"} <= {r["name"] for r in trained.key_averages()}


def test_only_steps_keeps_those_steps_and_what_ran_in_them(tmp_path):
    t = traced(opcost.schedule(warmup=0, active=4), steps=4)
    two = t.only_steps("2-3")
    assert two.run.steps == 2 and two.run.calls * 2 == t.run.calls
    assert two.key_averages()[-1]["calls"] * 2 == t.key_averages()[-1]["calls"]
    with pytest.raises(ValueError, match="the run has 4 steps"):
        t.only_steps(5)
    with pytest.raises(ValueError, match="counted from 1"):
        t.only_steps("0")
    path = two.export(tmp_path / "two.pftrace")  # Perfetto's protobuf, by its name
    assert open(path, "rb").read(1) == b"\x0a"  # Trace.packet, length-delimited


def _perfetto_packets(path):
    """The packets of a .pftrace, read with Perfetto's own trace schema (its Python package)."""
    pb2 = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")  # bootstrap installs it
    return pb2, pb2.Trace.FromString(Path(path).read_bytes()).packet


def _slices_nest(pb2, packets):
    tracks, open_on, begun = {}, {}, []
    for p in packets:
        assert p.trusted_packet_sequence_id == 1
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            tracks[d.uuid] = d.name or d.process.process_name
            continue
        e = p.track_event
        assert e.track_uuid in tracks, "a track is described before its events"
        if e.type == pb2.TrackEvent.TYPE_SLICE_BEGIN:
            open_on.setdefault(e.track_uuid, []).append(e)
            begun.append(e)
        elif e.type == pb2.TrackEvent.TYPE_SLICE_END:
            assert open_on.get(e.track_uuid), f"an end without a begin on {tracks[e.track_uuid]}"
            open_on[e.track_uuid].pop()
    assert not any(open_on.values()), "every slice ends"
    return tracks, begun


def test_a_pftrace_reads_back_with_perfettos_own_schema(tmp_path):
    model, x = Net().eval(), torch.randn(8, 16)
    t = opcost.trace_model(model, x, schedule=opcost.schedule(warmup=1, active=2))
    pb2, packets = _perfetto_packets(t.export(tmp_path / "net.pftrace"))
    tracks, begun = _slices_nest(pb2, packets)
    names = {e.name for e in begun}
    assert {"Net", "blocks.0", "blocks.0.fc", "head", "aten::linear"} <= names, names
    assert sum(e.name.startswith("ProfilerStep#") for e in begun) == 2
    layers = {a.string_value for e in begun if e.name == "aten::linear" for a in e.debug_annotations if a.name == "layer"}
    assert layers == {"blocks.0.fc", "blocks.1.fc", "head"}


@pytest.mark.skipif(not os.environ.get("OPCOST_BIN"), reason="OPCOST_BIN is set by ctest")
def test_a_gpu_runs_pftrace_has_its_kernels_arrows_and_device_tracks(tmp_path):
    # The committed torch.profiler export of an H100 run, converted by the command line.
    out = tmp_path / "small.pftrace.gz"
    data = Path(__file__).resolve().parents[1] / "data" / "torch-profiler-small.json.gz"
    run = subprocess.run([os.environ["OPCOST_BIN"], "trace", "--import", str(data), "-o", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    plain = tmp_path / "small.pftrace"
    plain.write_bytes(gzip.decompress(out.read_bytes()))
    pb2, packets = _perfetto_packets(plain)
    tracks, begun = _slices_nest(pb2, packets)
    assert "stream 7" in tracks.values() and any(v.startswith("NVIDIA H100") for v in tracks.values())
    starts = sorted(f for e in begun for f in e.flow_ids)
    ends = sorted(f for e in begun for f in e.terminating_flow_ids)
    assert len(starts) == 8 and starts == ends  # an arrow from each call to each of its 8 kernels


def test_a_block_without_kept_steps_says_why(caplog):
    with caplog.at_level(logging.WARNING, logger="opcost"):
        t = traced(opcost.schedule(wait=2, active=1), steps=1)
    assert t.run.steps == 0
    assert "call t.step() after each step" in caplog.text


def test_python_m_opcost_trace_writes_the_trace_and_the_table(tmp_path):
    (tmp_path / "nets.py").write_text("import torch\ndef build():\n    return torch.nn.Sequential("
                                      "torch.nn.Linear(8, 8), torch.nn.ReLU())\n")
    out = tmp_path / "t.json"
    run = subprocess.run([sys.executable, "-m", "opcost", "trace", f"{tmp_path / 'nets.py'}:build", "--input",
                          "f32[2,8]", "--device", "cpu", "-o", str(out), "--table", "--group-by", "layer"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "written to" in run.stderr and "layer" in run.stdout and "0.0" in run.stdout
    names = {e["name"] for e in json.load(open(out))["traceEvents"] if e.get("cat") == "layer"}
    assert names == {"Sequential", "0", "1"}
    bad = subprocess.run([sys.executable, "-m", "opcost", "trace", f"{tmp_path / 'nets.py'}:build", "--device",
                          "cpu"], capture_output=True, text=True)
    assert bad.returncode == 2 and "give the model's inputs" in bad.stderr
