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


def _simulate_gfx9(events, fields_of, out):
    # The hot loop of the whole analysis (one iteration per memory op or wait):
    # the counter logic of _Counter is inlined with local names on purpose.
    lg: deque[int] = deque()
    vm: deque[int] = deque()
    lg_in = vm_in = True
    flat: list[int] = []
    lg_pop, vm_pop, lg_push, vm_push = lg.popleft, vm.popleft, lg.append, vm.append
    emit = out.append
    for rec, act, pc in events:
        if act == ACT_WAIT:
            f = fields_of[pc]
            outstanding = len(lg) + len(vm) + len(flat)
            n = f.get("lgkmcnt")
            if n is not None:  # lgkm first, as the decoder's writer does
                if n == 0:
                    lg_in = True
                if lg_in:
                    k = len(lg) - n
                    got = flat + [lg_pop() for _ in range(k)] if k > 0 else flat
                    flat = []
                    if got:
                        emit((rec, got, outstanding))
            n = f.get("vmcnt")
            if n is not None:
                if n == 0:
                    vm_in = True
                if vm_in:
                    k = len(vm) - n
                    got = flat + [vm_pop() for _ in range(k)] if k > 0 else flat
                    flat = []
                    if got:
                        emit((rec, got, outstanding))
        elif act == ACT_VM_LOAD or act == ACT_VM_STORE:
            vm_push(rec)
        elif act == ACT_LGKM or act == ACT_MSG or act == ACT_SENDMSG_RTN:
            lg_push(rec)
        elif act == ACT_SMEM:
            lg_push(rec)
            lg_in = False
        elif act == ACT_FLAT_LOAD or act == ACT_FLAT_STORE:
            flat.append(rec)
            lg_in = vm_in = False


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


_SIMULATORS = {"gfx9": _simulate_gfx9, "gfx10": _simulate_gfx10, "gfx12": _simulate_gfx12}


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


def compute_wait_deps(dispatch, model: str | None = None) -> WaitDeps:
    """Simulate the wait counters of every wave of ``dispatch``."""
    model = model or dispatch.arch.waitcnt_model
    code = dispatch.code
    actions = np.array([pc_action(t, model) for t in code.isa], dtype=np.int8)
    fields_of = {pc: waitcnt_fields(code.isa[pc]) for pc in np.flatnonzero(actions == ACT_WAIT).tolist()}
    simulate = _SIMULATORS[model]
    recs = dispatch.records
    rec_act = actions[recs.pc]
    interesting = np.flatnonzero(rec_act != ACT_NONE)
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
    events = []
    fields_of: dict[int, dict] = {}
    for i, t in enumerate(texts):
        act = pc_action(t, model)
        if act == ACT_NONE:
            continue
        if act == ACT_WAIT:
            fields_of[i] = waitcnt_fields(t)
        events.append((i, act, i))
    out: list = []
    _SIMULATORS[model](events, fields_of, out)
    return [(w, p) for w, p, _ in out]
