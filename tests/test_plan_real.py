"""The plan on the shared captures: findings the data supports, numbers from the trace."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from attlens.analysis.plan import load_rules, make_plan
from conftest import REPO, loaded, require_shared, trace_dirs, trace_id

TRACES = trace_dirs()
_PLANS: dict = {}


def plan_of(path):
    if str(path) not in _PLANS:
        _PLANS[str(path)] = make_plan(loaded(path)[1])
    return _PLANS[str(path)]


def rules_of(path):
    return {f.rule for f in plan_of(path).findings}


@pytest.mark.parametrize("path", TRACES, ids=trace_id)
def test_findings_are_bounded_and_complete(path):
    require_shared()
    d, r = loaded(path)
    plan = plan_of(path)
    total = int((r.sums.idle + r.sums.latency).sum())
    assert not plan.errors
    for f in plan.findings:
        assert 0 <= f.cycles_at_stake <= total
        assert f.change and f.falsify and f.rationale and f.evidence
        assert f.severity in ("HIGH", "MED", "LOW") and 0 < f.confidence <= 1
    kinds = [f.kind for f in plan.findings]
    assert kinds == sorted(kinds, key=lambda k: k != "capture")  # capture findings first
    perf = [f.priority for f in plan.findings if f.kind == "performance"]
    assert perf == sorted(perf, reverse=True)


def test_no_occupancy_advice_when_the_traced_cu_did_not_fill_its_slots(shared):
    # layernorm: 256 workgroups on 256 CUs, 1 wave/SIMD observed vs 7 possible;
    # blockscale: 112 workgroups, theory 6 waves/SIMD, observed 1.
    for rel in ("layernorm/big/ui_output_agent_22257_dispatch_23", "blockscale_preshuffle_gemm/big/ui_output_agent_14065_dispatch_120"):
        path = shared / "traces" / rel
        _, r = loaded(path)
        assert r.occupancy.observed_max_per_simd_traced < r.occupancy.theoretical_waves_per_simd
        assert "occupancy-limit" not in rules_of(path)


def test_no_occupancy_advice_at_the_hardware_maximum(shared):
    for rel in ("softmax/big/ui_output_agent_47920_dispatch_13", "vec_add/big/ui_output_agent_14705_dispatch_25"):
        path = shared / "traces" / rel
        assert loaded(path)[1].occupancy.limiters == ["waves"]
        assert "occupancy-limit" not in rules_of(path)


def test_occupancy_advice_carries_the_exact_registers(shared):
    path = shared / "traces/preshuffle_gemm/big/ui_output_agent_58177_dispatch_135"
    _, r = loaded(path)
    f = next(f for f in plan_of(path).findings if f.rule == "occupancy-limit")
    free = f.evidence["to_next_wave"]["free"]["vgpr"]
    # 164 VGPRs → 168 allocated (granule 8): 3 waves; 4 waves need ≤ 512 // 4 = 128
    assert (free["allocated"], free["allowed_for_next_wave"], free["free_registers"]) == (168, 128, 40)
    assert r.occupancy.grid_limited is False


def test_location_collapse_only_before_the_fix(shared):
    base = shared / "traces/flash_attn_func"
    assert "location-collapse" in rules_of(base / "big/ui_output_agent_38430_dispatch_44")
    assert "location-collapse" not in rules_of(base / "big/ui_output_agent_55287_dispatch_44_after_loc_fix")
    assert "location-collapse" in rules_of(base / "small/ui_output_agent_32235_dispatch_44")
    assert "location-collapse" not in rules_of(base / "small/ui_output_agent_58550_dispatch_44_after_loc_fix")


def test_prologue_only_capture_marks_performance_findings_down(shared):
    path = shared / "traces/pa_mqa_logits_fp4/small/ui_output_agent_32435_dispatch_197"
    plan = plan_of(path)
    assert plan.findings[0].kind == "capture"
    assert "prologue-only" in rules_of(path)
    perf = [f for f in plan.findings if f.kind == "performance"]
    assert perf and all(f.severity != "HIGH" and "caveat" in f.evidence for f in perf)
    big = shared / "traces/pa_mqa_logits_fp4/big/ui_output_agent_55351_dispatch_426"
    assert "prologue-only" not in rules_of(big)
    assert "no-source-lines" in rules_of(big)


def test_softmax_vmem_backpressure_names_the_top_load(shared):
    path = shared / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
    _, r = loaded(path)
    f = next(f for f in plan_of(path).findings if f.rule == "vmem-backpressure")
    top = f.evidence["instructions"][0]
    assert top["isa"].startswith("buffer_load_ushort") and top["stall"] == 8_472_828
    vmem_stall = sum(int(r.sums.stall[pc]) for pc, c in enumerate(r.dispatch.static.cls) if c in ("vmem_load", "vmem_store", "vmem_atomic"))
    assert f.evidence["issue_stall_cycles"] == vmem_stall
    assert f.cycles_at_stake <= vmem_stall


def test_vec_add_load_use_distance_numbers(shared):
    path = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    _, r = loaded(path)
    f = next(f for f in plan_of(path).findings if f.rule == "load-use-distance")
    for p in f.evidence["producers"]:
        assert p["waited_cycles"] == int(r.sums.producer_wait[p["pc"]])
        assert p["distance_instructions_median"] <= 8


def run(*args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in p.stderr + p.stdout
    assert p.returncode == code, p.stderr
    return p


def test_plan_cli_outputs(shared, tmp_path):
    cap = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    doc = json.loads(run("plan", cap, "--json").stdout)
    assert doc["schema"] == "attlens.plan" and doc["findings"]
    assert [x["rule"] for x in doc["priorities"]] == [x["rule"] for x in doc["findings"]]
    md = tmp_path / "plan.md"
    run("plan", cap, "--format", "md", "-o", md)
    text = md.read_text()
    for section in ("## Stall summary", "## Findings", "## Priorities", "**Change:**", "**Would prove it wrong:**"):
        assert section in text
    for f in doc["findings"]:
        assert f"{f['cycles_at_stake']:,}" in text or f["kind"] == "capture"
    off = json.loads(run("plan", cap, "--json", "--disable", "load-use-distance").stdout)
    assert "load-use-distance" not in {f["rule"] for f in off["findings"]}
    assert "load-use-distance" in off["rules_disabled"]
    assert "unknown rule" in run("plan", cap, "--disable", "nope", code=2).stderr
    assert "Top findings" in run("analyze", cap).stdout


def test_rules_listing_matches_registry_and_docs():
    doc = json.loads(run("rules", "--json").stdout)
    ids = [r["id"] for r in doc["rules"]]
    assert ids == list(load_rules())
    text = (REPO / "docs/rules.md").read_text()
    for rid in ids:
        assert f"`{rid}`" in text
