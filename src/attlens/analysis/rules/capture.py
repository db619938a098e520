"""Capture-quality findings: can this capture be trusted, and for what?"""

from __future__ import annotations

import numpy as np

from attlens.analysis.occupancy import grid_waves as waves_in_grid
from attlens.analysis.registry import rule
from attlens.analysis.rules._util import defs_uses


_CONDITION = {"scc": "SCC", "vcc": "VCC", "exec": "EXEC"}


def _next_instruction(code) -> np.ndarray:
    """Per pc, the next pc that holds an instruction (fall-through target)."""
    n = code.size
    nxt = np.full(n, n, dtype=np.int64)
    following = n
    listed = code.instruction_mask.tolist()
    for pc in range(n - 1, -1, -1):
        nxt[pc] = following
        if listed[pc]:
            following = pc
    return nxt


def _jumps(ctx):
    """Record indices of taken branches (the next record of the wave is not the
    fall-through pc) and their targets."""
    d = ctx.d
    recs = d.records
    if recs.count < 2:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    nxt = _next_instruction(d.code)
    is_branch = np.array([m.startswith(("s_cbranch", "s_branch")) for m in d.static.mnemonic], dtype=bool)
    i = np.flatnonzero(is_branch[recs.pc[:-1]] & (recs.wave[1:] == recs.wave[:-1]))
    taken = i[recs.pc[i + 1] != nxt[recs.pc[i]]]
    return taken, recs.pc[taken + 1].astype(np.int64)


def _condition(ctx, rec: int) -> dict:
    """The branch at record ``rec``: what it tests and which executed
    instruction set that condition (same wave, before it)."""
    d = ctx.d
    pc = int(d.records.pc[rec])
    m = d.static.mnemonic[pc]
    flag = next((v for k, v in _CONDITION.items() if m.startswith("s_cbranch_" + k)), None)
    out = {"branch_pc": pc, "branch": d.code.isa[pc], "branch_source": ctx.src(pc), "condition": flag or "unconditional"}
    if flag is None:
        return out
    reg = (flag.lower(), 0)
    start = int(d.waves.rec_start[d.records.wave[rec]])
    for r in range(rec - 1, max(start, rec - 256) - 1, -1):
        wpc = int(d.records.pc[r])
        w, reads = defs_uses(d.code.isa[wpc])
        if reg in w:
            regs = sorted({f"{k}{i}" if k in ("s", "v", "a") else k for k, i in reads})
            out.update({"set_by_pc": wpc, "set_by": d.code.isa[wpc], "set_by_source": ctx.src(wpc), "condition_registers": regs})
            break
    return out


def _decisive_branch(ctx, waves: np.ndarray, covers) -> dict | None:
    """The taken branch that sent these waves where ``covers(pc, target)`` says,
    most common first, with its condition and how many of the waves took it."""
    taken, target = _jumps(ctx)
    if not len(taken):
        return None
    recs = ctx.d.records
    wv = recs.wave[taken]
    picked = {}
    for r, t, w in zip(taken.tolist(), target.tolist(), wv.tolist()):
        if w in waves and covers(int(recs.pc[r]), t):
            picked[w] = (r, t)  # the last such branch of the wave
    if not picked:
        return None
    counts: dict[tuple[int, int], list[int]] = {}
    for w, (r, t) in picked.items():
        counts.setdefault((int(recs.pc[r]), t), []).append(r)
    (bpc, tgt), rs = max(counts.items(), key=lambda kv: len(kv[1]))
    out = _condition(ctx, rs[0])
    out.update({"target_pc": tgt, "target": ctx.d.code.isa[tgt], "waves_taking_it": len(rs), "waves": len(waves)})
    return out


def _ends_soon(ctx, pc: int, within: int = 12) -> bool:
    """The straight-line code from ``pc`` reaches s_endpgm within a few instructions."""
    n = 0
    listed = ctx.d.code.instruction_mask
    for q in range(pc, ctx.d.code.size):
        if not listed[q]:
            continue
        m = ctx.d.static.mnemonic[q]
        if m.startswith("s_endpgm"):
            return True
        if m.startswith(("s_branch", "s_cbranch", "s_setpc")):
            return False
        n += 1
        if n > within:
            return False
    return False


def _ses(ctx, waves) -> dict:
    w = ctx.d.waves
    traced = sorted({int(w.se[i]) for i in waves})
    occ = ctx.d.occupancy
    seen = sorted(set(occ.events[:, 0].tolist())) if occ is not None and len(occ.events) else traced
    return {"traced_ses": traced, "ses_in_occupancy": seen}


@rule(
    "prologue-only",
    "Traced waves never reached the main loop",
    "capture",
    trigger="no backward branch of the listing was taken by a traced wave",
    evidence="the loop's pc range, the branch every wave took around it (pc, source line, the condition and the instruction that set it, with its registers), executed vs listed instructions, SEs",
    limits="a kernel without loops cannot trigger it",
    directions=["capture"],
)
def prologue_only(ctx):
    rid = "prologue-only"
    loops = ctx.loops.loops
    if not loops:
        return []
    if any(lp.iterated or lp.entries for lp in loops):
        return []
    lp = max(loops, key=lambda x: x.branch_pc - x.first_pc)
    h = ctx.result.hotspots
    allw = np.arange(ctx.d.waves.count)
    skip = _decisive_branch(ctx, set(allw.tolist()), lambda pc, t: pc < lp.first_pc and t > lp.branch_pc)
    exit_ = None if skip else _decisive_branch(ctx, set(allw.tolist()), lambda pc, t: t > pc and _ends_soon(ctx, t))
    br = skip or exit_
    ses = _ses(ctx, allw)
    everywhere = set(ses["ses_in_occupancy"]) <= set(ses["traced_ses"])
    cov = ctx.facts.coverage
    meaning = (
        "the loop's work ran on other waves/CUs or in another dispatch"
        + (f"; every traced SE had traced waves and all of them skipped it, so re-targeting the CU will not help: change the dispatch (a later call, a larger problem) or the shape"
           f" (the capture covers {cov.xcc_text()}: other XCCs run other workgroups of the same grid)"
           if everywhere else f"; only SE(s) {ses['traced_ses']} had traced waves: another --att-target-cu or a wider --att-shader-engine-mask may catch waves that run it")
    )
    if br:
        cond = f"{br['condition']}" + (f" set by pc {br['set_by_pc']} `{br['set_by']}` (registers {', '.join(br['condition_registers'])})" if br.get("set_by_pc") is not None else "")
        how = (f"{br['waves_taking_it']} of {br['waves']} waves took the branch at pc {br['branch_pc']} `{br['branch']}`"
               f"{' (' + br['branch_source'] + ')' if br.get('branch_source') else ''} on {cond} to pc {br['target_pc']}, "
               + ("past the loop" if skip else "into the kernel's end"))
    else:
        how = "no taken branch around the loop was found in the trace"
    return [
        ctx.finding(
            rid,
            f"The traced waves never ran the kernel's loop (pcs {lp.first_pc}–{lp.branch_pc})" + (f": branch at pc {br['branch_pc']} skips it" if br else ""),
            0,
            0.9,
            {"loop_pcs": [lp.first_pc, lp.branch_pc], "branch_pc": lp.branch_pc, "skipped_by": br, "executed_instructions": h.executed,
             "listed_instructions": h.listed, **ses},
            f"{how}: {meaning}. Do not optimize from this capture's hotspots.",
            f"A capture whose waves do not take the branch at pc {br['branch_pc'] if br else '?'} would show the loop's instructions with hits.",
            f"loop pcs {lp.first_pc}–{lp.branch_pc} never ran" + (f": pc {br['branch_pc']} branches past it on {br['condition']}" if br else ""),
        )
    ]


@rule(
    "early-exit-waves",
    "Waves that skip the body",
    "capture",
    trigger="≥ 25 % of traced waves ran fewer than 10 % of the longest wave's instructions, or never entered a loop other waves iterated",
    evidence="short and full wave counts and their instruction counts, the branch that sent them out (pc, source line, condition and the instruction that set it), SEs",
    limits="early exit can be by design (bounds checks, causal masks); the finding says the totals mix two populations",
    preconditions=[("two-populations", "some traced waves did run the body (otherwise see prologue-only)")],
    directions=["capture"],
)
def early_exit(ctx):
    rid = "early-exit-waves"
    w = ctx.d.waves
    if not w.count:
        return []
    n = w.n_records
    longest = int(n.max())
    threshold = max(longest // 10, 1)
    short = np.flatnonzero(n < threshold)
    main = max((lp for lp in ctx.loops.loops if lp.iterated), key=lambda x: x.iterations, default=None)
    skipped = np.zeros(0, dtype=np.int64)
    if main is not None:
        recs = ctx.d.records
        inside = (recs.pc >= main.first_pc) & (recs.pc <= main.branch_pc)
        entered = np.bincount(recs.wave[inside], minlength=w.count) > 0
        skipped = np.flatnonzero(~entered)
    out = np.union1d(short, skipped)
    if len(out) / w.count < 0.25:
        return []
    if not ctx.require(rid, "two-populations", len(out) < w.count, f"{w.count - len(out)} waves ran the body"):
        return []
    full = np.setdiff1d(np.arange(w.count), out)
    if main is not None and len(skipped):
        br = _decisive_branch(ctx, set(out.tolist()), lambda pc, t: pc < main.first_pc and t > main.branch_pc)
    else:
        br = None
    br = br or _decisive_branch(ctx, set(out.tolist()), lambda pc, t: t > pc and _ends_soon(ctx, t))
    pops = ctx.facts.populations
    ev = {"waves_out": len(out), "waves": w.count, "short_waves": len(short), "waves_not_entering_main_loop": len(skipped),
          "traced_ses_waves": pops.xcc_waves, "traced_ses_early_exit": pops.xcc_early_exit, "lifetime_below_cycles": pops.lifetime_threshold_cycles,
          "main_loop_pcs": [main.first_pc, main.branch_pc] if main is not None else None,
          "instructions_median_out": int(np.median(n[out])), "instructions_median_full": int(np.median(n[full])),
          "threshold_instructions": threshold, "longest_wave_instructions": longest, "exit_branch": br, **_ses(ctx, out)}
    cond = ""
    if br:
        cond = (f" through the branch at pc {br['branch_pc']}{' (' + br['branch_source'] + ')' if br.get('branch_source') else ''} on {br['condition']}"
                + (f" set by pc {br['set_by_pc']} `{br['set_by']}`" if br.get("set_by_pc") is not None else ""))
    xcc = (f" ({pops.xcc_early_exit:,} of {pops.xcc_waves:,} on the traced SEs)" if pops.xcc_early_exit else "")
    return [
        ctx.finding(
            rid,
            f"{len(out)} of {w.count} traced waves{xcc} skip the body{cond.split(' on ')[0] if br else ''}",
            0,
            0.6,
            ev,
            f"{len(out)} waves ran a median {ev['instructions_median_out']} instructions against {ev['instructions_median_full']} for the others{cond}: "
            "read per-instruction totals as coming mostly from the full waves; if the guard drops whole workgroups (a grid larger than the problem, "
            "a causal or length mask), size the grid to the work so those waves are not launched.",
            "If the guard's condition registers say the waves are out of bounds, shrinking the grid removes them; a capture of a larger problem should show fewer.",
            f"{len(out)}/{w.count} waves skip the body{(' at pc ' + str(br['branch_pc'])) if br else ''}",
        )
    ]


@rule(
    "no-source-lines",
    "Kernel built without line info",
    "capture",
    trigger="no instruction of the listing has a source location",
    evidence="instructions without source",
    limits="-",
    directions=["capture"],
)
def no_source(ctx):
    if ctx.result.quality.has_source_lines:
        return []
    return [
        ctx.finding(
            "no-source-lines",
            f"No source lines: none of the {ctx.result.hotspots.executed:,} executed instructions has a source location (built without line info)",
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
    directions=["capture"],
)
def location_collapse(ctx):
    lc = ctx.result.quality.location_collapse
    if not lc:
        return []
    return [
        ctx.finding(
            "location-collapse",
            f"{lc['line']} holds {lc['latency_share']:.0%} of the traced latency (compiler location collapse)",
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
    trigger="fewer than 8 traced waves that do the work (early-exit waves not counted), or the traced CU received fewer than half the median waves of its SE's CUs",
    evidence="traced and working waves, the grid's waves, the SEs and XCCs traced, the traced CU's share of the median per SE (occupancy.json)",
    limits="needs occupancy.json for the per-CU comparison",
    preconditions=[("more-exist", "the dispatch has more waves than the trace holds (otherwise a wider trace cannot catch more)")],
    directions=["capture"],
)
def few_waves(ctx):
    w = ctx.d.waves
    share = ctx.waves.phases.traced_cu_share_of_median
    low = {se: v for se, v in share.items() if v is not None and v < 0.5}
    pops = ctx.facts.populations
    working = pops.traced_working  # early-exit waves carry no statistics of the body
    if working >= 8 and not low:
        return []
    _, grid_waves = waves_in_grid(ctx.d)
    if not ctx.require("few-waves", "more-exist", grid_waves is None or grid_waves > w.count,
                       f"{grid_waves} waves in the grid, {w.count} traced" if grid_waves is not None else "grid size unknown"):
        return []
    cov = ctx.facts.coverage
    early = w.count - working
    return [
        ctx.finding(
            "few-waves",
            (f"Only {working} of {w.count} traced waves do the work ({early} exit early)" if early else f"Only {w.count} traced waves")
            + (f"; the traced CU was under-filled in SE {sorted(low)}" if low else ""),
            0,
            0.6,
            {"traced_waves": w.count, "working_waves": working, "grid_waves": grid_waves, "traced": cov.xcc_text(),
             "traced_cu_share_of_median": {str(k): round(v, 3) if v is not None else None for k, v in share.items()}},
            f"Trace more waves: the capture covers {cov.xcc_text()}; widen --att-shader-engine-mask (bit i = SE i), pick a busier --att-target-cu, "
            "or capture a larger grid.",
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
    preconditions=[("listing-complete", "the code.json listing holds the end of the kernel: its last instruction is not a branch that leaves it "
                                        "(otherwise waves that end on that branch ran on into code the decoder did not list; they are not truncated)")],
    directions=["capture"],
)
def truncated(ctx):
    d = ctx.d
    w, recs, st = d.waves, d.records, d.static
    last = w.rec_stop - 1
    ok = w.rec_stop > w.rec_start
    endpgm = np.array([m.startswith("s_endpgm") for m in st.mnemonic], dtype=bool)  # per pc: one test per pc, not per wave
    waves = np.flatnonzero(ok)
    bad = waves[~endpgm[recs.pc[last[waves]]]].tolist()
    if not bad:
        return []
    exit_ = ctx.result.quality.listing_exit
    if exit_ is not None:
        at_exit = [i for i in bad if int(recs.pc[last[i]]) == exit_["pc"]]
        bad = [i for i in bad if int(recs.pc[last[i]]) != exit_["pc"]]
        detail = (f"the listing ends at pc {exit_['pc']} (`{exit_['isa']}`), a branch that leaves it; {len(at_exit)} of {w.count} waves end there "
                  "(ran on into unlisted code)" + (f", {len(bad)} end elsewhere" if bad else ""))
        if not ctx.require("truncated-trace", "listing-complete", bool(bad), detail):
            return []
    else:
        ctx.require("truncated-trace", "listing-complete", True, "the listing's last instruction is not a branch that leaves it")
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
