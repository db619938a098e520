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

from attlens.analysis.replay.streams import CTR_LGKM, CTR_NONE, CTR_VM, EV_BARRIER, EV_LOAD, EV_WAIT
from attlens.analysis.waitdeps import _ranges


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
    pos_of = None
    if order is None and (s.rec_stop > s.rec_start).all():
        # in the traced order a wave's sums of gap + stall telescope (build_streams: a gap is the
        # time since the previous issue, or since the wave's begin): the issue minus the begin
        c, wave_base = s.issue, s.begin
    else:  # (an empty wave's "last" is the running sum's value before it, as always)
        if order is not None:
            pos_of = np.empty(n, dtype=np.int64)
            pos_of[order] = np.arange(n, dtype=np.int64)
        gap = s.gaps()
        c = np.cumsum(gap + s.stall if order is None else gap[order] + s.stall[order])
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
    walk = _Walk(s, lat, spec)  # the same events for both passes
    first = walk.run()
    slots = spec.waves_per_simd or None
    chains = list_schedule(s, first.duration, slots, removed)
    out = walk.run(chains)
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
    return _Walk(s, lat, spec).run(chains)


# what the walk does at an event (one code per event, the spec applied): loads by the counter they
# retire on in order, waits by how many ops they wait on, barriers by what releases them
_LOAD_VM, _LOAD_LGKM, _LOAD_FREE, _WAIT_ONE, _WAIT_MANY, _WAIT_HIDDEN, _BAR_OWN, _BAR_TRACED, _BAR_COUPLED = range(9)


def _traced_events(s):
    """:func:`_events` in the traced order, with the walk's spec-free lists (built once per streams)."""
    got = getattr(s, "_traced_events", None)
    if got is None:
        got = s._traced_events = _event_lists(s, _events(s, None, Spec()))
    return got


def _event_lists(s, events):
    loc, recs, kind, aux, (e0, e1), last = events
    return kind, aux, loc.tolist(), aux.tolist(), s.stall[recs].tolist(), e0.tolist(), e1.tolist(), last.tolist()


class _Walk:
    """The events of one spec, ready for the walk: per event its code,
    position in its wave, row, operand and traced stall; ``run`` walks them
    for one set of slot chains."""

    def __init__(self, s, lat: np.ndarray, spec: Spec):
        self.s = s
        lists = _traced_events(s) if spec.order is None else _event_lists(s, _events(s, lat, spec))
        kind, aux, self.loc_l, self.aux_l, self.st_l, self.e0l, self.e1l, self.lastl = lists
        pc = s.pc
        n_prod = len(s.prod_rec)
        self.removed = removed = spec.removed if spec.removed is not None else np.zeros(s.n_waves, dtype=bool)
        # instance size counted over the waves that run
        alive_bar = ~removed[np.searchsorted(s.rec_start, s.bar_rec, side="right") - 1] if len(s.bar_rec) else np.zeros(0, dtype=bool)
        self.size_l = np.bincount(s.bar_inst[alive_bar], minlength=len(s.inst_size)).tolist()
        prefetched = np.isin(pc[s.prod_rec], list(spec.prefetched_pcs)) if spec.prefetched_pcs else np.zeros(n_prod, dtype=bool)
        self.lat_l = np.where(prefetched, 0.0, lat).tolist()
        if spec.no_skew_barrier_pcs is None:
            uncoupled = np.ones(len(s.bar_rec), dtype=bool)
        elif spec.no_skew_barrier_pcs:
            uncoupled = np.isin(pc[s.bar_rec], list(spec.no_skew_barrier_pcs))
        else:
            uncoupled = np.zeros(len(s.bar_rec), dtype=bool)
        hidden = np.isin(pc[s.wait_rec], list(spec.hidden_wait_pcs)) if spec.hidden_wait_pcs else np.zeros(len(s.wait_rec), dtype=bool)
        wait_idx, wait_n = _wait_index(s)
        code = np.empty(len(kind), dtype=np.int64)
        x = np.zeros(len(kind), dtype=np.int64)
        ld, wt, br = kind == EV_LOAD, kind == EV_WAIT, kind == EV_BARRIER
        load_code = np.zeros(3, dtype=np.int64)
        load_code[[CTR_VM, CTR_LGKM, CTR_NONE]] = _LOAD_VM, _LOAD_LGKM, _LOAD_FREE
        code[ld] = load_code[s.prod_ctr[aux[ld]]]
        wa = aux[wt]
        code[wt] = np.where(hidden[wa], _WAIT_HIDDEN, np.where(wait_n[wa] == 1, _WAIT_ONE, _WAIT_MANY))
        x[wt] = wait_idx[wa]  # the one op (or the never-written slot), unused for the others
        ba = aux[br]
        inst = s.bar_inst[ba]
        size = np.asarray(self.size_l, dtype=np.int64)[inst] if len(ba) else np.zeros(0, dtype=np.int64)
        code[br] = np.where(uncoupled[ba], _BAR_OWN, np.where(size <= 1, _BAR_TRACED, _BAR_COUPLED))
        x[br] = np.where(uncoupled[ba], s.inst_own[inst], inst)
        x_l = x.tolist()
        if (code == _WAIT_MANY).any():
            wl = _many_lists(s)
            for e in np.flatnonzero(code == _WAIT_MANY).tolist():
                x_l[e] = wl[self.aux_l[e]]
        self.code_l, self.x_l = code.tolist(), x_l

    def run(self, chains=None) -> Replay:
        s, removed, size_l, lat_l = self.s, self.removed, self.size_l, self.lat_l
        code_l, loc_l, aux_l, x_l, st_l = self.code_l, self.loc_l, self.aux_l, self.x_l, self.st_l
        e0l, e1l, lastl, taill = self.e0l, self.e1l, self.lastl, s.tail.tolist()
        own_l = s.inst_own.tolist()
        ws_out = s.stall[s.wait_rec].astype(np.float64).tolist()  # replayed stalls, filled in place
        bs_out = s.stall[s.bar_rec].astype(np.float64).tolist()
        comp = [-1e300] * (len(s.prod_rec) + 1)  # completion of each producer (ops precede the waits that resolve them)
        get = comp.__getitem__

        def wave(w: int, start: float):
            # the stall of every event but waits and barriers is the traced one: D is how far the
            # re-derived stalls so far moved the wave's issue (as in the module docstring)
            D = 0.0
            vm = lgkm = -1e300  # the last completion on each in-order counter
            b, e = e0l[w], e1l[w]
            # every kind written out in full, the waits' release too: this is the replay's hot loop
            # (a helper call per event cost more than the rest of an event's work)
            for k, loc, a, x, st in zip(code_l[b:e], loc_l[b:e], aux_l[b:e], x_l[b:e], st_l[b:e]):
                t = start + loc + D
                if k == _WAIT_ONE:
                    arrive = t - st
                    rel = arrive
                    c = comp[x]
                    if c > rel:
                        rel = c
                    dd = rel - arrive
                    ws_out[a] = dd
                    D += dd - st
                elif k == _LOAD_VM:
                    c = t + lat_l[a]
                    if c < vm:
                        c = vm
                    vm = comp[a] = c
                elif k == _LOAD_LGKM:
                    c = t + lat_l[a]
                    if c < lgkm:
                        c = lgkm
                    lgkm = comp[a] = c
                elif k == _LOAD_FREE:
                    comp[a] = t + lat_l[a]
                elif k == _WAIT_MANY:
                    arrive = t - st
                    rel = arrive
                    c = max(map(get, x))
                    if c > rel:
                        rel = c
                    dd = rel - arrive
                    ws_out[a] = dd
                    D += dd - st
                elif k == _WAIT_HIDDEN:
                    arrive = t - st
                    dd = arrive - arrive
                    ws_out[a] = dd
                    D += dd - st
                else:
                    arrive = t - st
                    if k == _BAR_OWN:
                        rel = arrive + x
                    elif k == _BAR_TRACED:
                        rel = arrive + st
                    else:
                        rel = yield (x, arrive)
                        if rel < arrive:
                            rel = arrive
                    dd = rel - arrive
                    bs_out[a] = dd
                    D += dd - st
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


def _wait_index(s) -> tuple[np.ndarray, np.ndarray]:
    """Per wait row: its first producer index (the never-written slot when it has none) and how many it has."""
    got = getattr(s, "_wait_index", None)
    if got is None:
        n = np.diff(s.wait_off)
        idx = np.full(len(s.wait_rec), len(s.prod_rec), dtype=np.int64)
        has = n > 0
        idx[has] = np.searchsorted(s.prod_rec, s.wait_prod[s.wait_off[:-1][has]])
        got = s._wait_index = (idx, np.maximum(n, 1))
    return got


def _many_lists(s) -> dict[int, list[int]]:
    """Per wait row that waits on more than one op: the producer indices (into ``s.prod_rec``) it waits on (built once per streams)."""
    got = getattr(s, "_many_lists", None)
    if got is None:
        n = np.diff(s.wait_off)
        rows = np.flatnonzero(n > 1)
        # only these rows' producers looked up (most waits resolve one op)
        idx = np.searchsorted(s.prod_rec, s.wait_prod[_ranges(s.wait_off[rows], n[rows])]).tolist()
        ends = np.cumsum(n[rows]).tolist()
        got = {a: idx[c - k:c] for a, k, c in zip(rows.tolist(), n[rows].tolist(), ends)}
        s._many_lists = got
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
