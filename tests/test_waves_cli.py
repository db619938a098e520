"""waves / deps / export on synthetic captures with known answers, and the
Perfetto file's structure."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from attlens.synth import write_capture
from conftest import require_shared


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr + p.stdout
    assert p.returncode == code, p.stderr
    return p


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return write_capture(tmp_path_factory.mktemp("toy"))


# The toy listing: prologue pcs 1-5, loop body pcs 6-15, epilogue 16-20.
LOAD_PC, WAIT_PC = 6, 10  # buffer_load at line 20, s_waitcnt vmcnt(0) at line 24


def test_planted_load_to_use_distance(toy):
    doc = json.loads(run("deps", toy, "--json", "--topk", "0").stdout)
    prod = {p["pc"]: p for p in doc["producers"]}[LOAD_PC]
    assert prod["distance_instructions_median"] == 4 == prod["distance_instructions_min"]
    assert prod["wait_class"] == "wait_global"
    assert prod["pairs"] == prod["executions"] == 32 * 8  # 32 waves x 8 iterations
    wait = {w["wait_pc"]: w for w in doc["waits"]}[WAIT_PC]
    assert wait["producers"] == [{"pc": LOAD_PC, "isa": prod["isa"], "cycles": wait["stall"]}]
    assert wait["charged_cycles"] == wait["stall"]
    # the wait resolved exactly the one load outstanding on vmcnt (the ds_read was waited on at line 22)
    assert prod["outstanding_mean"] == 1.0
    lines = {x["source"]: x for x in doc["producer_lines"]}
    assert lines[prod["source"]]["waited_cycles"] == prod["waited_cycles"]
    assert sum(x["waited_cycles"] for x in doc["producer_lines"]) == doc["total_charged_cycles"]


def test_deps_selection(toy):
    by_pc = json.loads(run("deps", toy, "--json", "--pc", WAIT_PC).stdout)
    assert [w["wait_pc"] for w in by_pc["waits"]] == [WAIT_PC]
    assert [p["pc"] for p in by_pc["producers"]] == [LOAD_PC]
    by_line = json.loads(run("deps", toy, "--json", "--line", "toy_kernel.py:20").stdout)
    assert [p["pc"] for p in by_line["producers"]] == [LOAD_PC]
    p = run("deps", toy, "--pc", 99999, code=2)
    assert p.stderr.startswith("attlens: error: pc 99999: no instruction")
    p = run("deps", toy, "--line", "nowhere.py:1", code=2)
    assert "no memory op or wait" in p.stderr
    run("deps", toy)  # terminal output renders


def test_waves_json_states_cover_lifetimes(toy):
    doc = json.loads(run("waves", toy, "--json").stdout)
    assert doc["schema"] == "attlens.waves"
    for w in doc["waves"]:
        assert sum(w["states"].values()) - (w["end"] - w["begin"]) in (0, 4)
    assert sum(doc["states"]["cycles"].values()) == sum(sum(w["states"].values()) for w in doc["waves"])
    assert doc["clock"]["aligned"] is True and doc["clock"]["se_offsets_cycles"] == {"0": 0, "1": 750}
    # the toy loop runs 8 times: phases split first iteration from steady state
    ph = doc["phases"]["kernel"]
    assert ph["loop_first"]["records"] > 0 and ph["loop_steady"]["records"] == 7 * ph["loop_first"]["records"]
    assert doc["flags"] == []
    run("waves", toy)


def _check_trace(doc):
    events = doc["traceEvents"]
    assert events
    slices = defaultdict(list)
    counters = defaultdict(list)
    for e in events:
        assert {"ph", "pid", "tid", "name"} <= e.keys()
        if e["ph"] == "X":
            assert e["dur"] >= 0 and e["ts"] >= 0
            a = round(e["ts"] * 1000)  # ts/dur are µs with ns resolution: compare integer ns
            slices[(e["pid"], e["tid"])].append((a, a + round(e["dur"] * 1000)))
        elif e["ph"] == "C":
            counters[(e["pid"], e["name"])].append(e["ts"])
            assert all(isinstance(v, int) for v in e["args"].values())
        else:
            assert e["ph"] == "M"
    for track, sl in slices.items():
        sl.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for a, b in sl:  # slices on one track must nest or follow each other
            while stack and stack[-1] <= a:
                stack.pop()
            assert not stack or b <= stack[-1], track
            stack.append(b)
    for ts in counters.values():
        assert ts == sorted(ts)
    return slices


def test_perfetto_export_structure(toy, tmp_path):
    out = tmp_path / "t.json"
    summary = json.loads(run("export", toy, "--perfetto", out, "--json").stdout)
    doc = json.loads(out.read_text())
    slices = _check_trace(doc)
    assert summary["events"] == len(doc["traceEvents"]) and summary["waves_exported"] == 32
    n_instr = sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and "pc" in e.get("args", {}))
    assert n_instr == 2880  # every record of the toy capture
    assert len(slices) == 2 * 2 * 4 * 2  # per SE: (instructions + states) x 4 SIMDs x 2 slots
    few = tmp_path / "few.json"
    run("export", toy, "--perfetto", few, "--max-waves", 3)
    assert json.loads(few.read_text())["metadata"]["waves_exported"] == 3
    run("export", toy, "--perfetto", few, "--window", "x:y", code=2)
    run("export", toy, "--perfetto", few, "--window", "0:100")


def test_perfetto_export_real_capture(tmp_path):
    shared = require_shared()
    cap = shared / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    out = tmp_path / "fa.json"
    run("export", cap, "--perfetto", out)
    doc = json.loads(out.read_text())
    _check_trace(doc)
    assert doc["metadata"]["se_offsets_cycles"] and doc["metadata"]["shader_clock_hz"] > 1e9
