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


def raw_same_shape_durations(path) -> list[tuple[int, int]]:
    """(dispatch id, End - Start) of every dispatch of the capture's kernel with its grid
    in the discovery kernel trace (the capture's dispatch id names the kernel there)."""
    rows = list(csv.DictReader(open(path.parent.parent / "rocprofv3" / "discover_kernel_trace.csv")))
    me = next(r for r in rows if int(r["Dispatch_Id"]) == dispatch_id(path))
    key = lambda r: (r["Kernel_Name"], *(r[f"Grid_Size_{a}"] for a in "XYZ"), *(r[f"Workgroup_Size_{a}"] for a in "XYZ"))  # noqa: E731
    return [(int(r["Dispatch_Id"]), int(r["End_Timestamp"]) - int(r["Start_Timestamp"])) for r in rows if key(r) == key(me)]


def raw_median(xs) -> int:
    xs = sorted(xs)
    n = len(xs)
    return round(xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2)


def raw_lifetimes(path) -> list[tuple[int, int]]:
    """(start, end) of every wave in occupancy.json: per (SE, CU, SIMD, slot) events alternate start, end."""
    doc = json.loads((path / "occupancy.json").read_text())
    out = []
    for se, events in doc.items():
        if not se.isdigit():
            continue
        open_ = {}
        for t, cu, simd, slot, start, _k in sorted((tuple(e[:6]) for e in events), key=lambda e: (e[0], e[4])):
            if start:
                open_[(cu, simd, slot)] = t
            elif (cu, simd, slot) in open_:
                out.append((open_.pop((cu, simd, slot)), t))
    return out


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
    # the duration: the median of the run's 24 dispatches of vecAddKernel_0 with this grid, not dispatch 25's own row
    durs = raw_same_shape_durations(path)
    dur = raw_median([x for _, x in durs])
    assert len(durs) == 24 and dur == 18420 and int(row["End_Timestamp"]) - int(row["Start_Timestamp"]) == 19240
    frac = nbytes / dur / 8000.0  # MI350X: 8 TB/s
    assert 0.7 <= frac <= 1.0  # 0.84: streaming at the ceiling
    plan = plan_of(path)
    f = plan.findings[0]
    assert f.rule == "bandwidth-ceiling" and f.severity == "HIGH" and plan.verdict.kind == "bandwidth-bound"
    assert f.evidence["duration_ns"] == dur
    assert f.evidence["bytes_moved"] == round(nbytes)
    assert f.evidence["fraction_of_peak"] == pytest.approx(frac, abs=1e-4)
    # the traced XCC's span (14.8 µs) would put it above the peak: not shown as a rate
    assert f.evidence["fraction_of_peak_at_capture_span"] is None
    assert f.dispatch_time["bound_ns"] == int(nbytes / 8000.0)
    # and none of the advice the trace contradicts: wider loads (already 128-bit), prefetch (no loop), hoist s_loads (already first)
    assert {"vmem-backpressure", "load-use-distance", "smem-wait", "issue-bound"}.isdisjoint(rules_of(path))
    assert plan.rules_silenced["vmem-backpressure"][0]["id"] == "narrow"


def test_softmax_is_bandwidth_bound_at_its_measured_duration(shared):
    """Issue 19, row 1: the duration was dispatch 13 of the discovery run, a 5x outlier
    (962.9 µs): the median of the kernel's 112 same-grid dispatches is 191.9 µs, the
    capture's own span 179 µs; the kernel moves 70-75 % of the HBM peak, so it is
    bandwidth-bound and neither issue-bound nor "use dwordx4"."""
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    durs = dict(raw_same_shape_durations(path))
    med = raw_median(durs.values())
    assert len(durs) == 112 and med == 191902 and durs[13] == 962868
    plan = plan_of(path)
    du = plan.dispatch_facts.duration
    assert du.ns == med and du.source == "kernel trace" and du.agreement == "agree"
    assert {"dispatch_id": 13, "duration_ns": 962868, "ratio_to_median": round(962868 / med, 2)} in du.kernel_trace["outliers"]
    assert any("dispatch 13: 962,868 ns" in w for w in plan.dispatch_facts.warnings)
    # the capture's own span: occupancy.json's first start to last end (SE clocks aligned), at the realtime.json clock
    rt = json.loads((path / "realtime.json").read_text())
    d_sc = sum(v[-1][0] - v[0][0] for k, v in rt.items() if k.startswith("SE"))
    d_rt = sum(v[-1][1] - v[0][1] for k, v in rt.items() if k.startswith("SE"))
    mhz = d_sc / (d_rt / rt["metadata"]["frequency"]) / 1e6
    per_se = max(e - s for s, e in [(min(a for a, _ in lv), max(b for _, b in lv)) for lv in [raw_lifetimes(path)]])
    span = du.capture_span
    assert span["clock_mhz"] == pytest.approx(mhz, abs=0.1) and per_se <= span["cycles"] <= per_se + 4 * 800
    assert span["ns"] == pytest.approx(span["cycles"] / mhz * 1e3, rel=1e-3) and 178_000 < span["ns"] < 181_000
    # bytes: every traced load and store, 64 lanes (no lane shares an address), scaled to the grid
    width = {"ushort": 2, "short": 2, "dword": 4, "dwordx2": 8, "dwordx4": 16}
    traced = 0
    for text, *_rest in raw_code(path)[1:]:
        m = re.match(r"buffer_(load|store)_(ushort|short|dwordx4|dwordx2|dword)\b", text)
        if m:
            traced += _rest[5] * width[m.group(2)] * 64
        m = re.match(r"s_load_dword(x(\d+))?\b", text)
        if m:
            traced += _rest[5] * 4 * int(m.group(2) or 1)
    nbytes = traced / 2056 * 131072
    f = plan.findings[0]
    assert plan.verdict.kind == "bandwidth-bound" and f.rule == "bandwidth-ceiling" and plan.verdict.rule == f.rule
    assert f.evidence["bytes_moved"] == round(nbytes) and f.evidence["fraction_of_peak"] == pytest.approx(nbytes / med / 8000, abs=1e-4)
    assert 0.70 <= f.evidence["fraction_of_peak"] and f.evidence["fraction_of_peak_at_capture_span"] == pytest.approx(nbytes / span["ns"] / 8000, abs=1e-3)
    assert "70% of the 8,000 GB/s HBM peak (75% at the capture's own span)" in plan.verdict.sentence
    # contradiction twins of the old plan: VALU 65 % busy is not issue-bound; "use dwordx4" is silent at the ceiling
    assert "issue-bound" not in rules_of(path) and "vmem-backpressure" not in rules_of(path)
    assert [c["id"] for c in plan.rules_silenced["vmem-backpressure"]] == ["not-at-ceiling"]


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
    assert [(x["pc"], x["renamed"]) for x in f.evidence["hoistable"]] == [(239, False), (240, False), (241, True), (242, True)]
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
    # ... but the kernel names no SGPR above s25: 32 with VCC/FLAT_SCRATCH/XNACK of 102, so 241 and 242 can load
    # into fresh SGPRs (3 of them) and join the first batch (issue 19: SGPR reuse is renameable when SGPRs are spare)
    top = max(int(x) for row in code[1:] for x in re.findall(r"(?<![\w.])s\[?(\d+)", row[0].split(None, 1)[1] if " " in row[0] else ""))
    assert f.evidence["sgprs"] == {"used": top + 1 + 6, "addressable": 102, "free": 102 - (top + 1 + 6), "waves_per_simd": 7}
    assert "pcs [241, 242] write SGPRs the code still uses after the first wait: load them into 3 fresh SGPRs" in f.change
    assert "pc 239 (bytes 24–31), pc 240 (bytes 40–47), pc 241 (bytes 56–63), pc 242 (bytes 72–75)" in f.change
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


# --- issue 19: every row of the review as a contradiction twin on its capture -------


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_no_two_findings_recommend_opposite_directions(path):
    """Enumerate every pair of findings of every plan: none pairs directions the
    registry calls opposite (bandwidth-bound vs issue-bound or latency advice, ...),
    and the verdict's finding is first within its severity and never contradicted."""
    require_shared()
    from itertools import combinations

    from attlens.analysis.registry import OPPOSITE, opposite

    plan = plan_of(path)
    assert OPPOSITE and all(len(p) == 2 for p in OPPOSITE)
    for a, b in combinations(plan.findings, 2):
        assert not opposite(a, b), f"{a.rule} {a.directions} vs {b.rule} {b.directions}"
    v = plan.verdict
    assert v is not None and v.sentence and re.search(r"\d", v.sentence)
    if v.rule is not None:
        lead = next(f for f in plan.findings if f.rule == v.rule)
        assert all(RANK[f.severity] < RANK[lead.severity] for f in plan.findings[: plan.findings.index(lead)])


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_every_leading_finding_carries_a_number(path):
    """6 of 10 plans led with a dispatch finding without a number: the first
    finding's title has one, and whole-dispatch findings bound the dispatch time."""
    require_shared()
    plan = plan_of(path)
    assert re.search(r"\d", plan.findings[0].title), plan.findings[0].title
    for f in plan.findings:
        if f.kind == "dispatch":
            dt = f.dispatch_time
            assert dt is not None and dt["measured_ns"] == plan.dispatch_facts.duration.ns
            assert dt["bound_ns"] is None or 0 < dt["bound_ns"] <= dt["measured_ns"]


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_nothing_physical_is_above_its_peak(path):
    require_shared()
    plan = plan_of(path)
    bw = plan.bandwidth
    for x in (bw.fraction_of_peak, bw.fraction_of_peak_low):
        assert x is None or x <= 1.0
    assert bw.achieved_gbps is None or bw.achieved_gbps <= bw.peak_gbps
    for f in plan.findings:
        if f.rule == "issue-bound":
            assert all(v <= 1.0 for v in f.evidence["busy_share_by_pipe"].values())
        if f.rule == "bandwidth-ceiling":
            assert f.evidence["fraction_of_peak"] <= 1.0 and (f.evidence["fraction_of_peak_at_capture_span"] or 0) <= 1.0


def test_pa_lead_is_the_load_imbalance_not_occupancy(shared):
    """Row 2: 496 of 512 waves on the traced XCC live 236-1,060 cycles and exit at
    pc 11; 4 workgroups run 10-12 k cycles and set the dispatch time: no
    "free 24 VGPRs for a 3rd wave" (more resident waves cannot shorten it)."""
    path = shared / "traces/pa/big/ui_output_agent_10886_dispatch_209"
    lives = raw_lifetimes(path)
    span = max(e for _, e in lives) - min(s for s, _ in lives)
    life = sorted(e - s for s, e in lives)
    long_ = [x for x in life if x >= span / 2]
    short = [x for x in life if x < 3000]
    # (the traced waves: 236–1,060 cycles; on the whole traced XCC 236–1,112)
    assert len(lives) == 512 and len(long_) == 16 and len(short) == 496 and short[0] == 236 and short[-1] == 1112
    code = raw_code(path)
    assert code[10][0].startswith("v_cmp_ge_i32") and code[11][0].startswith("s_cbranch_vccnz")
    plan = plan_of(path)
    assert plan.verdict.kind == "load-imbalance" and plan.findings[0].rule == "load-imbalance"
    f = plan.findings[0]
    med = raw_median(life)
    assert (f.evidence["long_waves"], f.evidence["long_workgroups"], f.evidence["median_lifetime_cycles"]) == (16, 4, med)
    assert f.evidence["span_cycles"] == span and f.evidence["span_over_median"] == round(span / med, 2)
    assert f.evidence["early_exit"]["waves"] == 496 and f.evidence["early_exit"]["exit_branches"][0]["branch_pc"] == 11
    # the contradiction twin of the old lead: occupancy advice is silent, for the reason the trace gives
    assert "occupancy-limit" not in rules_of(path)
    assert plan.rules_silenced["occupancy-limit"][0]["id"] in ("grid-fills", "not-imbalanced")
    pops = plan.dispatch_facts.populations
    assert (pops.traced, pops.traced_early_exit, pops.xcc_waves, pops.xcc_early_exit) == (56, 48, 512, 496)
    # bytes: early-exit and working waves each weighted by their share on the traced XCC (16 of 512 work), not the traced CU's 8 of 56
    assert "3.1% working: 16 of 512" in " ".join(plan.bandwidth.assumptions)


def test_preshuffle_gemm_reads_the_instructions(shared):
    """Row 3: the two top stall waits (pc 332 vmcnt(2), pc 268 vmcnt(3)) hold the A-tile
    LDS writes behind B loads issued ~1,300 cycles earlier (vmcnt in order); pcs
    327/328 ... 336/337 are ds_write2_b32 pairs over 16 contiguous bytes; every LDS
    read is already ds_read_b128; no bandwidth above the HBM peak."""
    path = shared / "traces/preshuffle_gemm/big/ui_output_agent_58177_dispatch_135"
    code = raw_code(path)
    assert (code[332][0], code[332][8]) == ("s_waitcnt vmcnt(2)", 587_556) and (code[268][0], code[268][8]) == ("s_waitcnt vmcnt(3)", 506_592)
    plan = plan_of(path)
    f = finding(path, "in-order-wait")
    rows = {w["wait_pc"]: w for w in f.evidence["waits"]}
    assert rows[332]["needed_loads"] == [319] and [c["pc"] for c in rows[332]["coupled_loads"]] == [283, 285, 286]
    assert rows[268]["needed_loads"] == [254] and [c["pc"] for c in rows[268]["coupled_loads"]] == [218, 220]
    assert all(1200 <= c["issued_cycles_before"] <= 1400 for c in rows[332]["coupled_loads"] + rows[268]["coupled_loads"])
    # 319 writes v[70:73], which the ds_write2 at 333 reads; 283/285/286 write B registers it does not
    assert code[319][0].startswith("buffer_load_dwordx4 v[70:73]") and "v72, v73" in code[333][0]
    assert {c["pc"] for c in f.claims} >= {332, 268} and f.severity == "HIGH"
    g = finding(path, "lds-mergeable")
    pairs = {tuple(x["pcs"]): x for x in g.evidence["groups"]}
    for a, b in ((327, 328), (330, 331), (333, 334), (336, 337)):
        assert code[a][0].startswith("ds_write2_b32") and "offset0:2 offset1:3" in code[a][0] and code[b][0].endswith("offset1:1")
        assert pairs[(a, b)]["bytes"] == [0, 16] and pairs[(a, b)]["as"].startswith("ds_write_b128")
    assert all(row[0].startswith("ds_read_b128") for row in code[1:] if row[0].startswith("ds_read"))
    lds = finding(path, "lds-to-mfma")
    assert "prefer ds_read_b128" not in lds.change and "already 128 bit" in lds.change
    assert plan.bandwidth.fraction_of_peak is None and plan.bandwidth.requested_gbps > plan.bandwidth.peak_gbps
    assert not any(f.rule == "stall-class" and f.evidence["class"] == "lds" and "no advice supported" in f.title for f in plan.findings)
    b = finding(path, "barrier-heavy")  # the skew, not the whole barrier stall; both barriers guard LDS write → read
    bars = {x["pc"]: x for x in b.evidence["barriers"]}
    assert b.cycles_at_stake < sum(int(code[pc][8]) for pc in (142, 275, 339))
    assert bars[275]["guards_lds"]["writes"][:2] == [263, 264] and bars[339]["guards_lds"]["reads"][-1] == 340
    assert "drop them" not in b.change and "it is required" in b.change


def test_layernorm_grid_underfill_never_promises_the_idle_share(shared):
    """Row 4: the grid fills every CU (0 % idle); only the slots are underfilled."""
    path = shared / "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
    row = raw_trace_row(path, 23)
    wgs = int(row["Grid_Size_X"]) // int(row["Workgroup_Size_X"])
    assert wgs >= raw_cu_count(path)
    f = finding(path, "grid-starvation")
    assert f.evidence["idle_cus"] == 0 and f.evidence["idle_cu_share"] == 0
    assert "idle share" not in f.falsify and "0 % idle" in f.falsify and "every CU has work" in f.title
    assert f.dispatch_time["bound_ns"] == f.evidence["hbm_floor_ns"] < f.dispatch_time["measured_ns"]
    assert plan_of(path).verdict.kind == "grid-underfilled"


def test_lanes_sharing_an_address_move_their_bytes_once(shared):
    """Row 7 on a shared capture: blockscale's scale loads take their address from
    (lane >> 4) & 3 (v_bfe_u32 v2, v0, 4, 2): 16 lanes share each address."""
    path = shared / "traces/blockscale_preshuffle_gemm/big/ui_output_agent_14065_dispatch_120"
    code = raw_code(path)
    assert code[13][0] == "v_bfe_u32 v2, v0, 4, 2" and code[49][0].startswith("buffer_load_dwordx4 v[2:5], v7")
    bw = plan_of(path).bandwidth
    assert bw.lanes_sharing[49] == 16
    hit = code[49][6]
    saved = hit * 16 * (64 - 4) * (bw.grid_waves / 4)  # 4 traced waves
    assert bw.shared_address_saving_bytes >= saved


def test_reports_label_the_ledger_traced_wave_cycles(shared):
    from io import StringIO

    from rich.console import Console

    from attlens.report.markdown import plan_to_markdown
    from attlens.report.terminal import render_plan

    path = shared / "traces/rmsnorm/big/ui_output_agent_19276_dispatch_18"
    plan = plan_of(path)
    buf = StringIO()
    render_plan(plan, Console(file=buf, width=400, color_system=None))
    txt = buf.getvalue()
    assert txt.splitlines()[1] == f"Verdict  {plan.verdict.sentence}"  # right under the title
    assert "traced wave-cycles" in txt and "kernel cycles" not in txt
    md = plan_to_markdown(plan)
    assert md.splitlines()[2] == f"**Verdict:** {plan.verdict.sentence}" and "kernel cycles" not in md


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr + p.stdout
    assert p.returncode == code, p.stderr
    return p


def test_plan_cli_outputs(shared, tmp_path):
    cap = shared / "traces/pa/big/ui_output_agent_10886_dispatch_209"
    doc = json.loads(run("plan", cap, "--json").stdout)
    assert doc["schema"] == "attlens.plan" and doc["schema_version"] == 3 and doc["findings"]
    verdict = doc["verdict"]["sentence"]
    assert doc["verdict"]["kind"] == "load-imbalance" and doc["findings"][0]["rule"] == doc["verdict"]["rule"] == "load-imbalance"
    assert doc["totals"]["cycles_unit"] == "traced wave-cycles"
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
    # the verdict: the same sentence in JSON, Markdown and the terminal, right under the title
    assert text.splitlines()[2] == f"**Verdict:** {verdict}"
    assert "traced wave-cycles at stake" in text and "kernel cycles" not in text
    txt = run("plan", cap, "--no-color").stdout
    assert " ".join(txt.split("\nVerdict  ")[1].split("\nPriorities")[0].split()) == verdict
    assert "traced wave-cycles at stake" in txt and "kernel cycles" not in txt
    assert "{" not in txt.split("Instruction stall by class")[1]  # evidence as rows, never raw dicts
    # the story first (verdict, priorities), the dispatch facts after, then each finding
    assert txt.index("\nVerdict  ") < txt.index("\nPriorities\n") < txt.index("\nDispatch   ") < txt.index("\n1. ")
    assert not re.search(r"\d\.\d{5,}", txt)  # no 16-digit floats
    off = json.loads(run("plan", cap, "--json", "--disable", "occupancy-limit").stdout)
    assert "occupancy-limit" not in {f["rule"] for f in off["findings"]}
    assert "occupancy-limit" in off["rules_disabled"]
    assert "unknown rule" in run("plan", cap, "--disable", "nope", code=2).stderr
    out = run("analyze", cap).stdout
    assert "Top findings" in out and " ".join(out.split("\nVerdict  ")[1].split("\nTop findings")[0].split()) == verdict


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
