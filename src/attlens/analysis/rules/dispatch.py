"""What limits the whole dispatch: an unfilled GPU, a few long workgroups,
the HBM ceiling, an issue-bound pipe.

These come before any in-kernel advice: when the grid leaves CUs idle, a few
workgroups set the time, the bytes already stream at the ceiling, or one pipe
is busy most of the time, shaving a wait inside the kernel changes little.
They claim no per-pc cycles (cycles at stake 0); each carries the dispatch time
it bounds (``dispatch_time``) and its numbers are in its evidence. They read
the dispatch facts (analysis/dispatch_facts.py): the measured duration, the
grid checked against the capture, the waves that do the work.
"""

from __future__ import annotations

import numpy as np

from attlens.analysis.bandwidth import CEILING_FRACTION
from attlens.analysis.dispatch_facts import IMBALANCE_FEW, IMBALANCE_RATIO
from attlens.analysis.occupancy import grid_waves as waves_in_grid
from attlens.analysis.pipes import pipe_of_class
from attlens.analysis.registry import rule
from attlens.analysis.rules._preconditions import (
    GRID_MATCHES,
    ISSUE_BOUND_BUSY,
    NOT_AT_CEILING,
    grid_matches,
    not_at_ceiling,
    pipe_shares,
)
from attlens.analysis.rules._util import WIDEST_BYTES, rnd, top, us


# Fewer resident waves than this share of the GPU's slots is "underfilled".
UNDERFILL_SHARE = 0.5


def _per_cu_waves(d) -> dict | None:
    """Waves each CU of the traced SEs started (occupancy.json)."""
    occ = d.occupancy
    if occ is None or not len(occ.events):
        return None
    starts = occ.events[occ.events[:, 5] == 1]
    if not len(starts):
        return None
    _keys, cnt = np.unique(starts[:, 0] * 4096 + starts[:, 2], return_counts=True)
    return {"cus_seen": int(len(cnt)), "median": float(np.median(cnt)), "max": int(cnt.max()), "min": int(cnt.min())}


@rule(
    "grid-starvation",
    "The grid does not fill the GPU",
    "dispatch",
    trigger="fewer working workgroups than CUs, or the grid's working waves fill < 50 % of the GPU's resident wave slots at this kernel's occupancy in one round; always HIGH and first",
    evidence="workgroups (and those whose waves do the work), CUs, waves per workgroup and per CU, resident slots, the share of CUs and slots left idle, the traced CU's observed waves, waves per CU from occupancy.json, the dispatch time it bounds",
    limits="CU count from agent_info.csv (else the architecture table); several dispatches running at once (streams) could fill the idle CUs, which a single-dispatch trace cannot see; working waves are estimated from the traced XCC's wave lifetimes",
    preconditions=[
        ("grid-known", "the dispatch's grid and workgroup size are known (kernel_trace.csv of the run)"),
        GRID_MATCHES,
        ("cus-known", "the GPU's CU count is known"),
        ("cu-underfilled", "for a one-round grid below 50 % of the wave slots: the traced CU held fewer waves per SIMD than the occupancy allows"),
        NOT_AT_CEILING,
    ],
    semantics="whole dispatch: claims no per-pc cycles; sorts first",
    directions=["grid-bound"],
)
def grid_starvation(ctx):
    rid = "grid-starvation"
    d, o = ctx.d, ctx.result.occupancy
    res, f = d.resources, d.arch.facts or {}
    wgs = res.workgroups
    if not ctx.require(rid, "grid-known", bool(wgs and res.threads_per_workgroup), res.sources.get("grid", "no kernel_trace.csv row for this dispatch")):
        return []
    if not grid_matches(ctx, rid):
        return []
    cus = f.get("cu_count")
    if not ctx.require(rid, "cus-known", bool(cus), f"{cus} CUs" if cus else "target unknown"):
        return []
    pops = ctx.facts.populations
    wpw, grid_waves = waves_in_grid(d)
    # the waves that do the work: early-exit waves (a branch to s_endpgm) occupy slots for a few hundred cycles only
    work_share = pops.working_share if pops.traced_early_exit else 1.0
    work_wgs = max(1, round(wgs * work_share)) if work_share < 1.0 else wgs
    work_waves = work_wgs * wpw
    simds = f.get("simds_per_cu") or 4
    theo = o.theoretical_waves_per_simd if o.available else None
    slots_per_cu = theo * simds if theo else None
    slots = cus * slots_per_cu if slots_per_cu else None
    fill = min(1.0, work_waves / slots) if slots else None
    idle_cus = max(0, cus - work_wgs)
    one_round = (work_wgs <= o.resident_workgroup_capacity) if o.resident_workgroup_capacity else (o.grid_limited if o.grid_limited is not None else work_wgs <= cus)
    starved = work_wgs < cus
    underfilled = (not starved) and one_round and fill is not None and fill < UNDERFILL_SHARE
    if not (starved or underfilled):
        return []
    if underfilled:
        obs = o.observed_max_waves_per_simd_traced_cu
        if not ctx.require(rid, "cu-underfilled", obs is None or obs < theo, f"the traced CU held {obs} waves/SIMD of {theo} possible"):
            return []
    if not not_at_ceiling(ctx, rid):
        return []
    dur = ctx.facts.duration.ns
    floor = _hbm_floor_ns(ctx)
    early = wgs - work_wgs
    ev = {
        "workgroups": wgs, "working_workgroups": work_wgs, "cus": cus, "waves_per_workgroup": wpw, "grid_waves": grid_waves,
        "working_waves": work_waves, "waves_per_cu": rnd(work_waves / cus, 2), "resident_waves_per_cu_possible": slots_per_cu,
        "idle_cus": idle_cus, "idle_cu_share": rnd(idle_cus / cus, 4), "wave_slot_fill": rnd(fill, 4) if fill is not None else None,
        "observed_max_waves_per_simd_traced_cu": o.observed_max_waves_per_simd_traced_cu, "per_cu_waves_occupancy_json": _per_cu_waves(d),
        "grid_source": res.sources.get("grid"), "duration_ns": dur, "hbm_floor_ns": floor,
    }
    if early:
        ev["early_exit"] = {"waves_share": rnd(1 - work_share, 4), "exit_branches": pops.exit_branches[:2]}
    who = f"{work_wgs:,} working workgroups ({early:,} of {wgs:,} exit early)" if early else f"{wgs:,} workgroups"
    if starved:
        bound = max(int(dur * work_wgs / cus), floor or 0) if dur else None
        title = (f"{who} for {cus} CUs: {idle_cus} CUs ({idle_cus / cus:.0%}) get no work"
                 + (f"; spread over every CU the {us(dur)} could fall toward {us(bound)}" if dur else ""))
        why = f"{work_wgs} {'working ' if early else ''}workgroups < {cus} CUs"
        meaning = f"the same work spread over all {cus} CUs: the measured time x {work_wgs}/{cus}" + (f", not below the HBM floor {us(floor)}" if floor else "")
        falsify = (f"A grid of ≥ {cus} working workgroups (and several waves per SIMD) at the same total work should cut the dispatch time toward "
                   f"{work_wgs}/{cus} of it ({idle_cus / cus:.0%} of the CUs now idle), unless other dispatches were already running concurrently on the idle CUs.")
    else:
        bound = floor
        title = (f"The grid fills {fill:.0%} of the GPU's wave slots ({work_waves / cus:.1f} of {slots_per_cu} waves per CU); every CU has work"
                 + (f": more waves in flight could cut the {us(dur)} toward the {us(floor)} HBM floor" if dur and floor else ""))
        why = f"{work_waves:,} {'working ' if early else ''}waves for {slots:,} resident slots in one round"
        meaning = "more waves per CU overlap more latency; the time cannot fall below the bytes at the HBM peak" if floor else "not bounded: bytes or peak unknown"
        falsify = ("Every CU already has work (0 % idle): a grid with ≥ 2x the waves per CU at the same total work should shorten the dispatch by "
                   "overlapping more latency per CU" + (f", at most to the {us(floor)} HBM floor" if floor else "")
                   + "; if it does not, the waves were not waiting on latency (check the stall classes).")
    return [
        ctx.finding(
            rid,
            title,
            0,
            0.9 if starved else 0.7,
            ev,
            "Put more work in flight before tuning the kernel body: more workgroups per problem (split-K or split along the reduced dimension, "
            "smaller output tiles, one workgroup per smaller slice), so every CU gets waves; in-kernel changes cannot use idle CUs."
            + (f" {early:,} of the {wgs:,} workgroups only run to the exit branch (pc {pops.exit_branches[0]['branch_pc']}): size the grid to the "
               "work, or give the working ones' work to more workgroups." if early and pops.exit_branches else ""),
            falsify,
            why,
            severity="HIGH",  # no in-kernel tuning matters until the grid fills the GPU
            lead=True,
            dispatch_time={"measured_ns": dur, "bound_ns": bound, "meaning": meaning},
        )
    ]


def _hbm_floor_ns(ctx) -> int | None:
    """The bytes at the HBM peak (analysis/bandwidth.py ``hbm_floor_ns``), whole ns."""
    from attlens.analysis.bandwidth import hbm_floor_ns

    floor = hbm_floor_ns(ctx.bandwidth)
    return None if floor is None else int(floor)


@rule(
    "load-imbalance",
    "A few long workgroups set the dispatch time",
    "dispatch",
    trigger="on the traced SEs (occupancy.json) the dispatch spans ≥ 2x the median wave lifetime and at most 10 % of the waves live ≥ half the span",
    evidence="waves and their lifetimes (median, the long ones), the span with and without the long waves, the span-vs-median ratio, early-exit waves and their exit branch, the dispatch time it bounds",
    limits="occupancy.json covers the traced SEs only (one XCC with the usual mask); workgroups are counted as long waves / waves per workgroup",
    preconditions=[("lifetimes", "occupancy.json gives the start and end of the waves on the traced SEs"),
                   ("sets-span", "without the long waves the other waves finish within half the span (otherwise the long waves overlap a span "
                                 "the others set, and splitting them cannot shorten it)")],
    semantics="whole dispatch: claims no per-pc cycles",
    directions=["imbalance-bound"],
)
def load_imbalance(ctx):
    rid = "load-imbalance"
    imb = ctx.facts.imbalance
    if not ctx.require(rid, "lifetimes", imb is not None, "no occupancy.json wave lifetimes" if imb is None else f"{imb.waves} waves"):
        return []
    if not imb.imbalanced:
        triggered = imb.ratio >= IMBALANCE_RATIO and 0 < imb.long_waves <= IMBALANCE_FEW * imb.waves
        if triggered and not imb.sets_span:
            ctx.require(rid, "sets-span", False, f"{imb.long_waves} long wave(s) of {imb.waves}; the other waves span "
                        f"{imb.span_without_long_cycles or 0:,} of the {imb.span_cycles:,} cycles")
        return []
    ctx.require(rid, "sets-span", True, f"the other waves span {imb.span_without_long_cycles:,} of the {imb.span_cycles:,} cycles")
    pops, cov = ctx.facts.populations, ctx.facts.coverage
    dur = ctx.facts.duration.ns
    rest = imb.span_without_long_cycles
    bound = int(dur * rest / imb.span_cycles) if dur and rest else None
    ev = {"waves_on_traced_ses": imb.waves, "traced": cov.xcc_text(), "span_cycles": imb.span_cycles, "median_lifetime_cycles": imb.median_lifetime_cycles,
          "span_over_median": rnd(imb.ratio, 2), "long_waves": imb.long_waves, "long_workgroups": imb.long_workgroups,
          "long_lifetime_cycles": imb.long_lifetime_range, "span_without_long_waves_cycles": rest, "duration_ns": dur}
    if pops.xcc_early_exit:
        ev["early_exit"] = {"waves": pops.xcc_early_exit, "of": pops.xcc_waves, "lifetime_below_cycles": pops.lifetime_threshold_cycles,
                            "exit_branches": pops.exit_branches[:2]}
    lo, hi = imb.long_lifetime_range
    title = (f"{imb.long_workgroups} workgroup{'s' if imb.long_workgroups != 1 else ''} set the dispatch time: {imb.long_waves} of {imb.waves} waves "
             f"on the traced SEs live {lo:,}–{hi:,} cycles, the median wave {imb.median_lifetime_cycles:,} (span {imb.ratio:.1f}x the median)")
    exits = (f" {pops.xcc_early_exit} of the {pops.xcc_waves} waves exit early (branch at pc {pops.exit_branches[0]['branch_pc']} to s_endpgm)."
             if pops.xcc_early_exit and pops.exit_branches else "")
    return [
        ctx.finding(
            rid,
            title,
            0,
            0.8,
            ev,
            f"Split the long workgroups' work (the longer sequence, row or tile they own) over more workgroups and combine the parts, so no workgroup runs "
            f"much longer than the median; without them the other waves finish within {rest:,} cycles." + exits
            + " More resident waves per SIMD or in-kernel latency tuning of the short waves cannot shorten a span one workgroup's run sets.",
            "After splitting, the span on the traced SEs should approach the other waves' span; if the longest wave stays as long, its length "
            "comes from something the split did not divide.",
            f"{imb.long_waves} long waves set the {imb.span_cycles:,}-cycle span, {imb.ratio:.1f}x the median wave",
            severity="HIGH",
            lead=True,
            dispatch_time={"measured_ns": dur, "bound_ns": bound,
                           "meaning": f"the other waves' span ({rest:,} of {imb.span_cycles:,} cycles) at the measured duration" if rest else "unknown"},
        )
    ]


@rule(
    "bandwidth-ceiling",
    "At the HBM bandwidth ceiling",
    "dispatch",
    trigger=f"the dispatch moves ≥ {CEILING_FRACTION:.0%} of the target's peak HBM bandwidth (PMC bytes, or the trace's lower bound) at its measured duration",
    evidence="bytes read and written (lanes sharing an address counted once, scaled from the traced waves to the grid, or PMC), the duration and its source (and the rate at the capture's own span), achieved GB/s, peak and its source, the assumptions, the instructions moving the most bytes and their width, the dispatch time the bytes need at the peak",
    limits="from the trace alone only kernels that stream (≥ 90 % of bytes from instructions each wave runs once) are judged; looping kernels re-read data from L2 and need PMC counters",
    preconditions=[
        ("measured", "bytes, the dispatch duration and the target's peak bandwidth are known, and the rate is not above the peak"),
        ("streams", "the bytes come from PMC counters, or ≥ 90 % of the traced bytes come from instructions each wave runs once (no data re-read in a loop)"),
    ],
    semantics="whole dispatch: claims no per-pc cycles; explains the global-memory wait and issue classes",
    directions=["bandwidth-bound"],
)
def bandwidth_ceiling(ctx):
    rid = "bandwidth-ceiling"
    bw = ctx.bandwidth
    if not ctx.require(rid, "measured", bw.available, bw.reason or "ok"):
        return []
    if not ctx.require(rid, "streams", bw.source == "pmc" or (bw.streaming_share or 0) >= 0.9,
                       f"{(bw.streaming_share or 0):.0%} of the traced bytes from run-once instructions"):
        return []
    frac = bw.fraction_of_peak if bw.source == "pmc" else bw.fraction_of_peak_low
    if frac is None or frac < CEILING_FRACTION:
        return []
    wide = sum(r["bytes_traced"] for r in bw.by_instruction if r["bytes_per_lane"] == WIDEST_BYTES)
    allb = sum(r["bytes_traced"] for r in bw.by_instruction) or 1
    achieved = frac * bw.peak_gbps
    moved = bw.bytes_moved_low if bw.source == "trace" else bw.bytes_moved
    floor = int(moved / bw.peak_gbps)
    du = ctx.facts.duration
    span = (du.capture_span or {}).get("ns")
    at_span = (moved / span / bw.peak_gbps) if span and du.source != "capture span" else None
    if at_span is not None and at_span > 1.0:
        at_span = None  # above the peak: the traced XCC's span is shorter than the whole dispatch (other XCCs run on), not a rate
    also = f" ({at_span:.0%} at the capture's own {us(span)} span)" if at_span is not None else ""
    return [
        ctx.finding(
            rid,
            f"Bandwidth-bound: {achieved:,.0f} GB/s = {frac:.0%} of the {bw.peak_product or d_target(ctx)} peak ({bw.peak_gbps:,.0f} GB/s){also}; "
            f"the bytes alone need ≥ {us(floor)} of the {us(bw.duration_ns)}",
            0,
            0.8 if bw.source == "pmc" else 0.7,
            {"bytes_moved": int(moved), "read_bytes": rnd(bw.read_bytes, 0), "write_bytes": rnd(bw.write_bytes, 0),
             "bytes_per_wave": rnd(bw.bytes_per_wave), "grid_waves": bw.grid_waves, "traced_waves": bw.traced_waves,
             "duration_ns": bw.duration_ns, "duration_source": bw.duration_source, "capture_span_ns": span,
             "fraction_of_peak_at_capture_span": rnd(at_span, 4) if at_span is not None else None,
             "achieved_gbps": rnd(achieved), "peak_gbps": bw.peak_gbps,
             "peak_source": bw.peak_source, "fraction_of_peak": rnd(frac, 4), "source": bw.source, "assumptions": bw.assumptions,
             "top_instructions": bw.by_instruction, "share_of_top_bytes_already_128bit": rnd(wide / allb, 3)},
            f"Little headroom in the body: the dispatch already streams at {frac:.0%} of peak, so latency tuning can gain at most ~{1 - frac:.0%}. "
            "Only moving fewer bytes helps: fuse it with the kernel that produces or consumes its data, use a narrower data type, or avoid re-reading inputs.",
            "PMC counters of the same dispatch (attlens pmc) should show L2-to-HBM bytes close to these; if they are much lower, data was served from L2/MALL and the kernel is not bandwidth-bound.",
            f"{achieved:,.0f} GB/s of {bw.peak_gbps:,.0f} GB/s peak ({frac:.0%}) from {'PMC' if bw.source == 'pmc' else 'the trace'}",
            severity="HIGH",
            explains=["wait_global", "vmem_load", "vmem_store"],
            dispatch_time={"measured_ns": bw.duration_ns, "bound_ns": floor, "meaning": "the bytes at the HBM peak: no version moving these bytes is faster"},
        )
    ]


def d_target(ctx) -> str:
    return ctx.d.arch.target or "target"


_PIPE_ADVICE = {
    "VALU": "Cut VALU work per element: packed math (v_pk_*), fewer type conversions and index computations, loop-invariant math hoisted, "
            "or move reductions to DPP/permlane; memory tuning will not speed up an issue-bound kernel.",
    "MFMA": "The kernel is MFMA-bound: gains come from a faster MFMA shape or data type (e.g. fp8/fp4 on gfx950), fewer MFMAs, or overlapping "
            "the non-MFMA work so the MFMA pipe never idles.",
    "SALU/SMEM": "Move scalar address and loop bookkeeping out of the hot loop, or fold it into vector address modes (offsets, soffset).",
}
_PIPE_CLASSES = {"VALU": ["valu"], "MFMA": ["mfma"], "SALU/SMEM": ["salu"]}


@rule(
    "issue-bound",
    "One compute pipe is busy most of the time",
    "dispatch",
    trigger=f"the busiest pipe is VALU, MFMA or SALU and is busy ≥ {ISSUE_BOUND_BUSY:.0%} of the traced window: then it leaves ≤ {1 - ISSUE_BOUND_BUSY:.0%} "
            "of the time to everything else, so its instruction count sets the dispatch time (a memory-bound kernel can keep a pipe 50–65 % busy too)",
    evidence="busy share of every pipe, the pipe's top instructions by issue cycles with lines and loops, the figures dropped as impossible, the dispatch time the pipe alone needs",
    limits="busy = union of issue intervals per SIMD over the window the traced waves span (analysis/pipes.py); for MFMA also executions x passes x 4 cycles (pass counts per shape from the architecture table, approximate; dropped when above 100 %); a window with idle tails lowers it",
    preconditions=[("compute-busiest", "the busiest pipe is a compute pipe (VALU, MFMA, SALU), not memory"), NOT_AT_CEILING],
    semantics="whole dispatch: claims no per-pc cycles; explains the stall class of its pipe",
    directions=["issue-bound"],
)
def issue_bound(ctx):
    rid = "issue-bound"
    shares, dropped = pipe_shares(ctx)
    if not shares:
        return []
    pipe = max(shares, key=shares.get)
    busy = shares[pipe]
    if busy < ISSUE_BOUND_BUSY:
        return []
    if not ctx.require(rid, "compute-busiest", pipe in _PIPE_ADVICE, f"busiest pipe {pipe} at {busy:.0%}"):
        return []
    if not not_at_ceiling(ctx, rid):
        return []
    s, st = ctx.result.sums, ctx.d.static
    pcs = [pc for pc in np.flatnonzero(s.hit > 0).tolist() if st.cls[pc] and pipe_of_class(st.cls[pc]) == pipe]
    issue = {pc: int(s.latency[pc] - s.stall[pc]) for pc in pcs}
    rows = [{**ctx.instr(pc), "issue_cycles": issue[pc], **{k: v for k, v in ctx.loops.where(pc).items() if k != "pc"}} for pc in top(pcs, key=lambda p: issue[p])]
    lines: dict[str, int] = {}
    for pc in pcs:
        lines[ctx.src(pc) or "(no source)"] = lines.get(ctx.src(pc) or "(no source)", 0) + issue[pc]
    dur = ctx.facts.duration.ns
    need = int(busy * dur) if dur else None
    return [
        ctx.finding(
            rid,
            f"{pipe}-issue-bound: the {pipe} pipe is busy {busy:.0%} of the traced window" + (f" (≥ {us(need)} of the {us(dur)} dispatch)" if dur else ""),
            0,
            0.7,
            {"pipe": pipe, "busy_share": rnd(busy, 3), "busy_share_by_pipe": {p: rnd(v, 3) for p, v in sorted(shares.items(), key=lambda kv: -kv[1])},
             "threshold": ISSUE_BOUND_BUSY, "dropped_as_impossible": dropped, "issue_cycles": sum(issue.values()), "top_instructions": rows,
             "top_lines": [{"line": k, "issue_cycles": v} for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:3]], "duration_ns": dur},
            _PIPE_ADVICE[pipe],
            f"If the {pipe} instruction count falls and the kernel does not speed up, the limit was elsewhere (memory latency or a dependency chain).",
            f"{pipe} busy {busy:.0%} of the window: limited by issuing {pipe} work",
            severity="HIGH",
            explains=_PIPE_CLASSES[pipe],
            dispatch_time={"measured_ns": dur, "bound_ns": need, "meaning": f"the {pipe} pipe's busy time alone (its share of the traced window x the duration)"},
        )
    ]
