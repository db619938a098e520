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

from attlens.analysis.intervals import covered_upto, merge_blocks, serial_blocks

# decoder categories
_SMEM, _SALU, _VMEM, _FLAT, _LDS, _VALU = 1, 2, 3, 4, 5, 6
_MATRIX = 13
_MATRIX_PREFIXES = ("v_mfma", "v_smfma", "v_wmma", "v_swmma")


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


def _compute_hidden(dispatch, sums) -> HiddenLatency:
    """All (SE, SIMD) scopes at once: every time is shifted by its scope's
    offset (scopes far enough apart that no packed block reaches the next), so
    each busy list is one sorted array for the whole dispatch and each record
    group needs one ``searchsorted`` per boundary and candidate list."""
    recs, w = dispatch.records, dispatch.waves
    n_pc = dispatch.code.size
    n = recs.count
    zero = np.zeros(n_pc, dtype=np.int64)
    if n == 0:
        total = sums.idle + sums.latency
        return HiddenLatency(zero, zero.copy(), zero.copy(), total.copy(), total)
    is_matrix_pc = np.array([m.startswith(_MATRIX_PREFIXES) for m in dispatch.static.mnemonic], dtype=bool)
    pc = recs.pc
    group = _GROUP_OF_CATEGORY[recs.category]
    group[is_matrix_pc[pc]] = _G_MATRIX
    time = recs.time
    length = np.maximum(recs.stall, recs.duration).astype(np.int64)
    # scope offsets: (SE, SIMD) of each record's wave, packed far apart
    scope_key = w.se.astype(np.int64) * 64 + w.simd
    scopes, scope_of_wave = np.unique(scope_key, return_inverse=True)
    lo = min(int(time.min()), int(w.begin.min()))
    hi = int((time + length).max())
    span = hi - lo + int(length.sum()) + 1
    if span * (len(scopes) + 1) >= 2**62:
        return _hidden_per_scope(dispatch, sums, group, length, scope_of_wave, len(scopes))
    offset = (scope_of_wave.astype(np.int64) * span - lo)[recs.wave]
    t0 = time + offset
    t1 = t0 + recs.stall
    t2 = t0 + length
    del offset
    # cursor: previous token's end in the same wave (not a running maximum),
    # the wave's begin for its first token; an idle interval never runs backwards
    c = np.empty(n, dtype=np.int64)
    c[1:] = t2[:-1]
    firsts = w.rec_start[w.rec_start < n]
    first_w = np.flatnonzero(w.rec_start < n)
    c[firsts] = w.begin[first_w] + scope_of_wave[first_w].astype(np.int64) * span - lo
    np.minimum(c, t0, out=c)
    return _hidden_from_points(pc, group, t0, t1, t2, c, n_pc, sums)


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


def _hidden_from_points(pc, group, t0, t1, t2, c, n_pc, sums) -> HiddenLatency:
    lists = _busy_lists(group, t1, t2)
    acc = np.zeros((3, n_pc), dtype=np.float64)  # hidden idle, stall, issue per pc

    def covered_at(x, same_as, known, blocks):
        """covered_upto(x), looking up only where x differs from ``same_as``."""
        cov = known.copy()
        d = np.flatnonzero(x != same_as)
        if len(d):
            cov[d] = covered_upto(x[d], blocks)
        return cov

    def parts(sel, blocks, zero_issue):
        # idle, stall and issue are contiguous: "covered up to x" at the four
        # boundaries gives all three overlaps. Most records have no idle and
        # no stall, so a boundary equal to its neighbour is not looked up.
        x0, x1 = t0[sel], t1[sel]
        cov0 = covered_upto(x0, blocks)
        cov_c = covered_at(c[sel], x0, cov0, blocks)
        cov1 = covered_at(x1, x0, cov0, blocks)
        if zero_issue:
            issue = np.zeros(len(x0), dtype=np.int64)
        else:
            issue = covered_at(t2[sel], x1, cov1, blocks) - cov1
        return cov0 - cov_c, cov1 - cov0, issue

    # (group, first candidate (list, zero issue), second candidate or None)
    plan = (
        (_G_MATRIX, ("valu", True), ("wmma", True)),
        (_G_VALU, ("valu", True), ("wmma", False)),
        (_G_VMEM, ("math", False), ("vmem", True)),
        (_G_SCAL, ("vector", False), ("scal", True)),
        (_G_OTHER, ("all", False), None),
    )
    for g, first, second in plan:
        sel = np.flatnonzero(group == g)
        if not len(sel):
            continue
        a = parts(sel, lists[first[0]], first[1])
        if second is not None:
            b = parts(sel, lists[second[0]], second[1])
            take_a = (a[0] + a[1] + a[2]) >= (b[0] + b[1] + b[2])
            a = tuple(np.where(take_a, x, y) for x, y in zip(a, b))
        p = pc[sel]
        for k in range(3):
            acc[k] += np.bincount(p, weights=a[k], minlength=n_pc)
    per_pc = np.rint(acc).astype(np.int64)
    issue_pc = sums.latency - sums.stall
    hi = np.minimum(per_pc[0], sums.idle)
    hs = np.minimum(per_pc[1], sums.stall)
    hu = np.minimum(per_pc[2], issue_pc)
    total = sums.idle + sums.latency
    return HiddenLatency(hi, hs, hu, total - hi - hs - hu, total)


def _hidden_per_scope(dispatch, sums, group, length, scope_of_wave, n_scopes) -> HiddenLatency:
    """Same model, one (SE, SIMD) scope at a time: for times so far apart that
    shifting scopes apart could overflow int64."""
    recs, w = dispatch.records, dispatch.waves
    n_pc = dispatch.code.size
    n = recs.count
    c_all = np.empty(n, dtype=np.int64)
    t2_all = recs.time + length
    c_all[1:] = t2_all[:-1]
    firsts = w.rec_start[w.rec_start < n]
    c_all[firsts] = w.begin[w.rec_start < n]
    np.minimum(c_all, recs.time, out=c_all)
    scope_of_rec = scope_of_wave[recs.wave]
    parts = []
    for s in range(n_scopes):
        idx = np.flatnonzero(scope_of_rec == s)
        t0 = recs.time[idx].astype(np.int64)
        parts.append(_hidden_from_points(recs.pc[idx], group[idx], t0, t0 + recs.stall[idx], t2_all[idx], c_all[idx], n_pc, _NoClamp(n_pc)))
    hidden = [sum(p.hidden_idle for p in parts), sum(p.hidden_stall for p in parts), sum(p.hidden_issue for p in parts)]
    issue_pc = sums.latency - sums.stall
    hi = np.minimum(hidden[0], sums.idle)
    hs = np.minimum(hidden[1], sums.stall)
    hu = np.minimum(hidden[2], issue_pc)
    total = sums.idle + sums.latency
    return HiddenLatency(hi, hs, hu, total - hi - hs - hu, total)


class _NoClamp:
    """Sums large enough that the per-scope partial results are not clamped."""

    def __init__(self, n_pc: int):
        big = np.full(n_pc, np.iinfo(np.int64).max // 4, dtype=np.int64)
        self.idle = self.stall = big
        self.latency = big * 2
