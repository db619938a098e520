"""The query verbs agents ask for (waits, asm, analyze --by opcode, captures,
occupancy), each checked against values recomputed here from the raw wave
files with plain json (never through attlens)."""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

from attlens.cli import main
from conftest import require_shared

LAYERNORM = "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
FLASH_SMALL = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"


def cli_json(capsys, *args, code=0):
    capsys.readouterr()
    rc = main([str(a) for a in args] + ["--json"])
    out = capsys.readouterr().out
    assert rc == code
    return json.loads(out)


def raw(capture: Path):
    """(isa by pc, [per wave: list of (time, stall, duration, pc)]) straight from the files."""
    code = json.loads((capture / "code.json").read_text())["code"]
    isa = {row[2]: row[0] for row in code}
    waves = []
    for f in sorted(capture.glob("se*_sm*_sl*_wv*.json")):
        w = json.loads(f.read_text())["wave"]
        waves.append([(r[0], r[2], r[3], r[4]) for r in w["instructions"]])
    return isa, waves


def pct(sorted_vals, q):
    # numpy's default ("linear") percentile, written out
    pos = (len(sorted_vals) - 1) * q / 100
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def steady_flags(wave):
    """Per record: True when it is a later execution of its pc inside the wave's looped span."""
    counts = defaultdict(int)
    for r in wave:
        counts[r[3]] += 1
    looped = [i for i, r in enumerate(wave) if counts[r[3]] > 1]
    if not looped:
        return [False] * len(wave)
    lo, hi = looped[0], looped[-1]
    seen, out = set(), []
    for i, r in enumerate(wave):
        out.append(lo <= i <= hi and r[3] in seen)
        seen.add(r[3])
    return out


@pytest.mark.parametrize("steady", [False, True])
def test_waits_match_the_raw_records(capsys, steady):
    cap = require_shared() / (FLASH_SMALL if steady else LAYERNORM)
    isa, waves = raw(cap)
    per_pc = defaultdict(list)
    for w in waves:
        flags = steady_flags(w) if steady else [True] * len(w)
        for r, keep in zip(w, flags):
            if keep and isa[r[3]].startswith("s_waitcnt"):
                per_pc[r[3]].append(r[1])
    all_stall = sum(r[1] for w in waves for r in w)
    args = ["waits", cap, "--topk", "0"] + (["--steady"] if steady else [])
    doc = cli_json(capsys, *args)
    assert doc["schema"] == "attlens.waits" and doc["steady"] is steady
    assert {s["pc"] for s in doc["sites"]} == set(per_pc)
    assert doc["executions"] == sum(len(v) for v in per_pc.values())
    assert doc["total_wait"] == sum(sum(v) for v in per_pc.values())
    assert doc["kernel_stall"] == all_stall
    totals = [s["total"] for s in doc["sites"]]
    assert totals == sorted(totals, reverse=True)
    for s in doc["sites"]:
        v = sorted(per_pc[s["pc"]])
        assert s["executions"] == len(v)
        assert s["total"] == sum(v)
        assert s["max"] == v[-1]
        assert s["zero_wait_executions"] == sum(1 for x in v if x == 0)
        assert s["mean"] == pytest.approx(statistics.fmean(v), abs=1e-3)
        assert s["stddev"] == pytest.approx(statistics.pstdev(v), abs=1e-3)
        for q in (50, 90, 95):
            assert s[f"p{q}"] == pytest.approx(pct(v, q))
        assert s["share_of_stall"] == pytest.approx(sum(v) / all_stall, abs=1e-6)
    if steady:
        # the steady-state view really drops executions: first iterations and code outside the loop
        everything = cli_json(capsys, "waits", cap, "--topk", "0")
        assert doc["executions"] < everything["executions"]


def test_waits_steady_without_a_loop_says_so(capsys):
    doc = cli_json(capsys, "waits", require_shared() / LAYERNORM, "--steady")
    assert doc["sites"] == [] and doc["executions"] == 0
    assert doc["notes"] and "no wait ran in a steady-state loop iteration" in doc["notes"][0]


def test_hotspots_by_opcode_match_the_raw_records(capsys):
    cap = require_shared() / LAYERNORM
    isa, waves = raw(cap)
    stall, hit, pcs = defaultdict(int), defaultdict(int), defaultdict(set)
    for w in waves:
        for _t, s, _d, pc in w:
            m = isa[pc].split()[0]
            stall[m] += s
            hit[m] += 1
            pcs[m].add(pc)
    doc = cli_json(capsys, "analyze", cap, "--by", "opcode", "--topk", "0")
    assert doc["schema"] == "attlens.hotspots" and doc["by"] == "opcode" and doc["sort"] == "stall"
    assert {r["opcode"]: r["stall"] for r in doc["rows"]} == dict(stall)
    assert {r["opcode"]: r["hit"] for r in doc["rows"]} == dict(hit)
    assert {r["opcode"]: sorted(r["pcs"]) for r in doc["rows"]} == {m: sorted(p) for m, p in pcs.items()}
    assert [r["stall"] for r in doc["rows"]] == sorted(stall.values(), reverse=True)
    assert doc["rows"][0]["opcode"] == "s_waitcnt" and doc["rows"][0]["class"] == "wait"
    top3 = cli_json(capsys, "analyze", cap, "--by", "opcode", "--topk", "3")
    assert top3["rows"] == doc["rows"][:3] and top3["rows_total"] == len(stall) and top3["topk"] == 3


def test_hotspots_sort_idle_ranks_by_idle(capsys):
    cap = require_shared() / LAYERNORM
    doc = cli_json(capsys, "analyze", cap, "--by", "instruction", "--sort", "idle", "--topk", "0")
    idle = [r["idle"] for r in doc["rows"]]
    assert idle == sorted(idle, reverse=True) and idle[0] > 0
    # the same rows as analyze's own instruction list, only ranked differently
    full = cli_json(capsys, "analyze", cap, "--topk", "0")
    assert sorted(doc["rows"], key=lambda r: r["pc"]) == sorted(full["hotspots"]["instructions_by_stall"], key=lambda r: r["pc"])
    assert main(["analyze", str(cap), "--sort", "idle"]) == 2  # idle ranks one table: needs --by


def test_asm_window_matches_the_raw_records(capsys):
    cap = require_shared() / LAYERNORM
    isa, waves = raw(cap)
    stall, hit = defaultdict(int), defaultdict(int)
    for w in waves:
        for _t, s, _d, pc in w:
            stall[pc] += s
            hit[pc] += 1
    doc = cli_json(capsys, "asm", cap, "--pc", 392, "--around", 5)
    assert doc["schema"] == "attlens.asm" and doc["pc"] == 392
    instr = [r for r in doc["rows"] if r["label"] is None]
    # 5 instructions either side, in listing order (label rows are not counted)
    want = sorted(p for p, t in isa.items() if not t.startswith(";"))
    i = want.index(392)
    assert [r["pc"] for r in instr] == want[i - 5 : i + 6]
    assert [r["pc"] for r in doc["rows"] if r["center"]] == [392]
    for r in instr:
        assert r["isa"] == isa[r["pc"]]
        assert r["hit"] == hit.get(r["pc"], 0) and r["stall"] == stall.get(r["pc"], 0)
    center = next(r for r in doc["rows"] if r["center"])
    assert center["mnemonic"] == "s_waitcnt" and center["class"] == "wait"
    # the wait's producers, with the cycles deps charges them
    deps = cli_json(capsys, "deps", cap, "--pc", 392, "--topk", "0")
    row = next(w for w in deps["waits"] if w["wait_pc"] == 392)
    assert center["waits_on"] == row["producers"]
    assert sum(p["cycles"] for p in center["waits_on"]) == center["stall"]
    assert [s["source"] for s in doc["sources"]] == list(dict.fromkeys(r["source"] for r in instr if r["source"]))
    assert all(s["text"] is None for s in doc["sources"])  # the shared captures carry no source snapshots


def test_asm_rejects_a_pc_that_is_no_instruction(capsys):
    cap = require_shared() / LAYERNORM
    err = cli_json(capsys, "asm", cap, "--pc", 0, code=2)  # pc 0 is the kernel's label row
    assert err["schema"] == "attlens.error" and "no instruction" in err["error"]["message"]


def test_asm_keeps_label_rows_and_clips_at_the_ends(capsys):
    cap = require_shared() / LAYERNORM
    doc = cli_json(capsys, "asm", cap, "--pc", 1, "--around", 3)
    assert doc["rows"][0]["label"] == "layernorm_kernel_0" and doc["rows"][0]["hit"] is None
    assert [r["pc"] for r in doc["rows"]] == [0, 1, 2, 3, 4]


def test_captures_lists_every_capture_with_its_facts(capsys, tmp_path):
    shared = require_shared()
    doc = cli_json(capsys, "captures", shared / "traces")
    expect = sorted(p.parent for p in (shared / "traces").glob("*/*/ui_output_agent_*/filenames.json"))
    assert [c["path"] for c in doc["captures"]] == [str(p) for p in expect]
    for c in doc["captures"]:
        p = Path(c["path"])
        fn = json.loads((p / "filenames.json").read_text())
        n = sum(1 for se in fn["wave_filenames"].values() for sm in se.values() for sl in sm.values() for _ in sl.values())
        code = json.loads((p / "code.json").read_text())["code"]
        assert c["waves"] == n
        assert c["instructions"] == sum(1 for r in code if not r[0].startswith(";"))
        assert c["kernel"] == code[0][0][1:].strip()
        assert c["dispatch_id"] == int(p.name.split("_dispatch_")[1].split("_")[0])
        assert c["status"] == "ok" and c["target"] == "gfx950"
    # an empty shell and a broken directory are listed, not fatal
    (tmp_path / "shell").mkdir()
    (tmp_path / "shell" / "filenames.json").write_text('{"gfxip": 9, "wave_filenames": {}}')
    (tmp_path / "shell" / "code.json").write_text('{"code": [["; k", 0, 0, "", 0, 0, 0, 0, 0, 0]]}')
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "filenames.json").write_text("{not json")
    doc = cli_json(capsys, "captures", tmp_path)
    assert {Path(c["path"]).name: c["status"] for c in doc["captures"]} == {"shell": "empty", "broken": "broken"}
    assert next(c for c in doc["captures"] if c["status"] == "broken")["error"]


def test_occupancy_is_analyze_s_occupancy(capsys):
    cap = require_shared() / LAYERNORM
    occ = cli_json(capsys, "occupancy", cap)
    full = cli_json(capsys, "analyze", cap)
    assert occ["schema"] == "attlens.occupancy" and occ["occupancy"] == full["occupancy"]
    assert occ["occupancy"]["grid_limited"] is True  # 256 workgroups on 256 CUs


def test_terminal_renderings(capsys):
    cap = require_shared() / LAYERNORM
    for args, needle in ((["waits", cap], "Wait per execution"), (["asm", cap, "--pc", 392, "--around", 2], "s_waitcnt vmcnt(4)"),
                         (["analyze", cap, "--by", "opcode"], "Top 10 opcodes by stall"), (["occupancy", cap], "limited by vgpr"),
                         (["captures", cap], "layernorm_kernel_0")):
        assert main([str(a) for a in args] + ["--no-color"]) == 0
        assert needle in capsys.readouterr().out


def test_new_objects_validate_against_their_shipped_schemas(capsys):
    from jsonschema import Draft202012Validator

    from attlens import schemas

    assert set(schemas.names()) >= {"hotspots", "hotspots_many", "asm", "waits", "captures", "occupancy"}
    shared = require_shared()
    cap, flash = shared / LAYERNORM, shared / FLASH_SMALL
    cases = [
        ("hotspots", ["analyze", cap, "--by", "instruction"]), ("hotspots", ["analyze", cap, "--by", "line", "--topk", "0"]),
        ("hotspots", ["analyze", cap, "--by", "opcode", "--no-exposed"]), ("asm", ["asm", cap, "--pc", 1, "--around", 30]),
        ("waits", ["waits", flash, "--steady"]), ("waits", ["waits", cap, "--steady"]), ("captures", ["captures", shared / "traces"]),
        ("occupancy", ["occupancy", cap]),
    ]
    for name, args in cases:
        schema = schemas.bundle(name)
        Draft202012Validator.check_schema(schema)
        doc = cli_json(capsys, *args)
        errors = sorted(Draft202012Validator(schema).iter_errors(doc), key=str)
        assert not errors, (name, args, errors[:3])
        assert schemas.bundle(schemas.require("attlens." + name)) == schema
    # the schemas are not vacuous: a wrong type is caught
    bad = cli_json(capsys, "waits", cap)
    bad["sites"][0]["p50"] = "fast"
    assert list(Draft202012Validator(schemas.bundle("waits")).iter_errors(bad))
