"""Exposed vs hidden latency: the viewer's hidden-latency model
(att-format.md §4.5), per instruction.

Per (SE, SIMD), every token's issue interval goes into a busy list of its pipe
(WMMA for matrix ops, which also add 3/4 of their issue to VALU; VALU; VMEM for
LDS/VMEM/FLAT; SCAL for SALU/SMEM), each list packed serially (a later
interval that starts inside a block extends it by its length). Unions give
*math* (VALU+WMMA), *vector* (math+VMEM) and *all* (vector+SCAL). For each
token, its idle ``[cursor, time)``, stall ``[time, time+stall)`` and issue
``[time+stall, time+length)`` sub-intervals are intersected with candidate
lists chosen by its type; the candidate with the larger total wins; the issue
overlap is zeroed for the token's own pipe. Per instruction, hidden idle,
stall and issue are clamped to its idle, stall and issue; exposed = idle +
latency − hidden. The viewer's model is reproduced from its description; it
is not cross-checked against the viewer's C++ output (docs/analysis.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.intervals import Coverage, merge_blocks, serial_blocks
from attlens.results import brief_repr

# decoder categories
_SMEM, _SALU, _VMEM, _FLAT, _LDS, _VALU = 1, 2, 3, 4, 5, 6
_MATRIX = 13
_MATRIX_PREFIXES = ("v_mfma", "v_smfma", "v_wmma", "v_swmma")


@brief_repr(("total", lambda h: int(h.total.sum())), ("exposed", lambda h: int(h.exposed.sum())), "hidden_share")
@dataclass
class HiddenLatency:
    hidden_idle: np.ndarray  # per pc, clamped
    hidden_stall: np.ndarray
    hidden_issue: np.ndarray
    exposed: np.ndarray  # per pc: idle + latency - hidden
    total: np.ndarray  # per pc: idle + latency

    @property
    def hidden_share(self) -> float:
        t = int(self.total.sum())
        return float((self.total - self.exposed).sum()) / t if t else 0.0


# record groups by the lists they are compared with (att-format.md §4.5 table)
_G_MATRIX, _G_VALU, _G_VMEM, _G_SCAL, _G_OTHER = range(5)
_GROUP_OF_CATEGORY = np.full(256, _G_OTHER, dtype=np.int8)
_GROUP_OF_CATEGORY[[_LDS, _VMEM, _FLAT]] = _G_VMEM
_GROUP_OF_CATEGORY[[_SALU, _SMEM]] = _G_SCAL
_GROUP_OF_CATEGORY[_VALU] = _G_VALU


def compute_hidden(dispatch, sums) -> HiddenLatency:
    """Hidden latency per pc (kept in the capture's digest when there is one;
    ``sums`` must be the dispatch's own :class:`PcSums`)."""
    from attlens.cache import memo
    from attlens.cache.store import DataclassCodec

    return memo(dispatch, "hidden", lambda: _compute_hidden(dispatch, sums), DataclassCodec(HiddenLatency))


BATCH_RECORDS = 1 << 16  # records handled together (bounds the temporaries)


def _compute_hidden(dispatch, sums, batch_records: int = BATCH_RECORDS) -> HiddenLatency:
    """Per-pc hidden latency from the accumulated hidden cycles: the ones the
    loader's parse processes prepared on the parts they parsed
    (``dispatch.prepared``), or computed here over every scope."""
    n_pc = dispatch.code.size
    acc = getattr(dispatch, "prepared", {}).get("hidden_acc")
    if acc is None or acc.shape != (3, n_pc):
        acc = hidden_cycles(dispatch.records, dispatch.waves, matrix_pcs(dispatch.static.mnemonic), batch_records)
    per_pc = np.rint(acc).astype(np.int64)
    issue_pc = sums.latency - sums.stall
    hi = np.minimum(per_pc[0], sums.idle)
    hs = np.minimum(per_pc[1], sums.stall)
    hu = np.minimum(per_pc[2], issue_pc)
    total = sums.idle + sums.latency
    return HiddenLatency(hi, hs, hu, total - hi - hs - hu, total)


def matrix_pcs(mnemonics: list[str]) -> np.ndarray:
    """Per pc: a matrix (MFMA/WMMA) instruction."""
    return np.array([m.startswith(_MATRIX_PREFIXES) for m in mnemonics], dtype=bool)


def hidden_cycles(recs, w, is_matrix_pc: np.ndarray, batch_records: int = BATCH_RECORDS) -> np.ndarray:
    """(3, n_pc) float64: hidden idle, stall and issue cycles per pc, unclamped,
    summed over the (SE, SIMD) scopes of the waves ``w`` (``se``, ``simd``,
    ``begin``, ``rec_start``, ``rec_stop``) whose records are ``recs``. Scopes
    are independent and every value an integer below 2^53, so the arrays of
    disjoint sets of scopes add up exactly (the loader's parse processes each
    compute the parts they parse).

    (SE, SIMD) scopes go in batches of about ``batch_records`` records (a scope
    is never split: its busy lists need all of it). Within a batch every time
    is shifted by its scope's offset, far enough apart that no packed block
    reaches the next scope, so each busy list is one sorted array and each
    record group needs one ``searchsorted`` per boundary and candidate list."""
    acc = np.zeros((3, len(is_matrix_pc)), dtype=np.float64)  # hidden idle, stall, issue per pc
    scope_key = scope_keys(w.se, w.simd)
    wave_order = np.argsort(scope_key, kind="stable")
    keys = scope_key[wave_order]
    n_rec = (w.rec_stop - w.rec_start).astype(np.int64)
    bounds = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True])  # scope starts in wave_order
    scope_recs = np.add.reduceat(n_rec[wave_order], bounds[:-1]) if len(keys) else np.zeros(0, dtype=np.int64)
    i = 0
    while i < len(scope_recs):
        j, total = i + 1, int(scope_recs[i])
        while j < len(scope_recs) and total + int(scope_recs[j]) <= batch_records:
            total += int(scope_recs[j])
            j += 1
        waves_b = wave_order[bounds[i] : bounds[j]]
        scope_b = np.repeat(np.arange(j - i), np.diff(bounds[i : j + 1]))
        if total:
            _batch(recs, w, waves_b, scope_b, n_rec, is_matrix_pc, acc)
        i = j
    return acc


def scope_keys(se: np.ndarray, simd: np.ndarray) -> np.ndarray:
    """One int64 per wave naming its (SE, SIMD) scope."""
    return se.astype(np.int64) * 64 + simd


def _batch(recs, w, waves_b, scope_b, n_rec, is_matrix_pc, acc) -> None:
    from attlens.analysis.waitdeps import _ranges

    counts = n_rec[waves_b]
    rec = _ranges(w.rec_start[waves_b], counts)  # each wave's records stay together, in order
    pc = recs.pc[rec]
    group = _GROUP_OF_CATEGORY[recs.category[rec]]
    group[is_matrix_pc[pc]] = _G_MATRIX
    time = recs.time[rec].astype(np.int64, copy=False)
    stall = recs.stall[rec].astype(np.int64)
    length = np.maximum(stall, recs.duration[rec])
    begin = w.begin[waves_b].astype(np.int64)
    lo = min(int(time.min()), int(begin.min()))
    span = int((time + length).max()) - lo + int(length.sum()) + 1
    n_scopes = int(scope_b[-1]) + 1
    if n_scopes > 1 and span * (n_scopes + 1) >= 2**62:
        # too far apart to shift into one range: one scope at a time
        for k in range(n_scopes):
            sel = scope_b == k
            _batch(recs, w, waves_b[sel], np.zeros(int(sel.sum()), dtype=np.int64), n_rec, is_matrix_pc, acc)
        return
    wave_off = scope_b.astype(np.int64) * span - lo
    t0 = time
    t0 += np.repeat(wave_off, counts)
    t1 = t0 + stall
    del stall
    t2 = t0 + length
    del length
    # cursor: previous token's end in the same wave (not a running maximum),
    # the wave's begin for its first token; an idle interval never runs backwards
    c = np.empty_like(t0)
    c[1:] = t2[:-1]
    firsts = np.cumsum(counts) - counts
    has = counts > 0
    c[firsts[has]] = (begin + wave_off)[has]
    np.minimum(c, t0, out=c)
    _accumulate(pc, group, t0, t1, t2, c, acc)


def _busy_lists(group, t1, t2):
    ln = t2 - t1
    mat, valu = group == _G_MATRIX, group == _G_VALU
    wmma = serial_blocks(t1[mat], ln[mat])
    vsel = mat | valu
    valu_len = np.where(mat, (3 * ln) // 4, ln)
    valu_b = serial_blocks(t1[vsel], valu_len[vsel])
    vm = group == _G_VMEM
    vmem = serial_blocks(t1[vm], ln[vm])
    sc = group == _G_SCAL
    scal = serial_blocks(t1[sc], ln[sc])
    math = merge_blocks(valu_b, wmma)
    vector = merge_blocks(math, vmem)
    return {"valu": valu_b, "wmma": wmma, "vmem": vmem, "scal": scal, "math": math, "vector": vector,
            "all": merge_blocks(vector, scal)}


def _accumulate(pc, group, t0, t1, t2, c, acc) -> None:
    """Add the hidden idle, stall and issue of these records to ``acc`` (per pc)."""
    n_pc = acc.shape[1]
    lists = {name: Coverage(blocks) for name, blocks in _busy_lists(group, t1, t2).items()}  # each looked up 2-8 times

    def covered_at(x, same_as, known, blocks):
        """blocks.upto(x), looking up only where x differs from ``same_as``."""
        cov = known.copy()
        d = np.flatnonzero(x != same_as)
        if len(d):
            cov[d] = blocks.upto(x[d])
        return cov

    def parts(sel, blocks, zero_issue):
        # idle, stall and issue are contiguous: "covered up to x" at the four
        # boundaries gives all three overlaps. Most records have no idle and
        # no stall, so a boundary equal to its neighbour is not looked up;
        # nearly all have an issue (84-91 %): its end is looked up for all.
        x0, x1 = t0[sel], t1[sel]
        cov0 = blocks.upto(x0)
        cov_c = covered_at(c[sel], x0, cov0, blocks)
        cov1 = covered_at(x1, x0, cov0, blocks)
        if zero_issue:
            issue = np.zeros(len(x0), dtype=np.int64)
        else:
            issue = blocks.upto(t2[sel]) - cov1
        return cov0 - cov_c, cov1 - cov0, issue

    # (group, first candidate (list, zero issue), second candidate or None)
    plan = (
        (_G_MATRIX, ("valu", True), ("wmma", True)),
        (_G_VALU, ("valu", True), ("wmma", False)),
        (_G_VMEM, ("math", False), ("vmem", True)),
        (_G_SCAL, ("vector", False), ("scal", True)),
        (_G_OTHER, ("all", False), None),
    )
    for g, *candidates in plan:
        # an empty list covers nothing: its overlaps are all 0 and it wins nowhere (every overlap is >= 0,
        # a tie goes to the first candidate), so it is not looked up (no matrix op: the VALU records'
        # WMMA candidate, three quarters of softmax's records)
        candidates = [c for c in candidates if c is not None and len(lists[c[0]].starts)]
        sel = np.flatnonzero(group == g) if candidates else ()
        if not len(sel):
            continue
        a = parts(sel, lists[candidates[0][0]], candidates[0][1])
        if len(candidates) > 1:
            b = parts(sel, lists[candidates[1][0]], candidates[1][1])
            take_a = (a[0] + a[1] + a[2]) >= (b[0] + b[1] + b[2])
            a = tuple(np.where(take_a, x, y) for x, y in zip(a, b))
        p = pc[sel]
        for k in range(3):
            acc[k] += np.bincount(p, weights=a[k], minlength=n_pc)


