"""Memory latency the replay draws for each load, from what loads observed in
this trace (docs/whatif.md).

One observation per (wait execution, op it resolved): the wait's release
(first issue attempt + stall) minus the op's issue. For the youngest op of a
wait that stalled it is the op's latency (in-order retirement: it returned
last); for the others it is an upper bound (the data was back by then). The
replay draws each op's latency as the median of its cell's observations:
the cell is the op's pc, its occurrence in the wave (the k-th execution of
that pc in the wave, so a loop's first, cold iteration and its warm ones are
told apart) and the wave's place in its SIMD's queue (first to last quarter
of the waves to start: latency follows the dispatch's progress), over every
traced wave. Each op's own observation is never
copied back: a wave whose op returned late replays with the typical latency,
which is what makes the calibration residual a measurement of the model.
"""

from __future__ import annotations

import numpy as np



def occurrence(pc: np.ndarray, wave: np.ndarray) -> np.ndarray:
    """Per record (given in wave, execution order): how many earlier records of
    its wave have the same pc."""
    n = len(pc)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    key = wave.astype(np.int64) * (int(pc.max()) + 1) + pc
    o = np.argsort(key, kind="stable")
    ks = key[o]
    first = np.r_[True, ks[1:] != ks[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    out = np.empty(n, dtype=np.int64)
    out[o] = np.arange(n) - start
    return out


def draw_latency(s, wave_of_rec: np.ndarray, per_occurrence: bool = True, generation: np.ndarray | None = None,
                 kind_of_pc: np.ndarray | None = None) -> np.ndarray:
    """Per producer (``s.prod_rec``): the latency the replay gives it.

    Per cell: the mean of its exact observations (youngest op of a wait that
    stalled), capped by the median of its upper bounds when fewer than half of
    its observations are exact; a cell with no exact observation (its waits
    never stalled on it) gets the median exact latency of ops of its kind
    (``kind_of_pc``: the same mnemonic), capped by the smallest of its upper
    bounds (it was back by then every time)."""
    counts = np.diff(s.wait_off)
    owner = np.repeat(s.wait_rec, counts)
    obs = (s.issue[owner] - s.issue[s.wait_prod]).astype(np.float64)
    exact = _binding(s, owner, obs, counts, kind_of_pc)
    ppc = s.pc[s.wait_prod]
    if per_occurrence:
        occ = occurrence(s.pc[s.prod_rec], wave_of_rec[s.prod_rec])
        pocc = occ[np.searchsorted(s.prod_rec, s.wait_prod)]
    else:
        pocc = np.zeros(len(ppc), dtype=np.int64)
    cell = ppc * (int(pocc.max()) + 1 if len(pocc) else 1) + pocc
    if generation is not None and len(cell):
        gen = generation[wave_of_rec[s.wait_prod]].astype(np.int64)
        cell = cell * (int(gen.max()) + 1) + gen
    # one observation per producer: an exact one when it has one, else its first
    o = np.lexsort((~exact, s.wait_prod))
    first = o[np.r_[True, s.wait_prod[o][1:] != s.wait_prod[o][:-1]]] if len(o) else o
    cell_f, obs_f, ex_f = cell[first], obs[first], exact[first]
    uc, inv = np.unique(cell_f, return_inverse=True)
    nc = len(uc)
    n_ex = np.bincount(inv, weights=ex_f, minlength=nc)
    n_all = np.bincount(inv, minlength=nc)
    mean_ex = np.bincount(inv, weights=np.where(ex_f, obs_f, 0.0), minlength=nc) / np.maximum(n_ex, 1)
    ub = ~ex_f
    med_ub = _group_median(inv[ub], obs_f[ub], nc)
    min_ub = np.full(nc, np.inf)
    np.minimum.at(min_ub, inv[ub], obs_f[ub])
    typical = np.full(nc, np.inf)
    if kind_of_pc is not None and ex_f.any():
        kind_f = kind_of_pc[ppc[first]]
        kinds, kinv = np.unique(kind_f[ex_f], return_inverse=True)
        kmed = _group_median(kinv, obs_f[ex_f], len(kinds))
        pos = np.searchsorted(kinds, kind_f)
        has = (pos < len(kinds)) & (kinds[np.minimum(pos, len(kinds) - 1)] == kind_f)
        per_obs = np.where(has, kmed[np.minimum(pos, len(kinds) - 1)], np.inf)
        np.minimum.at(typical, inv, per_obs)
    lat_cell = np.where(n_ex == 0, np.minimum(min_ub, typical), np.where((n_ex < n_all / 2) & np.isfinite(min_ub) & (n_ex < n_all), np.minimum(mean_ex, med_ub), mean_ex))
    lat_cell = np.where(np.isfinite(lat_cell), lat_cell, 0.0)
    return np.maximum(lat_cell[inv], 0.0)  # first is ordered like np.unique(wait_prod) == prod_rec


def _binding(s, owner, obs, counts, kind_of_pc) -> np.ndarray:
    """Per (wait, op) pair: is the observation the op's latency? The op a
    stalled wait released on is the youngest of its counter (in-order
    retirement); a wait naming two counters released on the one whose
    youngest op should complete last: typical latency of its kind (from the
    one-counter waits) after its issue."""
    n = len(owner)
    if n == 0:
        return np.zeros(0, dtype=bool)
    row = np.repeat(np.arange(len(counts)), counts)
    ctr = s.prod_ctr[np.searchsorted(s.prod_rec, s.wait_prod)].astype(np.int64)
    o = np.lexsort((s.wait_prod, ctr, row))
    key = row[o] * 4 + ctr[o]
    youngest = np.zeros(n, dtype=bool)
    youngest[o[np.r_[key[1:] != key[:-1], True]]] = True
    stalled = s.stall[owner] > 0
    n_ctr = np.zeros(len(counts), dtype=np.int64)
    np.add.at(n_ctr, row[youngest], 1)
    single = youngest & stalled & (n_ctr[row] == 1)
    multi = youngest & stalled & (n_ctr[row] > 1)
    if not multi.any():
        return single
    kind = kind_of_pc[s.pc[s.wait_prod]] if kind_of_pc is not None else ctr
    typ = np.zeros(int(kind.max()) + 1)
    if single.any():
        ks, kinv = np.unique(kind[single], return_inverse=True)
        typ[ks] = _group_median(kinv, obs[single], len(ks))
    expect = np.where(multi, s.issue[s.wait_prod] + typ[kind], -np.inf)
    best = np.full(len(counts), -np.inf)
    np.maximum.at(best, row, expect)
    pick = multi & (expect == best[row])
    # one pick per wait (ties: the youngest)
    mi = np.flatnonzero(pick)
    last_of_row = np.r_[row[mi][1:] != row[mi][:-1], True] if len(mi) else np.zeros(0, dtype=bool)
    keep = np.zeros(n, dtype=bool)
    keep[mi[last_of_row]] = True
    return single | keep


def _group_median(group: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    o = np.lexsort((values, group))
    g, v = group[o], values[o]
    bounds = np.flatnonzero(np.r_[True, g[1:] != g[:-1], True]) if len(g) else np.zeros(1, dtype=np.int64)
    out = np.zeros(n, dtype=np.float64)
    if len(g):
        lo, hi = bounds[:-1], bounds[1:]
        mid_lo = lo + (hi - lo - 1) // 2
        mid_hi = lo + (hi - lo) // 2
        out[g[lo]] = (v[mid_lo] + v[mid_hi]) / 2.0
    return out


POSITION_BUCKETS = 4  # a wave's place in its SIMD's queue: first quarter of the waves to start ... last quarter


def wave_position(s, buckets: int | None = None) -> np.ndarray:
    """Per wave: which quarter of its SIMD's waves (in begin order) it is in.
    Memory latency follows the dispatch's progress (queues fill, then drain as
    the last waves run alone), so ops are compared with the same place."""
    order = np.lexsort((s.begin, s.simd_key))
    k = s.simd_key[order]
    first = np.r_[True, k[1:] != k[:-1]] if len(k) else np.zeros(0, dtype=bool)
    start = np.maximum.accumulate(np.where(first, np.arange(len(k)), 0)) if len(k) else np.zeros(0, dtype=np.int64)
    size = np.diff(np.r_[np.flatnonzero(first), len(k)])
    rank = np.arange(len(k)) - start
    n = size[np.cumsum(first) - 1] if len(k) else np.zeros(0, dtype=np.int64)
    out = np.empty(len(k), dtype=np.int64)
    buckets = buckets or POSITION_BUCKETS
    out[order] = (rank * buckets) // np.maximum(n, 1)
    return out
