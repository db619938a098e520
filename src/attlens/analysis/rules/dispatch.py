"""What limits the whole dispatch: an unfilled GPU, the HBM ceiling, an issue-bound pipe.

These come before any in-kernel advice: when the grid leaves CUs idle, the
bytes already stream at the ceiling, or one pipe is busy most of the time,
shaving a wait inside the kernel changes little. They claim no per-pc cycles
(cycles at stake 0); their numbers are in their evidence.
"""

from __future__ import annotations

import numpy as np

from attlens.analysis.bandwidth import CEILING_FRACTION
from attlens.analysis.occupancy import grid_waves as waves_in_grid
from attlens.analysis.pipes import pipe_of_class
from attlens.analysis.registry import rule
from attlens.analysis.rules._util import WIDEST_BYTES, rnd, top

# Fewer resident waves than this share of the GPU's slots is "underfilled".
UNDERFILL_SHARE = 0.5
ISSUE_BOUND_BUSY = 0.5  # busiest compute pipe busy this share of the window
ISSUE_BOUND_HIGH = 0.6


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
    trigger="fewer workgroups than CUs, or the whole grid fills < 50 % of the GPU's resident wave slots at this kernel's occupancy in one round; always HIGH and first",
    evidence="workgroups, CUs, waves per workgroup and per CU, resident slots, the share of CUs and slots left idle, the traced CU's observed waves, waves per CU from occupancy.json",
    limits="CU count from agent_info.csv (else the architecture table); several dispatches running at once (streams) could fill the idle CUs, which a single-dispatch trace cannot see",
    preconditions=[
        ("grid-known", "the dispatch's grid and workgroup size are known (kernel_trace.csv of the run)"),
        ("cus-known", "the GPU's CU count is known"),
        ("cu-underfilled", "for a one-round grid below 50 % of the wave slots: the traced CU held fewer waves per SIMD than the occupancy allows"),
    ],
    semantics="whole dispatch: claims no per-pc cycles; sorts first",
)
def grid_starvation(ctx):
    rid = "grid-starvation"
    d, o = ctx.d, ctx.result.occupancy
    res, f = d.resources, d.arch.facts or {}
    wgs = res.workgroups
    if not ctx.require(rid, "grid-known", bool(wgs and res.threads_per_workgroup), res.sources.get("grid", "no kernel_trace.csv row for this dispatch")):
        return []
    cus = f.get("cu_count")
    if not ctx.require(rid, "cus-known", bool(cus), f"{cus} CUs" if cus else "target unknown"):
        return []
    wpw, grid_waves = waves_in_grid(d)
    simds = f.get("simds_per_cu") or 4
    theo = o.theoretical_waves_per_simd if o.available else None
    slots_per_cu = theo * simds if theo else None
    slots = cus * slots_per_cu if slots_per_cu else None
    fill = min(1.0, grid_waves / slots) if slots else None
    idle_cus = max(0, cus - wgs)
    one_round = o.grid_limited if o.grid_limited is not None else (wgs <= cus)
    starved = wgs < cus
    underfilled = (not starved) and one_round and fill is not None and fill < UNDERFILL_SHARE
    if not (starved or underfilled):
        return []
    if underfilled:
        obs = o.observed_max_waves_per_simd_traced_cu
        if not ctx.require(rid, "cu-underfilled", obs is None or obs < theo, f"the traced CU held {obs} waves/SIMD of {theo} possible"):
            return []
    ev = {
        "workgroups": wgs, "cus": cus, "waves_per_workgroup": wpw, "grid_waves": grid_waves,
        "waves_per_cu": rnd(grid_waves / cus, 2), "resident_waves_per_cu_possible": slots_per_cu,
        "idle_cus": idle_cus, "idle_cu_share": rnd(idle_cus / cus, 4), "wave_slot_fill": rnd(fill, 4) if fill is not None else None,
        "observed_max_waves_per_simd_traced_cu": o.observed_max_waves_per_simd_traced_cu, "per_cu_waves_occupancy_json": _per_cu_waves(d),
        "grid_source": res.sources.get("grid"),
    }
    if starved:
        title = f"{wgs} workgroups for {cus} CUs: {idle_cus} CUs ({idle_cus / cus:.0%}) get no work"
        why = f"{wgs} workgroups < {cus} CUs"
    else:
        title = f"The grid fills {fill:.0%} of the GPU's wave slots ({grid_waves / cus:.1f} of {slots_per_cu} waves per CU)"
        why = f"{grid_waves:,} waves for {slots:,} resident slots in one round"
    return [
        ctx.finding(
            rid,
            title,
            0,
            0.9 if starved else 0.7,
            ev,
            "Put more work in flight before tuning the kernel body: more workgroups per problem (split-K or split along the reduced dimension, "
            "smaller output tiles, one workgroup per smaller slice), so every CU gets waves; in-kernel changes cannot use idle CUs.",
            "A grid of ≥ the CU count (and several waves per SIMD) at the same total work should cut the dispatch time roughly by the idle share, "
            "unless other dispatches were already running concurrently on the idle CUs.",
            why,
            severity="HIGH",  # no in-kernel tuning matters until the grid fills the GPU
            lead=True,
        )
    ]


@rule(
    "bandwidth-ceiling",
    "At the HBM bandwidth ceiling",
    "dispatch",
    trigger=f"the dispatch moves ≥ {CEILING_FRACTION:.0%} of the target's peak HBM bandwidth (PMC bytes, or the trace's lower bound)",
    evidence="bytes read and written (scaled from the traced waves to the grid, or PMC), duration and its source, achieved GB/s, peak and its source, the assumptions, the instructions moving the most bytes and their width",
    limits="from the trace alone only kernels that stream (≥ 90 % of bytes from instructions each wave runs once) are judged; looping kernels re-read data from L2 and need PMC counters",
    preconditions=[
        ("measured", "bytes, the dispatch duration and the target's peak bandwidth are known"),
        ("streams", "the bytes come from PMC counters, or ≥ 90 % of the traced bytes come from instructions each wave runs once (no data re-read in a loop)"),
    ],
    semantics="whole dispatch: claims no per-pc cycles; explains the global-memory wait and issue classes",
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
    return [
        ctx.finding(
            rid,
            f"Bandwidth-bound: {achieved:,.0f} GB/s = {frac:.0%} of the {bw.peak_product or d_target(ctx)} peak ({bw.peak_gbps:,.0f} GB/s)",
            0,
            0.8 if bw.source == "pmc" else 0.7,
            {"bytes_moved": int(bw.bytes_moved_low if bw.source == "trace" else bw.bytes_moved), "read_bytes": rnd(bw.read_bytes, 0), "write_bytes": rnd(bw.write_bytes, 0),
             "bytes_per_wave": rnd(bw.bytes_per_wave), "grid_waves": bw.grid_waves, "traced_waves": bw.traced_waves,
             "duration_ns": bw.duration_ns, "duration_source": bw.duration_source, "achieved_gbps": rnd(achieved), "peak_gbps": bw.peak_gbps,
             "peak_source": bw.peak_source, "fraction_of_peak": rnd(frac, 4), "source": bw.source, "assumptions": bw.assumptions,
             "top_instructions": bw.by_instruction, "share_of_top_bytes_already_128bit": rnd(wide / allb, 3)},
            f"Little headroom in the body: the dispatch already streams at {frac:.0%} of peak, so latency tuning can gain at most ~{1 - frac:.0%}. "
            "Only moving fewer bytes helps: fuse it with the kernel that produces or consumes its data, use a narrower data type, or avoid re-reading inputs.",
            "PMC counters of the same dispatch (attlens pmc) should show L2-to-HBM bytes close to these; if they are much lower, data was served from L2/MALL and the kernel is not bandwidth-bound.",
            f"{achieved:,.0f} GB/s of {bw.peak_gbps:,.0f} GB/s peak ({frac:.0%}) from {'PMC' if bw.source == 'pmc' else 'the trace'}",
            severity="HIGH",
            explains=["wait_global", "vmem_load", "vmem_store"],
        )
    ]


def d_target(ctx) -> str:
    return ctx.d.arch.target or "target"


def mfma_pipe_share(ctx) -> float | None:
    """Σ MFMA executions x passes x 4 cycles over the traced SIMD windows."""
    from attlens.analysis.rules.schedule import mfma_passes

    s, st = ctx.result.sums, ctx.d.static
    window = ctx.waves.pipes.total_window_cycles
    if not window:
        return None
    cyc = sum(int(s.hit[pc]) * 4 * (mfma_passes(ctx, st.mnemonic[pc]) or 0) for pc, c in enumerate(st.cls) if c == "mfma" and s.hit[pc])
    return min(1.0, cyc / window) if cyc else None


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
    trigger=f"the busiest pipe is VALU, MFMA or SALU and is busy ≥ {ISSUE_BOUND_BUSY:.0%} of the traced window (HIGH ≥ {ISSUE_BOUND_HIGH:.0%})",
    evidence="busy share of every pipe, the pipe's top instructions by issue cycles with lines and loops",
    limits="busy = union of issue intervals per SIMD over the window the traced waves span (analysis/pipes.py); for MFMA also executions x passes x 4 cycles (pass counts per shape from the architecture table, approximate); a window with idle tails lowers it",
    preconditions=[("compute-busiest", "the busiest pipe is a compute pipe (VALU, MFMA, SALU), not memory")],
    semantics="whole dispatch: claims no per-pc cycles; explains the stall class of its pipe",
)
def issue_bound(ctx):
    rid = "issue-bound"
    kern = ctx.waves.pipes.kernel
    shares = {p: v["busy_share"] or 0.0 for p, v in kern.items() if p not in ("IMMED/MSG", "BRANCH")}
    # an MFMA holds the matrix pipe for its passes (4 cycles each), not just its issue
    by_passes = mfma_pipe_share(ctx)
    if by_passes is not None:
        shares["MFMA"] = max(shares.get("MFMA", 0.0), by_passes)
    if not shares:
        return []
    pipe = max(shares, key=shares.get)
    busy = shares[pipe]
    if busy < ISSUE_BOUND_BUSY:
        return []
    if not ctx.require(rid, "compute-busiest", pipe in _PIPE_ADVICE, f"busiest pipe {pipe} at {busy:.0%}"):
        return []
    s, st = ctx.result.sums, ctx.d.static
    pcs = [pc for pc in np.flatnonzero(s.hit > 0).tolist() if st.cls[pc] and pipe_of_class(st.cls[pc]) == pipe]
    issue = {pc: int(s.latency[pc] - s.stall[pc]) for pc in pcs}
    rows = [{**ctx.instr(pc), "issue_cycles": issue[pc], **{k: v for k, v in ctx.loops.where(pc).items() if k != "pc"}} for pc in top(pcs, key=lambda p: issue[p])]
    lines: dict[str, int] = {}
    for pc in pcs:
        lines[ctx.src(pc) or "(no source)"] = lines.get(ctx.src(pc) or "(no source)", 0) + issue[pc]
    return [
        ctx.finding(
            rid,
            f"{pipe}-issue-bound: the {pipe} pipe is busy {busy:.0%} of the time",
            0,
            0.7,
            {"pipe": pipe, "busy_share": rnd(busy, 3), "busy_share_by_pipe": {p: rnd(v, 3) for p, v in sorted(shares.items(), key=lambda kv: -kv[1])},
             "issue_cycles": sum(issue.values()), "top_instructions": rows,
             "top_lines": [{"line": k, "issue_cycles": v} for k, v in sorted(lines.items(), key=lambda kv: -kv[1])[:3]]},
            _PIPE_ADVICE[pipe],
            f"If the {pipe} instruction count falls and the kernel does not speed up, the limit was elsewhere (memory latency or a dependency chain).",
            f"{pipe} busy {busy:.0%} of the window: limited by issuing {pipe} work",
            severity="HIGH" if busy >= ISSUE_BOUND_HIGH else "MED",
            explains=_PIPE_CLASSES[pipe],
        )
    ]
