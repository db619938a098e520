"""Memory → wait dependencies, recomputed by simulating the wait counters.

For every wave, walk its executed instructions in order and track, per
counter, a FIFO of the outstanding memory ops (by record index) and whether
the counter is in order. A wait that names a counter with count N resolves the
oldest ``len - N`` ops when the counter is in order; out of order (scalar
loads, FLAT) it resolves nothing until a wait of 0. The rules per ISA
generation are in ../shared/docs/att-format.md §4.3; where attlens differs from
the decoder's own writer it says so in docs/waitdeps.md (scalar-memory ops
other than ``s_load*``/``s_store*`` also count on lgkm here).

The result is exact on every shared capture: the (wait pc → producer pcs)
entries equal the ``waitcnt`` arrays stored in the wave files.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from attlens.model.isa import mnemonic, waitcnt_fields
from attlens.results import brief_repr

# Per-pc actions of the counter simulation.
ACT_NONE = 0
ACT_SMEM = 1  # scalar memory: lgkm/kmcnt, out of order
ACT_LGKM = 2  # ds_*, s_sendmsg: lgkm/dscnt in order
ACT_VM_LOAD = 3  # global/buffer/scratch load or atomic: vmcnt / loadcnt
ACT_VM_STORE = 4  # global/buffer/scratch store: vmcnt (gfx9) / vscnt / storecnt
ACT_FLAT_LOAD = 5
ACT_FLAT_STORE = 6
ACT_WAIT = 7
ACT_SENDMSG_RTN = 8  # gfx10+: pushes twice
ACT_EXP = 9  # gfx12 param_load / ds_direct → expcnt
ACT_BVH = 10
ACT_TENSOR = 11
ACT_ASYNC = 12
ACT_MSG = 13  # s_sendmsg: lgkm (gfx9-11) / kmcnt (gfx12), in order

_SMEM_PREFIXES = (
    "s_load",
    "s_store",
    "s_buffer_load",
    "s_buffer_store",
    "s_buffer_atomic",
    "s_atomic",
    "s_scratch_",
    "s_memtime",
    "s_memrealtime",
    "s_atc_probe",
    "s_dcache_wb",
)


def _is_vm(m: str) -> bool:
    return m.startswith(("global_", "buffer_", "tbuffer_", "scratch_"))


def _is_store(m: str) -> bool:
    return "store" in m or m.startswith(("global_wb", "buffer_wbl2"))


def pc_action(text: str, model: str) -> int:
    """Counter action of one static instruction under a waitcnt model."""
    m = mnemonic(text)
    if not m:
        return ACT_NONE
    if m.startswith("s_wait") and waitcnt_fields(text):
        return ACT_WAIT
    if model == "gfx12":
        if "_prefetch_" in m or m.startswith("s_prefetch"):
            return ACT_NONE
        if m.startswith(("global_load_async_", "global_store_async_")):
            return ACT_ASYNC
        if m.startswith("tensor_"):
            return ACT_TENSOR
        if "_bvh" in m:
            return ACT_BVH
        if m.startswith(("ds_param_load", "param_load", "ds_direct")):
            return ACT_EXP
    if m.startswith(_SMEM_PREFIXES):
        return ACT_SMEM
    if m.startswith("s_sendmsg"):
        return ACT_SENDMSG_RTN if (m.startswith("s_sendmsg_rtn") and model != "gfx9") else ACT_MSG
    if m.startswith("ds_"):
        return ACT_LGKM
    if m.startswith("flat_"):
        return ACT_FLAT_STORE if _is_store(m) else ACT_FLAT_LOAD
    if _is_vm(m):
        return ACT_VM_STORE if _is_store(m) else ACT_VM_LOAD
    return ACT_NONE


class _Counter:
    __slots__ = ("fifo", "in_order")

    def __init__(self):
        self.fifo: deque[int] = deque()
        self.in_order = True

    def resolve(self, n: int) -> list[int]:
        if n == 0:
            self.in_order = True
        if not self.in_order:
            return []
        k = len(self.fifo) - n
        if k <= 0:
            return []
        pop = self.fifo.popleft
        return [pop() for _ in range(k)]


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for every (s, n)."""
    lengths = lengths.astype(np.int64, copy=False)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts.astype(np.int64) - offsets, lengths) + np.arange(total, dtype=np.int64)


def _resolve_gfx9(rec: np.ndarray, act: np.ndarray, wave: np.ndarray, n_lg: np.ndarray, n_vm: np.ndarray):
    """The gfx9 counter simulation of every wave at once.

    Events (memory ops and waits of all waves, waves contiguous, in execution
    order): record index, action, wave, and for waits the lgkmcnt/vmcnt they
    name (-1: not named). A counter's FIFO is the range [Q, P) of its pushes:
    P counts pushes, and an effective wait with count n moves Q to
    max(Q, P - n) -- a running maximum, so the whole simulation is prefix
    sums and cumulative maxima. A wait is effective for a counter when it
    names it and the counter is in order: no out-of-order push (SMEM, FLAT for
    lgkm; FLAT for vm) since the last wait of that counter with count 0 (which
    puts it back in order) or the wave's start. Pending FLAT ops go to the
    first effective evaluation after them (lgkm before vm within one wait).
    Returns entries in execution order: (wait record, wave, outstanding,
    producer start/stop) and the producers, exactly like the per-wave loop.
    """
    e_n = len(rec)
    idx = np.arange(e_n, dtype=np.int64)
    new_wave = np.ones(e_n, dtype=bool)
    new_wave[1:] = wave[1:] != wave[:-1]
    wave_first = np.maximum.accumulate(np.where(new_wave, idx, 0))
    is_wait = act == ACT_WAIT
    is_flat = (act == ACT_FLAT_LOAD) | (act == ACT_FLAT_STORE)
    pushes = {
        "lg": np.isin(act, (ACT_LGKM, ACT_MSG, ACT_SENDMSG_RTN, ACT_SMEM)),
        "vm": (act == ACT_VM_LOAD) | (act == ACT_VM_STORE),
    }
    disorder = {"lg": is_flat | (act == ACT_SMEM), "vm": is_flat}
    named_n = {"lg": n_lg, "vm": n_vm}
    fc = np.cumsum(is_flat)  # flat ops pushed up to and including each event
    fbase = (fc - is_flat)[wave_first]
    per = {}
    for c in ("lg", "vm"):
        g = np.cumsum(pushes[c])
        base = (g - pushes[c])[wave_first]
        n = named_n[c]
        named = is_wait & (n >= 0)
        reset = named & (n == 0)
        last_dis = np.maximum.accumulate(np.where(disorder[c], idx, -1))
        last_reset = np.maximum.accumulate(np.where(reset, idx, -1))
        eff = named & (reset | (last_dis < np.maximum(last_reset, wave_first)))
        target = np.where(eff, g - np.maximum(n, 0), -1)
        q_after = np.maximum(np.maximum.accumulate(target), base)
        q_before = np.empty_like(q_after)
        q_before[:1] = base[:1]
        q_before[1:] = np.maximum(q_after[:-1], base[1:])
        per[c] = (eff, g, q_before, q_after, np.flatnonzero(pushes[c]))
    eff_any = per["lg"][0] | per["vm"][0]
    fc_eval = np.maximum.accumulate(np.where(eff_any, fc, 0))  # flat consumed up to here
    fc_prev = np.zeros(e_n, dtype=np.int64)
    fc_prev[1:] = fc_eval[:-1]
    flat_start = np.maximum(fc_prev, fbase)  # first flat op still pending at the event
    w_idx = np.flatnonzero(is_wait)
    outstanding = fc[w_idx] - flat_start[w_idx]
    for c in ("lg", "vm"):
        _eff, g, q_before, _qa, _pr = per[c]
        outstanding = outstanding + g[w_idx] - q_before[w_idx]
    # Per wait: the lgkm evaluation, then the vm one.
    eff_lg, eff_vm = per["lg"][0][w_idx], per["vm"][0][w_idx]
    n_flat_lg = np.where(eff_lg, fc[w_idx] - flat_start[w_idx], 0)
    n_flat_vm = np.where(eff_vm & ~eff_lg, fc[w_idx] - flat_start[w_idx], 0)
    n_pop = {c: np.where(per[c][0][w_idx], per[c][3][w_idx] - per[c][2][w_idx], 0) for c in ("lg", "vm")}
    n_flat = np.stack([n_flat_lg, n_flat_vm], axis=1).reshape(-1)
    n_popped = np.stack([n_pop["lg"], n_pop["vm"]], axis=1).reshape(-1)
    q_from = np.stack([per["lg"][2][w_idx], per["vm"][2][w_idx]], axis=1).reshape(-1)
    counter = np.tile(np.array([0, 1], dtype=np.int8), len(w_idx))
    ev = np.repeat(w_idx, 2)
    out_rep = np.repeat(outstanding, 2)
    keep = (n_flat + n_popped) > 0
    n_flat, n_popped, q_from, counter, ev, out_rep = (a[keep] for a in (n_flat, n_popped, q_from, counter, ev, out_rep))
    length = n_flat + n_popped
    stop = np.cumsum(length)
    start = stop - length
    producers = np.empty(int(stop[-1]) if len(stop) else 0, dtype=np.int64)
    flat_rec = rec[is_flat]
    producers[_ranges(start, n_flat)] = flat_rec[_ranges(flat_start[ev], n_flat)]
    for ci, c in enumerate(("lg", "vm")):
        m = counter == ci
        producers[_ranges(start[m] + n_flat[m], n_popped[m])] = rec[per[c][4][_ranges(q_from[m], n_popped[m])]]
    return rec[ev], wave[ev], out_rep, start, stop, producers


def _simulate_gfx10(events, fields_of, out):
    lgkm, vm, vs = _Counter(), _Counter(), _Counter()
    flat_load: list[int] = []
    flat_store: list[int] = []
    for rec, act, pc in events:
        if act == ACT_WAIT:
            f = fields_of[pc]
            outstanding = len(lgkm.fifo) + len(vm.fifo) + len(vs.fifo) + len(flat_load) + len(flat_store)
            if "vscnt" in f:
                popped = vs.resolve(f["vscnt"])
                if vs.in_order:
                    got = flat_store + popped
                    flat_store = []
                    if got:
                        out.append((rec, got, outstanding))
            if "vmcnt" in f:
                popped = vm.resolve(f["vmcnt"])
                if vm.in_order:
                    got = flat_load + popped
                    flat_load = []
                    if got:
                        out.append((rec, got, outstanding))
            if "lgkmcnt" in f:
                popped = lgkm.resolve(f["lgkmcnt"])
                if lgkm.in_order:
                    got = flat_load + popped
                    if flat_load:
                        got += flat_store
                        flat_store = []
                    flat_load = []
                    if got:
                        out.append((rec, got, outstanding))
        elif act == ACT_SMEM:
            lgkm.fifo.append(rec)
            lgkm.in_order = False
        elif act == ACT_LGKM or act == ACT_MSG:
            lgkm.fifo.append(rec)
        elif act == ACT_SENDMSG_RTN:
            lgkm.fifo.append(rec)
            lgkm.fifo.append(rec)
        elif act == ACT_VM_LOAD:
            vm.fifo.append(rec)
        elif act == ACT_VM_STORE:
            vs.fifo.append(rec)
        elif act == ACT_FLAT_LOAD:
            flat_load.append(rec)
            lgkm.in_order = vm.in_order = False
        elif act == ACT_FLAT_STORE:
            flat_store.append(rec)
            lgkm.in_order = vs.in_order = False


_GFX12_COUNTERS = ("loadcnt", "storecnt", "samplecnt", "dscnt", "kmcnt", "expcnt", "bvhcnt", "tensorcnt", "asynccnt")
_GFX12_PUSH = {
    ACT_VM_LOAD: "loadcnt",
    ACT_VM_STORE: "storecnt",
    ACT_LGKM: "dscnt",
    ACT_EXP: "expcnt",
    ACT_BVH: "bvhcnt",
    ACT_TENSOR: "tensorcnt",
    ACT_ASYNC: "asynccnt",
}


def _simulate_gfx12(events, fields_of, out):
    ctr = {name: _Counter() for name in _GFX12_COUNTERS}
    flat: list[int] = []
    for rec, act, pc in events:
        if act == ACT_WAIT:
            f = fields_of[pc]
            outstanding = sum(len(c.fifo) for c in ctr.values()) + len(flat)
            names = _GFX12_COUNTERS if "*" in f else [n for n in _GFX12_COUNTERS if n in f]
            got_all: list[int] = []
            for name in names:
                c = ctr[name]
                popped = c.resolve(0 if "*" in f else f[name])
                if c.in_order and name in ("loadcnt", "storecnt", "dscnt"):
                    popped = flat + popped
                    flat = []
                got_all += popped
            if got_all:
                out.append((rec, got_all, outstanding))
        elif act == ACT_SMEM:
            ctr["kmcnt"].fifo.append(rec)
            ctr["kmcnt"].in_order = False
        elif act == ACT_SENDMSG_RTN:
            ctr["kmcnt"].fifo.extend((rec, rec))
        elif act in (ACT_FLAT_LOAD, ACT_FLAT_STORE):
            flat.append(rec)
            ctr["dscnt"].in_order = False
            ctr["loadcnt" if act == ACT_FLAT_LOAD else "storecnt"].in_order = False
        elif act == ACT_MSG:
            ctr["kmcnt"].fifo.append(rec)
        else:
            name = _GFX12_PUSH.get(act)
            if name is not None:
                ctr[name].fifo.append(rec)


_SIMULATORS = {"gfx10": _simulate_gfx10, "gfx12": _simulate_gfx12}


@brief_repr("model", ("waits", lambda d: len(d.entry_wait)), ("producers", lambda d: len(d.producers)))
@dataclass
class WaitDeps:
    """All resolved waits of a dispatch as flat arrays, in wave and execution order.

    Entry ``i`` is one (wait execution, counter) resolution: wait record
    ``entry_wait[i]`` resolved producers ``producers[entry_start[i]:entry_stop[i]]``
    (global record indices). A wait naming two counters can yield two
    adjacent entries, exactly like the stored ``waitcnt`` arrays.
    """

    model: str
    entry_wait: np.ndarray  # int64 record index of the wait
    entry_wave: np.ndarray  # int32
    entry_start: np.ndarray  # int64 offsets into producers
    entry_stop: np.ndarray
    producers: np.ndarray  # int64 record indices
    entry_outstanding: np.ndarray  # memory ops outstanding (all counters) when the wait executed

    @property
    def count(self) -> int:
        return len(self.entry_wait)

    def entries_of_wave(self, wave: int):
        """[(wait record, [producer records]), ...] of one wave."""
        idx = np.flatnonzero(self.entry_wave == wave)
        return [
            (int(self.entry_wait[i]), self.producers[self.entry_start[i] : self.entry_stop[i]].tolist()) for i in idx
        ]

    def producer_wait_records(self) -> np.ndarray:
        """For each element of ``producers``, the wait record that resolved it."""
        return np.repeat(self.entry_wait, self.entry_stop - self.entry_start)


def _wait_counts(fields_of: dict, n_pc: int, name: str) -> np.ndarray:
    out = np.full(n_pc, -1, dtype=np.int64)
    for pc, f in fields_of.items():
        if name in f:
            out[pc] = f[name]
    return out


def compute_wait_deps(dispatch, model: str | None = None) -> WaitDeps:
    """Simulate the wait counters of every wave of ``dispatch`` (kept in the
    capture's digest when there is one). The gfx9 simulation may already be
    done: the loader's parse processes run it on the parts they parsed
    (``dispatch.prepared["waitdeps-gfx9"]``, :func:`join_wait_deps`)."""
    from attlens.cache import memo
    from attlens.cache.store import DataclassCodec

    model = model or dispatch.arch.waitcnt_model

    def compute():
        ready = getattr(dispatch, "prepared", {}).get(f"waitdeps-{model}")
        return ready if ready is not None else _compute_wait_deps(dispatch, model)

    return memo(dispatch, f"waitdeps-{model}", compute, DataclassCodec(WaitDeps))


def part_wait_deps(code, listing: tuple, model: str, pc: np.ndarray, wave: np.ndarray, rec_start: np.ndarray) -> WaitDeps:
    """The simulation on some waves alone (records and waves numbered from 0;
    ``listing``: :func:`listing_actions` of ``code``): waves are simulated
    independently, so :func:`join_wait_deps` of the parts of a dispatch equals
    :func:`compute_wait_deps` of the whole."""
    from types import SimpleNamespace

    part = SimpleNamespace(code=code, records=SimpleNamespace(pc=pc, wave=wave), waves=SimpleNamespace(rec_start=rec_start,
                           rec_stop=np.append(rec_start[1:], len(pc)), count=len(rec_start)))
    return _compute_wait_deps(part, model, listing)


def join_wait_deps(parts: list[tuple[WaitDeps, int, int]]) -> WaitDeps:
    """The parts' simulations, each given with its record and wave counts, as
    one (indices shifted past the parts before it; the columns joined on two
    threads when large, :func:`join_columns`)."""
    rec0 = np.cumsum([0] + [n for _, n, _ in parts[:-1]])
    wave0 = np.cumsum([0] + [w for _, _, w in parts[:-1]])
    prod0 = np.cumsum([0] + [len(d.producers) for d, _, _ in parts[:-1]])
    deps = [d for d, _, _ in parts]
    return WaitDeps(model=deps[0].model, **join_columns(deps, {
        "entry_wait": (rec0, None), "entry_wave": (wave0, np.int32), "entry_start": (prod0, None),
        "entry_stop": (prod0, None), "producers": (rec0, None), "entry_outstanding": None}))


def join_columns(parts: list, shifts: dict) -> dict[str, np.ndarray]:
    """Per column name, the parts' columns joined: ``(shifts, dtype)`` for
    :func:`concat_shifted`, None for a plain concatenation; on two threads
    when they are large (attlens.twothreads)."""
    from attlens import twothreads

    def job(name, how):
        cols = [getattr(p, name) for p in parts]
        return (lambda: np.concatenate(cols)) if how is None else (lambda: concat_shifted(cols, *how))

    names = list(shifts)
    weights = [8 * sum(len(getattr(p, name)) for p in parts) for name in names]
    return dict(zip(names, twothreads.run([job(n, shifts[n]) for n in names], weights)))


def concat_shifted(arrays: list[np.ndarray], shifts, dtype=None) -> np.ndarray:
    """``concatenate([a + s for a, s in zip(arrays, shifts)])`` in one pass:
    each part is added into its place, with no temporary of its size (the
    final join of the parse processes' wait results: 32 MB at softmax x5)."""
    dtype = np.result_type(*arrays, np.int64) if dtype is None else np.dtype(dtype)  # the sum's type, as a + int64 gives
    out = np.empty(sum(len(a) for a in arrays), dtype=dtype)
    at = 0
    for a, s in zip(arrays, shifts):
        np.add(a, np.int64(s), out=out[at : at + len(a)], casting="unsafe")
        at += len(a)
    return out


BATCH_EVENTS = 1 << 16  # memory ops and waits simulated together (bounds the temporaries)


def _batched_gfx9(dispatch, interesting, rec_act, fields_of, batch_events: int = BATCH_EVENTS) -> WaitDeps:
    """:func:`_resolve_gfx9` over batches of whole waves."""
    recs, code = dispatch.records, dispatch.code
    n_lg = _wait_counts(fields_of, code.size, "lgkmcnt")
    n_vm = _wait_counts(fields_of, code.size, "vmcnt")
    wave_ev = np.searchsorted(interesting, dispatch.waves.rec_start)  # first event of each wave
    parts = []
    a = 0
    n_ev = len(interesting)
    while a < n_ev:
        # end the batch at the first wave boundary past a + batch_events
        k = int(np.searchsorted(wave_ev, a + batch_events, side="left"))
        b = int(wave_ev[k]) if k < len(wave_ev) else n_ev
        if b <= a:
            b = int(wave_ev[k + 1]) if k + 1 < len(wave_ev) else n_ev
        idx = interesting[a:b]
        pcs = recs.pc[idx]
        parts.append(_resolve_gfx9(idx, rec_act[idx], recs.wave[idx], n_lg[pcs], n_vm[pcs]))
        a = b
    if not parts:
        z = np.zeros(0, dtype=np.int64)
        return WaitDeps("gfx9", z, np.zeros(0, dtype=np.int32), z, z, z, z)
    shift = np.cumsum([0] + [len(p[5]) for p in parts[:-1]])
    return WaitDeps(
        model="gfx9",
        entry_wait=np.concatenate([p[0] for p in parts]),
        entry_wave=np.concatenate([p[1] for p in parts]).astype(np.int32),
        entry_start=np.concatenate([p[3] + s for p, s in zip(parts, shift)]),
        entry_stop=np.concatenate([p[4] + s for p, s in zip(parts, shift)]),
        producers=np.concatenate([p[5] for p in parts]),
        entry_outstanding=np.concatenate([p[2] for p in parts]),
    )


def listing_actions(code, model: str) -> tuple[np.ndarray, dict]:
    """Per pc of the listing: its action in the simulation, and the counts each wait names."""
    actions = np.array([pc_action(t, model) for t in code.isa], dtype=np.int8)
    return actions, {pc: waitcnt_fields(code.isa[pc]) for pc in np.flatnonzero(actions == ACT_WAIT).tolist()}


def _compute_wait_deps(dispatch, model: str, listing: tuple | None = None) -> WaitDeps:
    actions, fields_of = listing or listing_actions(dispatch.code, model)
    recs = dispatch.records
    rec_act = actions[recs.pc]
    interesting = np.flatnonzero(rec_act != ACT_NONE)
    if model == "gfx9":
        return _batched_gfx9(dispatch, interesting, rec_act, fields_of)
    simulate = _SIMULATORS[model]
    # Split the interesting record indices per wave (records are stored wave by wave).
    bounds = np.searchsorted(interesting, dispatch.waves.rec_start)
    bounds_end = np.searchsorted(interesting, dispatch.waves.rec_stop)
    acts = rec_act[interesting].tolist()
    pcs = recs.pc[interesting].tolist()
    idx = interesting.tolist()
    out: list = []
    waves_of: list[int] = []
    for w in range(dispatch.waves.count):
        a, b = int(bounds[w]), int(bounds_end[w])
        if a == b:
            continue
        before = len(out)
        simulate(zip(idx[a:b], acts[a:b], pcs[a:b]), fields_of, out)
        waves_of.extend([w] * (len(out) - before))
    counts = np.fromiter((len(p) for _, p, _ in out), dtype=np.int64, count=len(out))
    stop = np.cumsum(counts)
    flat = [r for _, p, _ in out for r in p]
    return WaitDeps(
        model=model,
        entry_outstanding=np.fromiter((o for _, _, o in out), dtype=np.int64, count=len(out)),
        entry_wait=np.fromiter((r for r, _, _ in out), dtype=np.int64, count=len(out)),
        entry_wave=np.asarray(waves_of, dtype=np.int32),
        entry_start=stop - counts,
        entry_stop=stop,
        producers=np.asarray(flat, dtype=np.int64),
    )


def simulate_sequence(texts: list[str], model: str = "gfx9") -> list[tuple[int, list[int]]]:
    """Run the counter simulation over one wave's executed instruction texts
    (in order). Returns [(index of the wait, [indices of the producers])].
    Used by tests and by anyone checking a hand-written sequence."""
    return [(w, p) for w, p, _ in simulate_sequence_detail(texts, model)]


def simulate_sequence_detail(texts: list[str], model: str = "gfx9") -> list[tuple[int, list[int], int]]:
    """:func:`simulate_sequence` plus the memory ops outstanding at each wait."""
    events = []
    fields_of: dict[int, dict] = {}
    for i, t in enumerate(texts):
        act = pc_action(t, model)
        if act == ACT_NONE:
            continue
        if act == ACT_WAIT:
            fields_of[i] = waitcnt_fields(t)
        events.append((i, act, i))
    if model == "gfx9":
        rec = np.array([e[0] for e in events], dtype=np.int64)
        n = len(texts)
        wait, _w, outstanding, start, stop, prods = _resolve_gfx9(
            rec, np.array([e[1] for e in events], dtype=np.int8), np.zeros(len(rec), dtype=np.int32),
            _wait_counts(fields_of, n, "lgkmcnt")[rec], _wait_counts(fields_of, n, "vmcnt")[rec],
        )
        return [(int(w), prods[a:b].tolist(), int(o)) for w, a, b, o in zip(wait, start, stop, outstanding)]
    out: list = []
    _SIMULATORS[model](events, fields_of, out)
    return out
