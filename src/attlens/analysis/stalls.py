"""Per-instruction sums recomputed from the wave files, and the stall
breakdown by taxonomy class with every wait split over its producers.

A wait execution's stall (and latency; for waits they are equal) is divided
evenly over the memory ops it resolved, in whole cycles (the remainder goes
to the oldest producers), and each share is charged to the class of its
producer: global memory, LDS or scalar memory. So a ``s_waitcnt vmcnt(0)
lgkmcnt(0)`` that waited on two buffer loads and one ds_read charges 2/3 of its
stall to ``wait_global`` and 1/3 to ``wait_lds``. Waits that resolved nothing
are ``wait_unresolved``. Class totals therefore add up to the kernel total.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.taxonomy import CLASSES, WAIT, producer_wait_class
from attlens.analysis.waitattr import WaitPairs, split_waits
from attlens.analysis.waitdeps import WaitDeps, compute_wait_deps
from attlens.results import brief_repr

CLASS_IDS = list(CLASSES)  # stable order for arrays
_CLASS_INDEX = {c: i for i, c in enumerate(CLASS_IDS)}


@brief_repr(("pcs", lambda s: len(s.hit)), ("hit", lambda s: int(s.hit.sum())), ("latency", lambda s: int(s.latency.sum())),
            ("stall", lambda s: int(s.stall.sum())), ("idle", lambda s: int(s.idle.sum())))
@dataclass
class PcSums:
    """Per-pc sums over all traced waves (same meaning as code.json cols 6-9)."""

    hit: np.ndarray
    latency: np.ndarray
    stall: np.ndarray
    idle: np.ndarray
    # per pc × class: stall cycles charged (for non-wait pcs, all in their own class)
    class_stall: np.ndarray  # (n_pc, n_class) int64
    class_latency: np.ndarray
    # per producer pc: wait cycles its completion was waited on (charged share)
    producer_wait: np.ndarray  # int64


@brief_repr("total_latency", "total_stall", "total_idle", "total_issue",
            ("top_class", lambda b: max(b.by_class_stall, key=b.by_class_stall.get) if any(b.by_class_stall.values()) else None))
@dataclass
class StallBreakdown:
    total_latency: int
    total_stall: int
    total_idle: int
    total_issue: int  # latency - stall
    by_class_stall: dict[str, int]
    by_class_latency: dict[str, int]
    by_class_records: dict[str, int]  # dynamic instruction count per class (waits: by majority)
    waits_resolved: int  # wait executions that resolved at least one producer
    waits_unresolved_with_stall: int

    def class_rows(self, stall_recorded: bool = True) -> list[dict]:
        """The ``stall_by_class`` rows of ``attlens.analyze``: every class with
        latency or records, largest stall first (no stall recorded, rocprofv2:
        stall and its share null, largest latency first)."""
        def stall(c):
            return self.by_class_stall[c] if stall_recorded else None

        return [
            {
                "class": c,
                "description": CLASSES[c],
                "stall": stall(c),
                "stall_share": rounded_share(self.by_class_stall[c], self.total_stall) if stall_recorded else None,
                "latency": self.by_class_latency[c],
                "latency_share": rounded_share(self.by_class_latency[c], self.total_latency),
                "records": self.by_class_records[c],
            }
            for c in sorted(CLASSES, key=lambda c: (-(self.by_class_stall[c] if stall_recorded else 0), -self.by_class_latency[c]))
            if self.by_class_latency[c] or self.by_class_records[c]
        ]


def rounded_share(x: int, total: int) -> float | None:
    """``x / total`` rounded to 6 places as the JSON shows shares; None when ``total`` is 0."""
    return round(x / total, 6) if total else None


SUM_BATCH = 1 << 18  # records per bincount (bounds the float64 copy of the weights)


def per_pc_sum(pc: np.ndarray, values: np.ndarray, n_pc: int) -> np.ndarray:
    """Σ values per pc, exact (integers below 2^53), in bounded steps."""
    out = np.zeros(n_pc, dtype=np.int64)
    for a in range(0, len(pc), SUM_BATCH):
        out += np.bincount(pc[a : a + SUM_BATCH], weights=values[a : a + SUM_BATCH], minlength=n_pc).round().astype(np.int64)
    return out


def basic_pc_sums(recs, n_pc: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per pc: executions, latency, stall and idle of the records ``recs``
    (``pc``, ``duration``, ``stall``, ``idle``); int64, so the sums of the
    parts of a capture add up to the sums of the whole."""
    pc = recs.pc
    return (np.bincount(pc, minlength=n_pc).astype(np.int64), per_pc_sum(pc, recs.duration, n_pc),
            per_pc_sum(pc, recs.stall, n_pc), per_pc_sum(pc, recs.idle, n_pc))


def compute_pc_sums(dispatch, deps: WaitDeps | None = None) -> tuple[PcSums, StallBreakdown, WaitDeps, WaitPairs]:
    """Per-pc sums, the stall breakdown, the wait dependencies and pairs (the
    sums and pairs are kept in the capture's digest when there is one)."""
    if deps is not None:
        return _compute_pc_sums(dispatch, deps)
    from attlens.cache import memo
    from attlens.cache.store import DataclassCodec, TupleCodec

    deps = compute_wait_deps(dispatch)
    codec = TupleCodec(DataclassCodec(PcSums), DataclassCodec(StallBreakdown), DataclassCodec(WaitPairs))
    sums, breakdown, pairs = memo(dispatch, f"pc_sums-{deps.model}",
                                  lambda: _drop_deps(_compute_pc_sums(dispatch, deps)), codec)
    return sums, breakdown, deps, pairs


def _drop_deps(result):
    sums, breakdown, _deps, pairs = result
    return sums, breakdown, pairs


def class_tables(static, instruction_mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pc: its class index (-1 for waits), its class as a producer a wait
    waited on, and whether it is a wait instruction (a listed instruction of
    class wait); from :class:`~attlens.model.dispatch.StaticCode` ``mnemonic``/``cls``."""
    static_cls = np.array([_CLASS_INDEX.get(c, _CLASS_INDEX["other"]) if c != WAIT else -1 for c in static.cls], dtype=np.int64)
    unresolved = _CLASS_INDEX["wait_unresolved"]
    prod_cls = np.array([_CLASS_INDEX[producer_wait_class(m)] if m else unresolved for m in static.mnemonic], dtype=np.int64)
    return static_cls, prod_cls, (static_cls < 0) & instruction_mask


@dataclass
class WaitShares:
    """What the waits resolved among some records add to the per-pc class
    sums (:func:`wait_shares`): sums over wait executions, so the shares of
    disjoint sets of waves add up to those of all of them."""

    stall: np.ndarray  # (n_pc, n_cls) int64: stall moved to each producer class
    latency: np.ndarray
    resolved_stall: np.ndarray  # (n_pc,) stall / latency of resolved wait executions (out of "unresolved")
    resolved_latency: np.ndarray
    producer_wait: np.ndarray  # (n_pc,) stall charged to each producer pc
    resolved: int  # wait executions resolved
    unresolved_with_stall: int  # wait records with stall that nothing resolved

    def __add__(self, other: "WaitShares") -> "WaitShares":
        return WaitShares(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))


def wait_shares(recs, pairs, tables, n_pc: int) -> WaitShares:
    """The class sums the wait/producer ``pairs`` (:func:`split_waits` of
    ``recs``) give: each pair's stall/latency share to the wait pc's row, in
    its producer's class, and out of the wait's "unresolved" cell."""
    static_cls, prod_cls_by_pc, is_wait_pc = tables
    n_cls = len(CLASS_IDS)
    pc = recs.pc
    stall = np.zeros((n_pc, n_cls), dtype=np.int64)
    lat = np.zeros((n_pc, n_cls), dtype=np.int64)
    prod = pairs.prod_rec
    if len(prod):
        wait_of = pairs.wait_rec
        flat_idx = pc[wait_of].astype(np.int64) * n_cls + prod_cls_by_pc[pc[prod]]
        size = n_pc * n_cls
        stall += np.bincount(flat_idx, weights=pairs.stall_share, minlength=size).round().astype(np.int64).reshape(n_pc, n_cls)
        lat += np.bincount(flat_idx, weights=pairs.latency_share, minlength=size).round().astype(np.int64).reshape(n_pc, n_cls)
        w_exec = wait_of[pairs.first_of_wait]  # one row per wait execution
        r_stall = np.bincount(pc[w_exec], weights=recs.stall[w_exec], minlength=n_pc).round().astype(np.int64)
        r_lat = np.bincount(pc[w_exec], weights=recs.duration[w_exec], minlength=n_pc).round().astype(np.int64)
        producer_wait = np.bincount(pc[prod], weights=pairs.stall_share, minlength=n_pc).round().astype(np.int64)
    else:
        w_exec = np.zeros(0, dtype=np.int64)
        r_stall, r_lat, producer_wait = (np.zeros(n_pc, dtype=np.int64) for _ in range(3))
    is_wait_rec = (static_cls[pc] < 0) & (recs.stall > 0)
    is_wait_rec[w_exec] = False
    return WaitShares(stall, lat, r_stall, r_lat, producer_wait, len(w_exec), int(np.count_nonzero(is_wait_rec)))


def _compute_pc_sums(dispatch, deps: WaitDeps) -> tuple[PcSums, StallBreakdown, WaitDeps, WaitPairs]:
    recs = dispatch.records
    n_pc = dispatch.code.size
    basic = getattr(dispatch, "prepared", {}).get("pc_basic")  # summed by the loader's parse processes
    if basic is None or any(len(a) != n_pc for a in basic):
        basic = basic_pc_sums(recs, n_pc)
    hit, lat, stall, idle = basic

    n_cls = len(CLASS_IDS)
    tables = class_tables(dispatch.static, dispatch.code.instruction_mask)
    static_cls, _prod_cls, is_wait_pc = tables
    # Non-wait pcs: all of their cycles are in their own class.
    class_stall = np.zeros((n_pc, n_cls), dtype=np.int64)
    class_lat = np.zeros((n_pc, n_cls), dtype=np.int64)
    nonwait = static_cls >= 0
    rows = np.flatnonzero(nonwait)
    class_stall[rows, static_cls[rows]] = stall[rows]
    class_lat[rows, static_cls[rows]] = lat[rows]

    # Waits: split each execution over its producers.
    wait_rows = np.flatnonzero(is_wait_pc)
    unresolved = _CLASS_INDEX["wait_unresolved"]
    # Start with everything unresolved, then move resolved executions' cycles.
    class_stall[wait_rows, unresolved] = stall[wait_rows]
    class_lat[wait_rows, unresolved] = lat[wait_rows]
    prepared = getattr(dispatch, "prepared", {})
    if prepared.get(f"waitdeps-{deps.model}") is deps and "wait_pairs" in prepared:
        pairs, shares = prepared["wait_pairs"], prepared["wait_shares"]  # the parse processes' parts, joined
    else:
        pairs = split_waits(dispatch, deps)
        shares = wait_shares(recs, pairs, tables, n_pc)
    class_stall += shares.stall
    class_lat += shares.latency
    class_stall[:, unresolved] -= shares.resolved_stall
    class_lat[:, unresolved] -= shares.resolved_latency
    producer_wait = shares.producer_wait
    resolved_wait_records = shares.resolved
    unresolved_with_stall = shares.unresolved_with_stall

    by_stall = {c: int(v) for c, v in zip(CLASS_IDS, class_stall.sum(axis=0))}
    by_lat = {c: int(v) for c, v in zip(CLASS_IDS, class_lat.sum(axis=0))}
    # dynamic counts: non-wait by static class, waits by their majority class per pc
    # (summed per pc: no per-record array)
    pc_cls = np.where(nonwait, static_cls, np.argmax(class_lat, axis=1))
    by_rec = {c: int(v) for c, v in zip(CLASS_IDS, np.bincount(pc_cls, weights=hit, minlength=n_cls).round().astype(np.int64))}
    sums = PcSums(hit, lat, stall, idle, class_stall, class_lat, producer_wait)
    total_lat = int(lat.sum())
    total_stall = int(stall.sum())
    breakdown = StallBreakdown(
        total_latency=total_lat,
        total_stall=total_stall,
        total_idle=int(idle.sum()),
        total_issue=total_lat - total_stall,
        by_class_stall=by_stall,
        by_class_latency=by_lat,
        by_class_records=by_rec,
        waits_resolved=resolved_wait_records,
        waits_unresolved_with_stall=unresolved_with_stall,
    )
    return sums, breakdown, deps, pairs
