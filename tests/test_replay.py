"""The what-if replay (analysis/replay, docs/whatif.md) against real captures:
calibration on every shared capture and the outside pair, the null pairs, the
published Triton before/after pair, the bounds, edits planted on synthetic
captures. Every expected number is recomputed here from the loaded records."""

from __future__ import annotations

import dataclasses
import statistics
from pathlib import Path

import numpy as np
import pytest

from conftest import loaded, require_shared, trace_dirs, trace_id

CAL_BOUND = 0.10  # docs/whatif.md: the stated bound on every capture's span residual (aim: 0.03)


def triton(side: str) -> Path:
    return next((require_shared() / "outside" / "triton-afp4wfp4-gemm" / side).glob("ui_output_agent_*"))


def _all_captures() -> list[Path]:
    d = trace_dirs()
    if not d:
        return []
    out = list(d)
    root = d[0].parents[3] / "outside" / "triton-afp4wfp4-gemm"
    out += sorted(p for side in ("orig", "hack0") for p in (root / side).glob("ui_output_agent_*"))
    return out


def _traced_cu_spans(d) -> np.ndarray:
    """Per traced CU: last wave end - first wave begin, from the loaded waves."""
    w = d.waves
    cu = w.se.astype(np.int64) * 4096 + w.cu
    return np.array([int(w.end[cu == c].max() - w.begin[cu == c].min()) for c in np.unique(cu)])


_PLANS: dict = {}


def plan_of(path: Path):
    if str(path) not in _PLANS:
        from attlens.analysis.plan import make_plan

        _PLANS[str(path)] = make_plan(loaded(path)[1])
    return _PLANS[str(path)]


# --- calibration ---------------------------------------------------------------------------


def test_calibration_on_every_capture():
    """The unedited replay against the trace, on all 16 shared captures and the pair:
    each within the stated bound, most within the 3 % aim, the traced span recomputed."""
    from attlens.analysis.replay import calibrate

    require_shared()
    caps = _all_captures()
    assert len(caps) == 18
    residuals = {}
    for p in caps:
        d, r = loaded(p)
        c = calibrate(r)
        spans = _traced_cu_spans(d)
        assert c.span_traced_cycles == int(spans.max())
        assert c.span_residual == pytest.approx(c.span_replayed_cycles / c.span_traced_cycles - 1, abs=1e-4)
        assert c.within == (abs(c.span_residual) <= c.tolerance == 0.03)
        assert 0 <= c.wave_residual["median"] <= c.wave_residual["p95"] <= c.wave_residual["max"]
        assert abs(c.span_residual) <= CAL_BOUND, (trace_id(p), c.to_dict())
        residuals[trace_id(p)] = c.span_residual
    within = [k for k, v in residuals.items() if abs(v) <= 0.03]
    assert len(within) >= len(residuals) // 2, residuals
    assert statistics.median(abs(v) for v in residuals.values()) <= 0.03


def test_calibration_is_not_the_trace_copied_back():
    """The replay re-derives the waits: its wait stalls differ from the traced ones
    (a replay that copied the trace could not fail its calibration)."""
    from attlens.analysis.replay.calibrate import engine_of

    _d, r = loaded(triton("orig"))
    e = engine_of(r)
    traced = e.s.stall[e.s.wait_rec].astype(float)
    assert (np.abs(e.base.wait_stall - traced) > 4).mean() > 0.2
    # and every wave's replayed duration is its own, not the traced one
    dur = (e.s.end - e.s.begin).astype(float)
    assert (np.abs(e.base.duration - dur) > 0).all()


# --- the published pair ----------------------------------------------------------------------


def _author_edits():
    from attlens.analysis.replay.findings import edits_for_finding

    plan = plan_of(triton("orig"))
    f = next(x for x in plan.findings if x.rule == "load-use-distance")
    edits, why = edits_for_finding(f, plan.result)
    return plan, f, edits


def test_pair_finding_maps_to_the_authors_move():
    """The load-use-distance finding on orig becomes the author's change: the four
    late LDS-DMA loads issue right after the loop-top barrier (pc 501), before pc 502."""
    _d, r = loaded(triton("orig"))
    isa = r.dispatch.code.isa
    plan, f, edits = _author_edits()
    row = f.evidence["loads"][0]
    assert [(e.kind, e.pc, e.before_pc) for e in edits] == [("move", p, row["issue_after_pc"] + 1) for p in row["burst"]]
    assert isa[500].startswith("s_waitcnt vmcnt(0)") and isa[501] == "s_barrier" and row["issue_after_pc"] == 501
    assert f.predicted["expressible"] and f.predicted["edits"] == [e.to_dict() for e in edits]


def _wave_durations(path) -> np.ndarray:
    d, _r = loaded(path)
    return (d.waves.end - d.waves.begin).astype(float)


def test_pair_prediction_matches_the_traced_waves_of_hack0():
    """The move replayed on orig predicts how much shorter hack0's traced waves are
    (median wave duration, recomputed from both captures) inside its interval, and the
    interval is narrow enough to act on (≤ 15 pp)."""
    from attlens.analysis.replay import whatif

    plan, f, edits = _author_edits()
    w = whatif(plan.result, edits, plan).to_dict()
    g = w["gain"]
    assert g["low"] <= g["share"] <= g["high"] and g["high"] - g["low"] <= 0.15
    traced_gain = 1 - np.median(_wave_durations(triton("hack0"))) / np.median(_wave_durations(triton("orig")))
    assert g["low"] <= traced_gain <= g["high"], (g, traced_gain)
    # the loop-top wait is what changed
    top = w["changed"]["pcs"][0]
    assert top["pc"] == 500 and top["stall_after"] < top["stall_before"]
    # the finding's predicted gain is the same replay, capped by its cycles at stake
    assert f.predicted["gain"] == min(g["share"], round(f.share_of_cycles, 4))


@pytest.mark.xfail(strict=True, reason="docs/whatif.md: the replay predicts the traced waves (-14 %) but the author measured -9.2 % "
                   "kernel time; the traced-CU -> grid extrapolation misses it")
def test_pair_interval_contains_the_measured_kernel_gain():
    from attlens.analysis.replay import whatif

    plan, _f, edits = _author_edits()
    g = whatif(plan.result, edits, plan).gain
    measured = 1 - 2471 / 2720  # same bytes: 2,471 -> 2,720 GB/s
    assert g["low"] <= measured <= g["high"]


def test_replaying_hack0_lands_near_its_traced_span():
    from attlens.analysis.replay import calibrate

    c = calibrate(loaded(triton("hack0"))[1])
    assert c.within and c.span_traced_cycles == int(_traced_cu_spans(loaded(triton("hack0"))[0]).max())


# --- null pairs ------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["big", "small"])
def test_null_pairs_predict_the_same_gain(size):
    """The flash_attn_func recaptures differ only in line info: a finding that fires on
    both predicts the same gain within the noise band (the two calibration residuals)."""
    from attlens.analysis.replay import calibrate

    require_shared()
    a, b = sorted(p for p in trace_dirs() if p.parent.parent.name == "flash_attn_func" and p.parent.name == size)
    pa, pb = plan_of(a), plan_of(b)
    band = abs(calibrate(pa.result).span_residual) + abs(calibrate(pb.result).span_residual)
    common = [(fa, fb) for fa in pa.findings for fb in pb.findings
              if fa.rule == fb.rule and fa.predicted and fb.predicted and fa.predicted.get("expressible") and fb.predicted.get("expressible")]
    assert common
    for fa, fb in common:
        assert abs(fa.predicted["gain"] - fb.predicted["gain"]) <= band, (fa.rule, fa.predicted, fb.predicted, band)
        assert fa.predicted["low"] <= fb.predicted["high"] and fb.predicted["low"] <= fa.predicted["high"]


# --- bounds ----------------------------------------------------------------------------------


def _capture(name: str) -> Path:
    require_shared()
    return next(p for p in trace_dirs() if p.parent.parent.name == name)


@pytest.mark.parametrize("name", ["softmax", "preshuffle_gemm"])
def test_no_prediction_beats_the_cycles_at_stake_or_the_floors(name):
    from attlens.analysis.bandwidth import hbm_floor_ns

    plan = plan_of(_capture(name))
    floor = hbm_floor_ns(plan.bandwidth)
    for f in plan.findings:
        p = f.predicted
        if f.kind in ("note", "capture") and f.rule != "early-exit-waves":
            assert p is None
            continue
        assert p is not None
        if not p["expressible"]:
            assert p["reason"]
            continue
        assert p["low"] <= p["gain"] <= p["high"]
        if f.kind == "performance":
            assert p["high"] <= round(f.share_of_cycles, 4) + 1e-9
        if floor is not None and p["dispatch_ns_after"] is not None and floor <= p["dispatch_ns_before"]:
            assert p["dispatch_ns_after"] >= floor - 0.1


def test_hiding_every_wait_stops_at_the_bandwidth_floor():
    """vec_add moves its bytes near the HBM peak: hiding every wait cannot beat bytes / peak."""
    from attlens.analysis.replay import Edit, whatif
    from attlens.analysis.bandwidth import hbm_floor_ns

    plan = plan_of(_capture("vec_add"))
    r = plan.result
    waits = sorted({int(pc) for pc in np.flatnonzero((r.sums.hit > 0)) if r.dispatch.static.cls[pc] == "wait"})
    w = whatif(r, [Edit("hide-wait", pc=p) for p in waits], plan)
    floor = hbm_floor_ns(plan.bandwidth)
    before = plan.dispatch_facts.duration.ns
    assert floor is not None and before
    assert w.after["dispatch_ns"] >= floor - 0.1
    assert w.gain["high"] <= 1 - floor / before + 1e-4
    if w.bound["kind"] == "bandwidth":
        assert w.bound["binding"] and w.after["dispatch_ns"] == pytest.approx(floor, abs=0.1)


def _busiest_simd_pipe(r, kept_waves=None) -> int:
    """The issue floor recomputed from the records: per SIMD, the largest per-pipe sum of issue cycles
    (duration - stall; VALU+matrix, SALU+SMEM, VMEM+LDS), over the waves kept."""
    recs, wv = r.dispatch.records, r.dispatch.waves
    simd = (wv.se.astype(np.int64) * 4096 + wv.cu) * 64 + wv.simd
    pipe = np.full(256, 3)
    pipe[6], pipe[[1, 2]], pipe[[3, 4, 5]] = 0, 1, 2
    p = pipe[recs.category]
    busy = np.maximum(recs.duration.astype(np.int64) - recs.stall, 0)
    kept = np.ones(len(p), dtype=bool) if kept_waves is None else kept_waves[recs.wave]
    s_of = simd[recs.wave]
    return max(int(busy[(s_of == s) & (p == k) & kept].sum()) for s in np.unique(simd) for k in range(3))


def test_more_waves_never_beat_the_issue_floor():
    """64 waves per SIMD: each traced CU's span stays at or above its busiest SIMD pipe's issue cycles."""
    from attlens.analysis.replay import Edit, whatif
    from attlens.analysis.replay.calibrate import engine_of

    _d, r = loaded(_capture("softmax"))
    w = whatif(r, [Edit("waves-per-simd", waves_per_simd=64)])
    e = engine_of(r)
    floor = _busiest_simd_pipe(r)
    assert e.issue_floor.max() == floor
    assert w.after["replayed_span_cycles"] >= int(e.issue_floor.max())
    assert w.gain["share"] < 1


def test_removed_waves_issue_nothing():
    """pa: 496 of 512 waves on the traced XCC exit at pc 11. Removing the traced early-exit waves takes their
    issue cycles out of the issue floor too (they issue nowhere), recomputed from the records."""
    from attlens.analysis.replay import Edit, whatif
    from attlens.analysis.replay.calibrate import engine_of
    from attlens.analysis.replay.edits import compile_edits

    plan = plan_of(_capture("pa"))
    r = plan.result
    e = engine_of(r)
    spec, _notes = compile_edits(e.s, r, [Edit("early-exit")], plan.dispatch_facts.populations.early_mask)
    assert spec.removed is not None and spec.removed.any()
    floor = _busiest_simd_pipe(r, ~spec.removed)
    assert e.issue_floor_for(spec.removed).max() == floor <= e.issue_floor.max()
    w = whatif(r, [Edit("early-exit")], plan)
    assert w.after["replayed_span_cycles"] >= floor


def test_gain_applies_to_the_part_of_the_dispatch_the_traced_waves_span():
    """layernorm: its traced waves span 2,452 ns (occupancy.json at the realtime clock) of a 4,740 ns dispatch
    (kernel-trace median): a wave-level change shortens that part; launch and the untraced XCCs' tails are held
    fixed in the central gain, and only the interval's high end lets them shrink alike."""
    from attlens.analysis.replay import Edit, whatif

    plan = plan_of(_capture("layernorm"))
    r, dur = plan.result, plan.dispatch_facts.duration
    assert dur.source == "kernel trace" and dur.capture_span["ns"] < dur.ns
    share = dur.capture_span["ns"] / dur.ns
    waits = [int(pc) for pc in np.flatnonzero(r.sums.stall > 0) if r.dispatch.static.cls[pc] == "wait"]
    w = whatif(r, [Edit("hide-wait", pc=p) for p in waits], plan).to_dict()
    assert w["before"]["traced_share"] == pytest.approx(share, abs=1e-4)
    span_gain = 1 - w["after"]["replayed_span_cycles"] / w["before"]["replayed_span_cycles"]
    assert span_gain > 0.05
    if not w["bound"]["binding"]:
        assert w["gain"]["share"] == pytest.approx(span_gain * share, abs=2e-4)
        assert w["gain"]["high"] >= span_gain - 1e-4  # the high end: the time outside the span shrinks alike
    assert any("of the measured dispatch time" in n for n in w["notes"])


def test_a_capture_too_large_for_the_plan_says_so_and_whatif_still_replays(monkeypatch):
    """Above limits.MAX_REPLAY_RECORDS_IN_PLAN records the plan does not replay (30x softmax: report RSS
    2.9 -> 6.3 GiB): every finding that would carry a prediction says why it has none and names the
    command that replays it; the whatif command still does."""
    from attlens import limits, schemas
    from attlens.analysis.plan import make_plan
    from attlens.analysis.replay import Edit, whatif

    _d, r = loaded(_capture("layernorm"))
    monkeypatch.setattr(limits, "MAX_REPLAY_RECORDS_IN_PLAN", r.dispatch.records.count - 1)
    plan = make_plan(r)
    doc = plan.to_dict()
    schemas.validate(doc)
    said = [f for f in plan.findings if f.predicted is not None]
    assert said and all(f.predicted["expressible"] is False and f"--apply {f.rule}" in f.predicted["reason"]
                        and f"{r.dispatch.records.count:,} records" in f.predicted["reason"] for f in said)
    assert all(f.predicted is None for f in plan.findings if f.kind in ("note", "capture") and f.rule != "early-exit-waves")
    waits = [int(pc) for pc in np.flatnonzero(r.sums.stall > 0) if r.dispatch.static.cls[pc] == "wait"]
    assert whatif(r, [Edit("hide-wait", pc=waits[0])], plan).gain["share"] is not None


# --- edits and their errors --------------------------------------------------------------------


def test_edit_options_are_checked():
    from attlens.analysis.replay import edits_from_options
    from attlens.errors import UsageError

    _d, r = loaded(triton("orig"))
    isa = r.dispatch.code.isa
    assert [e.to_dict() for e in edits_from_options([500], [(564, 502)], 2, r)] == [
        {"kind": "hide-wait", "pc": 500, "before_pc": None, "waves_per_simd": None, "source": "cli"},
        {"kind": "move", "pc": 564, "before_pc": 502, "waves_per_simd": None, "source": "cli"},
        {"kind": "waves-per-simd", "pc": None, "before_pc": None, "waves_per_simd": 2, "source": "cli"}]
    assert not isa[501].startswith("s_waitcnt")
    for bad in (dict(hide_wait=[501]), dict(hide_wait=[10 ** 6]), dict(move=[(505, 502)]), dict(move=[(564, 10 ** 6)]), dict(waves_per_simd=0)):
        with pytest.raises(UsageError):
            edits_from_options(bad.get("hide_wait", []), bad.get("move", []), bad.get("waves_per_simd"), r)


def test_edits_for_rules():
    from attlens.analysis.replay import edits_for_rules
    from attlens.errors import UsageError

    plan = plan_of(triton("orig"))
    edits, skipped = edits_for_rules(plan, ["load-use-distance", "crosslane-serialized", "bandwidth-ceiling"])
    assert {e.kind for e in edits} == {"move"} and all(e.source == "rule:load-use-distance" for e in edits)
    reasons = {s["rule"]: s["reason"] for s in skipped}
    assert "did not fire" in reasons["bandwidth-ceiling"] and "DPP" in reasons["crosslane-serialized"]
    with pytest.raises(UsageError):
        edits_for_rules(plan, ["no-such-rule"])


def test_hiding_the_wait_gains_at_least_the_move():
    """Covering the loop-top wait's latency entirely is an upper bound of moving its loads."""
    from attlens.analysis.replay import Edit, whatif

    plan, _f, edits = _author_edits()
    hide = whatif(plan.result, [Edit("hide-wait", pc=500)], plan)
    move = whatif(plan.result, edits, plan)
    assert hide.gain["share"] >= move.gain["share"] > 0
    row = next(x for x in hide.changed["pcs"] if x["pc"] == 500)
    assert row["stall_after"] == 0


# --- planted on synthetic captures -----------------------------------------------------------------


def _toy(tmp_path, name, latency_of_line=None):
    from attlens.synth.toy import default_kernel, write_capture

    k = default_kernel(iterations=12)
    k.jitter = 0.0
    for op in k.body:
        if op.line in (latency_of_line or {}):
            op.latency = latency_of_line[op.line]
    return write_capture(tmp_path / name, k, seed=3)


def test_planted_hidden_load_on_the_toy_kernel(tmp_path):
    """The toy kernel with its planted 720-cycle load, and its twin whose load returns
    at once: hiding the planted wait on the first predicts the second's span."""
    import attlens
    from attlens.analysis.replay import Edit, calibrate, whatif

    slow = attlens.analyze(attlens.load(_toy(tmp_path, "slow")))
    fast = attlens.analyze(attlens.load(_toy(tmp_path, "fast", {20: 4})))
    assert abs(calibrate(slow).span_residual) <= 0.03
    wait = next(pc for pc, t in enumerate(slow.dispatch.code.isa) if t == "s_waitcnt vmcnt(0)")
    w = whatif(slow, [Edit("hide-wait", pc=wait)])
    measured = 1 - _traced_cu_spans(fast.dispatch).max() / _traced_cu_spans(slow.dispatch).max()
    assert measured > 0.2
    assert w.gain["low"] - 0.03 <= measured <= w.gain["high"] + 0.03, (w.gain, measured)


def test_plan_without_predictions_has_null_predicted():
    from attlens.analysis.plan import make_plan

    _d, r = loaded(triton("orig"))
    plan = make_plan(r, predict=False)
    assert plan.findings and all(f.predicted is None and f.to_dict()["predicted"] is None for f in plan.findings)
    assert all(dataclasses.is_dataclass(f) for f in plan.findings)


def test_no_edit_predicts_no_change():
    from attlens.analysis.replay import calibrate, whatif

    _d, r = loaded(triton("orig"))
    w = whatif(r, []).to_dict()
    res = abs(calibrate(r).span_residual)
    assert w["gain"]["share"] == 0 and w["changed"] == {"waves": 0, "pcs": []}
    assert w["gain"]["low"] == pytest.approx(-res, abs=1e-4) and w["gain"]["high"] == pytest.approx(res, abs=1e-4)
    assert w["before"]["replayed_span_cycles"] == w["after"]["replayed_span_cycles"] == calibrate(r).span_replayed_cycles
    assert set(w) == {"schema", "schema_version", "attlens_version", "capture", "kernel", "edits", "unexpressible", "calibration", "before", "after",
                      "gain", "bound", "changed", "notes"}


def test_a_capture_without_stall_cycles_is_not_replayed():
    """rocprofv2 records carry no stall: the replay refuses with a reason, the plan says why."""
    from attlens.analysis.replay import Edit, whatif
    from attlens.analysis.replay.findings import predicted_of
    from attlens.errors import UsageError

    cap = require_shared() / "outside" / "rocprofv2-elementwise" / "vectorized_elementwise_kernel_v0_ui"
    _d, r = loaded(cap)
    assert not r.dispatch.stall_recorded
    with pytest.raises(UsageError, match="no stall cycles"):
        whatif(r, [Edit("barrier-skew")])
    plan = plan_of(cap)
    for f in plan.findings:
        p = f.predicted
        assert p is None or (p["expressible"] is False and p["reason"])
    f = dataclasses.replace(plan.findings[0], rule="barrier-heavy", kind="performance", evidence={"barriers": [{"pc": 0}]})
    assert "no stall cycles" in predicted_of(f, r, plan)["reason"]
