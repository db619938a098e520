"""Capture-quality findings: can this capture be trusted, and for what?"""

from __future__ import annotations

import numpy as np

from attlens.analysis.plan import rule


@rule(
    "prologue-only",
    "Traced waves never reached the main loop",
    "capture",
    trigger="every backward branch of the listing was never executed by a traced wave",
    evidence="the loop's pc range and its never-executed branch, executed vs listed instructions",
    limits="a kernel without loops cannot trigger it",
)
def prologue_only(ctx):
    ph = ctx.waves.phases
    loops = ph.static_loops
    if not loops or any(lp.executed for lp in loops):
        return []
    lp = max(loops, key=lambda x: x.last_pc - x.first_pc)
    h = ctx.result.hotspots
    return [
        ctx.finding(
            "prologue-only",
            "The traced waves never reached the kernel's main loop",
            0,
            0.9,
            {"loop_pcs": [lp.first_pc, lp.last_pc], "branch_pc": lp.branch_pc, "executed_instructions": h.executed, "listed_instructions": h.listed},
            "Recapture a dispatch/iteration where the traced CU runs the main work (a steady-state iteration, another target CU, a larger problem); do not optimize from this capture's hotspots.",
            "A capture where the branch at pc {} executes would show the loop's instructions with hits.".format(lp.branch_pc),
            f"loop pcs {lp.first_pc}–{lp.last_pc} never ran: hotspots describe only the prologue",
        )
    ]


@rule(
    "early-exit-waves",
    "Waves that exited early",
    "capture",
    trigger="≥ 25 % of traced waves ran fewer than 10 % of the longest wave's instructions",
    evidence="short and total wave counts, the threshold",
    limits="early exit can be by design (bounds checks, causal masks); the finding says the totals mix two populations",
)
def early_exit(ctx):
    ph = ctx.waves.phases
    w = ctx.d.waves
    if not w.count or ph.waves_short / w.count < 0.25:
        return []
    return [
        ctx.finding(
            "early-exit-waves",
            f"{ph.waves_short} of {w.count} traced waves exited early",
            0,
            0.6,
            {"short_waves": ph.waves_short, "waves": w.count, "threshold_instructions": ph.short_threshold, "longest_wave_instructions": int(w.n_records.max())},
            "Read per-instruction totals as coming mostly from the long waves; capture a dispatch where the traced CU gets full-work waves if the short ones are not representative.",
            "If the short waves are a bounds-check exit of a too-large grid, shrinking the grid removes them.",
            f"{ph.waves_short}/{w.count} waves ran < {ph.short_threshold} instructions",
        )
    ]


@rule(
    "no-source-lines",
    "Kernel built without line info",
    "capture",
    trigger="no instruction of the listing has a source location",
    evidence="instructions without source",
    limits="-",
)
def no_source(ctx):
    if ctx.result.quality.has_source_lines:
        return []
    return [
        ctx.finding(
            "no-source-lines",
            "No source lines: the kernel was built without line info",
            0,
            0.95,
            {"executed_instructions": ctx.result.hotspots.executed},
            "Rebuild with line tables: FlyDSL FLYDSL_DEBUG_ENABLE_DEBUG_INFO=1 with a fresh FLYDSL_RUNTIME_CACHE_DIR; Triton: leave TRITON_DISABLE_LINE_INFO unset (fresh TRITON_CACHE_DIR); HIP: -gline-tables-only (docs/capture.md).",
            "A recapture after the rebuild shows a non-empty Source column in code.json.",
            "no source column: rank by instruction only",
        )
    ]


@rule(
    "location-collapse",
    "One source line collects most cycles",
    "capture",
    trigger="one line holds ≥ 2/3 of cycles from ≥ 32 distinct executed instructions that are ≥ 50 % of those executed",
    evidence="the line, its share of cycles and of executed instructions, classes on it",
    limits="a genuinely monolithic source line (a big fused expression) looks the same",
)
def location_collapse(ctx):
    lc = ctx.result.quality.location_collapse
    if not lc:
        return []
    return [
        ctx.finding(
            "location-collapse",
            f"{lc['line']} holds {lc['latency_share']:.0%} of cycles (compiler location collapse)",
            0,
            0.8,
            dict(lc),
            "Rank by instruction (attlens analyze --mode asm) or rebuild with a compiler that keeps per-operation locations; do not optimize 'the line'.",
            "After a location fix the same kernel spreads its cycles over many lines (the shared flash_attn_func _after_loc_fix capture: 52 % on the top line instead of 81 %).",
            f"{lc['executed_instructions']} instructions on one line",
        )
    ]


@rule(
    "few-waves",
    "Too few waves on the traced CU",
    "capture",
    trigger="fewer than 8 traced waves, or the traced CU received fewer than half the median waves of its SE's CUs",
    evidence="traced waves, the traced CU's share of the median per SE (occupancy.json)",
    limits="needs occupancy.json for the per-CU comparison",
)
def few_waves(ctx):
    w = ctx.d.waves
    share = ctx.waves.phases.traced_cu_share
    low = {se: v for se, v in share.items() if v is not None and v < 0.5}
    if w.count >= 8 and not low:
        return []
    return [
        ctx.finding(
            "few-waves",
            f"Only {w.count} traced waves" + (f"; the traced CU was under-filled in SE {sorted(low)}" if low else ""),
            0,
            0.6,
            {"traced_waves": w.count, "traced_cu_share_of_median": {str(k): round(v, 3) if v is not None else None for k, v in share.items()}},
            "Trace more waves: widen --att-shader-engine-mask, pick a busier --att-target-cu, or capture a larger grid.",
            "With more waves, per-instruction shares should stay stable between two captures of the same dispatch.",
            f"{w.count} waves; statistics may not be representative",
        )
    ]


@rule(
    "truncated-trace",
    "Truncated wave timelines",
    "capture",
    trigger="traced waves whose last instruction is not s_endpgm",
    evidence="waves that end early, their last instruction",
    limits="a trace buffer that overflowed drops the end of waves; raise --att-buffer-size",
)
def truncated(ctx):
    d = ctx.d
    w, recs, st = d.waves, d.records, d.static
    last = w.rec_stop - 1
    ok = w.rec_stop > w.rec_start
    bad = [i for i in np.flatnonzero(ok).tolist() if not st.mnemonic[int(recs.pc[last[i]])].startswith("s_endpgm")]
    if not bad:
        return []
    return [
        ctx.finding(
            "truncated-trace",
            f"{len(bad)} of {w.count} waves end before s_endpgm (truncated trace)",
            0,
            0.9 if len(bad) / w.count >= 0.1 else 0.6,
            {"waves": [{"file": w.filenames[i], "last_pc": int(recs.pc[last[i]]), "last": d.code.isa[int(recs.pc[last[i]])]} for i in bad[:5]], "count": len(bad)},
            "Recapture with a larger --att-buffer-size (or fewer SEs/SIMDs traced) so the waves are recorded to the end.",
            "In a complete trace every wave's last record is s_endpgm.",
            f"{len(bad)} waves cut short",
        )
    ]
