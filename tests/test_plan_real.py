"""The plan on the shared captures: findings the data supports, numbers
recomputed here from the raw files (code.json, the wave files, the rocprofv3
CSVs) with plain json/csv, and the invariants on every capture."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections import Counter

import pytest

from attlens.analysis.plan import COVER_SHARE, load_rules, make_plan
from conftest import REPO, loaded, require_shared, trace_dirs, trace_id

TRACES = trace_dirs()
_PLANS: dict = {}
RANK = {"HIGH": 0, "MED": 1, "LOW": 2, "INFO": 3}


def plan_of(path):
    if str(path) not in _PLANS:
        _PLANS[str(path)] = make_plan(loaded(path)[1])
    return _PLANS[str(path)]


def rules_of(path):
    return {f.rule for f in plan_of(path).findings}


def finding(path, rid):
    return next(f for f in plan_of(path).findings if f.rule == rid)


# --- raw-file helpers (independent of attlens' readers) ---------------------


def raw_code(path) -> list:
    return json.loads((path / "code.json").read_text())["code"]


def raw_waves(path) -> list[list]:
    """Each wave's executed pcs, in order."""
    return [[r[4] for r in json.loads(f.read_text())["wave"]["instructions"]] for f in sorted(path.glob("se*_sm*_sl*_wv*.json"))]


def raw_trace_row(path, dispatch: int) -> dict:
    rows = list(csv.DictReader(open(path.parent.parent / "rocprofv3" / "discover_kernel_trace.csv")))
    return next(r for r in rows if int(r["Dispatch_Id"]) == dispatch)


def raw_cu_count(path) -> int:
    rows = list(csv.DictReader(open(path.parent.parent / "rocprofv3" / "big_agent_info.csv")))
    return int(next(r for r in rows if r["Agent_Type"] == "GPU")["Cu_Count"])


def dispatch_id(path) -> int:
    return int(re.search(r"dispatch_(\d+)", path.name).group(1))


# --- invariants on every capture ---------------------------------------------


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_findings_are_bounded_ordered_and_settled(path):
    require_shared()
    d, r = loaded(path)
    plan = plan_of(path)
    total = int((r.sums.idle + r.sums.latency).sum())
    assert not plan.rule_errors
    # one cycle ledger: no pc beyond its stall + idle, the total within the kernel's cycles
    per_pc = Counter()
    for f in plan.findings:
        assert f.cycles_at_stake == sum(c["cycles"] for c in f.claims)
        assert len({c["pc"] for c in f.claims}) == len(f.claims)  # one claim per pc
        for c in f.claims:
            per_pc[c["pc"]] += c["cycles"]
        assert f.change and f.falsify and f.rationale and f.evidence
        assert f.severity in RANK and 0 < f.confidence <= 1
        if f.kind != "performance":
            assert f.claims == [] and f.cycles_at_stake == 0
    assert all(v <= int(r.sums.stall[pc] + r.sums.idle[pc]) for pc, v in per_pc.items())
    assert plan.cycles_at_stake == sum(per_pc.values()) <= total
    # severity never rises down the list; within one severity performance findings by priority
    sev = [RANK[f.severity] for f in plan.findings]
    assert sev == sorted(sev)
    for s in RANK:
        perf = [f.priority for f in plan.findings if f.severity == s and f.kind == "performance"]
        assert perf == sorted(perf, reverse=True)


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_no_large_stall_class_goes_unmentioned(path):
    require_shared()
    _, r = loaded(path)
    plan = plan_of(path)
    b = r.breakdown
    from attlens.analysis.stalls import CLASS_IDS

    for ci, cls in enumerate(CLASS_IDS):
        if b.by_class_stall[cls] / b.total_stall < COVER_SHARE:
            continue
        explained = any(cls in f.explains for f in plan.findings)
        noted = any(f.rule == "stall-class" and f.evidence["class"] == cls for f in plan.findings)
        claimed = sum(int(r.sums.class_stall[c["pc"], ci]) for f in plan.findings for c in f.claims)
        assert explained or noted or claimed > 0, f"{cls} holds {b.by_class_stall[cls] / b.total_stall:.0%} of stall and no finding mentions it"


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_advice_the_trace_would_contradict_never_appears(path):
    require_shared()
    plan = plan_of(path)
    waves = None
    for f in plan.findings:
        if f.rule == "load-use-distance":
            for row in f.evidence["loads"]:
                assert "store" not in row["isa"].split()[0]  # never a store counted as a load
                if row["lever"] == "next-iteration":  # only on loads that ran more than once in a wave
                    waves = waves or raw_waves(path)
                    assert any(w.count(row["pc"]) > 1 for w in waves), f"prefetch advice for pc {row['pc']} which never repeats in a wave"
                else:
                    assert "Prefetch" not in f.change or any(x["lever"] == "next-iteration" for x in f.evidence["loads"])
        if f.rule == "vmem-backpressure":  # never "wider" for instructions already 128-bit
            assert all(not re.search(r"dwordx4|b128", row["isa"].split()[0]) for row in f.evidence["instructions"])
        if f.rule == "smem-wait":  # hoist advice only for loads issued after the first wait
            for row in f.evidence["hoistable"]:
                assert row["pc"] > f.evidence["first_wait_pc"]


# --- the findings experts lead with, recomputed from the raw files ------------


@pytest.mark.parametrize("kernel", ["blockscale_preshuffle_gemm", "hgemm_splitk", "moe_blockscale"])
def test_grid_starvation_leads_where_workgroups_are_fewer_than_cus(shared, kernel):
    path = next(p for p in TRACES if p.parent.parent.name == kernel)
    row = raw_trace_row(path, dispatch_id(path))
    wg = 1
    for a in "XYZ":
        wg *= -(-int(row[f"Grid_Size_{a}"]) // int(row[f"Workgroup_Size_{a}"]))
    cus = raw_cu_count(path)
    assert wg < cus
    f = plan_of(path).findings[0]
    assert f.rule == "grid-starvation" and f.severity == "HIGH"
    assert (f.evidence["workgroups"], f.evidence["cus"], f.evidence["idle_cus"]) == (wg, cus, cus - wg)


def test_vec_add_is_at_the_bandwidth_ceiling(shared):
    path = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    code = raw_code(path)
    width = {"dwordx4": 16, "dwordx2": 8, "dword": 4}
    traced = 0
    for text, _, _, _, _, _, hit, *_ in code[1:]:
        m = re.match(r"(buffer|global)_(load|store)_(dwordx4|dwordx2|dword)\b", text)
        if m:
            traced += hit * width[m.group(3)] * 64
        m = re.match(r"s_load_dword(x(\d+))?\b", text)
        if m:
            traced += hit * 4 * int(m.group(2) or 1)
    n_waves = len(list(path.glob("se*_sm*_sl*_wv*.json")))
    row = raw_trace_row(path, 25)
    grid_waves = (int(row["Grid_Size_X"]) // int(row["Workgroup_Size_X"])) * (int(row["Workgroup_Size_X"]) // 64)
    nbytes = traced / n_waves * grid_waves
    dur = int(row["End_Timestamp"]) - int(row["Start_Timestamp"])
    frac = nbytes / dur / 8000.0  # MI350X: 8 TB/s
    assert 0.7 <= frac <= 1.0  # 0.805: streaming at the ceiling
    plan = plan_of(path)
    f = plan.findings[0]
    assert f.rule == "bandwidth-ceiling" and f.severity == "HIGH"
    assert f.evidence["duration_ns"] == dur == 19240
    assert f.evidence["bytes_moved"] == round(nbytes)
    assert f.evidence["fraction_of_peak"] == pytest.approx(frac, abs=1e-4)
    # and none of the advice the trace contradicts: wider loads (already 128-bit), prefetch (no loop), hoist s_loads (already first)
    assert {"vmem-backpressure", "load-use-distance", "smem-wait"}.isdisjoint(rules_of(path))
    assert plan.rules_silenced["vmem-backpressure"][0]["id"] == "narrow"


def test_softmax_is_valu_issue_bound_with_narrow_loads(shared):
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    _, r = loaded(path)
    first, second = plan_of(path).findings[:2]
    assert first.rule == "issue-bound" and first.evidence["pipe"] == "VALU" and first.evidence["busy_share"] >= 0.6
    assert second.rule == "vmem-backpressure"
    top = second.evidence["instructions"][0]
    assert top["isa"].startswith("buffer_load_ushort") and top["stall"] == 8_472_828 and top["bytes_per_lane"] == 2
    code = raw_code(path)
    narrow = sum(row[8] for row in code[1:] if re.match(r"buffer_(load|store)_(ushort|short)\b", row[0]))
    assert second.evidence["issue_stall_narrow"] == narrow
    assert second.cycles_at_stake <= narrow


def test_prologue_only_names_the_skipping_branch(shared):
    path = shared / "traces/pa_mqa_logits_fp4/small/ui_output_agent_32435_dispatch_197"
    code = raw_code(path)
    waves = raw_waves(path)
    # every traced wave runs pc 159 (s_cbranch_vccnz) and goes straight to 491, past the loop 193-489
    for w in waves:
        i = w.index(159)
        assert w[i + 1] == 491 and not any(193 <= pc <= 489 for pc in w)
    assert code[159][0].startswith("s_cbranch_vccnz") and code[157][0].startswith("s_andn2_b64 vcc")
    plan = plan_of(path)
    f = finding(path, "prologue-only")
    sk = f.evidence["skipped_by"]
    assert (sk["branch_pc"], sk["target_pc"], sk["condition"], sk["set_by_pc"]) == (159, 491, "VCC", 157)
    assert sk["condition_registers"] == ["exec", "s0", "s1"] and sk["waves_taking_it"] == len(waves) == 4
    assert f.evidence["traced_ses"] == [1] and "another --att-target-cu" in f.change
    perf = [x for x in plan.findings if x.kind == "performance"]
    assert perf and all(x.severity != "HIGH" and "caveat" in x.evidence for x in perf)
    big = shared / "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426"
    assert "prologue-only" not in rules_of(big)
    assert "no-source-lines" in rules_of(big)


def test_waves_that_skip_the_body_name_their_guard(shared):
    path = shared / "traces/moe_gemm/big/ui_output_agent_56573_dispatch_87"
    waves = raw_waves(path)
    short = [w for w in waves if len(w) < max(map(len, waves)) // 10]
    assert len(short) == 8 and all(w[w.index(12) + 1] == 996 for w in short)
    code = raw_code(path)
    assert code[996][0].startswith("s_endpgm") and code[11][0].startswith("v_cmp_ge_u32_e32 vcc")
    f = finding(path, "early-exit-waves")
    br = f.evidence["exit_branch"]
    assert (f.evidence["waves_out"], f.evidence["waves"]) == (8, len(waves))
    assert (br["branch_pc"], br["target_pc"], br["set_by_pc"], br["condition_registers"]) == (12, 996, 11, ["s24", "v1"])
    assert f.evidence["instructions_median_out"] == sorted(map(len, short))[len(short) // 2]


def test_loops_and_trip_counts_come_from_the_trace(shared):
    path = shared / "traces/preshuffle_gemm/big/ui_output_agent_58177_dispatch_135"
    waves = raw_waves(path)
    # the backward branch at pc 346 jumps to 206: count taken back edges and entries per wave
    taken = sum(sum(1 for a, b in zip(w, w[1:]) if a == 346 and b == 206) for w in waves)
    entries = sum(sum(1 for i, pc in enumerate(w) if 206 <= pc <= 346 and (i == 0 or not 206 <= w[i - 1] <= 346)) for w in waves)
    (lp,) = plan_of(path).loops.loops
    assert (lp.first_pc, lp.branch_pc, lp.taken, lp.entries) == (206, 346, taken, entries)
    assert lp.trips_mean == pytest.approx((taken + entries) / entries)
    f = finding(path, "lds-to-mfma")
    assert f.loops and all(x["loop"] == 0 and x["trips_mean"] == round(lp.trips_mean, 2) for x in f.loops)


def test_layernorm_scalar_loads_hoist_and_preload(shared):
    path = shared / "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
    code = raw_code(path)
    f = finding(path, "smem-wait")
    assert [x["pc"] for x in f.evidence["first_batch"]] == [1, 2] and f.evidence["first_wait_pc"] == 6
    assert [x["pc"] for x in f.evidence["hoistable"]] == [239, 240]
    # the late loads read the kernarg pointer s[0:1], which nothing writes before them
    assert all(re.search(r"s\[0:1\]", code[pc][0]) for pc in (239, 240, 241, 242))
    assert not any(re.match(r"\S+ s\[0:1\]|\S+ s0,|\S+ s1,", code[pc][0]) for pc in range(1, 239))
    # 241 and 242 load into s[4:5] and s3, which instructions after the first wait still use (the
    # first batch's results): moved up they would clobber them; 239/240's s[8:9], s[12:13] are free
    def touches(pc, regs):
        return any(re.search(rf"\b{r}\b", code[q][0]) for q in range(7, pc) for r in regs)
    assert code[241][0].startswith("s_load_dwordx2 s[4:5]") and touches(241, (r"s\[4:5\]", "s4", "s5"))
    assert code[242][0].startswith("s_load_dword s3,") and touches(242, ("s3",))
    assert not touches(239, (r"s\[8:9\]", "s8", "s9")) and not touches(240, (r"s\[12:13\]", "s12", "s13"))
    # the first batch ends at byte 0x10 + 4 = 20 <= 56: preloadable on gfx950
    assert "preload" in f.change and "bytes 0–20" in f.change


def test_rmsnorm_weight_loads_need_registers_not_prefetch(shared):
    path = shared / "traces/rmsnorm/big/ui_output_agent_19276_dispatch_18"
    f = finding(path, "load-use-distance")
    code = raw_code(path)
    for row in f.evidence["loads"]:
        assert row["lever"] == "earlier-with-registers" and row["loop"] is None
        # the load's destination is the data register set the store right before it reads
        dst = re.match(r"\S+ (v\[\d+:\d+\])", code[row["pc"]][0]).group(1)
        assert dst in code[row["destination_free_at_pc"]][0] and code[row["destination_free_at_pc"]][0].startswith("buffer_store")
    assert "Prefetch" not in f.change and "more VGPRs cost no occupancy" in f.change


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_occupancy_inputs_reconcile_reported_and_isa(path):
    require_shared()
    _, r = loaded(path)
    vi = r.occupancy.vgpr_inputs
    code = raw_code(path)
    top = 0
    for row in code[1:]:
        for lo, hi in re.findall(r"(?<![\w.])v\[(\d+):(\d+)\]", row[0]):
            top = max(top, int(hi) + 1)
        for i in re.findall(r"(?<![\w.\[])v(\d+)\b", row[0].split(None, 1)[1] if " " in row[0] else ""):
            top = max(top, int(i) + 1)
    assert vi["isa_vgprs"] == top
    reported = vi["reported_vgprs"]
    assert vi["registers_used"] == max(2 * reported, vi["isa_registers"])  # gfx950: 2 x VGPR_Count, reconciled
    assert vi["allocated"] == -(-vi["registers_used"] // 8) * 8


def test_no_occupancy_advice_when_the_traced_cu_did_not_fill_its_slots(shared):
    for rel in ("layernorm/big/ui_output_agent_22257_dispatch_23", "blockscale_preshuffle_gemm/big/ui_output_agent_14065_dispatch_120"):
        path = shared / "traces" / rel
        assert "occupancy-limit" not in rules_of(path)
        assert plan_of(path).rules_silenced["occupancy-limit"][0]["id"] in ("grid-fills", "reached")


def test_occupancy_advice_carries_the_exact_registers(shared):
    path = shared / "traces/preshuffle_gemm/big/ui_output_agent_58177_dispatch_135"
    _, r = loaded(path)
    f = finding(path, "occupancy-limit")
    free = f.evidence["to_next_wave"]["free"]["vgpr"]
    # 2 x 84 reported = 168 (ISA v163 → 164): 3 waves; 4 waves need ≤ 512 // 4 = 128
    assert (free["allocated"], free["allowed_for_next_wave"], free["free_registers"]) == (168, 128, 40)
    assert r.occupancy.grid_limited is False


def test_location_collapse_only_before_the_fix(shared):
    base = shared / "traces/flash_attn_func"
    assert "location-collapse" in rules_of(base / "big/ui_output_agent_38430_dispatch_44")
    assert "location-collapse" not in rules_of(base / "big/ui_output_agent_55287_dispatch_44_after_loc_fix")
    assert "location-collapse" in rules_of(base / "small/ui_output_agent_32235_dispatch_44")
    assert "location-collapse" not in rules_of(base / "small/ui_output_agent_58550_dispatch_44_after_loc_fix")


def test_flash_drain_waits_on_lds_dma_are_not_called_partial(shared):
    # the vmcnt(0) at pc 1011 drains four `buffer_load ... lds` (LDS DMA): their data is read
    # from LDS after the wait, so no register shows which one is needed: no drain advice there
    path = shared / "traces/flash_attn_func/big/ui_output_agent_55287_dispatch_44_after_loc_fix"
    code = raw_code(path)
    assert all(code[pc][0].endswith(" lds") for pc in (984, 990, 996, 1002))
    waits = [w["wait_pc"] for f in plan_of(path).findings if f.rule == "drain-to-zero" for w in f.evidence["waits"]]
    assert 1011 not in waits


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr + p.stdout
    assert p.returncode == code, p.stderr
    return p


def test_plan_cli_outputs(shared, tmp_path):
    cap = shared / "traces/pa/big/ui_output_agent_10886_dispatch_209"
    doc = json.loads(run("plan", cap, "--json").stdout)
    assert doc["schema"] == "attlens.plan" and doc["schema_version"] == 2 and doc["findings"]
    assert [x["rule"] for x in doc["priorities"]] == [x["rule"] for x in doc["findings"]]
    for f in doc["findings"]:
        assert {"claims", "ledger", "loops", "preconditions"} <= set(f)
    assert doc["totals"]["cycles_at_stake"] == sum(f["cycles_at_stake"] for f in doc["findings"])
    assert doc["dispatch"]["occupancy"]["vgpr_inputs"]["reported_vgprs"] == 96
    assert doc["loops"]["loops"][0]["pcs"] == [141, 935] and doc["bandwidth"]["peak_gbps"] == 8000.0
    md = tmp_path / "plan.md"
    run("plan", cap, "--format", "md", "-o", md)
    text = md.read_text()
    order = ("**Verdict:**", "## Priorities", "## Instruction stall by class", "## Findings", "**Change:**", "**Would prove it wrong:**", "Cycle ledger:")
    pos = [text.find(section) for section in order]
    assert -1 not in pos and pos == sorted(pos), pos  # the verdict and the priorities first
    for f in doc["findings"]:
        assert f"{f['cycles_at_stake']:,}" in text or f["kind"] != "performance"
    txt = run("plan", cap, "--no-color").stdout
    assert "{" not in txt.split("Instruction stall by class")[1]  # evidence as rows, never raw dicts
    # the story first (verdict, priorities), the dispatch facts after, then each finding
    assert txt.index("\nVerdict  ") < txt.index("\nPriorities\n") < txt.index("\nDispatch   ") < txt.index("\n1. ")
    assert not re.search(r"\d\.\d{5,}", txt)  # no 16-digit floats
    off = json.loads(run("plan", cap, "--json", "--disable", "occupancy-limit").stdout)
    assert "occupancy-limit" not in {f["rule"] for f in off["findings"]}
    assert "occupancy-limit" in off["rules_disabled"]
    assert "unknown rule" in run("plan", cap, "--disable", "nope", code=2).stderr
    assert "Top findings" in run("analyze", cap).stdout


def test_rules_listing_matches_registry_and_docs():
    doc = json.loads(run("rules", "--json").stdout)
    assert [r["id"] for r in doc["rules"]] == list(load_rules())
    for r in doc["rules"]:
        info = load_rules()[r["id"]]
        assert r["preconditions"] == [{"id": p, "text": t} for p, t in info.preconditions]
    text = run("rules").stdout
    for rid, info in load_rules().items():
        assert rid in text
        for p, _ in info.preconditions:
            assert f"[{p}]" in text
