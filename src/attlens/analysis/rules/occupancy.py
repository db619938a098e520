"""Occupancy advice, only where more waves per SIMD could actually run."""

from __future__ import annotations

from attlens.analysis.registry import EXPOSED_TRIGGER_SEMANTICS, rule
from attlens.analysis.rules._util import pcs_of_class
from attlens.analysis.rules._preconditions import (
    GRID_MATCHES,
    NOT_AT_CEILING,
    NOT_IMBALANCED,
    NOT_ISSUE_BOUND,
    grid_matches,
    not_at_ceiling,
    not_imbalanced,
    not_issue_bound,
)


@rule(
    "occupancy-limit",
    "Occupancy limited by a resource",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="theoretical waves/SIMD below the hardware maximum, limited by VGPR/AGPR, SGPR or LDS, with memory waits ≥ 1 % of cycles to hide",
    evidence="limiter, the VGPR inputs (reported count, ISA scan), allocation, the exact registers or bytes to free for the next level, observed residency, grid size",
    limits="cycles at stake = exposed memory-wait cycles / (waves + 1), a rough estimate of what one more wave could hide",
    directions=["more-waves", "hide-memory-latency"],
    preconditions=[
        GRID_MATCHES,
        ("grid-fills", "the grid has more working workgroups (not counting early-exit ones) than the GPU holds at once at the current occupancy (otherwise more waves per SIMD run nothing more)"),
        ("reached", "the traced CU actually held the theoretical number of waves per SIMD (otherwise it is not resource-limited in practice)"),
        NOT_IMBALANCED,
        NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
)
def occupancy_limit(ctx):
    rid = "occupancy-limit"
    o = ctx.result.occupancy
    if not o.available or not o.to_next_wave:
        return []
    if not grid_matches(ctx, rid):
        return []
    pops = ctx.facts.populations
    working = round(o.workgroups * pops.working_share) if o.workgroups and pops.traced_early_exit else o.workgroups
    fills = working is not None and o.resident_workgroup_capacity is not None and working > o.resident_workgroup_capacity
    if not ctx.require(rid, "grid-fills", fills,
                       (f"{working:,} working workgroups" + (f" ({o.workgroups - working:,} of {o.workgroups:,} exit early)" if working != o.workgroups else "")
                        + f", {o.resident_workgroup_capacity:,} resident at once") if o.grid_limited is not None else "grid size unknown"):
        return []
    if not not_imbalanced(ctx, rid):
        return []
    if not ctx.require(rid, "reached", not (o.observed_max_waves_per_simd_traced_cu is not None and o.observed_max_waves_per_simd_traced_cu < o.theoretical_waves_per_simd),
                       f"observed {o.observed_max_waves_per_simd_traced_cu} waves/SIMD, theory {o.theoretical_waves_per_simd}"):
        return []
    b = ctx.result.breakdown
    waits = sum(b.by_class_stall[c] for c in ("wait_global", "wait_lds", "wait_smem"))
    wait_pcs = [pc for pc in pcs_of_class(ctx, "wait") if ctx.result.sums.stall[pc] > 0]
    claims = [(pc, ctx.exposed_at(pc) / (o.theoretical_waves_per_simd + 1)) for pc in wait_pcs]
    if sum(c for _, c in claims) / ctx.total < 0.01:
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    free = o.to_next_wave["free"]
    what = "; ".join(
        f"free {v.get('free_registers', v.get('free_bytes'))} {k.upper()} {'bytes' if k == 'lds' else 'registers'} ({v['allocated']} → {v['allowed_for_next_wave']})"
        for k, v in free.items()
    )
    return [
        ctx.finding(
            rid,
            f"{'/'.join(o.limiters).upper()} limit occupancy to {o.theoretical_waves_per_simd} waves/SIMD",
            0,
            0.5,
            {"limiters": o.limiters, "theoretical_waves_per_simd": o.theoretical_waves_per_simd, "vgpr_inputs": o.vgpr_inputs, "to_next_wave": o.to_next_wave,
             "observed_max_waves_per_simd": o.observed_max_waves_per_simd_traced_cu, "workgroups": o.workgroups, "capacity": o.resident_workgroup_capacity,
             "memory_wait_stall": waits},
            f"For {o.to_next_wave['waves_per_simd']} waves/SIMD: {what}.",
            "Rebuild with the lower budget (e.g. launch bounds / waves-per-eu) and recapture: observed residency should rise; if the memory waits do not shrink, latency hiding was not the limit.",
            f"{what} for {o.to_next_wave['waves_per_simd']} waves/SIMD; memory waits are {waits / max(b.total_stall, 1):.0%} of stall",
            claims=claims,
        )
    ]
