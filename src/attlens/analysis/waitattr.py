"""Attribution of wait cycles to the memory ops that were waited on.

Every (wait execution, producer) pair from :mod:`attlens.analysis.waitdeps`
gets an even, whole-cycle share of the wait's stall and latency (remainder to
the oldest producers), so each wait's stall is charged in full. From the pairs:
per producer instruction, the total wait it caused, the load-to-use distance
(instructions and cycles from its issue to the wait) and the memory ops
outstanding at the wait; per wait instruction, whom it waited on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.groups import stable_pc_order
from attlens.results import brief_repr


@brief_repr(("pairs", lambda p: len(p.wait_rec)), ("wait_executions", lambda p: len(p.first_of_wait)))
@dataclass
class WaitPairs:
    """One row per (wait execution, producer)."""

    wait_rec: np.ndarray
    prod_rec: np.ndarray
    stall_share: np.ndarray  # int64
    latency_share: np.ndarray
    distance_instr: np.ndarray  # wait record - producer record (same wave)
    distance_cycles: np.ndarray  # wait attempt time - producer issue time
    outstanding: np.ndarray  # ops outstanding (all counters) at the wait
    first_of_wait: np.ndarray  # row indices of the first pair of each wait execution


def split_waits(dispatch, deps) -> WaitPairs:
    recs = dispatch.records
    prod = deps.producers
    counts = deps.entry_stop - deps.entry_start
    wait_of = np.repeat(deps.entry_wait, counts)
    outstanding = np.repeat(deps.entry_outstanding, counts)
    if len(prod) == 0:
        z = np.zeros(0, dtype=np.int64)
        return WaitPairs(z, z, z, z, z, z, z, z)
    # A wait naming two counters can yield adjacent entries: group by execution.
    new_group = np.r_[True, wait_of[1:] != wait_of[:-1]]
    gstart = np.flatnonzero(new_group)
    gid = np.cumsum(new_group) - 1
    n_in = np.diff(np.r_[gstart, len(prod)])[gid]
    rank = np.arange(len(prod)) - gstart[gid]
    s_tot, d_tot = recs.stall[wait_of], recs.duration[wait_of]
    return WaitPairs(
        wait_rec=wait_of,
        prod_rec=prod,
        stall_share=s_tot // n_in + (rank < s_tot % n_in),
        latency_share=d_tot // n_in + (rank < d_tot % n_in),
        distance_instr=wait_of - prod,
        distance_cycles=recs.time[wait_of] - (recs.time[prod] + recs.stall[prod]),
        outstanding=outstanding,
        first_of_wait=gstart,
    )


def join_wait_pairs(parts: list[tuple[WaitPairs, int]]) -> WaitPairs:
    """The pairs of parts of a dispatch (each with its record count, records
    numbered from 0 in each), as one: a wait execution and its producers are
    in one wave, so :func:`split_waits` of the whole gives the same rows."""
    from attlens.analysis.waitdeps import join_columns

    rec0 = np.cumsum([0] + [n for _, n in parts[:-1]])
    row0 = np.cumsum([0] + [len(p.wait_rec) for p, _ in parts[:-1]])
    return WaitPairs(**join_columns([p for p, _ in parts], {
        "wait_rec": (rec0, None), "prod_rec": (rec0, None), "stall_share": None, "latency_share": None,
        "distance_instr": None, "distance_cycles": None, "outstanding": None, "first_of_wait": (row0, None)}))


@brief_repr("pc", "isa", "wait_class", "waited_cycles", "share_of_wait", "pairs")
@dataclass
class ProducerStats:
    pc: int
    isa: str
    source: str | None
    wait_class: str
    kind: str  # load | store | atomic | lds | smem | message | other: what the producer is (a store is never a load)
    waited_cycles: int  # stall charged to it
    share_of_wait: float  # of all charged wait cycles
    pairs: int  # times a wait resolved it
    executions: int  # its hit count
    distance_instructions_median: float
    distance_instructions_min: int
    distance_cycles_median: float
    outstanding_mean: float
    waits: dict[int, int]  # wait pc -> cycles charged


@brief_repr("total_charged", ("producers", lambda a: len(a.producers)), ("waits", lambda a: len(a.by_wait_pc)),
            ("top_producer_pc", lambda a: a.producers[0].pc if a.producers else None))
@dataclass
class WaitAttribution:
    pairs: WaitPairs
    producers: list[ProducerStats]  # sorted by waited cycles
    total_charged: int
    by_wait_pc: dict[int, dict[int, int]]  # wait pc -> producer pc -> cycles

    def by_producer_line(self) -> list[tuple[str, int, int]]:
        """[(source line of the producers, wait cycles charged, producers on it)], largest first."""
        agg: dict[str, list[int]] = {}
        for p in self.producers:
            key = p.source or "(no source)"
            a = agg.setdefault(key, [0, 0])
            a[0] += p.waited_cycles
            a[1] += 1
        return sorted(((k, v[0], v[1]) for k, v in agg.items()), key=lambda x: -x[1])


_KIND_OF_CLASS = {"vmem_load": "load", "vmem_store": "store", "vmem_atomic": "atomic", "lds": "lds", "lds_crosslane": "lds",
                  "smem": "smem", "message": "message"}


def producer_kind(cls: str) -> str:
    """What a producer is, from its taxonomy class: ``buffer_store``/``global_store`` are
    stores (they count on vmcnt on gfx9 but are never loads)."""
    return _KIND_OF_CLASS.get(cls, "other")


class _AttributionCodec:
    """WaitAttribution to and from a digest (int keys as pairs)."""

    def encode(self, a: WaitAttribution):
        from dataclasses import asdict, fields

        arrays = {f"pairs.{f.name}": getattr(a.pairs, f.name) for f in fields(a.pairs)}  # asdict would deep-copy every array
        producers = [{**asdict(p), "waits": list(p.waits.items())} for p in a.producers]
        return arrays, {"producers": producers, "total_charged": a.total_charged,
                        "by_wait_pc": [[w, list(d.items())] for w, d in a.by_wait_pc.items()]}

    def decode(self, arrays, meta):
        pairs = WaitPairs(**{k[len("pairs."):]: v for k, v in arrays.items()})
        producers = [ProducerStats(**{**p, "waits": {int(k): v for k, v in p["waits"]}}) for p in meta["producers"]]
        by_wait_pc = {int(w): {int(k): v for k, v in d} for w, d in meta["by_wait_pc"]}
        return WaitAttribution(pairs, producers, meta["total_charged"], by_wait_pc)


def attribute_waits(dispatch, deps, pairs: WaitPairs | None = None) -> WaitAttribution:
    """Kept in the capture's digest when there is one (``deps``/``pairs`` must
    be the dispatch's own, from :func:`attlens.analysis.stalls.compute_pc_sums`)."""
    from attlens.cache import memo

    return memo(dispatch, f"waitattr-v2-{deps.model}", lambda: _attribute_waits(dispatch, deps, pairs), _AttributionCodec())


def _attribute_waits(dispatch, deps, pairs: WaitPairs | None) -> WaitAttribution:
    from attlens.analysis.taxonomy import producer_wait_class

    pairs = pairs if pairs is not None else split_waits(dispatch, deps)
    recs, st, code = dispatch.records, dispatch.static, dispatch.code
    total = int(pairs.stall_share.sum())
    out: list[ProducerStats] = []
    by_wait_pc: dict[int, dict[int, int]] = {}
    if len(pairs.prod_rec):
        ppc = np.take(recs.pc, pairs.prod_rec)
        # wait pc x producer pc matrix, sparse; its key made in place (one new int64 array of the pairs' length:
        # at 30x each fresh array of 25 MB costs more in page faults than its arithmetic)
        key = np.take(recs.pc, pairs.wait_rec).astype(np.int64)
        key *= code.size
        key += ppc
        uk, cyc = _sums_by_key(key, pairs.stall_share, code.size * code.size)
        del key
        for k, c in zip(uk.tolist(), cyc.tolist()):
            by_wait_pc.setdefault(k // code.size, {})[k % code.size] = c
        hit = dispatch.executions_per_pc()
        order = stable_pc_order(ppc, code.size)
        ppc_s = ppc[order]
        bounds = np.flatnonzero(np.r_[True, ppc_s[1:] != ppc_s[:-1], True])
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            rows = order[a:b]
            pc = int(ppc_s[a])
            waited = int(pairs.stall_share[rows].sum())
            d_instr = pairs.distance_instr[rows]  # gathered once for its median and minimum
            waits = {wp: cy[pc] for wp, cy in by_wait_pc.items() if pc in cy}
            own = st.own_source[pc]
            out.append(
                ProducerStats(
                    pc=pc,
                    isa=code.isa[pc],
                    source=str(own) if own else None,
                    wait_class=producer_wait_class(st.mnemonic[pc]),
                    kind=producer_kind(st.cls[pc]),
                    waited_cycles=waited,
                    share_of_wait=waited / total if total else 0.0,
                    pairs=len(rows),
                    executions=int(hit[pc]),
                    distance_instructions_median=float(np.median(d_instr)),
                    distance_instructions_min=int(d_instr.min()),
                    distance_cycles_median=float(np.median(pairs.distance_cycles[rows])),
                    outstanding_mean=float(pairs.outstanding[rows].mean()),
                    waits=dict(sorted(waits.items(), key=lambda kv: -kv[1])),
                )
            )
    out.sort(key=lambda p: (-p.waited_cycles, p.pc))
    return WaitAttribution(pairs, out, total, by_wait_pc)


def _sums_by_key(key: np.ndarray, weights: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys ascending, Σ weights per key rounded to int64).
    Few possible keys: one bincount over the keys themselves, not a sort for
    np.unique; both add each key's weights in row order, the same floats."""
    from attlens.analysis import groups

    if n_keys <= groups.DIRECT_KEYS:
        present = np.flatnonzero(np.bincount(key, minlength=n_keys))
        return present, np.bincount(key, weights=weights, minlength=n_keys)[present].round().astype(np.int64)
    uk, inv = np.unique(key, return_inverse=True)
    return uk, np.bincount(inv.reshape(-1), weights=weights).round().astype(np.int64)


