"""Rules about memory latency, memory issue and the waits on memory."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import numpy as np

from attlens.analysis.bandwidth import access_width
from attlens.analysis.occupancy import grid_waves
from attlens.analysis.registry import EXPOSED_TRIGGER_SEMANTICS, rule
from attlens.analysis.regs import is_lds_dma
from attlens.analysis.rules._preconditions import NOT_AT_CEILING as _NOT_AT_CEILING, NOT_ISSUE_BOUND, not_at_ceiling, not_issue_bound  # noqa: F401
from attlens.analysis.rules._util import WIDEST_BYTES, defs_uses, pair_columns, pcs_of_class, rnd, top

# Thresholds (docs/rules.md)
NEAR_USE_MAX_DISTANCE = 8  # instructions between a load and the wait consuming it
MIN_SHARE = 0.02  # of all kernel cycles, for a pattern to be worth a finding
MIN_SLACK_CYCLES = 32  # a load that could have issued this much earlier (not counting other loads' issue) can move up


_LDS_WIDTH = (("b128", 16), ("b96", 12), ("b64", 8), ("b32", 4), ("u16", 2), ("i16", 2), ("b16", 2), ("u8", 1), ("i8", 1), ("b8", 1))


def lds_width(mnem: str) -> int | None:
    """Bytes per lane an LDS read or write moves (``ds_read2_b32``: 2 x 4)."""
    if not mnem.startswith("ds_"):
        return None
    two = mnem.startswith(("ds_read2", "ds_write2", "ds_load_2", "ds_store_2"))
    for suf, w in _LDS_WIDTH:
        if mnem.endswith("_" + suf) or f"_{suf}_" in mnem:
            return w * (2 if two else 1)
    return None


def free_vgprs(ctx) -> tuple[int, int] | None:
    """(VGPRs a wave could add without lowering the waves per SIMD the dispatch
    actually gets, those waves per SIMD): the grid (or the hardware) caps
    residency, so registers up to that level cost nothing."""
    o = ctx.result.occupancy
    f = ctx.d.arch.facts or {}
    if not o.available or not o.vgpr_alloc or not f.get("vgprs_per_simd"):
        return None
    need = o.theoretical_waves_per_simd
    _, gw = grid_waves(ctx.d)
    if gw and f.get("cu_count"):
        need = min(need, max(-(-gw // (f["cu_count"] * f["simds_per_cu"])), 1))
    cap = (f["vgprs_per_simd"] // max(need, 1)) // f["vgpr_granule"] * f["vgpr_granule"]
    cap = min(cap, 2 * f.get("max_vgprs_per_wave", 256) if f.get("unified_agpr") else f.get("max_vgprs_per_wave", 256))
    return max(cap - o.vgpr_alloc, 0), need


def load_cycles(ctx):
    """Wait stall charged to the vector *load* that blocks each wait execution,
    per (producer pc, wait pc), and the load-to-wait distances (instructions)
    of the charged pairs, per producer pc.

    vmcnt retires in order (gfx9: loads and stores alike, FLAT excepted): a
    wait for the oldest ``outstanding - N`` ops ends when the last of them has
    returned and retired. Loads issued together return in issue order, so the
    youngest load it waits for blocks it; but where the code after the wait
    reads only younger loads while an older one with a head start is still
    outstanding (rules/inorder.py ``coupled_waits``), that older load holds it,
    and the stall is charged to the oldest load. Waits on stores only are not
    load waits; waits that include FLAT ops (out of order) split their stall
    evenly over their loads."""
    from attlens.analysis.rules.inorder import coupled_waits

    pairs = ctx.att.pairs
    st = ctx.d.static
    if not len(pairs.prod_rec):
        return {}, {}
    ppc, wpc, first, gid = pair_columns(ctx)
    kinds = np.array([access_width(m)[0] or "" for m in st.mnemonic])
    flat = np.array([m.startswith("flat_") for m in st.mnemonic])
    load_pc = kinds == "load"  # per pc, then gathered per pair: no string per pair
    vm_pc = load_pc | (kinds == "store") | (kinds == "atomic")
    is_load = load_pc[ppc]
    is_vm = vm_pc[ppc]
    ng = int(gid.max()) + 1
    vm_cyc = np.bincount(gid, weights=np.where(is_vm, pairs.stall_share, 0), minlength=ng)
    coupled = np.isin(wpc, np.array(sorted(coupled_waits(ctx)), dtype=np.int64))
    blocks = is_load & _blocker(pairs.prod_rec, first, gid, is_load, coupled)
    flat_vm = flat[ppc] & is_vm if (flat & vm_pc).any() else None  # None: no FLAT op in the code
    rows, charge = _charges(gid, is_load, blocks, vm_cyc, flat_vm)
    return _charged_by_pair(ppc[rows], wpc[rows], charge, ctx.d.code.size), _lists_by_pc(ppc[rows], pairs.distance_instr[rows])


def _blocker(rec: np.ndarray, first: np.ndarray, gid: np.ndarray, is_load: np.ndarray, coupled: np.ndarray) -> np.ndarray:
    """Per pair: its op is the load that blocks its wait execution (``gid``,
    ``first`` its first pair): the youngest (largest record index), the oldest
    where ``coupled`` (a fact of the wait: the same on all its pairs)."""
    rec = rec.astype(np.int64, copy=False)
    starts = np.flatnonzero(first)  # the rows of one wait execution are back to back: reduce each run
    oldest = np.minimum.reduceat(np.where(is_load, rec, np.iinfo(np.int64).max), starts)
    youngest = np.maximum.reduceat(np.where(is_load, rec, -1), starts)
    # chosen per execution, then one gather per pair (not both gathered for every pair)
    return np.where(coupled[starts], oldest, youngest)[gid] == rec


def _charges(gid, is_load, blocks, vm_cyc, flat_vm) -> tuple[np.ndarray, np.ndarray]:
    """(rows, charge > 0) of the pairs charged with their wait execution's
    vector-memory stall ``vm_cyc``: its blocking load (``blocks``), but where
    the execution has a FLAT op (``flat_vm``; out of order) every load an even
    share. ``flat_vm`` None: the code has no FLAT op, nothing is split (no
    per-execution count)."""
    if flat_vm is None:
        rows = np.flatnonzero(blocks)
        charge = vm_cyc[gid[rows]]
    else:
        ng = len(vm_cyc)
        has_flat = np.bincount(gid, weights=flat_vm, minlength=ng)[gid] > 0
        head = blocks & ~has_flat
        rows = np.flatnonzero(head | (is_load & has_flat))
        g = gid[rows]
        n_load = np.bincount(gid, weights=is_load, minlength=ng)
        charge = np.where(head[rows], vm_cyc[g], vm_cyc[g] / np.maximum(n_load[g], 1))
    keep = charge > 0
    return rows[keep], charge[keep]


def _charged_by_pair(ppc: np.ndarray, wpc: np.ndarray, charge: np.ndarray, n_pc: int) -> dict:
    """{(producer pc, wait pc): Σ charge}, keys in the order they first occur
    (a defaultdict(float) filled row by row: bincount adds each pair's
    charges in the same order, from 0.0, so the sums are the same floats)."""
    from attlens.analysis import groups

    key = ppc.astype(np.int64) * n_pc + wpc
    if n_pc * n_pc <= groups.DIRECT_KEYS:  # few possible keys: one table of them, no sort
        uk, _counts, first = groups.key_table(key, n_pc * n_pc)
        sums = np.bincount(key, weights=charge, minlength=n_pc * n_pc)[uk]
    else:
        uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
        sums = np.bincount(inv.ravel(), weights=charge, minlength=len(uk))
    o = np.argsort(first, kind="stable")
    pairs = zip((uk[o] // n_pc).tolist(), (uk[o] % n_pc).tolist())
    return defaultdict(float, zip(pairs, sums[o].tolist()))


def _lists_by_pc(pc: np.ndarray, values: np.ndarray) -> dict:
    """{pc: [its values in row order]}, pcs in the order they first occur (a defaultdict(list))."""
    from attlens.analysis.groups import stable_pc_order

    o = stable_pc_order(pc, int(pc.max()) + 1 if len(pc) else 0)
    sp = pc[o]
    cut = np.flatnonzero(np.r_[True, sp[1:] != sp[:-1], True]) if len(sp) else np.zeros(1, dtype=np.int64)
    lo, hi = cut[:-1], cut[1:]
    vals = values[o].tolist()
    groups = sorted(zip(o[lo].tolist(), sp[lo].tolist(), lo.tolist(), hi.tolist()))  # by each pc's first row
    return defaultdict(list, ((p, vals[a:b]) for _, p, a, b in groups))


def earliest_in_iteration(ctx, pc: int):
    """Where in its loop iteration the load at ``pc`` could issue, from the ISA:
    after the last memory result its address (and M0) depend on through
    register arithmetic (else the top of the iteration), and after the last
    use of its destination registers (LDS DMA: after the iteration's first
    s_barrier, which orders the other waves' reads of the LDS it writes).
    Returns (the pc it could follow, why); the pc is the loop's first pc minus
    one for the top of the iteration, None when the loop body branches before it."""
    from attlens.analysis.regs import address_registers

    isa, st = ctx.d.code.isa, ctx.d.static
    lp = ctx.loops.iterating_loop(pc)
    if lp is None:
        return None, "not in a loop that iterated"
    body = [q for q in range(lp.first_pc, pc) if isa[q]]
    if any(st.mnemonic[q].startswith(("s_cbranch", "s_branch", "s_setpc")) for q in body):
        return None, "the loop body branches before it"
    top = lp.first_pc - 1
    need = set(address_registers(isa[pc])) | ({("m0", 0)} if is_lds_dma(isa[pc]) else set())
    addr, addr_why = top, "its address arithmetic needs only values ready at the top of the iteration"
    for q in reversed(body):
        w, r = defs_uses(isa[q])
        if not (w & need):
            continue
        m = st.mnemonic[q]
        if access_width(m)[0] == "load" or m.startswith(("ds_read", "ds_load", "s_load", "s_buffer_load")):
            # the data is there when the wait that resolves it ends, not when the load issues
            w_pc = next((w for w in sorted(ctx.att.by_wait_pc) if q < w < pc and q in ctx.att.by_wait_pc[w]), q)
            addr, addr_why = w_pc, f"its address needs the data pc {q} loads" + (f" (waited at pc {w_pc})" if w_pc != q else "")
            break
        need = (need - w) | {x for x in r if x[0] in ("v", "s", "m0")}
    dst, dst_why = top, "its destination is free from the top"
    if is_lds_dma(isa[pc]):
        bar = next((q for q in body if st.cls[q] == "barrier"), None)
        if bar is not None:
            dst, dst_why = bar, f"the LDS it writes is free after the s_barrier at pc {bar}"
    else:
        regs = defs_uses(isa[pc])[0]
        last = next((q for q in reversed(body) if (lambda du: (du[0] | du[1]) & regs)(defs_uses(isa[q]))), None)
        if last is not None:
            dst, dst_why = last, f"its destination registers are free after pc {last}"
    return max(addr, dst), f"{addr_why}; {dst_why}"


def iteration_gain(ctx, pc: int, after: int) -> float:
    """Median cycles between the end of the last record at ``after`` before each
    execution of ``pc`` in the same wave (the start of the iteration's first
    record when ``after`` is the loop's first pc minus one) and the execution's
    issue, not counting other vector-memory issue in between (the load would
    queue behind it)."""
    recs = ctx.d.records
    lp = ctx.loops.iterating_loop(pc)
    top = lp is not None and after == lp.first_pc - 1
    mark = lp.first_pc if top else after
    execs = np.flatnonzero(recs.pc == pc)
    marks = np.flatnonzero(recs.pc == mark)
    if not len(execs) or not len(marks):
        return 0.0
    i = np.searchsorted(marks, execs) - 1
    ok = (i >= 0) & (recs.wave[marks[np.maximum(i, 0)]] == recs.wave[execs])
    if not ok.any():
        return 0.0
    m = marks[np.maximum(i, 0)][ok]
    e = execs[ok]
    is_vmem = np.isin(recs.category, (3, 4))
    cs = np.cumsum(np.where(is_vmem, recs.duration, 0))
    since = recs.time[m] if top else recs.time[m] + np.maximum(recs.duration[m], recs.stall[m])
    gap = (recs.time[e] - since) - (cs[e - 1] - cs[m])
    return float(np.median(np.maximum(gap, 0)))


def late_in_iteration(ctx, pc: int, wait_pc: int) -> dict | None:
    """The loads issued with ``pc`` (within a head start of it) that the wait at
    ``wait_pc`` waits for, where in the iteration they could issue instead, and
    how many cycles earlier that is (the smallest over the burst: all must move)."""
    from attlens.analysis.rules.inorder import MIN_HEAD_START, resolved_sets

    if ctx.loops.iterating_loop(pc) is None:
        return None
    sets = resolved_sets(ctx).get(wait_pc)
    if sets is None or pc not in sets[0]:
        burst = [pc]
        ago = {pc: 0.0}
    else:
        resolved, _n, _e, dist = sets
        ago = {q: float(np.median(dist[q][:, 1])) for q in resolved}
        burst = [q for q in resolved if access_width(ctx.d.static.mnemonic[q])[0] == "load" and abs(ago[q] - ago[pc]) < MIN_HEAD_START]
    gains, after_of, why_of = [], {}, {}
    lp = ctx.loops.iterating_loop(pc)
    for q in burst:
        after, why = earliest_in_iteration(ctx, q)
        gains.append(0.0 if after is None or after >= q - 1 else iteration_gain(ctx, q, after))
        after_of[q], why_of[q] = after, why
    after = after_of[pc]
    top = after is not None and after == lp.first_pc - 1
    return {"burst": burst, "wait_pc": wait_pc, "issue_after_pc": None if top else after,
            "issue_after_isa": "the top of the iteration" if top or after is None else ctx.d.code.isa[after],
            "why": why_of[pc], "gain_cycles_median": rnd(min(gains) if gains else 0.0), "issued_cycles_before_wait": rnd(ago.get(pc)),
            "loop_pcs": [lp.first_pc, lp.branch_pc]}


def address_ready(ctx, pc: int, sources_only: bool = False):
    """For every execution of the memory op at ``pc``: (record, cycles it could
    have issued earlier, the pc it could have issued right after).

    It could issue once its sources are ready and its destination registers
    are free: after the last earlier record of the same wave that writes a
    register it reads (for a memory op delivering the value, e.g. an s_load
    delivering the descriptor: the end of the wait that resolved it), or that
    reads or writes a register it writes (the compiler reused them); the
    wave's start when none."""
    d = ctx.d
    recs, w = d.records, d.waves
    writes, reads = defs_uses(d.code.isa[pc])
    conflicts, source_writers = [], set()
    for p in np.flatnonzero(ctx.result.sums.hit > 0).tolist():
        pw, pr = defs_uses(d.code.isa[p])
        if pw & reads:
            conflicts.append(p)
            source_writers.add(p)
        elif (pw | pr) & writes and p != pc and not sources_only:
            conflicts.append(p)
    execs = np.flatnonzero(recs.pc == pc)
    widx = np.flatnonzero(np.isin(recs.pc, np.array(conflicts, dtype=np.int64))) if conflicts else np.zeros(0, dtype=np.int64)
    ready = w.begin[recs.wave[execs]].astype(np.int64)
    writer_pc = np.full(len(execs), -1, dtype=np.int64)
    if len(widx):
        pos = np.searchsorted(widx, execs) - 1
        cand = widx[np.maximum(pos, 0)]
        ok = (pos >= 0) & (cand >= w.rec_start[recs.wave[execs]])
        end = recs.time + np.maximum(recs.duration, recs.stall)
        ready = np.where(ok, end[cand], ready)
        writer_pc = np.where(ok, recs.pc[cand], -1)
        # a memory op's result is there when the wait that resolved it ends
        pairs = ctx.att.pairs
        mem_src = ok & np.isin(recs.pc[cand], np.array(sorted(source_writers), dtype=np.int64))
        if len(pairs.prod_rec) and mem_src.any():
            order = np.argsort(pairs.prod_rec, kind="stable")
            prod_sorted = pairs.prod_rec[order]
            i = np.minimum(np.searchsorted(prod_sorted, cand), len(prod_sorted) - 1)
            found = mem_src & (prod_sorted[i] == cand)
            ready = np.where(found, end[pairs.wait_rec[order[i]]], ready)
        # time spent issuing other vector-memory ops in between is no gain:
        # the load would queue behind them anyway
        is_vmem = np.isin(recs.category, (3, 4))  # VMEM, FLAT
        cs = np.cumsum(np.where(is_vmem, recs.duration, 0))
        vm_between = np.where(ok, cs[np.maximum(execs - 1, 0)] - cs[cand], 0)
        ready = ready + np.maximum(vm_between, 0)
    slack = np.maximum(recs.time[execs] - ready, 0)
    return execs, slack, writer_pc


@rule(
    "load-use-distance",
    "Loads issued too close to their use",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="waits on vector loads hold ≥ 2 % of kernel cycles, from loads whose median load-to-use distance is ≤ 8 instructions",
    evidence="per load: pc, line, loop and trip count, distance in instructions and cycles, the waits it feeds, where its address became ready and how long it sat ready",
    limits="distance is counted in executed instructions of the same wave; vmcnt retires in order, so each wait execution is charged to the oldest load it waits for (the one that blocks it; FLAT waits are split evenly)",
    preconditions=[
        ("loads", "the waited-on producers are vector loads (stores and atomics are never counted as loads)"),
        ("room", "in a loop that iterated, the next iteration's load can be issued a whole iteration ahead, or a load issued late in its iteration could issue ≥ 32 cycles earlier there (its address arithmetic depends on nothing loaded later, its destination is free: registers no longer used, LDS after the iteration's barrier); in straight-line code the load could have issued ≥ 32 cycles earlier: its address ready and its destination registers free (or free to allocate without losing the waves per SIMD the dispatch gets), not counting time spent issuing other memory ops"),
        _NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
    directions=["hide-memory-latency"],
)
def load_use_distance(ctx):
    rid = "load-use-distance"
    cyc, dist = load_cycles(ctx)
    prods = {p.pc: p for p in ctx.att.producers}
    stores_only = sum(p.waited_cycles for p in ctx.att.producers if p.kind in ("store", "atomic"))
    if not cyc and not stores_only:
        return []
    if not ctx.require(rid, "loads", bool(cyc), f"{stores_only:,} wait cycles on stores/atomics are not load waits" if not cyc else "vector-load producers present"):
        return []
    by_p: dict[int, dict[int, float]] = defaultdict(dict)
    for (p, w), c in cyc.items():
        by_p[p][w] = c
    rows, claims = [], Counter()
    no_room = []
    for p, waits in by_p.items():
        ps = prods.get(p)
        # distance of the waits this load blocks
        near = float(np.median(dist[p])) if dist.get(p) else None
        if ps is None or near is None:
            continue
        exposed = {w: c * ctx.exposed_fraction(w) for w, c in waits.items()}
        tot = sum(exposed.values())
        if tot / ctx.total < MIN_SHARE / 4:
            continue
        where = ctx.loops.where(p)
        if near > NEAR_USE_MAX_DISTANCE:
            # far in instructions, but issued later in its iteration than its address and destination allow
            late = late_in_iteration(ctx, p, max(waits, key=waits.get))
            if late is None:
                continue
            if late["gain_cycles_median"] < MIN_SLACK_CYCLES:
                no_room.append(f"pc {p}: in its iteration it could issue only {late['gain_cycles_median']:.0f} cycles earlier "
                               f"(after {late['issue_after_isa'] if late['issue_after_pc'] is None else 'pc ' + str(late['issue_after_pc'])}: {late['why']})")
                continue
            # moving it up by the gain recovers at most the gain per wait execution it blocks
            scale = min(1.0, late["gain_cycles_median"] * len(dist[p]) / tot) if tot else 0.0
            take = {w: c * scale for w, c in exposed.items()}
            for w, c in take.items():
                claims[w] += c
            rows.append((p, ps, sum(take.values()), "earlier-in-iteration", where, late, sorted(waits, key=lambda w: -waits[w]), near))
            continue
        if ctx.loops.in_loop(p):
            lever, take = "next-iteration", exposed
            extra = {}
        else:
            execs, slack, wpc = address_ready(ctx, p)
            med = float(np.median(slack)) if len(slack) else 0.0
            ready_pc = Counter(wpc.tolist()).most_common(1)[0][0] if len(wpc) else -1
            barrier = next((q for q in range(max(ready_pc, 0), p) if ctx.d.static.cls[q] == "barrier"), None)
            extra = {"address_ready_at_pc": None if ready_pc < 0 else int(ready_pc), "address_ready_isa": ctx.d.code.isa[ready_pc] if ready_pc >= 0 else "wave start",
                     "sat_ready_cycles_median": rnd(med), "barrier_between": barrier}
            lever = "earlier-in-wave"
            if med < MIN_SLACK_CYCLES:
                why = f"pc {p}: could issue only {med:.0f} cycles earlier (after pc {ready_pc})"
                _, src_slack, src_pc = address_ready(ctx, p, sources_only=True)
                if not (len(src_slack) and np.median(src_slack) >= MIN_SLACK_CYCLES):
                    no_room.append(why)
                    continue
                nd = len(defs_uses(ctx.d.code.isa[p])[0])
                free = free_vgprs(ctx)
                why += (f"; its address is ready {np.median(src_slack):,.0f} cycles earlier but its destination registers are still in use: "
                        f"moving it needs {nd} more VGPRs")
                if free is None or nd > free[0]:
                    no_room.append(why + (f" and only {free[0]} are free without losing resident waves" if free else ""))
                    continue
                med = float(np.median(src_slack))
                lever = "earlier-with-registers"
                sp = Counter(src_pc.tolist()).most_common(1)[0][0] if len(src_pc) else -1
                extra.update({"address_ready_at_pc": None if sp < 0 else int(sp), "address_ready_isa": ctx.d.code.isa[sp] if sp >= 0 else "wave start",
                              "destination_free_at_pc": int(ready_pc) if ready_pc >= 0 else None,
                              "sat_ready_cycles_median": rnd(med), "extra_vgprs": nd, "vgprs_free_without_losing_waves": free[0], "resident_waves_per_simd": free[1]})
            # moving the load up by its slack recovers at most the slack per execution
            per_exec_cap = med * int(ctx.result.sums.hit[p])
            scale = min(1.0, per_exec_cap / tot) if tot else 0.0
            take = {w: c * scale for w, c in exposed.items()}
        for w, c in take.items():
            claims[w] += c
        rows.append((p, ps, sum(take.values()), lever, where, extra, sorted(waits, key=lambda w: -waits[w]), near))
    if not rows and not no_room:
        return []  # no near-use load worth a finding
    detail = (f"{len(rows)} load(s) in an iterated loop or with room to move" + (f"; no room: {'; '.join(no_room[:3])}" if no_room else "")) if rows else "no room: " + "; ".join(no_room[:3])
    if not ctx.require(rid, "room", bool(rows), detail):
        return []
    cycles = sum(claims.values())
    if cycles / ctx.total < MIN_SHARE:
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    best = top(rows, key=lambda r: r[2])
    levers = {r[3] for r in best}
    lp = next((r[4] for r in best if r[3] == "next-iteration" and "loop_pcs" in r[4]), None)
    change = []
    if "next-iteration" in levers:
        # a pc that repeats in a loop the branch decoder did not see has no loop range to name
        loop_text = (f"the loop at pcs {lp['loop_pcs'][0]}–{lp['loop_pcs'][1]} runs {lp['trips_mean']} times per entry" if lp is not None
                     else "the loads repeat in each wave, in a loop no backward branch of the listing closes")
        change.append(
            f"Prefetch: issue the next iteration's loads before this iteration's compute ({loop_text}), "
            "or double-buffer so each wait lands a full iteration after its load."
        )
        dma = [r[0] for r in best if r[3] == "next-iteration" and is_lds_dma(ctx.d.code.isa[r[0]])]
        if dma:
            ws = (ctx.d.arch.facts or {}).get("wave_size") or 64
            wpw = grid_waves(ctx.d)[0] or 1
            extra_lds = sum((access_width(ctx.d.static.mnemonic[p])[1] or 0) * ws * wpw for p in dma)
            lds = ctx.d.resources.lds_bytes
            per_cu = (ctx.d.arch.facts or {}).get("lds_bytes_per_cu")
            change.append(
                f"Loads {dma[:4]} write LDS directly (LDS DMA): a second buffer needs about {extra_lds:,} more LDS bytes per workgroup "
                f"(these loads' bytes per iteration, full EXEC assumed) on top of {lds if lds is not None else '?'} B"
                + (f", of {per_cu // 1024} KiB per CU: check that occupancy does not drop." if per_cu else ".")
            )
    if "earlier-with-registers" in levers:
        r = next(r for r in best if r[3] == "earlier-with-registers")
        change.append(
            f"Issue pc {r[0]} (and loads like it) earlier into fresh registers: its address is ready a median {r[5]['sat_ready_cycles_median']:,.0f} cycles "
            f"before it issues, but it reuses registers still in use; {r[5]['extra_vgprs']} more VGPRs cost no occupancy here "
            f"({r[5]['vgprs_free_without_losing_waves']} are free while keeping the {r[5]['resident_waves_per_simd']} waves/SIMD the grid provides)."
        )
    if "earlier-in-iteration" in levers:
        r = next(r for r in best if r[3] == "earlier-in-iteration")
        x = r[5]
        change.append(
            f"In the loop at pcs {x['loop_pcs'][0]}–{x['loop_pcs'][1]} the load(s) at pcs {x['burst'][:6]} issue a median {x['issued_cycles_before_wait']:,.0f} cycles "
            f"before the wait at pc {x['wait_pc']} that waits for them: issue them "
            + (f"right after pc {x['issue_after_pc']} (`{x['issue_after_isa']}`)" if x["issue_after_pc"] is not None else "at the top of the iteration")
            + f" ({x['why']}), with the address arithmetic they need, so they are in flight a median {x['gain_cycles_median']:,.0f} cycles longer."
        )
    if "earlier-in-wave" in levers:
        r = next(r for r in best if r[3] == "earlier-in-wave")
        change.append(
            f"Straight-line code (no loop to prefetch across): issue the load earlier in the same wave — pc {r[0]} could issue right after "
            f"{'pc ' + str(r[5]['address_ready_at_pc']) + ' (' + r[5]['address_ready_isa'].split()[0] + ')' if r[5]['address_ready_at_pc'] is not None else 'the wave starts'}"
            f" (its address is ready and its destination registers free there), a median {r[5]['sat_ready_cycles_median']:,.0f} cycles before it issues; "
            "hoist it above the independent work in between"
            + (f", across the s_barrier at pc {r[5]['barrier_between']} (legal unless it reads global data other waves of the workgroup write before the barrier)." if r[5].get("barrier_between") is not None else ".")
        )
    p0 = best[0]
    return [
        ctx.finding(
            rid,
            (f"{len(rows)} vector load(s) are consumed {int(min(r[7] for r in best))}–{int(max(r[7] for r in best))} instructions after issue "
             if all(r[3] != "earlier-in-iteration" for r in best) else
             f"{len({q for r in rows for q in (r[5].get('burst') or [r[0]])})} vector load(s) issue later in their loop iteration than their address "
             "and destination allow ")
            + f"({cycles / ctx.total:.1%} of traced wave-cycles)",
            0,
            0.8 if min(r[7] for r in best) <= 4 else (0.6 if any(r[3] == "earlier-in-iteration" for r in best) else 0.7),
            {
                "loads": [
                    {**ctx.instr(p), "lever": lever, "loop": where.get("loop"), "trips_mean": where.get("trips_mean"),
                     "recoverable_cycles": int(c), "distance_instructions_median": rnd(nd),
                     "distance_cycles_median": rnd(ps.distance_cycles_median), "waits": ws[:3], **extra}
                    for p, ps, c, lever, where, extra, ws, nd in best
                ],
            },
            " ".join(change),
            "Move the load up by the distance shown; if the wait it feeds does not shrink, the latency is bandwidth- or queue-bound, not distance-bound (check L2/HBM counters).",
            (f"{ctx.d.code.isa[p0[0]].split()[0]} at pcs {p0[5]['burst'][:4]} could issue {p0[5]['gain_cycles_median']:,.0f} cycles earlier in their iteration, "
             f"{int(p0[2]):,} cycles recoverable" if p0[3] == "earlier-in-iteration" else
             f"{ctx.d.code.isa[p0[0]].split()[0]} at pc {p0[0]} ({'loop' if p0[3] == 'next-iteration' else 'straight-line'}) used {p0[7]:.0f} instructions after issue, {int(p0[2]):,} cycles recoverable"),
            claims=list(claims.items()),
        )
    ]


@rule(
    "load-mfma-interleave",
    "Loads interleaved one-for-one with MFMA",
    "performance",
    trigger="an iterated loop whose VMEM loads and MFMAs alternate (ratio 1:2 to 2:1, ≥ 60 % alternation) while the loads stall at issue for ≥ 2 % of kernel cycles",
    evidence="loop pcs and trip count, load and MFMA counts, alternation, load issue stall",
    limits="works on the static order of the looped instructions",
    preconditions=[
        ("in-loop", "the loads and MFMAs are in a loop that iterated (grouping is per iteration)"),
        _NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
    directions=["hide-memory-latency"],
)
def load_mfma_interleave(ctx):
    rid = "load-mfma-interleave"
    st = ctx.d.static
    best = None
    for lp in ctx.loops.loops:
        seq = [(pc, st.cls[pc]) for pc in ctx.loops.body(lp) if st.cls[pc] in ("vmem_load", "mfma")]
        n_load = sum(1 for _, c in seq if c == "vmem_load")
        n_mfma = len(seq) - n_load
        if n_load < 2 or n_mfma < 2 or not (0.5 <= n_load / n_mfma <= 2):
            continue
        alternations = sum(1 for a, b in zip(seq, seq[1:]) if a[1] != b[1])
        if alternations < 0.6 * 2 * min(n_load, n_mfma):
            continue
        loads = [pc for pc, c in seq if c == "vmem_load"]
        cand = (ctx.exposed_stall(loads), lp, loads, n_load, n_mfma, alternations)
        if best is None or cand[0] > best[0]:
            best = cand
    if best is None:
        return []
    stall, lp, loads, n_load, n_mfma, alternations = best
    if not ctx.require(rid, "in-loop", lp.iterated, f"loop {lp.id} (pcs {lp.first_pc}–{lp.branch_pc}) taken {lp.taken} times"):
        return []
    if ctx.stall_of(loads) / ctx.total < MIN_SHARE:
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    s = ctx.result.sums
    return [
        ctx.finding(
            rid,
            f"{n_load} loads alternate with {n_mfma} MFMAs in the loop and stall at issue",
            0,
            0.6,
            {"loop_pcs": [lp.first_pc, lp.branch_pc], "trips_mean": rnd(lp.trips_mean, 2), "loads": n_load, "mfmas": n_mfma, "alternations": alternations,
             "load_issue_stall": ctx.stall_of(loads), "top_loads": [ctx.instr(pc) for pc in top(loads, key=lambda p: int(s.stall[p]), n=3)]},
            "Group the loads into one burst per iteration (or per stage) ahead of the MFMA block, so each load has the MFMAs of a whole stage to hide behind.",
            "After grouping, the load issue stall should move into a single wait before the MFMA block; if total loop time does not drop, the MFMA pipe was the bottleneck.",
            f"loads alternate with MFMAs ({alternations} alternations) in the loop at pcs {lp.first_pc}–{lp.branch_pc}",
            claims=[(pc, ctx.exposed_at(pc)) for pc in loads],
        )
    ]


@rule(
    "vmem-backpressure",
    "Narrow memory instructions stall at issue",
    "performance",
    trigger="vector loads/stores narrower than 128 bit per lane that a wider access could replace stall at issue for ≥ 5 % of kernel cycles",
    evidence="the stalled narrow instructions with their width, stall and loop; the issue stall on already-128-bit ones and on ones that cannot be widened",
    limits="issue stall means the memory queues were full; widening cuts the number of requests for the same bytes, it does not add bandwidth",
    preconditions=[
        ("narrow", "the instructions that stall are loads or stores narrower than 128 bit per lane whose width divides 16 B, so 16 // width "
                   "adjacent elements fit one dwordx4 / b128 access (not 128-bit already, not atomics, not dwordx3, not LDS-DMA loads)"),
        _NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
    directions=["fewer-memory-requests"],
)
def vmem_backpressure(ctx):
    rid = "vmem-backpressure"
    pcs = pcs_of_class(ctx, "vmem_load", "vmem_store", "vmem_atomic")
    s = ctx.result.sums
    if ctx.stall_of(pcs) / ctx.total < 0.05:
        return []
    kinds = {pc: access_width(ctx.d.static.mnemonic[pc]) for pc in pcs}
    widths = {pc: w for pc, (_, w) in kinds.items()}

    def widenable(pc) -> bool:
        kind, w = kinds[pc]
        return (kind in ("load", "store") and w is not None and w < WIDEST_BYTES and WIDEST_BYTES % w == 0
                and not is_lds_dma(ctx.d.code.isa[pc]))

    narrow = [pc for pc in pcs if widenable(pc)]
    wide_stall = ctx.stall_of([pc for pc in pcs if widths[pc] == WIDEST_BYTES])
    fixed_stall = ctx.stall_of([pc for pc in pcs if widths[pc] != WIDEST_BYTES and not widenable(pc)])
    narrow_stall = ctx.stall_of(narrow)
    if not ctx.require(rid, "narrow", narrow_stall / ctx.total >= 0.05,
                       f"{narrow_stall:,} issue-stall cycles on narrower instructions, {wide_stall:,} on 128-bit ones"
                       + (f", {fixed_stall:,} on ones that cannot be widened (atomics, dwordx3, LDS-DMA, unknown width)" if fixed_stall else "")):
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    worst = top(narrow, key=lambda p: int(s.stall[p]))
    by_width = Counter()
    for pc in narrow:
        by_width[widths[pc]] += int(s.hit[pc])
    w0 = widths[worst[0]]
    return [
        ctx.finding(
            rid,
            f"Memory instructions of {'/'.join(f'{w} B' for w in sorted(by_width))} per lane stall at issue (queue full)",
            0,
            0.7,
            {"issue_stall_narrow": narrow_stall, "issue_stall_128bit": wide_stall, "issue_stall_not_widenable": fixed_stall,
             "executions_by_bytes_per_lane": {str(k): v for k, v in sorted(by_width.items())},
             "instructions": [{**ctx.instr(pc), "bytes_per_lane": widths[pc]} for pc in worst]},
            f"Move the same bytes with fewer instructions: each lane of pc {worst[0]} moves {w0} B; load/store {WIDEST_BYTES // w0} adjacent elements per lane "
            "with one dwordx4 (128-bit) access, so each request covers full cache lines.",
            "If the same bytes moved by 128-bit instructions do not cut the issue stall, the limit is bandwidth: compare with L2/HBM counters.",
            f"{ctx.d.code.isa[worst[0]].split()[0]} at pc {worst[0]} ({w0} B per lane) stalls {int(s.stall[worst[0]]):,} cycles at issue",
            claims=[(pc, ctx.exposed_at(pc)) for pc in narrow],
        )
    ]


@rule(
    "lds-to-mfma",
    "LDS reads consumed immediately by MFMA",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="lgkm waits on ds_read/ds_load producers followed within 2 instructions by an MFMA that reads their data, for ≥ 2 % of kernel cycles",
    evidence="wait pcs, their ds_read producers, the MFMA that follows and the registers it reads from them, loop and trip count",
    limits="looks at the static next instructions after the wait",
    preconditions=[("reads-lds-data", "the MFMA after the wait reads registers the waited ds_read wrote (a true dependency)")],
    directions=["lds"],
)
def lds_to_mfma(ctx):
    rid = "lds-to-mfma"
    st, isa = ctx.d.static, ctx.d.code.isa
    rows, claims, seen = [], [], 0
    for wpc, prods in ctx.att.by_wait_pc.items():
        lds = {p: c for p, c in prods.items() if st.cls[p] == "lds" and st.mnemonic[p].startswith(("ds_read", "ds_load"))}
        if not lds:
            continue
        nxt = [p for p in range(wpc + 1, min(wpc + 3, len(st.cls))) if st.cls[p] == "mfma"]
        if not nxt:
            continue
        seen += 1
        written = set().union(*(defs_uses(isa[p])[0] for p in lds))
        used = defs_uses(isa[nxt[0]])[1] & written
        if not used:
            continue
        c = sum(lds.values()) * ctx.exposed_fraction(wpc)
        claims.append((wpc, c))
        rows.append({"wait_pc": wpc, "wait": isa[wpc], "mfma_pc": nxt[0], "lds_producers": sorted(lds), "exposed_cycles": int(c)})
    if not seen:
        return []
    if not ctx.require(rid, "reads-lds-data", bool(rows), f"{len(rows)} of {seen} wait→MFMA pairs read the waited data"):
        return []
    if sum(c for _, c in claims) / ctx.total < MIN_SHARE:
        return []
    rows.sort(key=lambda r: -r["exposed_cycles"])
    # width advice only for reads that are narrower than 128 bit per lane
    prods = sorted({p for r in rows for p in r["lds_producers"]})
    widths = {p: lds_width(st.mnemonic[p]) for p in prods}
    narrow = [p for p in prods if (widths[p] or WIDEST_BYTES) < WIDEST_BYTES]
    width_text = (f" pcs {narrow[:6]} read {'/'.join(f'{w} B' for w in sorted({widths[p] for p in narrow}))} per lane: ds_read_b128 would need fewer reads."
                  if narrow else " Its reads are already 128 bit per lane (ds_read_b128): fewer or wider reads are not the lever.")
    cycles = sum(c for _, c in claims)
    return [
        ctx.finding(
            rid,
            f"{len(rows)} LDS wait(s) feed an MFMA directly ({cycles / ctx.total:.1%} of traced wave-cycles exposed)",
            0,
            0.7,
            {"waits": rows[:5], "lds_read_bytes_per_lane": {str(p): w for p, w in widths.items()}},
            "Software-pipeline the LDS reads: read the fragments for the next MFMA group before issuing the current one, so the lgkm wait covers a whole MFMA group." + width_text,
            "After pipelining, the stall at these waits should drop while MFMA issue rises; if it does not, LDS bandwidth (bank conflicts) is the limit.",
            f"the wait at pc {rows[0]['wait_pc']} holds the MFMA at pc {rows[0]['mfma_pc']} for {rows[0]['exposed_cycles']:,} exposed cycles",
            claims=claims,
        )
    ]


@rule(
    "drain-to-zero",
    "Waits that drain a counter to zero",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="a count-0 wait inside an iterated loop that resolves ≥ 2 memory ops per execution on average, holding ≥ 2 % of kernel cycles",
    evidence="wait pcs, producers per execution, the ops the next instructions need, loop and trip count, avoidable cycles",
    limits="register dependencies come from the disassembly text; the avoidable share assumes the ops complete in issue order",
    preconditions=[
        ("in-loop", "the wait is in a loop that iterated"),
        ("partial-suffices", "every drained op writes registers, and the first instruction after the wait that reads any of them reads only older ops' results, so a partial count would let it start sooner"),
        _NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
    directions=["hide-memory-latency"],
)
def drain_to_zero(ctx):
    from attlens.model.isa import waitcnt_fields

    rid = "drain-to-zero"
    pairs = ctx.att.pairs
    isa, st = ctx.d.code.isa, ctx.d.static
    rows, claims, candidates, needs_all, opaque = [], [], 0, [], []
    pairs_at = np.bincount(ctx.d.records.pc[pairs.wait_rec], minlength=ctx.d.code.size)  # per wait pc, in one pass (not one per wait)
    for wpc, prods in ctx.att.by_wait_pc.items():
        f = waitcnt_fields(isa[wpc])
        if not f or any(v != 0 for v in f.values()):
            continue
        execs = int(ctx.result.sums.hit[wpc])
        n_pairs = int(pairs_at[wpc])
        per_exec = n_pairs / max(execs, 1)
        if per_exec < 2:
            continue
        candidates += 1
        if not ctx.loops.in_loop(wpc):
            continue
        # which producers does the first consumer after the wait read?
        order = sorted(prods)  # static order approximates issue order
        written = {p: defs_uses(isa[p])[0] for p in order}
        if not all(written.values()):
            opaque.append(wpc)  # stores / LDS DMA: who needs them is not visible in registers
            continue
        needed = []
        for q in range(wpc + 1, min(wpc + 24, ctx.d.code.size)):
            if not isa[q] or st.cls[q] == "wait":
                break
            reads = defs_uses(isa[q])[1]
            needed = [p for p in order if written[p] & reads]
            if needed:
                break
        if not needed or needed[-1] == order[-1]:
            needs_all.append(wpc)
            continue  # the youngest op is needed at once (or no consumer is visible): the drain is required
        c = sum(prods.values()) * ctx.exposed_fraction(wpc) * (1 - 1 / per_exec)
        claims.append((wpc, c))
        lp = ctx.loops.where(wpc)
        rows.append({"wait_pc": wpc, "wait": isa[wpc], "producers_per_execution": round(per_exec, 2), "needed_next": needed,
                     "loop": lp.get("loop"), "trips_mean": lp.get("trips_mean"), "avoidable_cycles": int(c)})
    if not candidates:
        return []
    if not ctx.require(rid, "in-loop", bool(rows or needs_all or opaque), f"{len(rows) + len(needs_all) + len(opaque)} of {candidates} draining waits are in an iterated loop"):
        return []
    detail = "; ".join(x for x in (
        f"{len(rows)} wait(s) whose next instructions need only older ops" if rows else "",
        f"the first consumer after wait pc(s) {needs_all[:3]} reads the youngest op" if needs_all else "",
        f"the ops drained at pc(s) {opaque[:3]} write LDS or memory, not registers: which one is needed next is not visible" if opaque else "") if x)
    if not ctx.require(rid, "partial-suffices", bool(rows), detail):
        return []
    if sum(c for _, c in claims) / ctx.total < MIN_SHARE:
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    rows.sort(key=lambda r: -r["avoidable_cycles"])
    return [
        ctx.finding(
            rid,
            f"{len(rows)} loop wait(s) drain their counter to 0 over several outstanding ops",
            0,
            0.4,
            {"waits": rows[:5]},
            "Wait only for the oldest ops the next instructions need (vmcnt(N)/lgkmcnt(N) with N = younger ops still allowed in flight), and consume results in issue order.",
            "With a partial count the wait's stall should shrink by about the share shown; if it does not, the ops complete out of order or together.",
            f"the wait at pc {rows[0]['wait_pc']} resolves {rows[0]['producers_per_execution']} ops per execution; the next instructions need only the older ones",
            claims=claims,
        )
    ]


@rule(
    "crosslane-serialized",
    "Cross-lane reductions serialized on the LDS counter",
    "performance",
    trigger="ds_swizzle/ds_bpermute/ds_permute stall plus the wait cycles charged to them ≥ 3 % of kernel cycles",
    evidence="cross-lane pcs, their issue stall and the waits on them, loop and trip count, DPP instruction count",
    limits="DPP ops are counted as evidence, not charged: they are VALU and need no wait",
    preconditions=[("serialized", "the cross-lane ops are waited on one at a time (≤ 1.5 resolved per wait execution on average); batched ones already share their waits")],
    directions=["lds"],
)
def crosslane(ctx):
    pcs = pcs_of_class(ctx, "lds_crosslane")
    if not pcs:
        return []
    s = ctx.result.sums
    waited = {p.pc: p for p in ctx.att.producers if p.pc in pcs}
    claims = [(pc, ctx.exposed_at(pc)) for pc in pcs]
    for p in waited.values():
        claims += [(w, c * ctx.exposed_fraction(w)) for w, c in p.waits.items()]
    raw = ctx.stall_of(pcs) + sum(p.waited_cycles for p in waited.values())
    if raw / ctx.total < 0.03:
        return []
    execs = {w: int(s.hit[w]) for p in waited.values() for w in p.waits}
    per_exec = sum(p.pairs for p in waited.values()) / max(sum(execs.values()), 1)
    if not ctx.require("crosslane-serialized", "serialized", per_exec <= 1.5, f"{per_exec:.2f} cross-lane ops resolved per wait execution"):
        return []
    dpp = sum(1 for pc, c in enumerate(ctx.d.static.cls) if c == "valu" and ("dpp" in ctx.d.code.isa[pc] or "row_" in ctx.d.code.isa[pc]))
    return [
        ctx.finding(
            "crosslane-serialized",
            f"{len(pcs)} cross-lane LDS ops and their waits stall {raw / ctx.total:.0%} of traced wave-cycles",
            0,
            0.6,
            {"instructions": [{**ctx.instr(pc), "waited_on": int(waited[pc].waited_cycles) if pc in waited else 0} for pc in top(pcs, key=lambda p: int(s.latency[p]))],
             "dpp_instructions_listed": dpp},
            "Do the reduction in registers: DPP row/quad moves (and v_permlane16/32_swap on gfx950) instead of ds_swizzle/ds_bpermute, or batch several reductions so they share one lgkm wait.",
            "After the change the lgkm waits after the reductions should disappear; if the VALU time added exceeds the wait saved, keep the LDS path.",
            f"{len(pcs)} cross-lane ops each followed by an lgkm wait",
            claims=claims,
        )
    ]


def _sgpr_slots(text: str) -> int:
    """SGPRs an s_load's destination takes, with its alignment padding (x2: 2, x4 and wider: a multiple of 4)."""
    n = len([r for r in defs_uses(text)[0] if r[0] == "s"])
    return n + (0 if n <= 2 else 3)


def spare_sgprs(ctx) -> dict | None:
    """SGPRs the kernel leaves free, counted from the ISA: the addressable count
    minus the highest SGPR the listing names (+ 6 for VCC, FLAT_SCRATCH,
    XNACK_MASK; the metadata's count is the granulated allocation, not the use),
    keeping the waves per SIMD the SGPR file allows (file / granule)."""
    f = ctx.d.arch.facts or {}
    res, o = ctx.d.resources, ctx.result.occupancy
    addressable = f.get("max_sgprs_per_wave")
    if not addressable or not res.isa_sgprs:
        return None
    used = res.isa_sgprs + 6
    free = max(addressable - used, 0)
    waves = o.theoretical_waves_per_simd if o.available else None
    per_simd, gran = f.get("sgprs_per_simd"), f.get("sgpr_granule") or 16
    if per_simd and waves:
        while free and per_simd // (-(-(used + free) // gran) * gran) < waves:
            free -= 1  # more SGPRs would lower the waves per SIMD
    return {"used": used, "addressable": addressable, "free": free, "waves_per_simd": waves}


# Kernel-argument preloading fills user SGPRs: 16 on gfx9, 2 of them the
# kernarg segment pointer, so at most 14 dwords (56 B) of arguments.
PRELOAD_MAX_BYTES = 56
_SLOAD = re.compile(r"^s_load_dword(x(\d+))?\s+[^,]+,\s*s\[0:1\],\s*(0x[0-9a-fA-F]+|\d+)")


def _kernarg_span(text: str) -> tuple[int, int] | None:
    """(byte offset, bytes) of an s_load from the kernarg pointer s[0:1]."""
    m = _SLOAD.match(text.strip())
    if not m:
        return None
    return int(m.group(3), 0), 4 * int(m.group(2) or 1)


@rule(
    "smem-wait",
    "Scalar-memory waits",
    "performance",
    trigger="waits on scalar loads (kernel arguments, descriptors) ≥ 10 % of the kernel's stall and ≥ 3 % of its cycles",
    evidence="scalar producers with the cycles waited on them, which are already first before a single wait and which come later with bases ready from the start, kernel-argument offsets, loops",
    limits="the first wait on kernel arguments is launch latency: only argument preloading removes it, and preloading fits 14 SGPRs (56 B) of arguments",
    preconditions=[
        ("not-first", "hoist/batch advice only for scalar loads issued after the first wait whose base registers are ready from the start and whose "
                      "destination SGPRs nothing reads or writes between the first wait and the load, or can be renamed to SGPRs the kernel "
                      "leaves free (counted from the ISA) without lowering its waves per SIMD (≥ 1 % of cycles)"),
        ("preloadable", "preloading advice only on gfx942/gfx950 and for arguments within the first 56 B (14 user SGPRs); otherwise the first wait is launch latency with nothing to change in the kernel"),
    ],
    directions=["scalar-latency"],
)
def smem_wait(ctx):
    rid = "smem-wait"
    b = ctx.result.breakdown
    cyc = b.by_class_stall["wait_smem"]
    if not b.total_stall or cyc / b.total_stall < 0.10:
        return []
    prods = [p for p in ctx.att.producers if p.wait_class == "wait_smem"]
    if sum(p.waited_cycles for p in prods) / ctx.total < 0.03:
        return []
    isa, st = ctx.d.code.isa, ctx.d.static
    first_wait = next((pc for pc in range(ctx.d.code.size) if st.cls[pc] == "wait"), ctx.d.code.size)
    leading = [p for p in prods if p.pc < first_wait]
    later = [p for p in prods if p.pc >= first_wait]
    lead_waits = sorted({w for p in leading for w in p.waits})
    # a later s_load can join the first batch when its base registers are not
    # written before it and its destination registers are neither read nor
    # written between the first wait and it (moved up, it would clobber them)
    hoistable, clobbers = [], []
    for p in later:
        writes, reads = defs_uses(isa[p.pc])
        if any(defs_uses(isa[q])[0] & reads for q in range(p.pc) if isa[q]):
            continue
        if any((lambda du: (du[0] | du[1]) & writes)(defs_uses(isa[q])) for q in range(first_wait, p.pc) if isa[q]):
            clobbers.append(p)
            continue
        hoistable.append(p)
    # destinations still in use: renameable when the kernel has SGPRs to spare
    spare = spare_sgprs(ctx)
    need = sum(_sgpr_slots(isa[p.pc]) for p in clobbers)
    renamed = clobbers if clobbers and spare is not None and need <= spare["free"] else []
    hoistable += renamed
    hoist_cycles = sum(p.waited_cycles for p in hoistable)
    lead_cycles = sum(p.waited_cycles for p in leading)
    stuck = [p.pc for p in later if p not in hoistable and p not in clobbers]
    kept = [p.pc for p in clobbers if p not in renamed]
    hoist = ctx.require(rid, "not-first", hoist_cycles / ctx.total >= 0.01,
                        f"{len(hoistable)} later scalar load(s) with bases ready from the start wait {hoist_cycles:,} cycles"
                        + (f" (pcs {[p.pc for p in hoistable][:8]})" if hoistable else "")
                        + (f"; pcs {stuck[:6]} depend on earlier results" if stuck else "")
                        + (f"; pcs {[p.pc for p in renamed][:6]} write SGPRs still in use after the first wait, renameable: {need} of the "
                           f"{spare['free']} SGPRs the kernel leaves free" if renamed else "")
                        + (f"; pcs {kept[:6]} write SGPRs still in use after the first wait"
                           + (f" and need {need} SGPRs to rename, {spare['free']} are free" if spare else " (free SGPRs unknown)") if kept else "")
                        + (f"; pcs {[p.pc for p in leading]} are already first, one wait at pc {lead_waits[0]}" if len(lead_waits) == 1 else ""))
    spans = [_kernarg_span(isa[p.pc]) for p in leading]
    tgt = ctx.d.arch.row_key
    end = max((o + n for o, n in (x for x in spans if x)), default=None)
    fits = tgt in ("gfx942", "gfx950") and bool(spans) and all(spans) and end is not None and end <= PRELOAD_MAX_BYTES
    preload = lead_cycles / ctx.total >= 0.03 and ctx.require(
        rid, "preloadable", fits,
        f"{tgt}; first-batch arguments end at byte {end}" if end is not None else f"{tgt}; first-batch loads are not kernel-argument loads")
    if not hoist and not (leading and lead_cycles / ctx.total >= 0.03):
        return []
    claims, change, parts = [], [], []
    if hoist:
        claims += [(w, c * ctx.exposed_fraction(w)) for p in hoistable for w, c in p.waits.items()]
        args = [f"pc {p.pc} (bytes {o}–{o + n - 1})" for p in hoistable for o, n in [_kernarg_span(isa[p.pc]) or (None, None)] if o is not None]
        change.append(f"Issue the s_loads at pcs {[p.pc for p in hoistable][:6]} together with the first batch (pcs {[p.pc for p in leading][:4]}) before the "
                      f"first wait at pc {first_wait} — their base registers are ready from the start — so their latency overlaps the first wait instead of adding another"
                      + (f"; the kernel-argument loads among them: {', '.join(args[:6])}" if args else "") + ".")
        if renamed:
            change.append(f"pcs {[p.pc for p in renamed][:6]} write SGPRs the code still uses after the first wait: load them into {need} fresh SGPRs "
                          f"(the kernel uses {spare['used']} of {spare['addressable']}; {spare['free']} are free without lowering its "
                          f"{spare['waves_per_simd']} waves per SIMD) and use those.")
        parts.append(f"{hoist_cycles:,} on loads issued after the first wait")
    if leading and lead_cycles / ctx.total >= 0.03:
        before = sum(1 for q in range(leading[-1].pc + 1, lead_waits[0]) if isa[q] and ctx.result.sums.hit[q]) if lead_waits else 0
        if preload:
            claims += [(w, c * ctx.exposed_fraction(w)) for p in leading for w, c in p.waits.items()]
            change.append(f"The first wait (pc {lead_waits[0]}) is on kernel arguments already loaded first (bytes 0–{end}): preload them into SGPRs "
                          f"({tgt} kernel-argument preloading: LLVM `amdgpu-kernarg-preload-count` / `inreg` arguments) to remove it.")
        else:
            what = "kernel arguments" if spans and all(spans) else "scalar loads"
            waits_said = "one wait" if len(lead_waits) == 1 else f"{len(lead_waits)} waits"
            change.append(f"The first wait (pc {lead_waits[0] if lead_waits else '?'}) is on {what} already issued first, with {waits_said}"
                          + (f" (up to byte {end}, beyond the 56 B that preloading fits: put the arguments needed first at the front of the argument list to make them preloadable)" if end and tgt in ("gfx942", "gfx950") else "")
                          + f"; it is launch latency: only independent work before it ({before} instruction(s) now) can hide it.")
        parts.append(f"{lead_cycles:,} on the first batch (launch latency)")
    severity = None
    if not claims:
        # only the first wait, nothing preloadable: an explained no-action that claims nothing
        severity, conf = "INFO", 0.3
    else:
        conf = 0.7 if hoist else 0.4
    return [
        ctx.finding(
            rid,
            f"Scalar-memory waits: {' + '.join(parts)} stall cycles",
            0,
            conf,
            {"wait_smem_stall": cyc, "share_of_stall": round(cyc / b.total_stall, 4), "first_wait_pc": first_wait,
             "first_batch": [{**ctx.instr(p.pc), "waited_cycles": p.waited_cycles, "kernarg_bytes": list(_kernarg_span(isa[p.pc]) or [])} for p in leading[:6]],
             "hoistable": [{**ctx.instr(p.pc), "waited_cycles": p.waited_cycles, "waits": list(p.waits)[:2], "kernarg_bytes": list(_kernarg_span(isa[p.pc]) or []),
                            "renamed": p in renamed} for p in hoistable[:6]] if hoist else [],
             "sgprs": spare},
            " ".join(change),
            " ".join(x for x in (
                "After hoisting, the later lgkm wait(s) on these loads should shrink to ~0." if hoist else "",
                "With preloaded arguments the first wait disappears; if it stays, its producers are not kernel arguments." if preload else "",
                "The first wait's stall per wave should stay about the same across recaptures: it is the time for the first scalar loads to return after launch."
                if not claims else "") if x),
            f"scalar-memory waits: {'; '.join(parts)}",
            claims=claims,
            explains=["wait_smem"],
            severity=severity,
        )
    ]
