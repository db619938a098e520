"""Captures and counters of other teams, GPUs and tool generations
(../shared/outside/, docs/formats.md). Every expected value is computed here
from the raw files (wave records summed with the writer's rules, occupancy
integers decoded with the documented bits, CSV rows parsed by hand), never
copied from attlens output."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest

from clirun import assert_clean, run_main
from conftest import loaded, require_shared

TRITON = ("orig", "hack0")


def outside() -> Path:
    return require_shared() / "outside"


def triton(side: str) -> Path:
    return next((outside() / "triton-afp4wfp4-gemm" / side).glob("ui_output_agent_*"))


def v2() -> Path:
    return outside() / "rocprofv2-elementwise" / "vectorized_elementwise_kernel_v0_ui"


# --------------------------------------------------------------------------- raw-file helpers (independent of attlens)


def raw_waves(cap: Path) -> list[tuple[str, dict]]:
    fn = json.loads((cap / "filenames.json").read_text())
    names = [leaf[0] for se in fn["wave_filenames"].values() for sm in se.values() for sl in sm.values() for leaf in sl.values()]
    return [(n, json.loads((cap / n).read_text())["wave"]) for n in names]


def raw_sums(cap: Path) -> dict[str, Counter]:
    """Per-pc hit, Σduration, Σstall and Σidle (att-format.md §2.2: idle from a
    cursor at wave begin, running maximum of record ends)."""
    out = {k: Counter() for k in ("hit", "latency", "stall", "idle")}
    for _name, w in raw_waves(cap):
        cursor = w["begin"]
        for t, _ty, stall, dur, pc in w["instructions"]:
            out["hit"][pc] += 1
            out["latency"][pc] += dur
            out["stall"][pc] += stall
            out["idle"][pc] += max(t - cursor, 0)
            cursor = max(cursor, t + dur)
    return out


def unpack(u: int) -> tuple[int, int, int, int, int, int]:
    """docs/formats.md packed occupancy: (time, cu, simd, slot, start, kernel id)."""
    return (u >> 23) * 8, (u >> 19) & 0xF, (u >> 12) & 3, (u >> 14) & 0xF, (u >> 18) & 1, u & 0xFFF


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return [{k.strip(): v for k, v in r.items()} for r in csv.DictReader(f)]


# --------------------------------------------------------------------------- early rocprofv3: the Triton pair


@pytest.mark.parametrize("side", TRITON)
def test_triton_totals_equal_the_wave_files(side):
    cap = triton(side)
    d, r = loaded(cap)
    raw = raw_sums(cap)
    rows = json.loads((cap / "code.json").read_text())["code"]
    assert "header" not in json.loads((cap / "code.json").read_text()) and {len(x) for x in rows} == {8}
    assert d.layout == "rocprofv3-early" and d.code.layout == "rocprofv3-8col" and d.stall_recorded
    for k in ("hit", "latency", "stall", "idle"):
        got = getattr(r.sums, k)
        assert {pc: int(got[pc]) for pc in np.flatnonzero(got)} == {pc: v for pc, v in raw[k].items() if v}, k
    b = r.breakdown
    assert (b.total_latency, b.total_stall, b.total_idle) == (sum(raw["latency"].values()), sum(raw["stall"].values()), sum(raw["idle"].values()))
    # code.json holds Hit and Latency (equal to the waves'), not Stall/Idle: unavailable, not "equal"
    assert sum(x[6] for x in rows) == sum(raw["hit"].values()) and sum(x[7] for x in rows) == sum(raw["latency"].values())
    assert r.quality.code_json.mismatching == {"hit": 0, "latency": 0, "stall": None, "idle": None}
    doc = r.to_dict()
    assert doc["quality"]["code_json_mismatching_pcs"]["stall"] is None and doc["capture"]["layout"] == "rocprofv3-early"


@pytest.mark.parametrize("side", TRITON)
def test_triton_target_comes_from_the_default_layout_side_files(side):
    cap = triton(side)
    d, _r = loaded(cap)
    host = cap.parent / "bg-126-035d"
    info = next(host.glob("*_agent_info.csv"))
    gpus = {r["Name"] for r in csv_rows(info) if r["Agent_Type"] == "GPU"}
    # the .att files tie the run's pid prefix to this capture's agent handle and dispatch
    handle, dispatch = cap.name.split("_")[3], cap.name.split("_")[5]
    atts = sorted(host.glob(f"*_{handle}_shader_engine_*_{dispatch}.att"))
    assert atts and {a.name.split("_")[0] for a in atts} == {info.name.split("_")[0]}
    assert d.arch.target == gpus.pop() and d.arch.source == "agent_info" and d.rocprof_files == [str(info)]
    assert d.arch.claims[0]["source"] == "agent_info" and d.arch.claims[0]["file"] == info.name
    gpu_row = next(r for r in csv_rows(info) if r["Agent_Type"] == "GPU")
    assert d.arch.facts["cu_count"] == int(gpu_row["Cu_Count"]) and d.arch.facts["lds_bytes_per_cu"] == 1024 * int(gpu_row["Lds_Size_In_Kb"])


@pytest.mark.parametrize("side", TRITON)
def test_triton_packed_occupancy_is_decoded_and_matches_the_waves(side):
    cap = triton(side)
    d, _r = loaded(cap)
    occ = json.loads((cap / "occupancy.json").read_text())
    ints = [(int(se), u) for se, lst in occ.items() if se.isdigit() for u in lst]
    assert all(isinstance(u, int) for _, u in ints)
    expect = sorted((se, *unpack(u)) for se, u in ints)
    assert sorted(map(tuple, d.occupancy.events.tolist())) == expect
    assert d.occupancy.encoding == "packed" and d.occupancy.time_resolution == 8
    # att-format.md §2.5: each wave's begin/end is a start/end event on (se, cu, simd, slot), here to 8 cycles
    events = Counter((se, t, cu, simd, slot, st) for se, t, cu, simd, slot, st, _k in expect)
    for name, w in raw_waves(cap):
        se = int(name.split("_")[0][2:])
        assert events[(se, w["begin"] // 8 * 8, w["cu"], w["simd"], w["slot"], 1)] >= 1, name
        assert events[(se, w["end"] // 8 * 8, w["cu"], w["simd"], w["slot"], 0)] >= 1, name


def test_triton_preload_prologue_is_named_not_dead_code():
    cap = triton("orig")
    d, _r = loaded(cap)
    rows = json.loads((cap / "code.json").read_text())["code"]
    entry = rows[1][5]
    prologue = [x for x in rows[1:] if x[5] < entry + 256]
    assert any(x[0].startswith("s_branch") for x in prologue) and all(x[0].split()[0] in ("s_load_dwordx2", "s_load_dwordx8", "s_load_dwordx4", "s_waitcnt", "s_branch", "s_nop") for x in prologue)
    first_run = min(min(i[4] for i in w["instructions"]) for _n, w in raw_waves(cap))
    assert first_run == prologue[-1][2] + 1  # the waves start right after the 256 bytes
    assert any(f"pcs 1-{first_run - 1} are the kernel-argument preload prologue" in w for w in d.warnings)


def test_triton_pair_through_every_command(tmp_path):
    o, h = triton("orig"), triton("hack0")
    for cap in (o, h):
        raw = raw_sums(cap)
        waves = raw_waves(cap)
        a = run_main("analyze", cap, "--json")
        assert_clean(a, as_json=True)
        assert a.code == 0 and a.json()["totals"]["latency"] == sum(raw["latency"].values())
        p = run_main("plan", cap, "--json")
        assert p.code == 0 and p.json()["totals"]["stall"] == sum(raw["stall"].values())
        w = run_main("waves", cap, "--json")
        assert w.code == 0 and len(w.json()["waves"]) == len(waves)
        dp = run_main("deps", cap, "--json", "--top", "0")
        assert dp.code == 0 and dp.json()["total_charged_cycles"] == sum(x["waited_cycles"] for x in dp.json()["producers"])
    assert run_main("report", o, "-o", tmp_path / "r.html").code == 0 and (tmp_path / "r.html").stat().st_size > 0
    assert run_main("report", o, "--format", "md", "-o", tmp_path / "md").code == 0
    assert run_main("report", "--diff", o, h, "-o", tmp_path / "d.html").code == 0
    diff = run_main("diff", o, h, "--json")
    assert diff.code == 0
    v = diff.json()["verdict"]
    per_wave = [sum(raw_sums(c)["latency"].values()) / len(raw_waves(c)) for c in (o, h)]
    assert v["latency_per_wave_before"] == pytest.approx(per_wave[0], abs=1e-3) and v["latency_per_wave_after"] == pytest.approx(per_wave[1], abs=1e-3)


# --------------------------------------------------------------------------- rocprofv2 plugin


def test_rocprofv2_capture_loads_with_what_it_lacks_unavailable():
    cap = v2()
    d, r = loaded(cap)
    code = json.loads((cap / "code.json").read_text())
    rows = code["code"]
    assert "header" not in code and rows[0][0] == "; Begin ATT ASM" and rows[0][2] == rows[1][2] == 0
    assert d.layout == "rocprofv2" and d.kernel_name == rows[1][0][1:].strip()
    raw = raw_sums(cap)
    assert r.breakdown.total_latency == sum(raw["latency"].values()) == sum(x[7] for x in rows)
    assert int(r.sums.hit.sum()) == sum(raw["hit"].values()) == sum(x[6] for x in rows)
    assert sum(raw["stall"].values()) == 0 and not d.stall_recorded  # the plugin wrote 0 in every stall field
    doc = r.to_dict()
    assert doc["totals"]["stall"] is None and doc["totals"]["stall_share_of_latency"] is None and doc["capture"]["stall_recorded"] is False
    assert doc["quality"]["code_json_mismatching_pcs"] == {"hit": 0, "latency": 0, "stall": None, "idle": None}
    # columns 4/5 are line counters, not addresses: unavailable
    assert all(x["vaddr"] is None and x["codeobj"] is None for x in doc["hotspots"]["instructions_by_latency"])
    assert doc["hotspots"]["instructions_by_stall"] is None  # no stall recorded: no ranking by it
    # no gfxip: the family from gfxv
    fn = json.loads((cap / "filenames.json").read_text())
    assert "gfxip" not in fn and fn["gfxv"] == "vega" and d.arch.waitcnt_model == "gfx9" and d.arch.target is None


def raw_lifetimes_v2(cap: Path) -> list[tuple[int, int, int]]:
    """(SE, start, end) of every wave in the packed occupancy.json: per (SE, CU, SIMD, slot) a start then an end."""
    out = []
    for se, lst in json.loads((cap / "occupancy.json").read_text()).items():
        if not se.isdigit():
            continue
        open_ = {}
        for t, cu, simd, slot, st, _k in sorted((unpack(u) for u in lst), key=lambda e: (e[0], e[4])):
            if st:
                open_[(cu, simd, slot)] = t
            elif (cu, simd, slot) in open_:
                out.append((int(se), open_.pop((cu, simd, slot)), t))
    return out


def per_se_span(lives) -> int:
    """The longest SE's first start to last end (the SE clocks of this capture are not aligned)."""
    return max(max(e for x, _s, e in lives if x == se) - min(s for x, s, _e in lives if x == se) for se in {x for x, _s, _e in lives})


def test_rocprofv2_listing_ends_at_a_branch_out_so_no_truncated_trace():
    """The plugin listed pcs 2-21 only; pc 21 is `s_cbranch_vccnz 38`, whose
    fall-through and target lie past the listing: every wave ends on it
    because the listing stops there, not because the trace was cut. The
    truncated-trace rule stays silent and says why; a note names the branch."""
    from attlens.analysis.plan import make_plan

    cap = v2()
    rows = [x for x in json.loads((cap / "code.json").read_text())["code"] if not x[0].startswith(";")]
    last = max(rows, key=lambda x: x[2])
    assert (last[2], last[0]) == (21, "s_cbranch_vccnz 38")
    ends = Counter(w["instructions"][-1][4] for _n, w in raw_waves(cap))
    assert ends == {21: 564}  # no wave ends on s_endpgm: the listing has none
    _d, r = loaded(cap)
    assert r.quality.listing_exit == {"pc": 21, "isa": "s_cbranch_vccnz 38", "conditional": True, "offset_dwords": 38,
                                      "target_vaddr": None, "target_pc": None}
    note = next(n for n in r.notes if n.startswith("the code.json listing ends at pc 21"))
    assert "+38 dwords" in note and "listed only part of the kernel" in note
    plan = make_plan(r)
    assert "truncated-trace" not in {f.rule for f in plan.findings}
    (why,) = plan.rules_silenced["truncated-trace"]
    assert why["id"] == "listing-complete" and "564 of 564 waves end there" in why["detail"]


def test_rocprofv2_verdict_says_the_capture_cannot_support_one():
    """No stall cycles, no grid, duration or target, a partial listing: the
    verdict says so; neither the capture finding (no source lines) nor a load
    imbalance the lifetimes contradict is the verdict."""
    from attlens.analysis.plan import make_plan

    cap = v2()
    lives = raw_lifetimes_v2(cap)
    span = per_se_span(lives)
    long_ = [lv for lv in lives if lv[2] - lv[1] >= span / 2]
    rest_span = per_se_span([lv for lv in lives if lv not in long_])
    assert (len(lives), len(long_), span, rest_span) == (2816, 1, 3832, 3832)  # the other waves span it all
    _d, r = loaded(cap)
    plan = make_plan(r)
    imb = plan.dispatch_facts.imbalance
    assert (imb.waves, imb.long_waves, imb.span_cycles, imb.span_without_long_cycles) == (len(lives), 1, span, rest_span)
    assert imb.imbalanced is False and imb.sets_span is False
    assert "load-imbalance" not in {f.rule for f in plan.findings}
    assert [c["id"] for c in plan.rules_silenced["load-imbalance"]] == ["sets-span"]
    v = plan.verdict
    assert v.kind == "no-finding" and v.rule is None and v.sentence.startswith("This capture cannot support a verdict: ")
    assert "no stall cycles" in v.sentence and "ends at pc 21" in v.sentence
    assert len(v.numbers["unsupported_because"]) == 3
    assert plan.findings[0].rule == "no-source-lines" and plan.findings[0].rule != v.rule


def latency_order(raw: dict) -> list[int]:
    """pcs by Σ duration, largest first (ties by pc)."""
    return sorted(raw["latency"], key=lambda pc: (-raw["latency"][pc], pc))


def test_rocprofv2_stall_is_unavailable_in_every_json_and_ranked_by_latency(tmp_path):
    """No stall cycles in the records: every stall figure is null, never 0;
    the rankings that would be by stall are by latency (recomputed here from
    the wave files) and say so; every object validates against its schema."""
    from attlens import api, schemas
    from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

    cap = v2()
    raw = raw_sums(cap)
    order = latency_order(raw)
    assert order[0] == 18 and raw["latency"][18] == 41_084 and sum(raw["stall"].values()) == 0
    _d, r = loaded(cap)
    docs = {}
    a = docs["analyze"] = r.to_dict(0)
    assert a["hotspots"]["instructions_by_stall"] is None and a["hotspots"]["lines_by_stall"] is None
    rows = a["hotspots"]["instructions_by_latency"]
    assert [x["pc"] for x in rows] == order and [x["latency"] for x in rows] == [raw["latency"][pc] for pc in order]
    assert all(x["stall"] is None and x["issue"] is None and x["stall_share"] is None and x["class_stall"] is None for x in rows)
    assert all(c["stall"] is None and c["stall_share"] is None for c in a["stall_by_class"])
    assert a["stall_by_class"][0]["class"] == "vmem_store" and a["stall_by_class"][0]["latency"] == raw["latency"][18]
    for by in ("instruction", "line", "opcode"):
        t = api.hotspots(r, by, "stall")
        doc = docs[f"hotspots-{by}"] = t.to_dict(0)
        assert doc["sort"] == "latency" and doc["warnings"][-1] == STALL_UNRECORDED_RANKING and doc["totals"]["stall"] is None
        assert all(x["stall"] is None and x["stall_share"] is None for x in doc["rows"])
    assert [x["pc"] for x in docs["hotspots-instruction"]["rows"]] == order
    assert api.hotspots(r, "instruction", "latency").note is None  # asked by latency: nothing to say
    sm = docs["summary"] = api.summary(r, top=3).to_dict()
    assert sm["stall_by_class"] is None and STALL_UNRECORDED_RANKING in sm["notes"]
    assert [x["pc"] for x in sm["instructions"]] == order[:3] and all(x["stall"] is None and x["vaddr"] is None for x in sm["instructions"])
    win = docs["asm"] = api.asm(r, 5, 1).to_dict()
    center = next(x for x in win["rows"] if x["center"])
    assert center["stall"] is None and center["issue"] is None and center["latency"] == raw["latency"][5]
    assert center["waits_on"] and all(w["cycles"] is None for w in center["waits_on"])
    plan = docs["plan"] = api.plan(r).to_dict()
    assert plan["totals"]["stall"] is None and plan["stall_summary"] is None
    assert plan["totals"]["latency"] == sum(raw["latency"].values())
    for doc in docs.values():
        schemas.validate(doc)


def test_rocprofv2_text_surfaces_show_a_dash_and_say_latency(tmp_path):
    """analyze, hotspots, asm, plan and the Markdown report: "-" where a stall
    figure would be, never "0.0%"; one line says the ranking is by latency."""
    from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

    cap = v2()
    raw = raw_sums(cap)
    out = run_main("analyze", cap)
    assert_clean(out)
    assert out.out.count(STALL_UNRECORDED_RANKING) == 1 and "Top 10 instructions by latency" in out.out and "by stall" not in out.out
    table = out.out.split("Top 10 instructions by latency", 1)[1].split("No source lines", 1)[0]
    first = next(ln for ln in table.splitlines() if ln.strip().startswith("1 "))
    assert first.split()[:6] == ["1", "18", "-", "564", f"{raw['latency'][18]:,}", "-"] and "0.0%" not in table
    klass = out.out.split("Instruction stall by class", 1)[1].split(STALL_UNRECORDED_RANKING, 1)[0]
    assert "vmem_store     -     -  41,084" in klass and " 0 " not in klass
    sm = run_main("analyze", cap, "--summary")
    assert_clean(sm)
    assert "instruction stall unavailable (not recorded by this profiler)" in sm.out and "Top 10 instructions by latency" in sm.out
    assert STALL_UNRECORDED_RANKING in sm.out and "by stall" not in sm.out
    hot = run_main("analyze", cap, "--by", "opcode")
    assert_clean(hot)
    assert STALL_UNRECORDED_RANKING in hot.out and "Top 10 opcodes by latency" in hot.out
    asm = run_main("asm", cap, "--pc", "5", "--around", "1")
    assert_clean(asm)
    row = next(ln for ln in asm.out.splitlines() if ln.startswith(">"))
    assert row.split()[1:7] == ["5", "-", "564", f"{raw['latency'][5]:,}", "-", "0"] and "2: -" in row
    plan = run_main("plan", cap)
    assert_clean(plan)
    assert "Instruction stall by class  unavailable" in plan.out
    rep = run_main("report", cap, "--format", "md", "-o", tmp_path / "md")
    assert_clean(rep)
    md = (tmp_path / "md" / "report.md").read_text()
    tables = md.split("## Instruction stall by class", 1)[1].split("## PC range", 1)[0]
    assert "## Top 10 instructions by latency" in md and "by stall" not in md and "| 0.0% |" not in tables
    assert "| 1 | 18 | `global_store_dwordx4 v1, v[2:5], s[0:1]` | `vmem_store` | 564 | 41,084 | - | - |" in md


def raw_wait_pairs_v2(cap: Path) -> tuple[list[int], list[int]]:
    """Per execution of the wait at pc 5 (`s_waitcnt lgkmcnt(0)`), the
    instructions and cycles (record times) since the last `s_load_dwordx4`
    (pc 2) of the same wave: the one lgkm op it waits on."""
    instr, cycles = [], []
    for _n, w in raw_waves(cap):
        ins = w["instructions"]
        for i, rec in enumerate(ins):
            if rec[4] == 5:
                j = max(k for k in range(i) if ins[k][4] == 2)
                instr.append(i - j)
                cycles.append(rec[0] - ins[j][0])
    return instr, cycles


def test_rocprofv2_deps_waits_waves_diff_stall_null_and_measured_figures_kept(tmp_path):
    """deps, waits, waves and diff on a capture without stall cycles: every
    figure of the records' stall is null (never 0); what is measured (wait
    executions, pairs, load-to-use distances, wave states from the timelines,
    latency) equals the wave files; rankings that would be by stall are by
    latency and say so; every object validates against its schema."""
    from attlens import api, schemas
    from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING
    from attlens.analysis.waitstats import WAIT_UNRECORDED

    cap = v2()
    raw = raw_sums(cap)
    code = {x[2]: x[0] for x in json.loads((cap / "code.json").read_text())["code"] if not x[0].startswith(";")}
    wait_pcs = sorted(pc for pc in raw["hit"] if code[pc].startswith("s_waitcnt"))
    assert wait_pcs == [5] and code[2] == "s_load_dwordx4 s[4:7], s[0:1], 0x0"
    instr, cycles = raw_wait_pairs_v2(cap)
    assert len(instr) == raw["hit"][5] == 564
    _d, r = loaded(cap)
    docs = {}

    ws = docs["waits"] = api.waits(r).to_dict(0)
    assert (ws["executions"], ws["total_wait"], ws["kernel_stall"], ws["share_of_stall"]) == (564, None, None, None)
    (site,) = ws["sites"]
    assert (site["pc"], site["isa"], site["executions"]) == (5, code[5], raw["hit"][5])
    assert all(site[k] is None for k in ("zero_wait_executions", "total", "mean", "stddev", "p50", "p90", "p95", "max", "share_of_wait", "share_of_stall"))
    assert site["producers"] == [{"pc": 2, "isa": code[2], "cycles": None}] and WAIT_UNRECORDED in ws["notes"]
    docs["waits-steady"] = api.waits(r, steady=True).to_dict(0)

    dp = docs["deps"] = api.deps(r).to_dict(0)
    assert dp["total_charged_cycles"] is None and dp["wait_executions_resolved"] == len(instr)
    (prod,) = dp["producers"]
    assert (prod["pc"], prod["pairs"], prod["executions"], prod["waited_cycles"], prod["share_of_wait"]) == (2, len(instr), raw["hit"][2], None, None)
    assert prod["distance_instructions_median"] == float(np.median(instr)) == 3.0 and prod["distance_instructions_min"] == min(instr)
    assert prod["distance_cycles_median"] == float(np.median(cycles)) and prod["waits"] == [{"wait_pc": 5, "cycles": None}]
    assert dp["producer_lines"] == [{"source": "(no source)", "waited_cycles": None, "share_of_wait": None, "producers": 1}]
    assert dp["waits"][0]["stall"] is None and dp["waits"][0]["charged_cycles"] is None and dp["waits"][0]["producers"][0]["cycles"] is None
    assert dp["warnings"][-1] == WAIT_UNRECORDED
    docs["deps-pc"] = api.deps(r, pc=5).to_dict()

    wv = docs["waves"] = api.waves(r, top=5).to_dict()
    states = Counter()
    for _n, w in raw_waves(cap):
        for state, dur in w["timeline"]:
            states[state] += dur
    # the wave states come from the timelines the plugin did write: measured, not unavailable
    assert wv["states"]["cycles"] == {"IDLE": states[1], "EXEC": states[2], "WAIT": states[3], "STALL": states[4]} and states[4] == 48_616
    ph = wv["phases"]["kernel"]
    assert ph["straight_line"] == {"records": sum(raw["hit"].values()), "stall": None, "latency": sum(raw["latency"].values())}
    assert all(v["stall"] is None for v in ph.values())
    assert [x["pc"] for x in wv["phases"]["instructions"]] == latency_order(raw)[:5]
    assert all(x["executions"] == raw["hit"][x["pc"]] for x in wv["phases"]["instructions"])
    assert all(x[k] is None for x in wv["phases"]["instructions"] for k in
               ("stall_p50", "stall_p90", "stall_max", "first_execution_stall_mean", "later_execution_stall_mean", "stall_by_phase"))
    assert wv["warnings"][-1] == STALL_UNRECORDED_RANKING

    # diff against a rocprofv3 capture (stall recorded) and against itself: no stall delta from the rocprofv2 side
    v3 = next((require_shared() / "traces" / "layernorm" / "big").glob("ui_output_agent_*"))
    _d3, r3 = loaded(v3)
    per_wave = sum(raw["latency"].values()) / len(raw_waves(cap))
    df = docs["diff"] = api.diff(r3, r, force=True).to_dict(0)
    assert df["verdict"]["latency_per_wave_after"] == pytest.approx(per_wave, abs=1e-3)
    assert all(c["stall_after"] is None and c["stall_delta"] is None and c["stall_relative"] is None for c in df["classes"])
    assert any(c["stall_before"] for c in df["classes"])  # the rocprofv3 side keeps its measured stall
    assert [abs(c["latency_delta"]) for c in df["classes"]] == sorted((abs(c["latency_delta"]) for c in df["classes"]), reverse=True)
    assert all(ln["stall_after"] is None and ln["dominant_after"] is None for ln in df["lines"])
    assert all(ch["after"]["stall"] is None for ch in df["sites"]["changed"] if ch["after"])
    assert any(ch["before"]["stall"] for ch in df["sites"]["changed"] if ch["before"])
    assert df["warnings"][-1].startswith("stall is not recorded by this profiler (rocprofv2) in the after capture: no stall delta is computed")
    same = docs["diff-v2"] = api.diff(r, r).to_dict(0)
    assert all(c["stall_before"] is None and c["stall_after"] is None for c in same["classes"])
    assert "in the before and after captures" in same["warnings"][-1] and same["verdict"]["class_moves"] == []
    # a saved attlens.analyze of the rocprofv2 capture says stall_recorded false: the same
    saved = tmp_path / "v2.json"
    saved.write_text(json.dumps(r.to_dict(0)))
    back = docs["diff-saved"] = api.diff(r3, saved, force=True).to_dict(0)
    assert back["classes"] == df["classes"] and back["warnings"][-1] == df["warnings"][-1]
    for doc in docs.values():
        schemas.validate(doc)


def test_rocprofv2_deps_waits_waves_diff_check_text_say_unavailable(tmp_path):
    """The text surfaces: "-" where a wait or stall figure would be, never 0;
    check refuses a stall metric on it (exit 21) and gates latency."""
    from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING
    from attlens.analysis.waitstats import WAIT_UNRECORDED

    cap = v2()
    raw = raw_sums(cap)
    dp = run_main("deps", cap)
    assert_clean(dp)
    assert "  - wait cycles charged to producers over 564 resolved wait executions" in dp.out and "0 wait cycles" not in dp.out
    assert " ".join(WAIT_UNRECORDED.split()) in " ".join(dp.out.split())
    row = next(ln for ln in dp.out.splitlines() if ln.strip().startswith("2 "))
    assert row.split()[:7] == ["2", "-", "-", "-", "564", "3/3", "12"]
    ws = run_main("waits", cap)
    assert_clean(ws)
    assert "1 wait sites, 564 executions (every execution), - wait cycles = - of all stall" in ws.out
    row = next(ln for ln in ws.out.splitlines() if ln.strip().startswith("5 "))
    assert row.split()[:13] == ["5", "-", "-", "-", "564", *["-"] * 7, "wait_smem"]
    wv = run_main("waves", cap)
    assert_clean(wv)
    assert f"straight_line    11,280       -   {sum(raw['latency'].values()):,}" in wv.out and STALL_UNRECORDED_RANKING in wv.out
    assert "EXEC    534,424" in wv.out  # the wave states stay measured
    row = next(ln for ln in wv.out.splitlines() if ln.strip().startswith("18 "))
    assert row.split()[:8] == ["18", "-", "564", "-", "-", "-", "-", "-"]
    df = run_main("diff", cap, cap)
    assert_clean(df)
    assert "Per class (latency cycles per wave)" in df.out and "stall cycles per wave" not in df.out
    assert "stall is not recorded by this profiler (rocprofv2) in the before and after captures" in " ".join(df.out.split())
    md = run_main("diff", cap, cap, "--format", "md")
    assert_clean(md)
    assert "## Per class (latency per wave)" in md.out and "## Per class (stall per wave)" not in md.out
    for metric in ("stall", "class:vmem_store"):
        ck = run_main("check", cap, "--baseline", cap, "--metric", metric, "--force")
        assert_clean(ck)
        assert ck.code == 21 and "stall is not recorded by this profiler (rocprofv2) in the current and baseline captures" in ck.err
    ok = run_main("check", cap, "--baseline", cap, "--json")
    assert_clean(ok)
    assert ok.code == 0 and json.loads(ok.out)["current"] == pytest.approx(sum(raw["latency"].values()) / 564)


def test_rocprofv2_wave_cu_comes_from_occupancy():
    cap = v2()
    d, _r = loaded(cap)
    occ = json.loads((cap / "occupancy.json").read_text())
    starts = defaultdict(set)
    for se, lst in occ.items():
        if se.isdigit():
            for u in lst:
                t, cu, simd, slot, st, _k = unpack(u)
                if st:
                    starts[(int(se), t, simd, slot)].add(cu)
    want = {}
    for name, w in raw_waves(cap):
        assert "cu" not in w
        cus = starts[(int(name.split("_")[0][2:]), w["begin"] // 8 * 8, w["simd"], w["slot"])]
        assert len(cus) == 1, name
        want[name] = cus.pop()
    assert {n: int(c) for n, c in zip(d.waves.filenames, d.waves.cu)} == want


def test_unlisted_wave_files_are_said_and_not_read(tmp_path):
    cap = tmp_path / "cap"
    shutil.copytree(v2(), cap)
    fn = json.loads((cap / "filenames.json").read_text())
    dropped = fn["wave_filenames"]["0"]["0"]["0"].pop("2")[0]
    (cap / "filenames.json").write_text(json.dumps(fn))
    import attlens

    d = attlens.load(cap, cache=False)
    assert d.waves.count == len(raw_waves(cap)) and dropped not in d.waves.filenames
    assert any(f"1 wave file(s) that filenames.json does not list (e.g. {dropped})" in w for w in d.warnings)


# --------------------------------------------------------------------------- captures, PC sampling, legacy rocprof


def test_captures_names_every_layout_of_the_outside_folder():
    root = outside()
    o = run_main("captures", root, "--json")
    assert o.code == 0
    doc = o.json()
    expect = sorted(str(p.parent) for p in root.rglob("filenames.json"))
    assert [c["path"] for c in doc["captures"]] == expect and doc["stopped"] is None
    layouts = {}
    for c in doc["captures"]:
        p = Path(c["path"])
        code = json.loads((p / "code.json").read_text())
        fn = json.loads((p / "filenames.json").read_text())
        if fn.get("pc_sampling") and not fn.get("wave_filenames"):
            want = "rocprofv3-pc-sampling"
        elif "header" in code:
            want = "rocprofv3"
        elif code["code"][0][0] == "; Begin ATT ASM":
            want = "rocprofv2"
        else:
            want = "rocprofv3-early"
        layouts[p.name] = c["layout"]
        assert c["layout"] == want, p
    assert sorted(layouts.values()) == ["rocprofv2", "rocprofv3-early", "rocprofv3-early", "rocprofv3-pc-sampling"]
    others = {Path(x["path"]).relative_to(root).as_posix(): x for x in doc["others"]}
    for si in root.glob("rocprof-compute/*/sysinfo.csv"):
        x = others[si.parent.relative_to(root).as_posix()]
        assert x["layout"] == "rocprof-compute" and x["target"] == csv_rows(si)[0]["gpu_arch"]
    assert others["legacy-rocprof-v1"]["status"] == "unsupported" and "legacy rocprof (v1)" in others["legacy-rocprof-v1"]["error"]
    assert others["rocprofv3-csv-gfx1151"]["layout"] == "rocprofv3-run"


def test_captures_says_where_the_bounded_walk_stopped(tmp_path):
    from attlens.model.inventory import MAX_DEPTH

    deep = tmp_path
    for i in range(MAX_DEPTH + 2):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    doc = run_main("captures", tmp_path, "--json").json()
    assert doc["captures"] == [] and f"stopped at {MAX_DEPTH} levels" in doc["stopped"]


def test_pc_sampling_and_legacy_outputs_are_named():
    # the PC-sampling folder is issue 21's to read; here: the thread-trace loader names it, never "corrupt"
    import attlens
    from attlens.errors import EmptyCapture

    with pytest.raises(EmptyCapture, match="PC-sampling"):
        attlens.load(outside() / "rcv-pcsampling", cache=False)
    for p in ("legacy-rocprof-v1", "legacy-rocprof-v1/results.db", "legacy-rocprof-v1/results.json"):
        o = run_main("kernels", outside() / p)
        assert_clean(o)
        assert o.code == 4 and "legacy rocprof (v1)" in o.err and "rocprofv3 --kernel-trace" in o.err, o.describe()


# --------------------------------------------------------------------------- rocprofiler-compute counters


def _f(row: dict, name: str) -> float:
    return float(row[name])


def _read_bytes(row: dict, target: str) -> float:
    """Fabric read bytes of one dispatch by the formulas of docs/pmc.md."""
    if target in ("gfx90a", "gfx908"):
        r, r32 = _f(row, "TCC_EA_RDREQ_sum"), _f(row, "TCC_EA_RDREQ_32B_sum")
        return 32 * r32 + 64 * max(r - r32, 0)
    b, r, r32 = _f(row, "TCC_BUBBLE_sum"), _f(row, "TCC_EA0_RDREQ_sum"), _f(row, "TCC_EA0_RDREQ_32B_sum")
    return 128 * b + 64 * max(r - b - r32, 0) + 32 * r32


def _write_bytes(row: dict, target: str) -> float:
    ea = "TCC_EA_" if target in ("gfx90a", "gfx908") else "TCC_EA0_"
    w, w64 = _f(row, f"{ea}WRREQ_sum"), _f(row, f"{ea}WRREQ_64B_sum")
    return 64 * w64 + 32 * max(w - w64, 0)


def _pmc(path) -> dict:
    o = run_main("pmc", path, "--json")
    assert_clean(o, as_json=True)
    assert o.code == 0, o.describe()
    return {d["dispatch_id"]: d for d in o.json()["dispatches"]}


@pytest.mark.parametrize("work", ["vcopy_MI100", "vcopy_MI200", "kernel_MI300X_A1", "vcopy_MI300A_A1", "fmla_MI300_partition"])
def test_wide_pmc_perf_figures_equal_the_csv_by_hand(work):
    d = outside() / "rocprof-compute" / work
    sysinfo = csv_rows(d / "sysinfo.csv")[0]
    target, peak = sysinfo["gpu_arch"], float(sysinfo["hbm_bw"])
    got = _pmc(d)
    rows = csv_rows(d / "pmc_perf.csv")
    assert sorted(got) == sorted(int(r["Dispatch_ID"]) for r in rows)
    unusable = set()
    for r in rows:
        g = got[int(r["Dispatch_ID"])]
        assert g["target"]["name"] == target and g["target"]["xcc"] == int(sysinfo["num_xcd"])
        assert g["target"]["peak_hbm_gbps"] == pytest.approx(peak) and "sysinfo.csv" in g["target"]["peak_source"]
        rb, wb = _read_bytes(r, target), _write_bytes(r, target)
        assert g["read"]["bytes"] == pytest.approx(rb) and g["write"]["bytes"] == pytest.approx(wb)
        start, end = r["Start_Timestamp"], r["End_Timestamp"]
        dur = float(end) - float(start)
        rounded = "E" in start.upper() or "E" in end.upper()
        if rounded or dur <= 0 or (rb + wb) / dur > peak:
            unusable.add(int(r["Dispatch_ID"]))
            assert g["bandwidth"]["achieved_gbps"] is None and g["bandwidth"]["timing_unusable"]
            ceiling = next(x for x in g["decisions"] if x["id"] == "bandwidth_ceiling")
            assert ceiling["verdict"] is None and ceiling["text"].startswith("timing unusable")
        else:
            assert g["bandwidth"]["timing_unusable"] is None
            assert g["bandwidth"]["achieved_gbps"] == pytest.approx((rb + wb) / dur, rel=1e-6, abs=1e-6)
            assert g["bandwidth"]["fraction_of_peak"] <= 1.0
    if work == "fmla_MI300_partition":  # the figure the issue found: 531,690 GB/s for dispatch 9
        assert 9 in unusable and "665.6 GB/s peak" in got[9]["bandwidth"]["timing_unusable"]
    if work == "vcopy_MI300A_A1":  # an APU: 6 XCDs, and timestamps rounded to 1.62068E+14
        assert unusable == set(got) and got[0]["target"]["product"] == "MI300A"


def test_long_form_pmc_perf_is_pivoted():
    d = outside() / "rocprof-compute" / "vcopy_MI300X_A1_rocpd"
    by = defaultdict(dict)
    passes = defaultdict(set)  # each counter row carries the Start/End of the pass that collected it
    for r in csv_rows(d / "pmc_perf.csv"):
        by[int(r["Dispatch_ID"])][r["Counter_Name"]] = r["Counter_Value"]
        passes[int(r["Dispatch_ID"])].add((int(r["Start_Timestamp"]), int(r["End_Timestamp"])))
    got = _pmc(d)
    assert sorted(got) == sorted(by)
    from attlens.model.archdata import ARCH_TABLE

    for did, counters in by.items():
        g = got[did]
        assert g["read"]["bytes"] == pytest.approx(_read_bytes(counters, "gfx942"))
        assert g["write"]["bytes"] == pytest.approx(_write_bytes(counters, "gfx942"))
        pairs = passes[did]
        dur = sum(e for _, e in pairs) / len(pairs) - sum(s for s, _ in pairs) / len(pairs)
        assert g["bandwidth"]["duration_ns"] == pytest.approx(dur)
        # sysinfo.csv of ROCm 7 has no hbm_bw or max_mclk: the product table's MI300X peak
        assert g["target"]["product"] == "MI300X" and g["target"]["peak_hbm_gbps"] == ARCH_TABLE["gfx942"]["hbm_peak_gbps"]["AMD Instinct MI300X"]


def test_per_pass_files_are_merged_when_the_merged_file_is_absent(tmp_path):
    src = outside() / "rocprof-compute" / "no_roof_MI350"
    work = tmp_path / "w"
    work.mkdir()
    passes = sorted(src.glob("pmc_perf_*.csv"))
    for f in passes + [src / "sysinfo.csv"]:
        shutil.copy(f, work / f.name)
    got = _pmc(work)
    merged = {int(r["Dispatch_ID"]): r for r in csv_rows(src / "pmc_perf.csv")}
    per = [{int(r["Dispatch_ID"]): r for r in csv_rows(f)} for f in passes]
    assert sorted(got) == sorted(merged)
    for did, g in got.items():
        for name, v in g["counters"].items():
            col = name + "_sum" if name + "_sum" in merged[did] else name
            if col in merged[did] and merged[did][col] != "":
                assert v == pytest.approx(float(merged[did][col])), (did, name)
        starts = [float(p[did]["Start_Timestamp"]) for p in per]
        ends = [float(p[did]["End_Timestamp"]) for p in per]
        assert g["bandwidth"]["duration_ns"] == pytest.approx(sum(ends) / len(ends) - sum(starts) / len(starts))


def test_per_pass_files_without_a_dispatch_are_said():
    o = run_main("pmc", outside() / "rocprof-compute" / "dispatch_6_8_MI200")
    assert o.code == 6 and "hold no dispatch" in o.err


def test_kd_suffixes_match_the_plain_and_mangled_names():
    from attlens.model.kernelname import kernel_base_name, same_kernel

    rows = csv_rows(outside() / "rocprof-compute" / "vcopy_MI100" / "pmc_perf.csv")
    name = rows[0]["Kernel_Name"]
    assert name.endswith("[clone .kd]")
    assert kernel_base_name(name) == "vecCopy" and same_kernel(name, "_Z7vecCopyPdS_S_ii")
    assert same_kernel("vecCopy(double*, double*, double*, int, int) (.kd)", "vecCopy(double*, double*, double*, int, int)")
