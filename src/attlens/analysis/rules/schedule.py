"""Rules about instruction scheduling: barriers, dependent MFMAs, hazards."""

from __future__ import annotations

import re

import numpy as np

from attlens.analysis.plan import rule
from attlens.analysis.rules._util import operand_list, pcs_of_class, registers, top

_SHAPE = re.compile(r"_(\d+x\d+)x\d+")


@rule(
    "barrier-heavy",
    "Barrier-heavy phases",
    "performance",
    trigger="s_barrier stall ≥ 5 % of kernel cycles",
    evidence="barrier pcs with their stall, and the waves that arrive last (least stall at the barrier: the others wait for them)",
    limits="the trace does not record workgroup membership; 'arrives last' compares the traced waves at the same barrier",
)
def barrier_heavy(ctx):
    pcs = pcs_of_class(ctx, "barrier")
    s = ctx.result.sums
    cycles = ctx.exposed_stall(pcs)
    if cycles / ctx.total < 0.05:
        return []
    recs, w = ctx.d.records, ctx.d.waves
    rows = []
    for pc in top(pcs, key=lambda p: int(s.stall[p]), n=3):
        m = recs.pc == pc
        per_wave = np.bincount(recs.wave[m], weights=recs.stall[m], minlength=w.count)
        count = np.bincount(recs.wave[m], minlength=w.count)
        mean = np.where(count > 0, per_wave / np.maximum(count, 1), np.inf)
        last = np.argsort(mean, kind="stable")[:3]
        rows.append({**ctx.instr(pc), "last_arriving_waves": [{"file": w.filenames[i], "mean_stall": float(mean[i])} for i in last if np.isfinite(mean[i])],
                     "mean_stall_per_execution": float(s.stall[pc] / max(s.hit[pc], 1))})
    return [
        ctx.finding(
            "barrier-heavy",
            f"Barriers hold waves for {cycles / ctx.total:.0%} of cycles",
            cycles,
            0.6,
            {"barriers": rows},
            "Balance the work between the waves of a workgroup (the last-arriving waves set the pace), drop barriers that only protect double-buffered LDS, and move independent work (address math, next loads) before the barrier.",
            "Equalize the work of the last-arriving waves: the others' barrier stall should fall; if all waves arrive together and still stall, the barrier waits on LDS traffic.",
            f"s_barrier at pc {rows[0]['pc']} averages {rows[0]['mean_stall_per_execution']:,.0f} stall cycles per execution",
        )
    ]


def _passes(ctx, mnemonic: str) -> int | None:
    table = (ctx.d.arch.facts or {}).get("mfma_passes") or {"4x4": 2, "16x16": 8, "32x32": 16}
    m = _SHAPE.search(mnemonic)
    return table.get(m.group(1)) if m else None


@rule(
    "mfma-dependency",
    "Dependent MFMA chains",
    "performance",
    trigger="MFMAs (or VALU ops) that read the result of an MFMA fewer instructions later than its pass latency, and stall, for ≥ 2 % of kernel cycles",
    evidence="(producer MFMA pc → dependent pc) pairs, distance in instructions vs the passes required, the dependent's stall",
    limits="register dependencies come from the disassembly text in listing order; pass counts per shape are in the architecture table (approximate)",
)
def mfma_dependency(ctx):
    st, code, s = ctx.d.static, ctx.d.code, ctx.result.sums
    mfma_pcs = [pc for pc, c in enumerate(st.cls) if c == "mfma"]
    if not mfma_pcs:
        return []
    dst = {pc: registers(operand_list(code.isa[pc])[0]) if operand_list(code.isa[pc]) else set() for pc in mfma_pcs}
    pairs, cycles = [], 0.0
    recent: list[int] = []
    for pc in np.flatnonzero(code.instruction_mask).tolist():
        ops = operand_list(code.isa[pc])
        if st.cls[pc] in ("mfma", "valu") and ops and s.stall[pc] > 0:
            reads = set().union(*(registers(o) for o in ops[1:])) if len(ops) > 1 else set()
            for prev in reversed(recent):
                passes = _passes(ctx, st.mnemonic[prev])
                if passes is None:
                    continue
                dist = pc - prev
                if dist >= passes:  # at least one instruction per pass in between: far enough
                    continue
                if dst[prev] & reads:
                    c = ctx.exposed_stall([pc])
                    cycles += c
                    pairs.append({"producer_pc": prev, "dependent_pc": pc, "distance_instructions": dist, "passes_required": passes,
                                  "dependent": code.isa[pc], "stall": int(s.stall[pc])})
                    break
        if st.cls[pc] == "mfma":
            recent = (recent + [pc])[-8:]
    if cycles / ctx.total < 0.02:
        return []
    pairs.sort(key=lambda p: -p["stall"])
    return [
        ctx.finding(
            "mfma-dependency",
            f"{len(pairs)} instruction(s) read an MFMA result before its passes complete",
            cycles,
            0.6,
            {"pairs": pairs[:6]},
            "Interleave independent MFMAs (other accumulator tiles) between an MFMA and its consumer, or unroll over more output tiles so each accumulator is reused only after its pass latency.",
            "With the chain broken the dependents' stall should vanish; if it stays, the stall comes from the MFMA pipe being busy, not from the dependency.",
            f"pc {pairs[0]['dependent_pc']} reads pc {pairs[0]['producer_pc']}'s result {pairs[0]['distance_instructions']} instructions later ({pairs[0]['passes_required']} passes needed)",
        )
    ]


@rule(
    "hazard-nops",
    "Hazard bubbles",
    "performance",
    trigger="s_nop / s_sleep / s_setprio / dependency waits take ≥ 2 % of kernel cycles",
    evidence="the hazard instructions with their cycles",
    limits="some nops are required by the ISA; the recoverable part is what independent work could fill",
)
def hazard_nops(ctx):
    pcs = pcs_of_class(ctx, "hazard")
    s = ctx.result.sums
    cyc = sum(int(s.latency[pc]) for pc in pcs)
    cycles = ctx.exposed(pcs)
    if cycles / ctx.total < 0.02:
        return []
    return [
        ctx.finding(
            "hazard-nops",
            f"Hazard bubbles (s_nop and friends) take {cycles / ctx.total:.0%} of cycles",
            cycles,
            0.5,
            {"cycles": cyc, "instructions": [{**ctx.instr(pc), "latency": int(s.latency[pc])} for pc in top(pcs, key=lambda p: int(s.latency[p]))]},
            "Fill hazard windows with independent instructions (interleave two tiles' math, move address arithmetic into the gaps) so the compiler needs fewer s_nop.",
            "After interleaving, the s_nop count in the listing should fall; if the nops remain, they are mandatory hazard spacing for the dependent pairs.",
            f"{len(pcs)} hazard instructions, {cyc:,} cycles",
        )
    ]
