"""rocprofv3 readers on the real files of ../shared: kernel_trace / stats /
agent_info / counter_collection CSVs (both quoting styles, the ≤ 6.4 layout,
the rocpd-convert variants), results.json (dispatch and counter records), and
rocpd databases built here from real kernel_trace rows (no public results.db
exists; the schema is the UUID-suffixed one of rocprofv3-interfaces.md §4)."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path

import orjson
import pytest

from attlens.errors import CorruptCapture, InputNotFound, NotACapture
from attlens.io.results_json import read_results_json
from attlens.io.rocpd import read_rocpd, read_rocpd_agents, read_rocpd_dispatches
from attlens.io.rocprof_csv import (
    parse_agent_id,
    pid_from_filename,
    pivot_counters,
    read_agent_info,
    read_counter_collection,
    read_kernel_stats,
    read_kernel_trace,
    read_kernel_trace_checked,
)
from conftest import require_shared

csv.field_size_limit(2**31 - 1)

# (kernel dir, trace rows, distinct kernel names, "Agent N" of the discovery run)
TRACES = {
    "blockscale_preshuffle_gemm": (273, 27, 6),
    "flash_attn_func": (45, 19, 2),
    "hgemm_splitk": (412, 34, 4),
    "layernorm": (135, 17, 4),
    "moe_blockscale": (1510, 84, 5),
    "moe_gemm": (905, 53, 7),
    "pa": (245, 60, 8),
    "pa_mqa_logits_fp4": (532, 74, 2),
    "preshuffle_gemm": (169, 30, 3),
    "rmsnorm": (129, 16, 3),
    "softmax": (123, 12, 2),
    "vec_add": (68, 15, 2),
}
RESULTS_JSON = {  # file → (pid, kernel_symbols, code_objects, GPU agent handle of the ATT dispatch, its logical node)
    "flash_attn_func/rocprofv3/big_results.json": (698359, 2217, 17, 38430, 2),
    "flash_attn_func/rocprofv3/small_results.json": (700119, 2217, 17, 32235, 2),
    "layernorm/rocprofv3/big_results.json": (1610102, 1825, 13, 22257, 4),
    "rmsnorm/rocprofv3/big_results.json": (1610112, 1825, 13, 19276, 3),
    "softmax/rocprofv3/big_results.json": (1610108, 1560, 10, 47920, 2),
    "vec_add/rocprofv3/big_results.json": (1612945, 1516, 11, 14705, 2),
}
UUID_A = "00000450-565d-765d-bc41-19a2073d19ee"
UUID_B = "00002e0d-9533-7533-b0f4-7d200442d314"


def _raw(path: Path) -> list[dict]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _write_csv(path: Path, header: list[str], rows: list[list], quote_all: bool = False) -> Path:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL)
        w.writerow(header)
        w.writerows(rows)
    return path


# --------------------------------------------------------------------------- stats


def test_kernel_stats_every_real_file():
    shared = require_shared()
    for name, (_, kernels, _) in TRACES.items():
        f = shared / "traces" / name / "rocprofv3" / "discover_kernel_stats.csv"
        rows = read_kernel_stats(f)
        assert len(rows) == kernels, name
        raw = _raw(f)
        for r, x in zip(rows, raw):
            assert r["name"] == x["Name"]
            assert r["calls"] == int(x["Calls"])
            assert r["total_ns"] == float(x["TotalDurationNs"])
            assert r["percentage"] == float(x["Percentage"])
            assert r["min_ns"] <= r["average_ns"] <= r["max_ns"]
            assert r["stddev"] >= 0
        # sorted by total time, descending, and the percentages add up to 100
        assert [r["total_ns"] for r in rows] == sorted((r["total_ns"] for r in rows), reverse=True)
        assert abs(sum(r["percentage"] for r in rows) - 100) < 0.1


def test_kernel_stats_known_values_and_scientific_notation():
    shared = require_shared()
    rows = read_kernel_stats(shared / "traces/vec_add/rocprofv3/discover_kernel_stats.csv")
    v = rows[0]
    assert v["name"] == "vecAddKernel_0"
    assert (v["calls"], v["total_ns"], v["average_ns"], v["percentage"]) == (24, 461564.0, 19231.833333, 39.91)
    assert (v["min_ns"], v["max_ns"], v["stddev"]) == (18080.0, 22761.0, 1524.226437)
    single = [r for r in rows if r["calls"] == 1]
    assert single and all(r["stddev"] == 0.0 for r in single)  # written "0.00000000e+00"
    # Percentage below 1 % is written in scientific notation with 4 digits ("2.033e-03")
    pa = read_kernel_stats(shared / "traces/pa_mqa_logits_fp4/rocprofv3/discover_kernel_stats.csv")
    raw = {x["Name"]: x["Percentage"] for x in _raw(shared / "traces/pa_mqa_logits_fp4/rocprofv3/discover_kernel_stats.csv")}
    sci = [r for r in pa if "e-" in raw[r["name"]]]
    assert sci and all(0 < r["percentage"] < 0.01 for r in sci)
    assert any(raw[r["name"]] == "2.033e-03" and r["percentage"] == pytest.approx(0.002033) for r in sci)


def test_domain_stats_match_the_trace():
    shared = require_shared()
    for name, (n, _, _) in TRACES.items():
        d = shared / "traces" / name / "rocprofv3"
        (dom,) = read_kernel_stats(d / "discover_domain_stats.csv")
        assert dom["name"] == "KERNEL_DISPATCH"
        trace = read_kernel_trace(d / "discover_kernel_trace.csv")
        assert dom["calls"] == n == len(trace)
        assert dom["total_ns"] == sum(r["end_ns"] - r["start_ns"] for r in trace)


def test_rocpd_summary_column_spelling(tmp_path):
    f = _write_csv(
        tmp_path / "kernels_summary.csv",
        ["Name", "Calls", "DURATION (nsec)", "AVERAGE (nsec)", "PERCENT (INC)", "MIN (nsec)", "MAX (nsec)", "STD_DEV"],
        [["k", 2, 300, 150, 100.0, 100, 200, 70.7]],
    )
    (r,) = read_kernel_stats(f)
    assert (r["name"], r["calls"], r["total_ns"], r["average_ns"], r["max_ns"]) == ("k", 2, 300.0, 150.0, 200.0)


# --------------------------------------------------------------------------- kernel_trace


def test_kernel_trace_every_real_file():
    shared = require_shared()
    for name, (n, kernels, agent) in TRACES.items():
        f = shared / "traces" / name / "rocprofv3" / "discover_kernel_trace.csv"
        rows = read_kernel_trace_checked(f)
        assert len(rows) == n, name
        assert len({r["kernel_name"] for r in rows}) == kernels
        assert {(r["agent_kind"], r["agent"]) for r in rows} == {("Agent", agent)}
        for r in rows:
            assert r["grid"][0] % r["workgroup"][0] == 0  # Grid_Size is in work-items
            assert r["end_ns"] > r["start_ns"]
            assert r["vgpr_count"] > 0 and r["sgpr_count"] > 0
            assert r["agpr_count"] == 0  # gfx950: rocprofv3 never reports AGPRs (§6)
            assert r["lds_bytes"] % 512 == 0  # static LDS rounded up to 512 B
        # rows are not always in Dispatch_Id order (hgemm_splitk, moe_*: a few
        # swapped neighbours), but Dispatch_Id order is start-time order
        ids = [r["dispatch_id"] for r in rows]
        assert len(set(ids)) == len(ids)
        assert [r["dispatch_id"] for r in sorted(rows, key=lambda r: r["start_ns"])] == sorted(ids)


def test_kernel_trace_vec_add_values():
    shared = require_shared()
    rows = read_kernel_trace(shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv")
    v = [r for r in rows if r["kernel_name"] == "vecAddKernel_0"]
    assert len(v) == 24 and {r["kernel_id"] for r in v} == {27}
    assert (v[0]["dispatch_id"], v[0]["vgpr_count"], v[0]["sgpr_count"], v[0]["lds_bytes"]) == (3, 8, 32, 0)
    assert v[0]["workgroup"] == (256, 1, 1) and v[0]["grid"] == (2560000, 1, 1)
    assert sum(r["end_ns"] - r["start_ns"] for r in v) == 461564  # = the stats file


def test_kernel_trace_gfx1151_fully_quoted():
    shared = require_shared()
    f = shared / "rocprofv3-samples/gfx1151-sys-trace/decode_kernel_trace.csv"
    assert f.read_text().splitlines()[1].startswith('"KERNEL_DISPATCH","Agent 1","2"')  # every field quoted
    rows = read_kernel_trace_checked(f)
    assert len(rows) == 144
    first = rows[0]
    assert first["kernel_name"] == "scale_f32(float const*, float*, float, float, long)"
    assert (first["dispatch_id"], first["kernel_id"], first["agent"]) == (164, 33, 1)
    assert (first["vgpr_count"], first["sgpr_count"]) == (8, 128)  # gfx10+: SGPR always 128
    assert first["grid"] == (24576, 1, 1)
    # sys-trace: Correlation_Id differs from Dispatch_Id
    raw = _raw(f)
    assert all(x["Correlation_Id"] != x["Dispatch_Id"] for x in raw)
    assert all(r["grid"][0] % r["workgroup"][0] == 0 for r in rows)
    assert all(isinstance(r["start_ns"], int) and r["end_ns"] >= r["start_ns"] for r in rows)


def test_kernel_trace_mi350_host_pid_layout():
    shared = require_shared()
    f = shared / "rocprofv3-samples/mi350-kernel-trace-run/nimrodmi350/1857180_kernel_trace.csv"
    rows = read_kernel_trace_checked(f)
    assert len(rows) == 64 and pid_from_filename(f) == 1857180
    assert {r["agent"] for r in rows} == {9}
    rms = [r for r in rows if r["kernel_name"] == "_rms_norm_tiled_onepass"]
    assert len(rms) == 60 and {r["kernel_id"] for r in rms} == {395}
    agents = read_agent_info(f.with_name("1857180_agent_info.csv"))
    gpus = [a for a in agents if a["type"] == "GPU"]
    assert len(gpus) == 8 and {a["name"] for a in gpus} == {"gfx950"}
    assert 9 in {a["logical_node_id"] for a in gpus}  # "Agent 9" = Logical_Node_Id 9


def _legacy_rows(path: Path, agent_text) -> tuple[list[str], list[list]]:
    """Real 7.x rows rewritten in the ≤ 6.4 18-column layout."""
    header = ["Kind", "Agent_Id", "Queue_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name", "Correlation_Id",
              "Start_Timestamp", "End_Timestamp", "Private_Segment_Size", "Group_Segment_Size",
              "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    out = []
    for x in _raw(path):
        _, n = parse_agent_id(x["Agent_Id"])
        out.append([x["Kind"], agent_text(n), x["Queue_Id"], x["Thread_Id"], x["Dispatch_Id"], x["Kernel_Id"], x["Kernel_Name"],
                    x["Correlation_Id"], x["Start_Timestamp"], x["End_Timestamp"], x["Scratch_Size"], x["LDS_Block_Size"],
                    x["Workgroup_Size_X"], x["Workgroup_Size_Y"], x["Workgroup_Size_Z"], x["Grid_Size_X"], x["Grid_Size_Y"], x["Grid_Size_Z"]])
    return header, out


def test_kernel_trace_legacy_18_column_layout(tmp_path):
    shared = require_shared()
    src = shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv"
    header, rows = _legacy_rows(src, lambda n: str(n))  # ≤ 6.4: Agent_Id is a bare integer
    assert len(header) == 18
    f = _write_csv(tmp_path / "old_kernel_trace.csv", header, rows)
    old = read_kernel_trace_checked(f)
    new = read_kernel_trace(src)
    assert len(old) == len(new) == 68
    for o, n in zip(old, new):
        assert (o["agent_kind"], o["agent"]) == (None, 2)
        for k in ("dispatch_id", "kernel_id", "kernel_name", "start_ns", "end_ns", "lds_bytes", "scratch_bytes", "workgroup", "grid"):
            assert o[k] == n[k], k
        assert o["vgpr_count"] is None and o["sgpr_count"] is None and o["agpr_count"] is None  # not in the old layout


def test_kernel_trace_type_relative_agent_and_guid_column(tmp_path):
    """``-A type-relative`` ("GPU 0") and the rocpd-convert layout (leading Guid)."""
    shared = require_shared()
    src = shared / "traces/rmsnorm/rocprofv3/discover_kernel_trace.csv"
    raw = _raw(src)
    header = ["Guid"] + list(raw[0].keys())
    rows = [[UUID_A] + [("GPU 0" if k == "Agent_Id" else v) for k, v in x.items()] for x in raw]
    f = _write_csv(tmp_path / "out_kernel_trace.csv", header, rows, quote_all=True)
    got = read_kernel_trace_checked(f)
    ref = read_kernel_trace(src)
    assert {(r["agent_kind"], r["agent"]) for r in got} == {("GPU", 0)}
    assert [r["kernel_name"] for r in got] == [r["kernel_name"] for r in ref]
    assert [r["end_ns"] - r["start_ns"] for r in got] == [r["end_ns"] - r["start_ns"] for r in ref]


def test_agent_id_forms():
    assert parse_agent_id("Agent 2") == ("Agent", 2)
    assert parse_agent_id("2") == (None, 2)
    assert parse_agent_id(" GPU 0 ") == ("GPU", 0)
    assert parse_agent_id("CPU 1") == ("CPU", 1)
    assert parse_agent_id("garbage") == (None, None)


def test_agent_info_every_real_file():
    shared = require_shared()
    files = sorted((shared / "traces").glob("*/rocprofv3/*agent_info.csv"))
    assert len(files) == 26
    for f in files:
        agents = read_agent_info(f)
        gpus = [a for a in agents if a["type"] == "GPU"]
        cpus = [a for a in agents if a["type"] == "CPU"]
        assert len(gpus) == 8 and len(cpus) == 2
        g = gpus[0]
        assert (g["name"], g["gfx_target_version"], g["cu_count"], g["num_xcc"], g["lds_size_kb"]) == ("gfx950", 90500, 256, 8, 160)
        assert g["product_name"] == "AMD Instinct MI350X"


def test_csv_errors(tmp_path):
    with pytest.raises(InputNotFound):
        read_kernel_stats(tmp_path / "missing_kernel_stats.csv")
    empty = tmp_path / "empty_kernel_stats.csv"
    empty.write_text("")
    with pytest.raises(CorruptCapture, match="empty"):
        read_kernel_stats(empty)
    wrong = _write_csv(tmp_path / "x_kernel_stats.csv", ["a", "b"], [[1, 2]])
    with pytest.raises(CorruptCapture, match="missing column"):
        read_kernel_stats(wrong)
    with pytest.raises(CorruptCapture, match="kernel_trace"):
        read_kernel_trace_checked(wrong)
    with pytest.raises(CorruptCapture, match="counter_collection"):
        read_counter_collection(wrong)
    only_header = _write_csv(tmp_path / "h_kernel_trace.csv", ["Kernel_Name", "Start_Timestamp", "End_Timestamp"], [])
    assert read_kernel_trace_checked(only_header) == []
    with pytest.raises(InputNotFound):
        read_kernel_trace_checked(tmp_path)  # a directory


def test_hip_api_trace_is_not_a_kernel_trace():
    shared = require_shared()
    with pytest.raises(CorruptCapture, match="missing column Kernel_Name"):
        read_kernel_trace_checked(shared / "rocprofv3-samples/gfx1151-sys-trace/decode_hip_api_trace.csv")


# --------------------------------------------------------------------------- counter_collection

COUNTER_FILES = {
    "decode_fetch_counter_collection.csv": (34, 34, {"FETCH_SIZE"}),
    "decode_stall_counter_collection.csv": (340, 34, {
        "GRBM_EA_BUSY", "GRBM_GUI_ACTIVE", "L2CacheHit", "LDSBankConflict", "OccupancyPercent",
        "MemUnitBusy", "SQ_BUSY_CYCLES", "SQ_INST_CYCLES_VALU", "Wavefronts", "WriteUnitStalled"}),
    "prefill_fetch_counter_collection.csv": (54, 54, {"FETCH_SIZE"}),
}


def test_counter_collection_and_pivot_real_files():
    shared = require_shared()
    d = shared / "rocprofv3-samples/gfx1151-sys-trace"
    for name, (n, dispatches, counters) in COUNTER_FILES.items():
        rows = read_counter_collection(d / name)
        assert len(rows) == n
        raw = _raw(d / name)
        assert [r["counter_value"] for r in rows] == [float(x["Counter_Value"]) for x in raw]
        piv = pivot_counters(rows)
        assert len(piv) == dispatches
        for (agent, did), v in piv.items():
            assert agent == 1
            assert set(v["counters"]) == counters  # one value per counter per dispatch
            assert not v["repeated"]
            assert v["kernel_name"] and v["grid_size"] and v["workgroup_size"]
            assert v["grid_size"] % v["workgroup_size"] == 0
    stall = pivot_counters(read_counter_collection(d / "decode_stall_counter_collection.csv"))
    first = stall[(1, 1)]
    assert first["kernel_name"] == "__amd_rocclr_copyBuffer"
    assert (first["kernel_id"], first["grid_size"], first["workgroup_size"], first["vgpr"], first["sgpr"]) == (6, 1024, 512, 16, 128)
    assert first["counters"]["GRBM_EA_BUSY"] == 3564.0 and first["counters"]["GRBM_GUI_ACTIVE"] == 16283.0
    assert first["pid"] == 2684167
    fetch = pivot_counters(read_counter_collection(d / "decode_fetch_counter_collection.csv"))
    assert fetch[(1, 1)]["counters"]["FETCH_SIZE"] == 10.625


def test_counter_collection_old_and_convert_layouts(tmp_path):
    """Integer Agent_Id, no Kernel_Id / Accum_VGPR_Count / timestamps (≤ 6.3),
    and the rocpd-convert file whose "Pid" header sits over an unquoted GUID."""
    shared = require_shared()
    raw = _raw(shared / "rocprofv3-samples/gfx1151-sys-trace/decode_stall_counter_collection.csv")
    keep = ["Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Kernel_Name",
            "Workgroup_Size", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "SGPR_Count", "Counter_Name", "Counter_Value"]
    rows = [[(parse_agent_id(x[k])[1] if k == "Agent_Id" else x[k]) for k in keep] for x in raw]
    old = read_counter_collection(_write_csv(tmp_path / "old_counter_collection.csv", keep, rows))
    assert old[0]["agent"] == 1 and old[0]["agent_kind"] is None
    assert old[0]["kernel_id"] is None and old[0]["agpr"] is None and old[0]["start_ns"] is None
    assert len(pivot_counters(old)) == 34

    conv = tmp_path / "out_counter_collection.csv"
    header = ",".join(f'"{h}"' for h in ["Pid"] + list(raw[0].keys()))
    lines = [header] + [UUID_A + "," + ",".join(f'"{v}"' for v in x.values()) for x in raw]
    conv.write_text("\n".join(lines) + "\n")
    got = pivot_counters(read_counter_collection(conv))
    ref = pivot_counters(read_counter_collection(shared / "rocprofv3-samples/gfx1151-sys-trace/decode_stall_counter_collection.csv"))
    assert got == ref


def test_pivot_keeps_first_of_a_repeated_counter():
    rows = [
        {"agent": 1, "dispatch_id": 5, "kernel_name": "k", "counter_name": "SQ_WAVES", "counter_value": 4.0},
        {"agent": 1, "dispatch_id": 5, "kernel_name": "k", "counter_name": "SQ_WAVES", "counter_value": 9.0},
        {"agent": 2, "dispatch_id": 5, "kernel_name": "k", "counter_name": "SQ_WAVES", "counter_value": 7.0},
    ]
    p = pivot_counters(rows)
    assert p[(1, 5)]["counters"] == {"SQ_WAVES": 4.0} and p[(1, 5)]["repeated"] == ["SQ_WAVES"]
    assert p[(2, 5)]["counters"] == {"SQ_WAVES": 7.0}


# --------------------------------------------------------------------------- results.json


def test_results_json_every_real_file():
    shared = require_shared()
    for rel, (pid, nsym, ncodeobj, handle, node) in RESULTS_JSON.items():
        (p,) = read_results_json(shared / "traces" / rel)
        assert p.pid == pid
        assert len(p.kernel_symbols) == nsym and len(p.code_objects) == ncodeobj
        assert p.dispatches == [] and p.kernel_dispatches == [] and p.counter_records == [] and p.counters == []
        assert len(p.att_filenames) == 8 and all(f.startswith(f"out_{handle}_shader_engine_") for f in p.att_filenames)
        assert p.code_object_snapshot_filenames[0] == "" and len(p.code_object_snapshot_filenames) == ncodeobj
        gpu = [a for a in p.agents if a["handle"] == handle]
        assert gpu and gpu[0]["type"] == 2 and gpu[0]["name"] == "gfx950" and gpu[0]["logical_node_id"] == node
        assert p.hostname and p.command


def _inject_records(shared: Path, tmp_path: Path) -> Path:
    """The real vec_add results.json plus kernel_dispatch and counter records
    built from the real discovery trace (kernel 27 = vecAddKernel_0 in both)."""
    doc = orjson.loads((shared / "traces/vec_add/rocprofv3/big_results.json").read_bytes())
    proc = doc["rocprofiler-sdk-tool"][0]
    trace = [r for r in read_kernel_trace(shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv") if r["kernel_id"] == 27]
    recs = []
    for r in trace:
        info = {
            "size": 64, "agent_id": {"handle": 14705}, "queue_id": {"handle": 2}, "kernel_id": 27, "dispatch_id": r["dispatch_id"],
            "private_segment_size": r["scratch_bytes"], "group_segment_size": r["lds_bytes"],
            "workgroup_size": dict(zip("xyz", r["workgroup"])), "grid_size": dict(zip("xyz", r["grid"])),
        }
        recs.append({
            "size": 96, "kind": 12, "operation": 1, "thread_id": 1612545,
            "correlation_id": {"internal": r["dispatch_id"], "external": 0, "ancestor": 0},
            "start_timestamp": r["start_ns"], "end_timestamp": r["end_ns"], "stream_id": {"handle": 1}, "dispatch_info": info,
        })
    proc["buffer_records"]["kernel_dispatch"] = recs
    proc["counters"] = [
        {"agent_id": {"handle": 14705}, "id": {"handle": 5}, "is_constant": 0, "is_derived": 0, "name": "SQ_WAVES",
         "description": "", "block": "SQ", "expression": "", "dims": [], "instances": []},
        {"agent_id": {"handle": 14705}, "id": {"handle": 9}, "is_constant": 0, "is_derived": 0, "name": "GRBM_GUI_ACTIVE",
         "description": "", "block": "GRBM", "expression": "", "dims": [], "instances": []},
    ]
    proc["callback_records"]["counter_collection"] = [
        {
            "thread_id": 1612545,
            "dispatch_data": {"size": 80, "correlation_id": {"internal": rec["dispatch_info"]["dispatch_id"], "external": 0, "ancestor": 0},
                              "start_timestamp": rec["start_timestamp"], "end_timestamp": rec["end_timestamp"],
                              "dispatch_info": rec["dispatch_info"]},
            # one entry per hardware instance: 4 SEs of SQ_WAVES, 8 XCCs of GRBM_GUI_ACTIVE
            "records": [{"counter_id": {"handle": 5}, "value": 250.0}] * 4 + [{"counter_id": {"handle": 9}, "value": 1000.0 + i}
                                                                            for i in range(8)],
            "stream_id": {"handle": 1},
        }
        for rec in recs[5:8]
    ]
    out = tmp_path / "vec_add_results.json"
    out.write_bytes(orjson.dumps(doc))
    return out


def test_results_json_dispatch_and_counter_records(tmp_path):
    shared = require_shared()
    (p,) = read_results_json(_inject_records(shared, tmp_path))
    ref = [r for r in read_kernel_trace(shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv") if r["kernel_id"] == 27]
    assert len(p.dispatches) == len(p.kernel_dispatches) == 24
    for got, want in zip(p.kernel_dispatches, ref):
        for k in ("dispatch_id", "kernel_id", "kernel_name", "agent", "start_ns", "end_ns", "lds_bytes", "scratch_bytes",
                  "vgpr_count", "agpr_count", "sgpr_count", "workgroup", "grid"):
            assert got[k] == want[k], k
        assert got["agent_handle"] == 14705 and got["pid"] == 1612945
    assert [c["name"] for c in p.counters] == ["SQ_WAVES", "GRBM_GUI_ACTIVE"]
    assert [c["dispatch_id"] for c in p.counter_records] == [25, 26, 27]  # 6th-8th vecAdd launches
    for c in p.counter_records:
        assert c["kernel_name"] == "vecAddKernel_0"
        assert c["counters"] == {"SQ_WAVES": 1000.0, "GRBM_GUI_ACTIVE": sum(1000.0 + i for i in range(8))}
        assert c["instances"] == {"SQ_WAVES": 4, "GRBM_GUI_ACTIVE": 8}


def test_results_json_errors(tmp_path):
    with pytest.raises(InputNotFound):
        read_results_json(tmp_path / "nope_results.json")
    bad = tmp_path / "bad_results.json"
    bad.write_text('{"rocprofiler-sdk-tool": [')
    with pytest.raises(CorruptCapture) as ei:
        read_results_json(bad)
    assert "\n" not in str(ei.value)
    other = tmp_path / "other_results.json"
    other.write_text('{"something": 1}')
    assert read_results_json(other) == []
    odd = tmp_path / "odd_results.json"
    odd.write_text(json.dumps({"rocprofiler-sdk-tool": [{"buffer_records": {"kernel_dispatch": [1, {"dispatch_info": 3}]},
                                                          "callback_records": [], "counters": "x", "strings": []}]}))
    (p,) = read_results_json(odd)
    assert p.kernel_dispatches == [] and p.counters == [] and p.counter_records == []


# --------------------------------------------------------------------------- rocpd

_TABLES = {
    "rocpd_metadata": '"id" INTEGER PRIMARY KEY AUTOINCREMENT, "tag" TEXT NOT NULL, "value" TEXT NOT NULL',
    "rocpd_string": '"id" INTEGER PRIMARY KEY AUTOINCREMENT, "guid" TEXT NOT NULL, "string" TEXT NOT NULL UNIQUE',
    "rocpd_info_node": '"id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL, "hash" BIGINT, "machine_id" TEXT, "hostname" TEXT',
    "rocpd_info_process": '"id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL, "nid" INTEGER, "ppid" INTEGER, "pid" INTEGER, '
                          '"init" BIGINT, "fini" BIGINT, "start" BIGINT, "end" BIGINT, "command" TEXT, '
                          '"environment" JSONB DEFAULT "{}" NOT NULL, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_agent": '"id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL, "nid" INTEGER, "pid" INTEGER, "type" TEXT, '
                        '"absolute_index" INTEGER, "logical_index" INTEGER, "type_index" INTEGER, "uuid" INTEGER, "name" TEXT, '
                        '"model_name" TEXT, "vendor_name" TEXT, "product_name" TEXT, "user_name" TEXT, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_info_kernel_symbol": '"id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL, "nid" INTEGER, "pid" INTEGER, "code_object_id" INTEGER, '
                                '"kernel_name" TEXT, "display_name" TEXT, "kernel_object" INTEGER, "kernarg_segment_size" INTEGER, '
                                '"kernarg_segment_alignment" INTEGER, "group_segment_size" INTEGER, "private_segment_size" INTEGER, '
                                '"sgpr_count" INTEGER, "arch_vgpr_count" INTEGER, "accum_vgpr_count" INTEGER, "extdata" JSONB DEFAULT "{}" NOT NULL',
    "rocpd_kernel_dispatch": '"id" INTEGER PRIMARY KEY, "guid" TEXT NOT NULL, "nid" INTEGER NOT NULL, "pid" INTEGER NOT NULL, "tid" INTEGER, '
                             '"agent_id" INTEGER NOT NULL, "kernel_id" INTEGER NOT NULL, "dispatch_id" INTEGER NOT NULL, '
                             '"queue_id" INTEGER NOT NULL, "stream_id" INTEGER NOT NULL, "start" BIGINT NOT NULL, "end" BIGINT NOT NULL, '
                             '"private_segment_size" INTEGER, "group_segment_size" INTEGER, "workgroup_size_x" INTEGER NOT NULL, '
                             '"workgroup_size_y" INTEGER NOT NULL, "workgroup_size_z" INTEGER NOT NULL, "grid_size_x" INTEGER NOT NULL, '
                             '"grid_size_y" INTEGER NOT NULL, "grid_size_z" INTEGER NOT NULL, "region_name_id" INTEGER, "event_id" INTEGER, '
                             '"extdata" JSONB DEFAULT "{}" NOT NULL',
}


def build_rocpd_db(path: Path, trace_csv: Path, agent_csv: Path, uuid: str, pid: int, alias_views: bool = True) -> Path:
    """A schema-3 rocpd database (UUID-suffixed tables + un-suffixed alias
    views, §4.1-4.2) holding the rows of a real kernel_trace.csv."""
    sfx = uuid.replace("-", "_")
    trace = _raw(trace_csv)
    agents = read_agent_info(agent_csv)
    conn = sqlite3.connect(path)
    for base, cols in _TABLES.items():
        conn.execute(f'CREATE TABLE "{base}_{sfx}" ({cols})')
        if alias_views:
            conn.execute(f'CREATE VIEW "{base}" AS SELECT * FROM "{base}_{sfx}"')
    t = lambda base: f'"{base}_{sfx}"'  # noqa: E731
    conn.executemany(f"INSERT INTO {t('rocpd_metadata')} (tag, value) VALUES (?, ?)",
                     [("schema_version", "3"), ("uuid", uuid), ("guid", uuid)])
    conn.execute(f"INSERT INTO {t('rocpd_info_node')} VALUES (1, ?, 42, 'machine', 'host')", (uuid,))
    conn.execute(f"INSERT INTO {t('rocpd_info_process')} (id, guid, nid, ppid, pid, command) VALUES (?, ?, 1, 1, ?, 'python app.py')",
                 (pid, uuid, pid))
    gpu_rank = 0
    for a in agents:
        ext = {"cu_count": a["cu_count"], "simd_per_cu": a["simd_per_cu"], "wave_front_size": a["wave_front_size"],
               "num_xcc": a["num_xcc"], "lds_size_in_kb": a["lds_size_kb"], "gfx_target_version": a["gfx_target_version"],
               "max_engine_clk_fcompute": a["max_engine_clk_mhz"], "id": {"handle": 20000 + a["node_id"]}}
        type_index = gpu_rank if a["type"] == "GPU" else a["node_id"]
        gpu_rank += a["type"] == "GPU"
        conn.execute(
            f"INSERT INTO {t('rocpd_info_agent')} (id, guid, nid, pid, type, absolute_index, logical_index, type_index, name, "
            "product_name, extdata) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)",
            (a["node_id"], uuid, pid, a["type"], a["node_id"], a["logical_node_id"], type_index, a["name"], a["product_name"], json.dumps(ext)),
        )
    logical_to_id = {a["logical_node_id"]: a["node_id"] for a in agents}
    symbols = {}
    for x in trace:
        symbols.setdefault(int(x["Kernel_Id"]), x)
    for kid, x in symbols.items():
        conn.execute(
            f"INSERT INTO {t('rocpd_info_kernel_symbol')} (id, guid, nid, pid, code_object_id, kernel_name, display_name, "
            "group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES (?, ?, 1, ?, 1, ?, ?, ?, ?, ?, ?, ?)",
            (kid, uuid, pid, x["Kernel_Name"] + ".kd", x["Kernel_Name"], int(x["LDS_Block_Size"]), int(x["Scratch_Size"]),
             int(x["SGPR_Count"]), int(x["VGPR_Count"]), int(x["Accum_VGPR_Count"])),
        )
    for x in trace:
        _, logical = parse_agent_id(x["Agent_Id"])
        conn.execute(
            f"INSERT INTO {t('rocpd_kernel_dispatch')} (id, guid, nid, pid, tid, agent_id, kernel_id, dispatch_id, queue_id, stream_id, "
            "start, end, private_segment_size, group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z, "
            "grid_size_x, grid_size_y, grid_size_z) VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (int(x["Dispatch_Id"]), uuid, pid, int(x["Thread_Id"]), logical_to_id[logical], int(x["Kernel_Id"]), int(x["Dispatch_Id"]),
             int(x["Queue_Id"]), int(x["Stream_Id"]), int(x["Start_Timestamp"]), int(x["End_Timestamp"]), int(x["Scratch_Size"]),
             int(x["LDS_Block_Size"]), int(x["Workgroup_Size_X"]), int(x["Workgroup_Size_Y"]), int(x["Workgroup_Size_Z"]),
             int(x["Grid_Size_X"]), int(x["Grid_Size_Y"]), int(x["Grid_Size_Z"])),
        )
    conn.commit()
    conn.close()
    return path


def _same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for k in ("dispatch_id", "kernel_id", "kernel_name", "agent", "start_ns", "end_ns", "lds_bytes", "scratch_bytes",
                  "vgpr_count", "agpr_count", "sgpr_count", "workgroup", "grid"):
            assert g[k] == w[k], (k, g[k], w[k])


def _dbs(shared: Path, tmp_path: Path):
    va = shared / "traces/vec_add/rocprofv3"
    rn = shared / "traces/layernorm/rocprofv3"
    a = build_rocpd_db(tmp_path / "1612545_results.db", va / "discover_kernel_trace.csv", va / "discover_agent_info.csv", UUID_A, 1612545)
    b = build_rocpd_db(tmp_path / "1610001_results.db", rn / "discover_kernel_trace.csv", rn / "discover_agent_info.csv", UUID_B, 1610001)
    return a, b, read_kernel_trace(va / "discover_kernel_trace.csv"), read_kernel_trace(rn / "discover_kernel_trace.csv")


def test_rocpd_single_database(tmp_path):
    shared = require_shared()
    a, _, va, _ = _dbs(shared, tmp_path)
    data = read_rocpd(a)
    _same(data.dispatches, va)
    assert {r["guid"] for r in data.dispatches} == {UUID_A} and {r["pid"] for r in data.dispatches} == {1612545}
    assert [(f.guid, f.schema_version) for f in data.files] == [(UUID_A, "3")]
    gpus = [x for x in data.agents if x["type"] == "GPU"]
    assert len(gpus) == 8 and {g["name"] for g in gpus} == {"gfx950"}
    assert gpus[0]["cu_count"] == 256 and gpus[0]["gfx_target_version"] == 90500 and gpus[0]["handle"] == 20002
    # the database is opened read-only: nothing was written next to it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1610001_results.db", "1612545_results.db"]
    assert read_rocpd_dispatches(str(a)) == data.dispatches and read_rocpd_agents(a) == data.agents


def test_rocpd_merged_databases_keep_ids_apart(tmp_path):
    shared = require_shared()
    a, b, va, rn = _dbs(shared, tmp_path)
    # kernel ids collide between the two runs (vec_add and layernorm) with different kernels behind them
    names_a = {r["kernel_id"]: r["kernel_name"] for r in va}
    names_b = {r["kernel_id"]: r["kernel_name"] for r in rn}
    clash = {k for k in names_a.keys() & names_b.keys() if names_a[k] != names_b[k]}
    assert clash and set(r["dispatch_id"] for r in va) & set(r["dispatch_id"] for r in rn)
    data = read_rocpd([a, b])
    assert [f.guid for f in data.files] == [UUID_A, UUID_B]
    _same([r for r in data.dispatches if r["guid"] == UUID_A], va)
    _same([r for r in data.dispatches if r["guid"] == UUID_B], rn)
    assert len(data.dispatches) == len(va) + len(rn)
    assert len(data.agents) == 20 and not data.notes


def test_rocpd_without_alias_views(tmp_path):
    """Only the UUID-suffixed tables: discovered from sqlite_master."""
    shared = require_shared()
    va = shared / "traces/vec_add/rocprofv3"
    a = build_rocpd_db(tmp_path / "a_results.db", va / "discover_kernel_trace.csv", va / "discover_agent_info.csv", UUID_A, 7, alias_views=False)
    b = build_rocpd_db(tmp_path / "b_results.db", va / "discover_kernel_trace.csv", va / "discover_agent_info.csv", UUID_B, 8)
    ref = read_kernel_trace(va / "discover_kernel_trace.csv")
    _same(read_rocpd_dispatches(a), ref)
    merged = read_rocpd_dispatches([a, b])
    _same([r for r in merged if r["guid"] == UUID_A], ref)
    _same([r for r in merged if r["guid"] == UUID_B], ref)


def test_rocpd_kernels_view_fallback(tmp_path):
    f = tmp_path / "k_results.db"
    conn = sqlite3.connect(f)
    conn.execute('CREATE TABLE kernels (guid TEXT, pid INT, dispatch_id INT, kernel_id INT, name TEXT, agent_log_index INT, '
                 '"start" INT, "end" INT, lds_size INT, scratch_size INT, grid_x INT, grid_y INT, grid_z INT, '
                 'workgroup_x INT, workgroup_y INT, workgroup_z INT)')
    conn.execute("INSERT INTO kernels VALUES ('g', 1, 3, 27, 'vecAddKernel_0', 2, 100, 300, 0, 0, 2560000, 1, 1, 256, 1, 1)")
    conn.commit()
    conn.close()
    (r,) = read_rocpd_dispatches(f)
    assert (r["kernel_name"], r["agent"], r["end_ns"] - r["start_ns"], r["grid"], r["vgpr_count"]) == ("vecAddKernel_0", 2, 200, (2560000, 1, 1), None)


def test_rocpd_errors(tmp_path):
    with pytest.raises(InputNotFound):
        read_rocpd(tmp_path / "missing_results.db")
    junk = tmp_path / "junk_results.db"
    junk.write_bytes(b"not a database at all" * 10)
    with pytest.raises(CorruptCapture, match="not an SQLite database"):
        read_rocpd(junk)
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotACapture, match="not a rocpd database"):
        read_rocpd(other)
    trunc = tmp_path / "trunc_results.db"
    trunc.write_bytes(b"SQLite format 3\x00" + b"\x00" * 50)
    with pytest.raises((CorruptCapture, NotACapture)) as ei:
        read_rocpd(trunc)
    assert "\n" not in str(ei.value)
