"""Per-wave event arrays the replay walks (docs/whatif.md).

The replay keeps every traced instruction's *gap* (its first issue attempt
minus the previous instruction's issue, or minus the wave's begin for the
first one) and the stall of every instruction except two kinds of events,
whose stall it re-derives:

- ``s_waitcnt`` executions that resolved memory ops (analysis/waitdeps.py):
  released when the ops they waited on complete (issue' + latency, in-order
  retirement per counter);
- ``s_barrier`` executions: released when the last traced wave of the same
  barrier instance arrives (one instance = the traced waves of one CU
  released together, as analysis/rules/schedule.py groups them).

Only memory ops some wait resolved (the producers) are load events: an op
nothing waited on cannot hold a wave.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.waitdeps import ACT_LGKM, ACT_MSG, ACT_VM_LOAD, ACT_VM_STORE, pc_action

# counters a producer retires on, in order (vmcnt / lgkm for LDS) or out of order
CTR_VM, CTR_LGKM, CTR_NONE = 0, 1, 2
# event kinds, in the order they are walked when two share a position (never: one record is one kind)
EV_LOAD, EV_WAIT, EV_BARRIER = 0, 1, 2


@dataclass
class Streams:
    """The traced dispatch as the replay sees it (global record indices)."""

    n_waves: int
    rec_start: np.ndarray  # per wave
    rec_stop: np.ndarray
    begin: np.ndarray  # per wave, traced begin (int64)
    end: np.ndarray  # per wave, traced end
    simd_key: np.ndarray  # per wave: (se, cu, simd) as one int
    slot_key: np.ndarray  # per wave: (se, cu, simd, slot)
    se: np.ndarray
    pred: np.ndarray  # per wave: the wave before it in its slot (-1: first)
    pc: np.ndarray  # per record
    stall: np.ndarray  # per record (the records' own int32 column, not a copy)
    issue: np.ndarray  # per record: time + stall (int64)
    tail: np.ndarray  # per wave: end - last issue
    busy: np.ndarray  # per record: issue cycles (duration - stall, >= 0; int32)
    pipe: np.ndarray  # per record: pipe group (0 VALU/matrix, 1 SALU/SMEM, 2 VMEM/LDS, 3 other)
    # waits that resolved something: wait record, producers (CSR)
    wait_rec: np.ndarray
    wait_off: np.ndarray  # len(wait_rec) + 1
    wait_prod: np.ndarray
    # producers: record, counter class
    prod_rec: np.ndarray
    prod_ctr: np.ndarray
    # barriers: record, instance id, instance size, own latency (release - last arrival)
    bar_rec: np.ndarray
    bar_inst: np.ndarray
    inst_size: np.ndarray
    inst_own: np.ndarray
    is_barrier_pc: np.ndarray  # per pc
    is_wait_pc: np.ndarray  # per pc

    def gaps(self) -> np.ndarray:
        """Per record: its first issue attempt minus the previous issue (a
        wave's first: minus the wave's begin). Made on first use: only a
        replay in another order than the traced one, or with a wave without
        records, needs it (the traced order telescopes to the issue times)."""
        got = self.__dict__.get("_gaps")
        if got is None:
            time = self.issue - self.stall
            got = np.empty(len(time), dtype=np.int64)
            if len(time):
                np.subtract(time[1:], self.issue[:-1], out=got[1:])
            has = self.rec_stop > self.rec_start
            got[self.rec_start[has]] = time[self.rec_start[has]] - self.begin[has]
            self._gaps = got
        return got


def _counter_classes(d) -> np.ndarray:
    """Per pc: which counter its memory op retires on in order (CTR_*)."""
    model = d.arch.waitcnt_model
    out = np.full(d.code.size, CTR_NONE, dtype=np.int8)
    for pc, text in enumerate(d.code.isa):
        if not text:
            continue
        a = pc_action(text, model)
        if a in (ACT_VM_LOAD, ACT_VM_STORE):
            out[pc] = CTR_VM
        elif a in (ACT_LGKM, ACT_MSG):
            out[pc] = CTR_LGKM
    return out


def _pipes(d) -> np.ndarray:
    """Per decoder category: the issue pipe group whose busy time bounds a SIMD."""
    p = np.full(256, 3, dtype=np.int8)
    p[6] = 0  # VALU (matrix ops issue on it too)
    p[[1, 2]] = 1  # SMEM, SALU
    p[[3, 4, 5]] = 2  # VMEM, FLAT, LDS
    return p


def build_streams(result) -> Streams:
    d, deps = result.dispatch, result.deps
    recs, w = d.records, d.waves
    n = recs.count
    # the records' own columns where they serve as they are (int64 times; stalls only added to
    # int64 values or read one by one): no record-long copies
    time = np.asarray(recs.time, dtype=np.int64)
    stall = recs.stall
    issue = np.add(time, stall, dtype=np.int64)
    starts = w.rec_start.astype(np.int64)
    stops = w.rec_stop.astype(np.int64)
    nonempty = stops > starts
    tail = np.where(nonempty, w.end.astype(np.int64) - issue[np.maximum(stops - 1, 0)], 0)
    simd_key = (w.se.astype(np.int64) * 4096 + w.cu.astype(np.int64)) * 64 + w.simd.astype(np.int64)
    slot_key = simd_key * 256 + w.slot.astype(np.int64)
    order = np.lexsort((w.begin, w.instance, slot_key))
    pred = np.full(w.count, -1, dtype=np.int64)
    same = slot_key[order][1:] == slot_key[order][:-1]
    pred[order[1:][same]] = order[:-1][same]
    # waits: one row per wait execution, its producers (entries of one execution merged)
    ew = deps.entry_wait.astype(np.int64)
    counts = (deps.entry_stop - deps.entry_start).astype(np.int64)
    prod_all = deps.producers.astype(np.int64)
    owner = np.repeat(ew, counts)
    o = np.lexsort((prod_all, owner))
    owner, prod_sorted = owner[o], prod_all[o]
    wait_rec, first = np.unique(owner, return_index=True)
    wait_off = np.r_[first, len(owner)].astype(np.int64)
    ctr_pc = _counter_classes(d)
    ps = np.sort(prod_sorted)  # np.unique(prod_sorted), without its slow hash pass on 1e5 ints (numpy 2.4)
    prod_rec = ps[np.r_[True, ps[1:] != ps[:-1]]] if len(ps) else ps
    prod_ctr = ctr_pc[recs.pc[prod_rec]]
    # barriers grouped into instances: same CU and pc, released within 2 time quanta
    st = d.static
    is_barrier_pc = np.array([c == "barrier" for c in st.cls], dtype=bool)
    is_wait_pc = np.array([c == "wait" for c in st.cls], dtype=bool)
    bar_rec = np.flatnonzero(is_barrier_pc[recs.pc]) if n else np.zeros(0, dtype=np.int64)
    q = 2 * ((d.arch.facts or {}).get("time_quantum") or 4)
    bw = recs.wave[bar_rec]
    cu = (w.se[bw].astype(np.int64) * 4096 + w.cu[bw]) * 100000 + recs.pc[bar_rec]
    rel = issue[bar_rec]
    bo = np.lexsort((rel, cu))
    new = np.r_[True, (cu[bo][1:] != cu[bo][:-1]) | (rel[bo][1:] - rel[bo][:-1] > q)] if len(bo) else np.zeros(0, dtype=bool)
    gid_sorted = np.cumsum(new) - 1
    bar_inst = np.empty(len(bar_rec), dtype=np.int64)
    bar_inst[bo] = gid_sorted
    n_inst = int(gid_sorted[-1]) + 1 if len(gid_sorted) else 0
    inst_size = np.bincount(bar_inst, minlength=n_inst)
    last_arrival = np.full(n_inst, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last_arrival, bar_inst, time[bar_rec])
    release = np.full(n_inst, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(release, bar_inst, rel)
    inst_own = np.maximum(release - last_arrival, 0) if n_inst else np.zeros(0, dtype=np.int64)
    busy = np.maximum(recs.duration - stall, 0)  # both int32 and >= 0: no overflow
    return Streams(
        n_waves=w.count, rec_start=starts, rec_stop=stops, begin=w.begin.astype(np.int64), end=w.end.astype(np.int64),
        simd_key=simd_key, slot_key=slot_key, se=w.se.astype(np.int64), pred=pred, pc=recs.pc.astype(np.int64), stall=stall,
        issue=issue, tail=tail, busy=busy, pipe=_pipes(d)[recs.category], wait_rec=wait_rec, wait_off=wait_off,
        wait_prod=prod_sorted, prod_rec=prod_rec, prod_ctr=prod_ctr, bar_rec=bar_rec, bar_inst=bar_inst, inst_size=inst_size,
        inst_own=inst_own, is_barrier_pc=is_barrier_pc, is_wait_pc=is_wait_pc,
    )
