"""The replay: every traced wave re-issued with its gaps kept and its wait and
barrier stalls re-derived (docs/whatif.md).

A wave's instruction ``j`` (in the replayed order) issues at
``start' + Σ_{i<=j}(gap_i + stall'_i)``: gaps and the stalls of ordinary
instructions are the traced ones; ``stall'`` of a wait is the time until the
ops it waited on complete (their issue' + drawn latency, never earlier than an
older op of the same in-order counter), of a barrier the time until the last
traced wave of its instance arrives, plus the instance's own latency. A wave
starts when its predecessor in the same SIMD slot ends, plus the traced gap
between them. Python walks only the events (loads some wait resolved, waits,
barriers); everything per record is NumPy.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.replay.streams import CTR_NONE, EV_BARRIER, EV_LOAD, EV_WAIT


@dataclass
class Spec:
    """A compiled set of edits (replay/edits.py)."""

    order: np.ndarray | None = None  # replayed record order (global), None: as traced
    hidden_wait_pcs: frozenset = frozenset()  # waits released on arrival
    prefetched_pcs: frozenset = frozenset()  # loads whose latency is covered (complete at issue)
    no_skew_barrier_pcs: frozenset | None = frozenset()  # barriers released after their own latency (None: every barrier)
    waves_per_simd: int | None = None
    removed: np.ndarray | None = None  # per wave: not run (early exit removed)
    moved_recs: int = 0


@dataclass
class Replay:
    start: np.ndarray  # per wave (float), nan for removed waves
    end: np.ndarray
    wait_stall: np.ndarray  # per wait row of Streams (replayed)
    bar_stall: np.ndarray  # per barrier record
    forced_barriers: int = 0  # instances released without every member (cyclic wait; should be 0)
    chains: tuple | None = None  # (pred, gap, head start) per wave the replay used
    notes: list[str] = field(default_factory=list)

    @property
    def duration(self) -> np.ndarray:
        return self.end - self.start


def _events(s, lat, spec: Spec):
    """Event arrays in replayed order, wave-contiguous."""
    n = len(s.pc)
    order = spec.order
    if order is None:
        g, st = s.gap, s.stall
        pos_of = None
    else:
        g, st = s.gap[order], s.stall[order]
        pos_of = np.empty(n, dtype=np.int64)
        pos_of[order] = np.arange(n, dtype=np.int64)
    c = np.cumsum(g + st)
    wave_base = np.where(s.rec_start > 0, c[np.maximum(s.rec_start - 1, 0)], 0)
    last = np.where(s.rec_stop > s.rec_start, c[np.maximum(s.rec_stop - 1, 0)], 0) - wave_base
    recs = np.concatenate([s.prod_rec, s.wait_rec, s.bar_rec])
    kind = np.concatenate([np.full(len(s.prod_rec), EV_LOAD), np.full(len(s.wait_rec), EV_WAIT), np.full(len(s.bar_rec), EV_BARRIER)])
    aux = np.concatenate([np.arange(len(s.prod_rec)), np.arange(len(s.wait_rec)), np.arange(len(s.bar_rec))])
    pos = recs if pos_of is None else pos_of[recs]
    o = np.argsort(pos, kind="stable")
    pos, recs, kind, aux = pos[o], recs[o], kind[o], aux[o]
    wave_of_pos = np.searchsorted(s.rec_start, pos, side="right") - 1
    loc = c[pos] - wave_base[wave_of_pos]
    bounds = np.searchsorted(pos, s.rec_start), np.searchsorted(pos, s.rec_stop)
    return loc, recs, kind, aux, bounds, last


def replay(s, lat: np.ndarray, spec: Spec | None = None) -> Replay:
    """Replay the streams ``s`` with latencies ``lat`` (per producer) under
    ``spec``. Two passes: the first keeps the traced slot order and gives each
    wave's replayed duration; the second hands each SIMD's waves, in traced
    begin order, to the slot that frees first (the dispatcher does that, so a
    wave that replays shorter lets the next one in sooner) with the SIMD's
    traced slot count, or ``spec.waves_per_simd``."""
    spec = spec or Spec()
    removed = spec.removed if spec.removed is not None else np.zeros(s.n_waves, dtype=bool)
    first = _replay(s, lat, spec)
    slots = spec.waves_per_simd or None
    chains = list_schedule(s, first.duration, slots, removed)
    out = _replay(s, lat, spec, chains)
    out.notes = first.notes + out.notes
    return out


def replay_with(s, lat: np.ndarray, spec: Spec, base: Replay) -> Replay:
    """One pass of ``spec`` over the slot order of the unedited replay ``base``
    (a wave that gets shorter lets the next wave of its slot in sooner); more
    slots per SIMD or removed waves re-deal the slots from ``base``'s durations."""
    if spec.waves_per_simd or spec.removed is not None:
        removed = spec.removed if spec.removed is not None else np.zeros(s.n_waves, dtype=bool)
        chains = list_schedule(s, np.nan_to_num(base.duration), spec.waves_per_simd, removed)
    else:
        chains = base.chains
    return _replay(s, lat, spec, chains)


def _replay(s, lat: np.ndarray, spec: Spec, chains=None) -> Replay:
    loc, recs, kind, aux, (e0, e1), last = _events(s, lat, spec)
    loc_l, kind_l, aux_l = loc.tolist(), kind.tolist(), aux.tolist()
    pc = s.pc
    stall_l = s.stall[recs].tolist()
    prod_pc_prefetched = np.isin(pc[s.prod_rec], list(spec.prefetched_pcs)) if spec.prefetched_pcs else np.zeros(len(s.prod_rec), dtype=bool)
    lat_l = np.where(prod_pc_prefetched, 0.0, lat).tolist()
    ctr_l = s.prod_ctr.tolist()
    hidden = np.isin(pc[s.wait_rec], list(spec.hidden_wait_pcs)).tolist() if spec.hidden_wait_pcs else [False] * len(s.wait_rec)
    wlists = _wait_lists(s)
    if spec.no_skew_barrier_pcs is None:
        uncoupled = [True] * len(s.bar_rec)
    elif spec.no_skew_barrier_pcs:
        uncoupled = np.isin(pc[s.bar_rec], list(spec.no_skew_barrier_pcs)).tolist()
    else:
        uncoupled = [False] * len(s.bar_rec)
    removed = spec.removed if spec.removed is not None else np.zeros(s.n_waves, dtype=bool)
    inst_l = s.bar_inst.tolist()
    own_l = s.inst_own.tolist()
    # instance size counted over the waves that run
    alive_bar = ~removed[np.searchsorted(s.rec_start, s.bar_rec, side="right") - 1] if len(s.bar_rec) else np.zeros(0, dtype=bool)
    size_l = np.bincount(s.bar_inst[alive_bar], minlength=len(s.inst_size)).tolist()
    e0l, e1l, lastl, taill = e0.tolist(), e1.tolist(), last.tolist(), s.tail.tolist()
    ws_out = s.stall[s.wait_rec].astype(np.float64).tolist()  # replayed stalls, filled in place
    bs_out = s.stall[s.bar_rec].astype(np.float64).tolist()
    comp = [-1e300] * (len(s.prod_rec) + 1)  # completion of each producer (ops precede the waits that resolve them)
    get = comp.__getitem__

    def wave(w: int, start: float):
        D = 0.0
        lastc = [-1e300, -1e300]
        for e in range(e0l[w], e1l[w]):
            t = start + loc_l[e] + D
            k = kind_l[e]
            a = aux_l[e]
            if k == EV_LOAD:
                c = t + lat_l[a]
                ctr = ctr_l[a]
                if ctr != CTR_NONE:
                    if c < lastc[ctr]:
                        c = lastc[ctr]
                    lastc[ctr] = c
                comp[a] = c
            elif k == EV_WAIT:
                st = stall_l[e]
                arrive = t - st
                rel = arrive
                if not hidden[a]:
                    c = max(map(get, wlists[a]))
                    if c > rel:
                        rel = c
                ws_out[a] = rel - arrive
                D += rel - arrive - st
            else:
                st = stall_l[e]
                arrive = t - st
                i = inst_l[a]
                if uncoupled[a]:
                    rel = arrive + own_l[i]
                elif size_l[i] <= 1:
                    rel = arrive + st
                else:
                    rel = yield (i, arrive)
                    if rel < arrive:
                        rel = arrive
                bs_out[a] = rel - arrive
                D += rel - arrive - st
        return start + lastl[w] + D + taill[w]

    pred, gap, head = chains if chains is not None else (*_traced_chains(s, removed), s.begin.astype(np.float64))
    succ: dict[int, list[int]] = {}
    for w_, p in enumerate(pred.tolist()):
        if p >= 0 and not removed[w_]:
            succ.setdefault(p, []).append(w_)
    start = np.full(s.n_waves, np.nan)
    end = np.full(s.n_waves, np.nan)
    gap_l = gap.tolist()
    ready: deque = deque()
    for w_ in range(s.n_waves):
        if not removed[w_] and pred[w_] < 0:
            start[w_] = float(head[w_])
            ready.append((w_, None))
    gens: dict[int, object] = {}
    arrivals: dict[int, list] = {}
    forced = 0

    def finish(w_, value):
        end[w_] = value
        for nx in succ.get(w_, ()):
            start[nx] = value + gap_l[nx]
            ready.append((nx, None))

    while True:
        while ready:
            w_, send = ready.popleft()
            g = gens.get(w_)
            try:
                if g is None:
                    g = gens[w_] = wave(w_, float(start[w_]))
                    i, arr = next(g)
                else:
                    i, arr = g.send(send)
            except StopIteration as stop:
                gens.pop(w_, None)
                finish(w_, stop.value)
                continue
            lst = arrivals.setdefault(i, [])
            lst.append((w_, arr))
            if len(lst) >= size_l[i]:
                _release(arrivals.pop(i), own_l[i], ready)
        if not arrivals:
            break
        # a cycle (a member waits for a wave that starts after it): release the earliest instance as it stands
        i = min(arrivals, key=lambda k: max(a for _, a in arrivals[k]))
        _release(arrivals.pop(i), own_l[i], ready)
        forced += 1
    notes = [f"{forced} barrier instance(s) released before every member arrived (a member's start depends on the barrier)"] if forced else []
    return Replay(start, end, np.array(ws_out), np.array(bs_out), forced_barriers=forced, chains=(pred, gap, head), notes=notes)


def _wait_lists(s) -> list[list[int]]:
    """Per wait row: the producer indices (into ``s.prod_rec``) it waits on (built once per streams)."""
    got = getattr(s, "_wait_lists", None)
    if got is None:
        idx = np.searchsorted(s.prod_rec, s.wait_prod).tolist()
        off = s.wait_off.tolist()
        none = [len(s.prod_rec)]  # the sentinel slot of the completions (never written)
        got = [idx[a:b] or none for a, b in zip(off[:-1], off[1:])]
        s._wait_lists = got
    return got


def _release(members, own, ready):
    rel = max(a for _, a in members) + own
    for w_, _a in members:
        ready.append((w_, rel))


def _traced_chains(s, removed):
    """Per wave: the running wave before it in its slot, and the traced gap after it."""
    pred = s.pred.copy()
    gap = np.zeros(s.n_waves, dtype=np.float64)
    has = pred >= 0
    gap[has] = s.begin[has] - s.end[pred[has]]
    # a removed predecessor hands its place to the one before it
    for w_ in np.flatnonzero(has & removed[np.maximum(pred, 0)]).tolist():
        p = pred[w_]
        while p >= 0 and removed[p]:
            p = pred[p]
        pred[w_] = p
    if removed.any():
        for w_ in np.flatnonzero(removed).tolist():
            pred[w_] = -1
    return pred, gap


def list_schedule(s, duration: np.ndarray, n_slots: int | None, removed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chains for ``n_slots`` resident waves per SIMD: the traced waves of each
    SIMD in begin order, each taking the slot that frees first (durations from
    a replay), after the traced median gap between a wave's end and the next
    start on that SIMD."""
    import heapq

    pred = np.full(s.n_waves, -1, dtype=np.int64)
    gap = np.zeros(s.n_waves, dtype=np.float64)
    head = s.begin.astype(np.float64)
    alive = np.flatnonzero(~removed)
    has = (s.pred >= 0) & ~removed
    for key in np.unique(s.simd_key[alive]).tolist():
        ws = alive[s.simd_key[alive] == key]
        ws = ws[np.argsort(s.begin[ws], kind="stable")]
        gh = has[ws]
        g_med = float(np.median(s.begin[ws[gh]] - s.end[s.pred[ws[gh]]])) if gh.any() else 0.0
        heap: list = []
        k = n_slots or len(np.unique(s.slot_key[ws]))
        first_begin = float(s.begin[ws[0]])
        for w_ in ws.tolist():
            if len(heap) < k:
                heapq.heappush(heap, (first_begin + float(duration[w_]) if s.pred[w_] >= 0 else float(s.begin[w_]) + float(duration[w_]), w_))
                if s.pred[w_] >= 0:  # an extra slot: its first wave starts with the SIMD's first wave
                    head[w_] = first_begin
                continue
            free, p = heapq.heappop(heap)
            pred[w_] = p
            gap[w_] = g_med
            heapq.heappush(heap, (free + g_med + float(duration[w_]), w_))
    return pred, gap, head
