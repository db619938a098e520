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


def compute_hidden(dispatch, sums) -> HiddenLatency:
    recs, w = dispatch.records, dispatch.waves
    n_pc = dispatch.code.size
    is_matrix_pc = np.array([m.startswith(_MATRIX_PREFIXES) for m in dispatch.static.mnemonic], dtype=bool)
    typ = recs.category.astype(np.int64)
    typ = np.where(is_matrix_pc[recs.pc], _MATRIX, typ)
    time, stall = recs.time, recs.stall
    length = np.maximum(recs.stall, recs.duration)
    t_issue = time + stall
    t_end = time + length
    # cursor: previous token's end in the same wave (not a running maximum)
    cursor = np.empty_like(time)
    cursor[1:] = t_end[:-1]
    cursor[w.rec_start[w.rec_start < len(time)]] = w.begin[w.rec_start < len(time)]
    cursor = np.minimum(cursor, time)  # an idle interval never runs backwards

    h_idle = np.zeros(len(time), dtype=np.int64)
    h_stall = np.zeros(len(time), dtype=np.int64)
    h_issue = np.zeros(len(time), dtype=np.int64)
    scope = (w.se.astype(np.int64) * 64 + w.simd)[recs.wave]
    for key in np.unique(scope):
        idx = np.flatnonzero(scope == key)
        ty = typ[idx]
        s, e = t_issue[idx], t_end[idx]
        ln = e - s

        def lst(mask, lens=None):
            return serial_blocks(s[mask], ln[mask] if lens is None else lens[mask])

        is_mat = ty == _MATRIX
        wmma = lst(is_mat)
        valu_s = np.concatenate([s[ty == _VALU], s[is_mat]])
        valu_l = np.concatenate([ln[ty == _VALU], (3 * ln[is_mat]) // 4])
        valu = serial_blocks(valu_s, valu_l)
        vmem = lst(np.isin(ty, (_LDS, _VMEM, _FLAT)))
        scal = lst(np.isin(ty, (_SALU, _SMEM)))
        math = merge_blocks(valu, wmma)
        vector = merge_blocks(math, vmem)
        allb = merge_blocks(vector, scal)

        c, t0, t1, t2 = cursor[idx], time[idx], t_issue[idx], t_end[idx]

        def parts(sel, blocks, zero_issue):
            # idle, stall and issue are contiguous: one "covered up to x"
            # evaluation at each of the 4 boundaries gives all three overlaps.
            pts = np.concatenate([c[sel], t0[sel], t1[sel], t2[sel]])
            cov = covered_upto(pts, blocks).reshape(4, -1)
            pi, ps = cov[1] - cov[0], cov[2] - cov[1]
            pu = np.zeros_like(pi) if zero_issue else cov[3] - cov[2]
            return pi, ps, pu

        def choose(sel, first, second):
            a = parts(sel, *first)
            b = parts(sel, *second)
            take_a = (a[0] + a[1] + a[2]) >= (b[0] + b[1] + b[2])
            out = idx[sel]
            h_idle[out] = np.where(take_a, a[0], b[0])
            h_stall[out] = np.where(take_a, a[1], b[1])
            h_issue[out] = np.where(take_a, a[2], b[2])

        sel = is_mat
        if sel.any():
            choose(sel, (valu, True), (wmma, True))
        sel = ty == _VALU
        if sel.any():
            choose(sel, (valu, True), (wmma, False))
        sel = np.isin(ty, (_LDS, _VMEM, _FLAT))
        if sel.any():
            choose(sel, (math, False), (vmem, True))
        sel = np.isin(ty, (_SALU, _SMEM))
        if sel.any():
            choose(sel, (vector, False), (scal, True))
        sel = ~np.isin(ty, (_MATRIX, _VALU, _LDS, _VMEM, _FLAT, _SALU, _SMEM))
        if sel.any():
            pi, ps, pu = parts(sel, allb, False)
            out = idx[sel]
            h_idle[out], h_stall[out], h_issue[out] = pi, ps, pu

    pc = recs.pc

    def per_pc(v):
        return np.bincount(pc, weights=v, minlength=n_pc).round().astype(np.int64)

    issue_pc = sums.latency - sums.stall
    hi = np.minimum(per_pc(h_idle), sums.idle)
    hs = np.minimum(per_pc(h_stall), sums.stall)
    hu = np.minimum(per_pc(h_issue), issue_pc)
    total = sums.idle + sums.latency
    return HiddenLatency(hi, hs, hu, total - hi - hs - hu, total)
