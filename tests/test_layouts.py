"""Capture layouts built from the toy writer (no ../shared needed): where the
run's files are found (rocprofv3's default -d DIR/<hostname>/ layout,
attlens profile's folders), the v3.1.0 occupancy dispatch records as a
resource source, headerless code.json of an unknown width, and the readers
of each code.json / occupancy.json generation on hand-made files."""

from __future__ import annotations

import json
import shutil

import pytest

import attlens
from attlens.errors import UnsupportedLayout
from attlens.io.code_json import read_code_json
from attlens.io.occupancy_json import read_occupancy_json
from attlens.synth.toy import default_kernel, write_capture
from clirun import run_main


def _move_side_files(src_dir, dst_dir, prefix: str):
    """demo_agent_info.csv / demo_kernel_trace.csv → dst_dir/<prefix>_*.csv."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    for f in sorted(src_dir.glob("demo_*.csv")):
        shutil.move(f, dst_dir / f.name.replace("demo", prefix, 1))


def _set_gpu(agent_info, name: str):
    text = agent_info.read_text()
    agent_info.write_text(text.replace('"gfx950"', f'"{name}"'))


def test_default_layout_hostname_folder_and_att_names_pick_the_run(tmp_path):
    k = default_kernel()
    cap = write_capture(tmp_path / "DIR", k)  # ui_output_agent_1_dispatch_7
    _move_side_files(tmp_path / "DIR", tmp_path / "DIR" / "node1", "1234")
    # another run's files in another host folder, first in name order, of another target
    other = tmp_path / "DIR" / "node0"
    other.mkdir()
    shutil.copy(tmp_path / "DIR" / "node1" / "1234_agent_info.csv", other / "999_agent_info.csv")
    _set_gpu(other / "999_agent_info.csv", "gfx942")
    (other / "999_1_shader_engine_0_8.att").write_bytes(b"")  # names dispatch 8, not this capture's 7
    (tmp_path / "DIR" / "node1" / "1234_1_shader_engine_0_7.att").write_bytes(b"")
    d = attlens.load(cap, cache=False)
    assert d.arch.target == "gfx950" and d.arch.source == "agent_info" and "its run's .att files name this capture" in d.arch.reason
    assert d.resources.grid == (k.grid, 1, 1) and "1234_kernel_trace.csv" in d.resources.sources["grid"]
    assert d.rocprof_files == [str(tmp_path / "DIR" / "node1" / "1234_agent_info.csv"), str(tmp_path / "DIR" / "node1" / "1234_kernel_trace.csv")]
    # without the .att evidence the first folder's (other) run would be taken: the evidence decides
    (tmp_path / "DIR" / "node1" / "1234_1_shader_engine_0_7.att").unlink()
    assert attlens.load(cap, cache=False).arch.target == "gfx942"


def test_profile_layout_finds_the_discovery_run(tmp_path):
    k = default_kernel()
    out = tmp_path / "OUT"
    cap = write_capture(out / "att", k)
    _move_side_files(out / "att", out / "discovery", "discover")
    d = attlens.load(cap, cache=False)
    assert d.resources.grid == (k.grid, 1, 1) and d.resources.workgroup == (k.workgroup, 1, 1)
    assert d.resources.sources["grid"].startswith("discover_kernel_trace.csv")
    assert d.resources.duration_ns == k.duration_ns and d.arch.target == "gfx950"


def test_occupancy_3_1_dispatch_records_give_resources(tmp_path):
    k = default_kernel()
    cap = write_capture(tmp_path, k)
    for f in tmp_path.glob("demo_*.csv"):
        f.unlink()  # no rocprofv3 file: the capture alone
    occ = json.loads((cap / "occupancy.json").read_text())
    fields = ["time", "cu", "simd", "wave_id", "start", "kernel_id", "me_id", "pipe_id", "is_ext", "workgroup_id", "cluster_id"]
    new = {"occupancy_fields": fields, "dispatches": occ["dispatches"], "version": "3.1.0", "events": {}}
    for se, events in occ.items():
        if se.isdigit():
            new[se] = [e + [0, 0, 0, 0, 0] for e in events]
            new["events"][se] = [{"kind": "dispatch", "time": events[0][0] - 50, "kernel_id": 1, "kernel_name": k.name,
                                  "vgprs": 96, "sgprs": 48, "lds_size": 8192, "thread_dim_x": 256, "thread_dim_y": 1,
                                  "thread_dim_z": 1, "user_sgprs": 2}]
    (cap / "occupancy.json").write_text(json.dumps(new))
    o = read_occupancy_json(cap / "occupancy.json")
    assert o.encoding == "fields" and len(o.events) == sum(len(v) for s, v in occ.items() if s.isdigit())
    assert {e["kernel_name"] for e in o.dispatch_events} == {k.name}
    d = attlens.load(cap, cache=False)
    res = d.resources
    assert res.workgroup == (256, 1, 1) and res.lds_bytes == 8192 and res.metadata_sgprs == 48
    assert res.unified_vgprs == max(96, res.isa_vgprs)
    assert all("occupancy.json dispatch record" in res.sources[k] for k in ("workgroup", "lds_bytes", "metadata_sgprs"))


def test_packed_occupancy_integers_are_decoded(tmp_path):
    p = tmp_path / "occupancy.json"
    # time 27,936, CU 7, SIMD 1, slot 0, start, kernel 1 (docs/formats.md example); an end on slot 5, CU 2
    end = (28_000 // 8) << 23 | 2 << 19 | 0 << 18 | 5 << 14 | 3 << 12 | 1
    p.write_text(json.dumps({"0": [29296955393, end, "bad"], "dispatches": {"1": "k"}}))
    o = read_occupancy_json(p)
    assert o.encoding == "packed" and o.time_resolution == 8
    assert o.events.tolist() == [[0, 27936, 7, 1, 0, 1, 1], [0, 28000, 2, 3, 5, 0, 1]]
    assert o.warnings and "dropped" in o.warnings[0]


def _code(path, rows, header=None):
    doc = {"code": rows, "version": "3.0.0"}
    if header:
        doc["header"] = header
    path.write_text(json.dumps(doc))
    return path


def test_code_json_generations_by_content(tmp_path):
    early = read_code_json(_code(tmp_path / "a.json", [["; k", 100, 0, "", 4, 64, 0, 0], ["s_nop 0", 0, 1, "", 4, 64, 3, 12]]))
    assert early.layout == "rocprofv3-8col" and early.sums == ("hit", "latency") and early.has_addresses
    assert early.address(1) == (4, 64) and early.hit[1] == 3
    v2 = read_code_json(_code(tmp_path / "b.json", [["; Begin ATT ASM", 100, 0, "", 0, 0, 0, 0], ["; kern", 100, 0, "", 0, 0, 0, 0],
                                                      ["s_nop 0", 9, 2, "", 1, 1, 5, 20], ["; later_symbol", 100, 2, "", 1, 1, 0, 0],
                                                      ["s_endpgm", 11, 3, "", 2, 2, 5, 40]]))
    assert v2.layout == "rocprofv2" and not v2.has_addresses and v2.address(2) == (None, None)
    assert v2.labels == [(0, "kern"), (2, "later_symbol")] and not v2.is_label[2] and v2.isa[2] == "s_nop 0"
    with pytest.raises(UnsupportedLayout, match="rows of 9 columns and no header"):
        read_code_json(_code(tmp_path / "c.json", [["s_nop 0", 0, 1, "", 4, 64, 3, 12, 0]]))


def test_unknown_code_json_width_is_not_called_corrupt(tmp_path):
    cap = write_capture(tmp_path, default_kernel())
    rows = json.loads((cap / "code.json").read_text())["code"]
    _code(cap / "code.json", [r[:9] for r in rows])
    o = run_main("analyze", cap)
    assert o.code == 4 and "not a code.json layout attlens reads" in o.err
