"""Waits coupled by in-order counters.

vmcnt retires in order: a ``s_waitcnt vmcnt(N)`` lets the wave go on only when
every op but the youngest N has returned. When the instruction after the wait
needs only a younger load while older loads it does not need are still
outstanding (the next tile's B loads issued long before this tile's A load),
the wave waits for the older stream. Moving the needed load earlier cannot
help while the older ones block; the lever is the order: issue the loads each
wait's consumer needs first, or issue the older stream earlier still.
"""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from attlens.analysis.bandwidth import access_width
from attlens.analysis.groups import packed_rows, stable_pc_order
from attlens.analysis.registry import EXPOSED_TRIGGER_SEMANTICS, rule
from attlens.analysis.rules._preconditions import NOT_AT_CEILING, NOT_ISSUE_BOUND, not_at_ceiling, not_issue_bound
from attlens.analysis.rules._util import defs_uses, pair_columns, rnd

MIN_SHARE = 0.02  # of all traced wave-cycles, exposed at the coupled waits
CONSUMER_WINDOW = 24  # instructions after the wait searched for its first consumer
# The older loads had this many cycles' head start on the needed one (about an
# L2-hit latency): had they been as fast, they would be back; still outstanding,
# they are slower than the needed load and hold it. A burst issued together
# returns together and reordering within it gains little.
MIN_HEAD_START = 256


def _resolved_in_order(ctx):
    """Per vmcnt wait pc: the most common set of vector-memory ops one execution
    resolves, oldest first (pcs), with their issue-to-wait distances."""
    return ctx.memo("resolved_in_order", lambda: _resolved(ctx))


def resolved_sets(ctx) -> dict:
    """{vmcnt wait pc: (resolved pcs oldest first, executions with that set, executions,
    {pc: (executions, 2) array: instructions and cycles before the wait})}."""
    return _resolved_in_order(ctx)


def _resolved(ctx):
    from attlens.model.isa import waitcnt_fields

    pairs, st = ctx.att.pairs, ctx.d.static
    if not len(pairs.prod_rec):
        return {}
    ppc, wpc, _first, gid = pair_columns(ctx)
    is_vm = np.array([access_width(m)[0] is not None for m in st.mnemonic])[ppc]
    rows = np.flatnonzero(is_vm)
    order = rows[_order_by(gid[rows], pairs.prod_rec[rows])]
    # one execution = the rows of one wait execution (gid), its ops oldest first
    g = gid[order]
    cut = np.flatnonzero(np.r_[True, g[1:] != g[:-1], True]) if len(g) else np.zeros(1, dtype=np.int64)
    # Counter keeps first-seen order: per wait pc, its sets in the order they first occur (most_common's ties)
    seen = _execution_sets(wpc[order[cut[:-1]]].astype(np.int64), ppc[order].astype(np.int64), cut[:-1], cut[1:])
    sets: dict[int, Counter] = defaultdict(Counter)
    for (w, resolved), n in seen.items():
        sets[w][resolved] = n
    dist = _distances(pairs, order, wpc, ppc)
    out = {}
    for w, c in sets.items():
        if "vmcnt" not in (waitcnt_fields(ctx.d.code.isa[w]) or {}) and "loadcnt" not in (waitcnt_fields(ctx.d.code.isa[w]) or {}):
            continue
        resolved, n = c.most_common(1)[0]
        out[w] = (list(resolved), n, sum(c.values()), {p: dist.get((w, p), _NO_DISTANCES) for p in resolved})
    return out


def _order_by(major: np.ndarray, minor: np.ndarray) -> np.ndarray:
    """``np.lexsort((minor, major))``; without the sort when the rows are in
    that order already (the pairs come by wait execution, producers oldest
    first): a stable sort of sorted rows keeps them as they are."""
    if not len(major) or np.all((major[1:] > major[:-1]) | ((major[1:] == major[:-1]) & (minor[1:] >= minor[:-1]))):
        return np.arange(len(major))
    return np.lexsort((minor, major))


SET_GRID_CELLS = 1 << 22  # cells of one grid of executions (bounds the grid)


def _execution_sets(wpc: np.ndarray, pcs: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> Counter:
    """Counter {(wait pc, resolved pcs): executions} of the executions
    ``pcs[lo:hi]`` (one per wait pc of ``wpc``), keys in the order they first
    occur. The executions of one length at a time (sets of different lengths
    differ), as rows of grids of at most SET_GRID_CELLS cells; each set's
    count summed over the grids and its first execution kept, then the sets
    ordered by it."""
    n = hi - lo
    if len(n) == 0 or int(n.max()) > SET_GRID_CELLS:  # a grid row too long: a tuple per execution
        pl, ll, hl = pcs.tolist(), lo.tolist(), hi.tolist()
        return Counter(zip(wpc.tolist(), (tuple(pl[a:b]) for a, b in zip(ll, hl))))
    counts, firsts = Counter(), {}
    for length in np.flatnonzero(np.bincount(n)).tolist():  # the lengths present (n is at most SET_GRID_CELLS)
        rows = np.flatnonzero(n == length)
        step = max(SET_GRID_CELLS // (length + 1), 1)
        for a in range(0, len(rows), step):
            chunk = rows[a:a + step]
            for key, first, c in _grid_sets(wpc[chunk], pcs, lo[chunk], length):
                counts[key] += c
                firsts.setdefault(key, int(chunk[first]))  # chunks ascend: the first chunk holding a set has its first execution
    return Counter({k: counts[k] for k in sorted(counts, key=firsts.__getitem__)})


def _grid_sets(wpc: np.ndarray, pcs: np.ndarray, lo: np.ndarray, length: int) -> list[tuple[tuple, int, int]]:
    """[((wait pc, resolved pcs), first row, rows)] of executions of one
    ``length`` starting at ``lo`` in ``pcs``, each a row of a grid: its wait
    pc, then its pcs (the grid's columns, each one gather: no 2-D grid).
    Equal rows are equal sets, grouped on the rows packed into a few int64
    words (one word of few possible values: counted in one table, else one
    sort) instead of a tuple per execution; only the distinct sets become
    tuples."""
    cols = [wpc, *(np.take(pcs, lo + j if j else lo) for j in range(length))]
    firsts, counts = _distinct_rows(packed_rows(cols))
    return [((int(wpc[f]), tuple(int(c[f]) for c in cols[1:])), f, n) for f, n in zip(firsts.tolist(), counts.tolist())]


def _distinct_rows(words: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(first row, rows) of each distinct row of packed words (:func:`packed_rows`)."""
    from attlens.analysis import groups

    if len(words) == 1 and int(words[0].max()) < groups.DIRECT_KEYS:  # few possible keys: one table of them, no sort
        _present, counts, first = groups.key_table(words[0], int(words[0].max()) + 1)
        return first, counts
    o = np.lexsort(words[::-1])
    same = np.ones(len(o) - 1, dtype=bool)
    for w in words:
        ws = w[o]
        same &= ws[1:] == ws[:-1]
    start = np.flatnonzero(np.r_[True, ~same])
    return np.minimum.reduceat(o, start), np.diff(np.r_[start, len(o)])


_NO_DISTANCES = np.zeros((0, 2), dtype=np.int64)


def _distances(pairs, order, wpc, ppc) -> dict[tuple[int, int], np.ndarray]:
    """{(wait pc, op pc): (rows, 2) array of the instructions and cycles from
    the op to the wait}, rows in the order of ``order`` (executions, then ops
    oldest first): views of one array, no Python tuple per pair."""
    n_ppc = int(ppc.max()) + 1 if len(ppc) else 1
    key = wpc[order].astype(np.int64) * n_ppc + ppc[order]
    o = _stable_key_order(key, (int(wpc.max()) + 1 if len(wpc) else 1) * n_ppc)
    ks = key[o]
    cut = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1], True]) if len(ks) else np.zeros(1, dtype=np.int64)
    rows = order[o]
    both = np.column_stack([np.take(pairs.distance_instr, rows), np.take(pairs.distance_cycles, rows)])
    firsts = rows[cut[:-1]]
    return {(w, p): both[a:b] for w, p, a, b in zip(wpc[firsts].tolist(), ppc[firsts].tolist(), cut[:-1].tolist(), cut[1:].tolist())}


def _stable_key_order(key: np.ndarray, n_keys: int) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` of non-negative keys below ``n_keys``.
    Few possible keys: each key's rank among those present (the same order),
    sorted by radix when the ranks fit 16 bits (:func:`stable_pc_order`)."""
    from attlens.analysis import groups

    if n_keys > groups.DIRECT_KEYS:
        return np.argsort(key, kind="stable")
    present = np.bincount(key, minlength=n_keys) > 0
    rank = np.cumsum(present) - 1
    return stable_pc_order(rank[key], int(rank[-1]) + 1)


def _consumer(ctx, wpc: int, resolved: list[int]):
    """(first consumer pc, the resolved ops read before the next wait) after the
    wait: the first instruction that reads a resolved op's registers, and every
    resolved op read until the next wait, branch or the end of the window (an op
    read there is needed by this wait; one read only later is not)."""
    isa, st = ctx.d.code.isa, ctx.d.static
    written = {p: defs_uses(isa[p])[0] for p in resolved}
    first, needed = None, []
    for q in range(wpc + 1, min(wpc + CONSUMER_WINDOW, ctx.d.code.size)):
        if not isa[q]:
            continue
        if st.cls[q] == "wait" or st.mnemonic[q].startswith(("s_cbranch", "s_branch", "s_endpgm", "s_setpc")):
            break
        reads = defs_uses(isa[q])[1]
        hit = [p for p in resolved if written[p] & reads and p not in needed]
        if hit and first is None:
            first = q
        needed += hit
    return first, needed


def coupled_waits(ctx) -> dict[int, dict]:
    """Wait pcs whose consumer is held behind older loads it does not read
    (the pattern in-order-wait names): {wait pc: {needed, coupled, head_start, consumer}}.
    Other rules charge these waits to the older loads, not the needed one."""
    def compute():
        out = {}
        for wpc, (resolved, _n, _execs, dist) in _resolved_in_order(ctx).items():
            kind, c = _classify_wait(ctx, wpc, resolved, dist)
            if kind == "coupled":
                out[wpc] = {"needed": c["needed"], "coupled": c["coupled"], "head_start": c["head"], "consumer": c["consumer"]}
        return out

    return ctx.memo("coupled_waits", compute)


def _classify_wait(ctx, wpc: int, resolved: list[int], dist: dict) -> tuple[str, dict | None]:
    """What holds the wait at ``wpc``: ``skip`` (one op resolved, or no
    consumer read before the next wait), ``flat`` (a FLAT op: out of order),
    ``own`` (the consumer needs the oldest resolved load), ``burst`` (the older
    loads left with the needed one), or ``coupled`` with the facts the rule
    reports (needed and coupled pcs, median issue distances, head start)."""
    st = ctx.d.static
    if len(resolved) < 2:
        return "skip", None
    if any(st.mnemonic[p].startswith("flat_") for p in resolved):
        return "flat", None
    q, needed = _consumer(ctx, wpc, resolved)
    if q is None:
        return "skip", None
    oldest_needed = resolved[min(resolved.index(p) for p in needed)]
    # stores write no register and take no head start over a load: only older loads couple
    coupled = [p for p in resolved[:resolved.index(oldest_needed)] if p not in needed and access_width(st.mnemonic[p])[0] == "load"]
    if not coupled:
        return "own", None  # the oldest load is one the consumer needs: a plain load-use wait
    med = {p: float(np.median(dist[p][:, 1])) for p in resolved}
    head = med[coupled[0]] - med[oldest_needed]
    kind = "coupled" if head >= MIN_HEAD_START else "burst"
    return kind, {"consumer": q, "needed": needed, "oldest_needed": oldest_needed, "coupled": coupled, "med": med, "head": head}


@rule(
    "in-order-wait",
    "Waits held by older loads the next instruction does not need",
    "performance",
    semantics=EXPOSED_TRIGGER_SEMANTICS,
    trigger="vmcnt waits after which, until the next wait, only loads younger than an older load the wait also resolves are read, that older load issued ≥ 256 cycles before them (vmcnt retires in order), exposing ≥ 2 % of traced wave-cycles",
    evidence="per wait: pc and count, the first consumer and the ops read before the next wait, the older ops it waits for without them being read (pcs, kind, issued how many instructions and cycles before the wait), its exposed stall, loop",
    limits="an op is needed when an instruction reads its registers before the next wait (within 24 instructions, no branch); stores write no register and are never needed; each wait is judged by the set of ops its executions most often resolve",
    preconditions=[
        ("in-order", "the counter retires the waited ops in issue order (buffer/global loads and stores on vmcnt; no FLAT op, which counts out of order)"),
        ("needs-younger", f"until the next wait the code reads only loads younger than the oldest one the wait resolves, and that older load was issued ≥ {MIN_HEAD_START} cycles before the first needed one (a burst returns together): it holds them"),
        NOT_AT_CEILING,
        NOT_ISSUE_BOUND,
    ],
    directions=["hide-memory-latency"],
)
def in_order_wait(ctx):
    rid = "in-order-wait"
    st, isa = ctx.d.static, ctx.d.code.isa
    waits = _resolved_in_order(ctx)
    rows, claims, flat, own, burst = [], [], [], [], []
    for wpc, (resolved, n, execs, dist) in sorted(waits.items()):
        kind, k = _classify_wait(ctx, wpc, resolved, dist)
        if kind != "coupled":
            {"flat": flat, "own": own, "burst": burst}.get(kind, []).append(wpc)
            continue
        q, needed, coupled, med, head = k["consumer"], k["needed"], k["coupled"], k["med"], k["head"]
        c = ctx.exposed_at(wpc)
        claims.append((wpc, c))
        lp = ctx.loops.where(wpc)
        rows.append({
            "wait_pc": wpc, "wait": isa[wpc], "stall": int(ctx.result.sums.stall[wpc]), "exposed_cycles": int(c),
            "consumer_pc": q, "consumer": isa[q], "needed_loads": needed,
            "needed_issued_cycles_before": rnd(med[k["oldest_needed"]]), "head_start_cycles": rnd(head),
            "coupled_loads": [{"pc": p, "isa": isa[p], "kind": access_width(st.mnemonic[p])[0], "issued_instructions_before": rnd(float(np.median(dist[p][:, 0]))),
                               "issued_cycles_before": rnd(float(np.median(dist[p][:, 1])))} for p in coupled],
            "executions_with_this_set": n, "executions": execs, "loop": lp.get("loop"), "trips_mean": lp.get("trips_mean")})
    if not rows and not flat and not own and not burst:
        return []
    if not ctx.require(rid, "in-order", bool(rows) or not flat, f"waits at pcs {flat[:4]} resolve FLAT ops (out of order)" if flat else "vmcnt, in order"):
        return []
    if not ctx.require(rid, "needs-younger", bool(rows),
                       f"{len(rows)} wait(s) hold their consumer behind older loads with a ≥ {MIN_HEAD_START}-cycle head start that nothing reads before the next wait"
                       + (f"; at pcs {own[:4]} the code reads the oldest resolved load" if own else "")
                       + (f"; at pcs {burst[:4]} the older loads were issued with the needed one (< {MIN_HEAD_START} cycles before it): one burst" if burst else "")):
        return []
    total = sum(c for _, c in claims)
    if total / ctx.total < MIN_SHARE:
        return []
    if not not_at_ceiling(ctx, rid) or not not_issue_bound(ctx, rid):
        return []
    rows.sort(key=lambda r: -r["exposed_cycles"])
    r0 = rows[0]
    cpl = r0["coupled_loads"]
    return [
        ctx.finding(
            rid,
            f"{len(rows)} vmcnt wait(s) hold their consumer behind older loads it does not need ({total / ctx.total:.1%} of traced wave-cycles exposed)",
            0,
            0.6,
            {"waits": rows[:6]},
            f"vmcnt retires in order: the wait at pc {r0['wait_pc']} (`{r0['wait']}`) holds pc {r0['consumer_pc']}; until the next wait the code reads only "
            f"pc(s) {r0['needed_loads']}, yet it waits for the older loads at pc(s) {[c['pc'] for c in cpl]}, "
            f"issued a median {cpl[0]['issued_cycles_before']:,.0f} cycles before the wait ({r0['head_start_cycles']:,.0f} before the first load it needs). Issue the loads each wait's consumer needs before the ops it does not "
            "(reorder the two streams), or issue the older stream earlier still (a stage further ahead), so the count can leave them outstanding.",
            "After the reorder the stall at these waits should fall toward the needed loads' own latency; if it does not, the older loads were "
            "not what held them (the needed load itself returned late).",
            f"the wait at pc {r0['wait_pc']} holds pc {r0['consumer_pc']} behind {len(cpl)} older op(s) nothing reads before the next wait",
            claims=claims,
        )
    ]
