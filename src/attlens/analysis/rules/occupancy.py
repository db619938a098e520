"""Occupancy advice, only where more waves per SIMD could actually run."""

from __future__ import annotations

from attlens.analysis.plan import rule


@rule(
    "occupancy-limit",
    "Occupancy limited by a resource",
    "performance",
    trigger="theoretical waves/SIMD below the hardware maximum, limited by VGPR/AGPR, SGPR or LDS, the grid large enough to fill more waves, the traced CU reaching the limit, and memory waits to hide",
    evidence="limiter, allocation, the exact registers or bytes to free for the next level, observed residency, grid size",
    limits="never raised when the dispatch is grid-limited or already at the hardware maximum; cycles at stake = exposed memory-wait cycles / (waves + 1), a rough estimate of what one more wave could hide",
)
def occupancy_limit(ctx):
    o = ctx.result.occupancy
    if not o.available or not o.to_next_wave or o.grid_limited is not False:
        return []
    if o.observed_max_per_simd_traced is not None and o.observed_max_per_simd_traced < o.theoretical_waves_per_simd:
        return []  # the traced CU never filled the slots it had: not resource-limited in practice
    b = ctx.result.breakdown
    waits = sum(b.by_class_stall[c] for c in ("wait_global", "wait_lds", "wait_smem"))
    frac = 1.0
    if ctx.result.hidden is not None and b.total_stall:
        h = ctx.result.hidden
        frac = float(h.exposed.sum()) / float(h.total.sum())
    cycles = waits * frac / (o.theoretical_waves_per_simd + 1)
    if cycles / ctx.total < 0.01:
        return []
    free = o.to_next_wave["free"]
    what = "; ".join(
        f"free {v.get('free_registers', v.get('free_bytes'))} {k.upper()} {'bytes' if k == 'lds' else 'registers'} ({v['allocated']} → {v['allowed_for_next_wave']})"
        for k, v in free.items()
    )
    return [
        ctx.finding(
            "occupancy-limit",
            f"{'/'.join(o.limiters).upper()} limit occupancy to {o.theoretical_waves_per_simd} waves/SIMD",
            cycles,
            0.5,
            {"limiters": o.limiters, "theoretical_waves_per_simd": o.theoretical_waves_per_simd, "to_next_wave": o.to_next_wave,
             "observed_max_waves_per_simd": o.observed_max_per_simd_traced, "workgroups": o.workgroups, "capacity": o.resident_workgroup_capacity,
             "memory_wait_stall": waits},
            f"For {o.to_next_wave['waves_per_simd']} waves/SIMD: {what}.",
            "Rebuild with the lower budget (e.g. launch bounds / waves-per-eu) and recapture: observed residency should rise; if the memory waits do not shrink, latency hiding was not the limit.",
            f"{what} for {o.to_next_wave['waves_per_simd']} waves/SIMD; memory waits are {waits / max(b.total_stall, 1):.0%} of stall",
        )
    ]
