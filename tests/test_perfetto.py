"""`attlens export` in the Perfetto protobuf form (issue 22), read back with
the perfetto package's own generated classes: every wave kept, every
instruction record a slice nested in its wave's slice, slices balanced and
ordered per track, and one flow from each memory instruction to the wait that
consumed it (the wait dependency pairs, docs/waitdeps.md). The JSON form
stays for chrome://tracing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest

from clirun import run_main
from conftest import REPO, loaded, require_shared

if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
    pytest.importorskip("perfetto", reason="the perfetto package (pip install -e '.[perfetto]') is not installed")

LAYERNORM = "traces/layernorm/big/ui_output_agent_22257_dispatch_23"


def read_trace(path):
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace

    return Trace.FromString(path.read_bytes())


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    cap = require_shared() / LAYERNORM
    out = tmp_path_factory.mktemp("pf") / "layernorm.pftrace"
    res = run_main("export", str(cap), "-o", str(out), "--json")
    assert res.code == 0, res.describe()
    return cap, out, res.json(), read_trace(out)


def test_every_wave_and_record_is_a_nested_slice(exported):
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TrackEvent

    cap, out, summary, trace = exported
    d, r = loaded(cap)
    names: dict[int, str] = {}
    stacks: dict[int, list] = defaultdict(list)
    last_ts: dict[int, int] = defaultdict(int)
    waves = instructions = events = 0
    per_track_pcs: dict[int, list] = defaultdict(list)
    for p in trace.packet:
        assert p.trusted_packet_sequence_id == 1
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        if not p.HasField("track_event"):
            continue
        ev = p.track_event
        events += 1
        t = ev.track_uuid
        assert p.timestamp >= last_ts[t], "timestamps go forward on each track"
        last_ts[t] = p.timestamp
        if ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            name = ev.name or names[ev.name_iid]
            if name.startswith("wave "):
                assert not stacks[t], "a wave slice is the outermost"
                waves += 1
            elif stacks[t] and stacks[t][-1].startswith("wave "):
                instructions += 1
                pc = next(a.uint_value for a in ev.debug_annotations if a.name_iid == 1)
                assert name == d.static.mnemonic[pc]
            stacks[t].append(name)
        elif ev.type == TrackEvent.TYPE_SLICE_END:
            assert stacks[t], "an end without a begin"
            stacks[t].pop()
    assert not any(stacks.values()), "every slice ends"
    assert waves == d.waves.count == summary["waves_exported"] == summary["waves_total"] == 16
    assert instructions == d.records.count
    assert events == summary["events"]
    assert summary["format"] == "proto" and summary["bytes"] == out.stat().st_size and summary["waves_cut_by_max_events"] == 0


def test_a_flow_from_each_memory_op_to_the_wait_that_consumed_it(exported):
    from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TrackEvent

    cap, _out, summary, trace = exported
    d, r = loaded(cap)
    names: dict[int, str] = {}
    starts, ends = {}, {}
    for p in trace.packet:
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        ev = p.track_event
        if p.HasField("track_event") and ev.type == TrackEvent.TYPE_SLICE_BEGIN:
            pc = next((a.uint_value for a in ev.debug_annotations if a.name_iid == 1), None)
            for fid in ev.flow_ids:
                assert fid not in starts
                starts[fid] = (ev.track_uuid, p.timestamp, pc)
            for fid in ev.terminating_flow_ids:
                assert fid not in ends
                ends[fid] = (ev.track_uuid, p.timestamp, pc)
    pairs = r.pairs
    assert len(starts) == len(ends) == len(pairs.wait_rec) == summary["flows"] > 0
    assert set(starts) == set(ends)
    klass = d.static
    for fid, (track, ts, pc) in starts.items():
        wtrack, wts, wpc = ends[fid]
        assert track == wtrack and ts <= wts  # the same wave, the producer before its wait
        row = fid - 1
        assert pc == d.records.pc[pairs.prod_rec[row]] and wpc == d.records.pc[pairs.wait_rec[row]]
        assert d.code.isa[wpc].startswith(("s_waitcnt", "s_wait_")), d.code.isa[wpc]
        assert klass.mnemonic[pc].startswith(("buffer_", "global_", "ds_", "s_load", "s_buffer_load", "flat_", "scratch_", "s_sendmsg")), d.code.isa[pc]


def test_json_form_stays_for_chrome_tracing(tmp_path):
    cap = require_shared() / LAYERNORM
    out = tmp_path / "t.json"
    res = run_main("export", str(cap), "-o", str(out), "--json")
    assert res.code == 0 and res.json()["format"] == "json" and res.json()["flows"] == 0
    doc = json.loads(out.read_text())
    assert doc["traceEvents"] and doc["metadata"]["waves_exported"] == 16
    # --format overrides the file name
    out2 = tmp_path / "t.trace"
    assert run_main("export", str(cap), "-o", str(out2), "--format", "json").code == 0
    assert json.loads(out2.read_text())["traceEvents"]


def test_without_the_perfetto_package_a_usage_error(tmp_path):
    cap = require_shared() / LAYERNORM
    code = ("import sys; sys.modules['perfetto'] = None; from attlens.cli import main; "
            f"raise SystemExit(main(['export', {str(cap)!r}, '-o', {str(tmp_path / 't.pftrace')!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")}, timeout=120)
    assert p.returncode == 2 and "needs the perfetto package" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "t.pftrace").exists()
