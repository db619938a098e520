"""Rules about memory latency, memory issue and the waits on memory."""

from __future__ import annotations

from attlens.analysis.plan import rule
from attlens.analysis.rules._util import loop_pcs, pcs_of_class, top

# Thresholds (docs/rules.md)
NEAR_USE_MAX_DISTANCE = 8  # instructions between a load and the wait consuming it
MIN_SHARE = 0.02  # of all kernel cycles, for a pattern to be worth a finding


@rule(
    "load-use-distance",
    "Loads issued too close to their use",
    "performance",
    trigger="global-memory producers waited on for ≥ 2 % of kernel cycles with a median load-to-use distance ≤ 8 instructions",
    evidence="producer pcs and lines, the waits they feed, charged cycles, distance in instructions and cycles",
    limits="distance is counted in executed instructions of the same wave; independent work from other waves may still hide part of it (exposed cycles are used)",
)
def load_use_distance(ctx):
    hits = []
    for p in ctx.att.producers:
        if p.wait_class != "wait_global" or p.distance_instr_median > NEAR_USE_MAX_DISTANCE:
            continue
        exposed = sum(c * ctx.exposed_fraction(w) for w, c in p.waits.items())
        if exposed / ctx.total >= MIN_SHARE / 4:
            hits.append((p, exposed))
    cycles = sum(e for _, e in hits)
    if not hits or cycles / ctx.total < MIN_SHARE:
        return []
    best = top(hits, key=lambda x: x[1])
    med = min(p.distance_instr_median for p, _ in best)
    return [
        ctx.finding(
            "load-use-distance",
            f"{len(hits)} global load(s) are consumed {int(med)}–{int(max(p.distance_instr_median for p, _ in best))} instructions after issue",
            cycles,
            0.8 if med <= 4 else 0.7,
            {
                "producers": [
                    {**ctx.instr(p.pc), "waited_cycles": p.waited_cycles, "exposed_wait_cycles": int(e), "distance_instructions_median": p.distance_instr_median,
                     "distance_cycles_median": p.distance_cycles_median, "waits": list(p.waits)[:3]}
                    for p, e in best
                ],
                "pairs": [{"producer_pc": p.pc, "wait_pc": w, "cycles": c} for p, _ in best for w, c in list(p.waits.items())[:2]],
            },
            "Issue these loads earlier: prefetch the next iteration's data into registers (or LDS) before the current compute, "
            "batch all loads of a stage ahead of the math, or double-buffer so the wait lands a full iteration later.",
            "Move the load earlier by the distance shown; if the stall of the wait it feeds does not fall, the latency is bandwidth-bound, not distance-bound (check L2/HBM counters).",
            f"{ctx.d.code.isa[best[0][0].pc].split()[0]} at pc {best[0][0].pc} waited on {int(best[0][1]):,} exposed cycles, used {best[0][0].distance_instr_median:.0f} instructions later",
        )
    ]


@rule(
    "load-mfma-interleave",
    "Loads interleaved one-for-one with MFMA",
    "performance",
    trigger="a loop whose VMEM loads and MFMAs alternate (ratio 1:2 to 2:1, ≥ 60 % alternation) while the loads stall at issue for ≥ 2 % of kernel cycles",
    evidence="loop pcs, load and MFMA counts, alternation, load issue stall",
    limits="works on the static order of the looped instructions",
)
def load_mfma_interleave(ctx):
    loop = sorted(loop_pcs(ctx))
    st = ctx.d.static
    seq = [(pc, st.cls[pc]) for pc in loop if st.cls[pc] in ("vmem_load", "mfma")]
    n_load = sum(1 for _, c in seq if c == "vmem_load")
    n_mfma = len(seq) - n_load
    if n_load < 2 or n_mfma < 2 or not (0.5 <= n_load / n_mfma <= 2):
        return []
    alternations = sum(1 for a, b in zip(seq, seq[1:]) if a[1] != b[1])
    if alternations < 0.6 * 2 * min(n_load, n_mfma):
        return []
    loads = [pc for pc, c in seq if c == "vmem_load"]
    stall = ctx.exposed_stall(loads)
    if stall / ctx.total < MIN_SHARE:
        return []
    return [
        ctx.finding(
            "load-mfma-interleave",
            f"{n_load} loads alternate with {n_mfma} MFMAs in the loop and stall at issue",
            stall,
            0.6,
            {"loop_pcs": [loop[0], loop[-1]], "loads": n_load, "mfmas": n_mfma, "alternations": alternations,
             "load_issue_stall": int(sum(int(ctx.result.sums.stall[pc]) for pc in loads)), "top_loads": [ctx.instr(pc) for pc in top(loads, key=lambda p: int(ctx.result.sums.stall[p]), n=3)]},
            "Group the loads into one burst per iteration (or per stage) ahead of the MFMA block, so each load has the MFMAs of a whole stage to hide behind.",
            "After grouping, the load issue stall should move into a single wait before the MFMA block; if total loop time does not drop, the MFMA pipe was the bottleneck.",
            f"loads alternate with MFMAs ({alternations} alternations) and stall {stall / ctx.total:.0%} of cycles at issue",
        )
    ]


@rule(
    "vmem-backpressure",
    "VMEM issue back-pressure",
    "performance",
    trigger="vector-memory instructions (loads, stores, atomics) stalled at issue for ≥ 5 % of kernel cycles",
    evidence="top stalled memory instructions with their stall",
    limits="issue stall means the memory queues were full; it does not tell which level (TA, L2, HBM) was saturated",
)
def vmem_backpressure(ctx):
    pcs = pcs_of_class(ctx, "vmem_load", "vmem_store", "vmem_atomic")
    s = ctx.result.sums
    stall = ctx.exposed_stall(pcs)
    if stall / ctx.total < 0.05:
        return []
    worst = top(pcs, key=lambda p: int(s.stall[p]))
    return [
        ctx.finding(
            "vmem-backpressure",
            "Memory instructions stall at issue (queue full)",
            stall,
            0.7,
            {"issue_stall_cycles": int(sum(int(s.stall[pc]) for pc in pcs)), "instructions": [ctx.instr(pc) for pc in worst]},
            "Issue fewer, wider memory instructions (dwordx4 / 128-bit), keep fewer requests in flight per wave, and make addresses coalesced so each request covers full cache lines.",
            "If halving the number of memory instructions (same bytes) does not cut the issue stall at the top pc, the limit is bandwidth: compare with the L2/HBM counters.",
            f"{ctx.d.code.isa[worst[0]].split()[0]} at pc {worst[0]} alone stalls {int(s.stall[worst[0]]):,} cycles at issue",
        )
    ]


@rule(
    "lds-to-mfma",
    "LDS reads consumed immediately by MFMA",
    "performance",
    trigger="lgkm waits on ds_read/ds_load producers followed within 2 instructions by an MFMA, for ≥ 2 % of kernel cycles",
    evidence="wait pcs, their ds_read producers, the MFMA that follows, charged cycles",
    limits="looks at the static next instructions after the wait",
)
def lds_to_mfma(ctx):
    st = ctx.d.static
    rows, cycles = [], 0.0
    for wpc, prods in ctx.att.by_wait_pc.items():
        lds = {p: c for p, c in prods.items() if st.cls[p] == "lds" and st.mnemonic[p].startswith(("ds_read", "ds_load"))}
        if not lds:
            continue
        nxt = [p for p in range(wpc + 1, min(wpc + 3, len(st.cls))) if st.cls[p] == "mfma"]
        if not nxt:
            continue
        c = sum(lds.values()) * ctx.exposed_fraction(wpc)
        cycles += c
        rows.append({"wait_pc": wpc, "wait": ctx.d.code.isa[wpc], "mfma_pc": nxt[0], "lds_producers": sorted(lds), "exposed_cycles": int(c)})
    if cycles / ctx.total < MIN_SHARE:
        return []
    rows.sort(key=lambda r: -r["exposed_cycles"])
    return [
        ctx.finding(
            "lds-to-mfma",
            f"{len(rows)} LDS wait(s) feed an MFMA directly",
            cycles,
            0.7,
            {"waits": rows[:5]},
            "Software-pipeline the LDS reads: read the fragments for the next MFMA group before issuing the current one, so the lgkm wait covers a whole MFMA group; prefer ds_read_b128 to reduce the count.",
            "After pipelining, the stall at these waits should drop while MFMA issue rises; if it does not, LDS bandwidth (bank conflicts) is the limit.",
            f"the wait at pc {rows[0]['wait_pc']} holds the MFMA at pc {rows[0]['mfma_pc']} for {rows[0]['exposed_cycles']:,} exposed cycles",
        )
    ]


@rule(
    "drain-to-zero",
    "Waits that drain a counter to zero",
    "performance",
    trigger="a count-0 wait inside a loop that resolves ≥ 2 memory ops per execution on average, holding ≥ 2 % of kernel cycles",
    evidence="wait pcs, producers per execution, ops outstanding, charged cycles",
    limits="without register dependencies attlens cannot prove a partial count suffices: confidence is low",
)
def drain_to_zero(ctx):
    from attlens.model.isa import waitcnt_fields

    loop = loop_pcs(ctx)
    pairs = ctx.att.pairs
    rows, cycles = [], 0.0
    for wpc, prods in ctx.att.by_wait_pc.items():
        f = waitcnt_fields(ctx.d.code.isa[wpc])
        if wpc not in loop or not f or any(v != 0 for v in f.values()):
            continue
        execs = int(ctx.result.sums.hit[wpc])
        n_pairs = int((ctx.d.records.pc[pairs.wait_rec] == wpc).sum())
        per_exec = n_pairs / max(execs, 1)
        if per_exec < 2:
            continue
        c = sum(prods.values()) * ctx.exposed_fraction(wpc) * (1 - 1 / per_exec)
        cycles += c
        rows.append({"wait_pc": wpc, "wait": ctx.d.code.isa[wpc], "producers_per_execution": round(per_exec, 2), "avoidable_cycles": int(c)})
    if cycles / ctx.total < MIN_SHARE:
        return []
    rows.sort(key=lambda r: -r["avoidable_cycles"])
    return [
        ctx.finding(
            "drain-to-zero",
            f"{len(rows)} loop wait(s) drain their counter to 0 over several outstanding ops",
            cycles,
            0.4,
            {"waits": rows[:5]},
            "Wait only for the oldest op the next instruction needs (vmcnt(N)/lgkmcnt(N) with N = ops still allowed in flight), and consume results in issue order.",
            "With a partial count the wait's stall should shrink by about the share shown; if the next instruction needs the youngest op, the full drain is required.",
            f"the wait at pc {rows[0]['wait_pc']} resolves {rows[0]['producers_per_execution']} ops per execution",
        )
    ]


@rule(
    "crosslane-serialized",
    "Cross-lane reductions serialized on the LDS counter",
    "performance",
    trigger="ds_swizzle/ds_bpermute/ds_permute issue plus the wait cycles charged to them ≥ 3 % of kernel cycles",
    evidence="cross-lane pcs, their issue stall and the waits on them, DPP instruction count",
    limits="DPP ops are counted as evidence, not charged: they are VALU and need no wait",
)
def crosslane(ctx):
    pcs = pcs_of_class(ctx, "lds_crosslane")
    if not pcs:
        return []
    s = ctx.result.sums
    waited = {p.pc: p for p in ctx.att.producers if p.pc in pcs}
    cycles = sum(ctx.exposed([pc]) for pc in pcs) + sum(
        c * ctx.exposed_fraction(w) for p in waited.values() for w, c in p.waits.items()
    )
    if cycles / ctx.total < 0.03:
        return []
    dpp = sum(1 for pc, c in enumerate(ctx.d.static.cls) if c == "valu" and ("dpp" in ctx.d.code.isa[pc] or "row_" in ctx.d.code.isa[pc]))
    return [
        ctx.finding(
            "crosslane-serialized",
            f"{len(pcs)} cross-lane LDS ops and their waits cost {cycles / ctx.total:.0%} of cycles",
            cycles,
            0.6,
            {"instructions": [{**ctx.instr(pc), "waited_on": int(waited[pc].waited_cycles) if pc in waited else 0} for pc in top(pcs, key=lambda p: int(s.latency[p]))],
             "dpp_instructions_listed": dpp},
            "Do the reduction in registers: DPP row/quad moves (and v_permlane16/32_swap on gfx950) instead of ds_swizzle/ds_bpermute, or batch several reductions so they share one lgkm wait.",
            "After the change the lgkm waits after the reductions should disappear; if the VALU time added exceeds the wait saved, keep the LDS path.",
            f"{len(pcs)} cross-lane ops each followed by an lgkm wait",
        )
    ]


@rule(
    "smem-wait",
    "Scalar-memory waits dominate",
    "performance",
    trigger="waits on scalar loads (kernel arguments, descriptors) ≥ 10 % of the kernel's stall and ≥ 3 % of its cycles",
    evidence="scalar producers with the cycles waited on them and their phase (prologue or loop)",
    limits="in short kernels the first kernel-argument load is unavoidable latency; the rule reports what is exposed",
)
def smem_wait(ctx):
    b = ctx.result.breakdown
    cyc = b.by_class_stall["wait_smem"]
    if not b.total_stall or cyc / b.total_stall < 0.10:
        return []
    prods = [p for p in ctx.att.producers if p.wait_class == "wait_smem"]
    exposed = sum(c * ctx.exposed_fraction(w) for p in prods for w, c in p.waits.items())
    if exposed / ctx.total < 0.03:
        return []
    loop = loop_pcs(ctx)
    in_loop = sum(p.waited_cycles for p in prods if p.pc in loop)
    where = "inside the loop" if in_loop > cyc / 2 else "in the prologue"
    return [
        ctx.finding(
            "smem-wait",
            f"Scalar-memory waits take {cyc / b.total_stall:.0%} of stall, mostly {where}",
            exposed,
            0.7,
            {"wait_smem_stall": cyc, "share_of_stall": round(cyc / b.total_stall, 4), "in_loop_cycles": in_loop,
             "producers": [{**ctx.instr(p.pc), "waited_cycles": p.waited_cycles} for p in prods[:5]], "median_wave_instructions": int(sorted(ctx.d.waves.n_records.tolist())[ctx.d.waves.count // 2])},
            "Hoist and batch scalar loads: load all kernel arguments/descriptors with few wide s_load (x8/x16) at the very top, before any vector work, and wait once; "
            "on gfx942/gfx950 use kernel-argument preloading into SGPRs; move loop-invariant s_loads out of the loop.",
            "After hoisting, the lgkm waits on s_load producers should shrink to one; if the kernel is only a few hundred instructions long, the remaining wait is launch latency.",
            f"{cyc:,} stall cycles wait on scalar loads ({where})",
        )
    ]
