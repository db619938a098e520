"""Rules about instruction scheduling: barriers, dependent MFMAs, hazards."""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np

from attlens.analysis.registry import EXPOSED_TRIGGER_SEMANTICS, rule
from attlens.analysis.regs import is_lds_dma
from attlens.analysis.rules._util import defs_uses, pcs_of_class, rnd, top

_SHAPE = re.compile(r"_(\d+x\d+)x\d+")


@rule(
    "barrier-heavy",
    "Barrier-heavy phases",
    "performance",
    trigger="s_barrier stall ≥ 5 % of traced wave-cycles, of which the arrival skew (each wave's wait beyond the last arriver's) is ≥ 1 %",
    evidence="per barrier pc: its stall, the arrival skew (recoverable) and the barrier's own latency (the last arriver's wait), loop and trip count, whether it guards an LDS write→read dependency (the LDS writes before it and reads after it), the waves that arrive last",
    limits="workgroup membership is inferred: the traced waves released at the same cycle on one CU form one barrier instance; an instance with one traced wave has no skew to measure",
    preconditions=[("multi-wave", "workgroups have more than one wave (a one-wave workgroup never waits at a barrier)")],
    directions=["sync"],
)
def barrier_heavy(ctx):
    rid = "barrier-heavy"
    pcs = pcs_of_class(ctx, "barrier")
    s = ctx.result.sums
    if ctx.stall_of(pcs) / ctx.total < 0.05:
        return []
    tpw = ctx.d.resources.threads_per_workgroup
    ws = (ctx.d.arch.facts or {}).get("wave_size") or 64
    if not ctx.require(rid, "multi-wave", tpw is None or tpw > ws, f"{tpw} threads per workgroup" if tpw else "workgroup size unknown"):
        return []
    recs, w = ctx.d.records, ctx.d.waves
    rows, claims = [], []
    for pc in sorted(pcs, key=lambda p: -int(s.stall[p])):
        skew, base, per_exec = barrier_skew(ctx, pc)
        exposed = ctx.exposed_fraction(pc)
        claims.append((pc, skew * exposed))
        if len(rows) >= 3:
            continue
        rows_of = _barrier_rows(ctx)[pc]
        per_wave = np.bincount(recs.wave[rows_of], weights=recs.stall[rows_of], minlength=w.count)
        count = np.bincount(recs.wave[rows_of], minlength=w.count)
        mean = np.where(count > 0, per_wave / np.maximum(count, 1), np.inf)
        last = np.argsort(mean, kind="stable")[:3]
        rows.append({**ctx.instr(pc), **{k: v for k, v in ctx.loops.where(pc).items() if k != "pc"},
                     "mean_stall_per_execution": rnd(s.stall[pc] / max(s.hit[pc], 1)), "arrival_skew_cycles": int(skew),
                     "skew_per_execution": rnd(skew / max(s.hit[pc], 1)), "own_latency_per_execution": rnd(base),
                     "instances": per_exec, "guards_lds": lds_guard(ctx, pc),
                     "last_arriving_waves": [{"file": w.filenames[i], "mean_stall": rnd(mean[i])} for i in last if np.isfinite(mean[i])]})
    total_skew = sum(c for _, c in claims)
    if total_skew / ctx.total < 0.01:
        return []
    guarded = [r["pc"] for r in rows if r["guards_lds"]]
    free = [r["pc"] for r in rows if not r["guards_lds"] and r.get("loop") is not None]
    r0 = rows[0]
    change = (f"The recoverable part is the arrival skew: at pc {r0['pc']} waves wait {r0['skew_per_execution']:,.0f} cycles per execution for the last "
              f"arriver, of {r0['mean_stall_per_execution']:,.0f} (the barrier's own latency, {r0['own_latency_per_execution']:,.0f}, stays). Balance the "
              "work between the waves of a workgroup (the last-arriving waves set the pace) and move independent work (address math, the next loads) "
              "before the barrier.")
    if guarded:
        g = rows[[r["pc"] for r in rows].index(guarded[0])]["guards_lds"]
        change += (f" The barrier at pc {guarded[0]} separates LDS writes (pcs {g['writes'][:4]}) from reads of the same phase (pcs {g['reads'][:4]}): "
                   "it is required; only the skew can go.")
    if free:
        change += f" Barriers at pcs {free[:4]} guard no LDS write→read in the loop: drop them if they only protected a double-buffered tile."
    return [
        ctx.finding(
            rid,
            f"Barriers hold waves for {ctx.stall_of(pcs) / ctx.total:.0%} of traced wave-cycles; the arrival skew, {total_skew / ctx.total:.1%}, is recoverable",
            0,
            0.6,
            {"barriers": rows, "stall": ctx.stall_of(pcs), "arrival_skew_exposed": int(total_skew)},
            change,
            "Equalize the work of the last-arriving waves: the others' barrier stall should fall by about the skew shown; what remains is the barrier's own latency.",
            f"s_barrier at pc {r0['pc']}: {r0['skew_per_execution']:,.0f} of {r0['mean_stall_per_execution']:,.0f} stall cycles per execution are arrival skew",
            claims=claims,
        )
    ]


def _barrier_rows(ctx) -> dict:
    """{barrier pc: its record indices, ascending}: every barrier's in one pass
    over the records (not one per pc and use)."""
    from attlens.analysis.phases import _rows_of_pcs

    return ctx.memo("barrier_rows", lambda: _rows_of_pcs(ctx.d.records.pc, pcs_of_class(ctx, "barrier"), ctx.d.code.size))


def barrier_skew(ctx, pc: int) -> tuple[float, float, int]:
    """(Σ over executions of the wait beyond the last arriver's, the last arriver's
    median wait, instances) at barrier ``pc``. One instance = the traced waves of
    one CU released together (same end of stall, within 2 time quanta)."""
    recs, w = ctx.d.records, ctx.d.waves
    idx = _barrier_rows(ctx)[pc]
    if not len(idx):
        return 0.0, 0.0, 0
    q = 2 * ((ctx.d.arch.facts or {}).get("time_quantum") or 4)
    wave, stall = recs.wave[idx], recs.stall[idx]  # gathered once: the rows lie far apart
    cu = w.se[wave].astype(np.int64) * 4096 + w.cu[wave]
    release = recs.time[idx] + stall
    order = np.lexsort((release, cu))
    cu, release, stall = cu[order], release[order], stall[order].astype(np.int64)
    new = np.r_[True, (cu[1:] != cu[:-1]) | (release[1:] - release[:-1] > q)]
    gid = np.cumsum(new) - 1
    n = int(gid[-1]) + 1
    low = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(low, gid, stall)
    size = np.bincount(gid, minlength=n)
    multi = size[gid] > 1
    skew = float(np.where(multi, stall - low[gid], 0).sum())
    base = float(np.median(low[size > 1])) if (size > 1).any() else float(np.median(stall))
    return skew, base, int((size > 1).sum())


_LDS_WRITE = ("ds_write", "ds_store", "ds_add", "ds_sub", "ds_max", "ds_min", "ds_and", "ds_or", "ds_xor", "ds_inc", "ds_dec", "ds_cmpst", "ds_wrxchg")
_LDS_READ = ("ds_read", "ds_load")


def lds_guard(ctx, pc: int) -> dict | None:
    """The LDS writes before barrier ``pc`` (since the previous barrier) and the
    LDS reads after it (until the next barrier), wrapping around its loop:
    when both exist, the barrier orders a write→read dependency through LDS."""
    st, isa = ctx.d.static, ctx.d.code.isa
    lp = ctx.loops.loop(pc)
    lo, hi = (lp.first_pc, lp.branch_pc) if lp is not None else (0, ctx.d.code.size - 1)
    span = hi - lo + 1

    def walk(step):
        out, q = [], pc
        for _ in range(span - 1):
            q = lo + (q - lo + step) % span if lp is not None else q + step
            if not (0 <= q < ctx.d.code.size) or st.cls[q] == "barrier":
                break
            out.append(q)
        return out

    writes = [q for q in walk(-1) if st.mnemonic[q].startswith(_LDS_WRITE) or is_lds_dma(isa[q])]
    reads = [q for q in walk(1) if st.mnemonic[q].startswith(_LDS_READ)]
    if writes and reads:
        return {"writes": sorted(writes), "reads": sorted(reads)}
    return None


def mfma_passes(ctx, mnemonic: str) -> int | None:
    table = (ctx.d.arch.facts or {}).get("mfma_passes") or {"4x4": 2, "16x16": 8, "32x32": 16}
    m = _SHAPE.search(mnemonic)
    return table.get(m.group(1)) if m else None


@rule(
    "mfma-dependency",
    "Dependent MFMA chains",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="MFMAs (or VALU ops) that read the result of an MFMA fewer instructions later than its pass count, and stall, for ≥ 2 % of kernel cycles",
    evidence="(producer MFMA pc → dependent pc) pairs, distance in instructions vs the passes required, the dependent's stall, loop",
    limits="register dependencies come from the disassembly text in listing order; pass counts per shape are in the architecture table (approximate)",
    preconditions=[("reads-result", "the dependent instruction reads registers the MFMA writes (from the disassembly)")],
    directions=["compute-schedule"],
)
def mfma_dependency(ctx):
    rid = "mfma-dependency"
    st, code, s = ctx.d.static, ctx.d.code, ctx.result.sums
    mfma_pcs = [pc for pc, c in enumerate(st.cls) if c == "mfma"]
    if not mfma_pcs:
        return []
    pairs, claims, near = [], [], 0
    recent: list[int] = []
    for pc in np.flatnonzero(code.instruction_mask).tolist():
        if st.cls[pc] in ("mfma", "valu") and s.stall[pc] > 0:
            reads = defs_uses(code.isa[pc])[1]
            for prev in reversed(recent):
                passes = mfma_passes(ctx, st.mnemonic[prev])
                if passes is None or pc - prev >= passes:
                    continue
                near += 1
                if defs_uses(code.isa[prev])[0] & reads:
                    c = ctx.exposed_stall([pc])
                    claims.append((pc, c))
                    pairs.append({"producer_pc": prev, "dependent_pc": pc, "distance_instructions": pc - prev, "passes_required": passes,
                                  "dependent": code.isa[pc], "stall": int(s.stall[pc]), "loop": ctx.loops.where(pc).get("loop")})
                    break
        if st.cls[pc] == "mfma":
            recent = (recent + [pc])[-8:]
    if not near:
        return []
    if not ctx.require(rid, "reads-result", bool(pairs), f"{len(pairs)} of {near} close MFMA followers read its result"):
        return []
    if sum(c for _, c in claims) / ctx.total < 0.02:
        return []
    pairs.sort(key=lambda p: -p["stall"])
    return [
        ctx.finding(
            rid,
            f"{len(pairs)} instruction(s) read an MFMA result before its passes complete",
            0,
            0.6,
            {"pairs": pairs[:6]},
            "Interleave independent MFMAs (other accumulator tiles) between an MFMA and its consumer, or unroll over more output tiles so each accumulator is reused only after its pass latency.",
            "With the chain broken the dependents' stall should vanish; if it stays, the stall comes from the MFMA pipe being busy, not from the dependency.",
            f"pc {pairs[0]['dependent_pc']} reads pc {pairs[0]['producer_pc']}'s result {pairs[0]['distance_instructions']} instructions later ({pairs[0]['passes_required']} passes needed)",
            claims=claims,
        )
    ]


# Required wait states between a producer and a dependent (CDNA3 ISA guide,
# "Dependency resolution: required independent instructions", VOP3P-Matrix
# table; and the 94x VALU-writes-SGPR/VCC table). Keys: hazard kind.
_XDL_TO_READ = {2: 5, 4: 7, 8: 11, 16: 19}  # XDL writes VGPR → VALU/VMEM/LDS or MFMA SrcA/B reads it
_XDL_TO_SRCC = {2: 3, 4: 5, 8: 9, 16: 17}  # XDL writes VGPR → MFMA reads it as overlapped SrcC
_SGPR_WRITERS = re.compile(r"^v_(cmp|cmpx|add|sub|subrev|addc|subb|subbrev|div_scale|readlane|readfirstlane|mad_u64|mad_i64)")
_NOP = re.compile(r"^s_nop\s+(0x[0-9a-fA-F]+|\d+)")


def _nop_states(text: str) -> int:
    m = _NOP.match(text.strip())
    return (int(m.group(1), 0) + 1) if m else 0


def _hazard_pair(ctx, prod: int, dep: int) -> tuple[int, str] | None:
    """(required wait states, hazard kind) when ``dep`` must wait after ``prod``."""
    isa, st = ctx.d.code.isa, ctx.d.static
    pw, _ = defs_uses(isa[prod])
    dw, dr = defs_uses(isa[dep])
    m = st.mnemonic[prod]
    if st.cls[prod] == "mfma" and pw & (dr | dw):
        passes = mfma_passes(ctx, m) or 16
        srcc = st.cls[dep] == "mfma" and not (pw & (dr - dw))
        return (_XDL_TO_SRCC if srcc else _XDL_TO_READ).get(passes, 19), f"MFMA ({passes} passes) result → {'MFMA SrcC' if srcc else 'read'}"
    if st.cls[prod] == "valu" and _SGPR_WRITERS.match(m) and any(k in ("s", "vcc", "exec") for k, _ in (pw & dr)) and st.cls[dep] in ("valu", "mfma"):
        lanesel = st.mnemonic[dep].startswith(("v_readlane", "v_writelane"))
        return (4 if lanesel else 2), f"VALU writes SGPR/VCC → {'lane select' if lanesel else 'VALU reads it'}"
    if st.cls[prod] == "valu" and st.cls[dep] == "mfma" and pw & dr:
        return 2, "VALU writes VGPR → MFMA reads it"
    if ("m0", 0) in pw & dr and st.cls[prod] == "salu" and is_lds_dma(isa[dep]):
        return 1, "SALU writes M0 → LDS DMA reads it"
    return None


def hazard_of(ctx, nop_pc: int) -> dict | None:
    """The hazard an s_nop separates: the producer before it (in listing
    order, or before a back edge into it), the dependent after it, and the
    wait states the ISA requires between them."""
    isa = ctx.d.code.isa
    n = ctx.d.code.size
    start = nop_pc
    while start > 0 and _nop_states(isa[start - 1]):
        start -= 1
    after = nop_pc + 1
    while after < n and _nop_states(isa[after]):
        after += 1
    if after >= n or not isa[after]:
        return None
    nops = sum(_nop_states(isa[x]) for x in range(start, after))
    # predecessors: the listing before the nops, and the end of a loop that branches back to them
    tails = [start - 1] + [lp.branch_pc - 1 for lp in ctx.loops.static if lp.first_pc == start]
    for tail in tails:
        between = 0  # instructions between producer and dependent (each one wait state)
        extra_nops = 0
        for prod in range(tail, max(tail - 24, -1), -1):
            if not isa[prod]:
                continue
            k = _nop_states(isa[prod])
            if k:
                extra_nops += k
                continue
            if ctx.d.static.mnemonic[prod].startswith(("s_branch", "s_cbranch")) and prod != tail:
                break
            hit = _hazard_pair(ctx, prod, after)
            if hit is not None:
                req, kind = hit
                provided = nops + extra_nops + between
                if provided > req + 24:  # too far to be what these nops are for
                    break
                return {"producer_pc": prod, "dependent_pc": after, "hazard": kind, "required_wait_states": req,
                        "independent_instructions_between": between, "nop_wait_states": nops,
                        "excess_wait_states": max(0, min(nops, provided - req))}
            between += 1
    return None


UNRECOGNISED_NOP = "s_nop, hazard not recognised"


@rule(
    "hazard-nops",
    "Hazard bubbles",
    "performance",
    trigger="s_nop / s_sleep / s_setprio / dependency waits stall ≥ 2 % of kernel cycles",
    evidence="per hazard kind: the s_nops, their cycles, the wait states the ISA requires between producer and dependent and the excess; loops",
    limits="hazard kinds recognised: MFMA result reads (by passes), VALU writes of SGPR/VCC read by VALU, VALU writes read by MFMA; others are listed as unexplained",
    preconditions=[("excess", "advice to remove s_nops only where they exceed the wait states the ISA requires; otherwise the finding says they are required and only independent instructions placed in the gap recover them")],
    directions=["compute-schedule"],
)
def hazard_nops(ctx):
    rid = "hazard-nops"
    pcs = pcs_of_class(ctx, "hazard")
    s = ctx.result.sums
    if ctx.stall_of(pcs) / ctx.total < 0.02:
        return []
    groups = defaultdict(lambda: {"nops": 0, "cycles": 0, "required_wait_states": set(), "excess_wait_states": 0, "example": None})
    excess_cycles = 0.0
    for pc in pcs:
        h = hazard_of(ctx, pc) if ctx.d.static.mnemonic[pc] == "s_nop" else None
        key = h["hazard"] if h else (UNRECOGNISED_NOP if ctx.d.static.mnemonic[pc] == "s_nop" else ctx.d.static.mnemonic[pc])
        g = groups[key]
        g["nops"] += 1
        g["cycles"] += int(s.stall[pc] + s.idle[pc])
        if h:
            g["required_wait_states"].add(h["required_wait_states"])
            g["excess_wait_states"] += h["excess_wait_states"]
            if h["nop_wait_states"]:
                excess_cycles += ctx.exposed_at(pc) * min(1.0, h["excess_wait_states"] / h["nop_wait_states"])
            if g["example"] is None:
                g["example"] = {"nop_pc": pc, "producer_pc": h["producer_pc"], "producer": ctx.d.code.isa[h["producer_pc"]],
                                "dependent_pc": h["dependent_pc"], "dependent": ctx.d.code.isa[h["dependent_pc"]]}
    rows = sorted(({"hazard": k, **{kk: (sorted(v) if isinstance(v, set) else v) for kk, v in g.items()}} for k, g in groups.items()), key=lambda r: -r["cycles"])
    # rows of a hazard kind not recognised have no requirement to compare with:
    # their excess is unknown, never "none"
    unknown = [r for r in rows if r["hazard"] == UNRECOGNISED_NOP]
    has_excess = any(r["excess_wait_states"] > 0 for r in rows)
    recognised = sum(r["cycles"] for r in rows if r["required_wait_states"])
    ctx.require(rid, "excess", has_excess, f"{sum(r['excess_wait_states'] for r in rows)} wait states in excess of the requirement"
                + (f"; {sum(r['nops'] for r in unknown)} s_nop(s) of unrecognised hazard kinds not judged" if unknown else ""))
    total_cyc = sum(r["cycles"] for r in rows)
    top_row = rows[0]
    if has_excess:
        change = ("Some s_nops exceed the required wait states (excess_wait_states): the excess can be removed; the rest is required spacing that only "
                  "independent instructions placed in the gap can fill.")
        conf = 0.5
    elif recognised:
        change = ("The s_nops of the recognised hazard kinds are the spacing the ISA requires (see required_wait_states): none is in excess. Recover them "
                  "only by placing independent instructions in the gap — e.g. issue several v_cmp before their v_cndmask, or interleave two tiles' math — "
                  "so the compiler needs fewer nops.")
        conf = 0.35
    else:
        change = (f"attlens recognises none of the hazards behind these instructions ({', '.join(r['hazard'] for r in rows[:4])}), so whether they are "
                  "required is not known: check each against the ISA's required wait states for the instruction it follows.")
        conf = 0.25
    if unknown and (has_excess or recognised):
        change += (f" {sum(r['nops'] for r in unknown)} s_nop(s) ({sum(r['cycles'] for r in unknown):,} cycles) guard a hazard kind attlens does "
                   "not recognise: whether they are required is not known.")
    return [
        ctx.finding(
            rid,
            f"Hazard bubbles take {ctx.stall_of(pcs) / ctx.total:.0%} of traced wave-cycles ({top_row['hazard']}: {top_row['nops']} s_nop)",
            0,
            conf,
            {"cycles": total_cyc, "recognised_cycles": recognised, "excess_cycles": int(excess_cycles), "hazards": rows[:6],
             "instructions": [{**ctx.instr(pc), "latency": int(s.latency[pc])} for pc in top(pcs, key=lambda p: int(s.latency[p]), n=3)]},
            change,
            "After interleaving, the s_nop count in the listing should fall; nops that remain between a producer and its dependent with nothing independent to fill them are mandatory.",
            f"{len(pcs)} hazard instructions, {total_cyc:,} cycles; {top_row['hazard']} requires {top_row['required_wait_states'] or '?'} wait states",
            claims=[(pc, ctx.exposed_at(pc)) for pc in pcs],
        )
    ]
