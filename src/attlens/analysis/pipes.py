"""Pipe utilization per SIMD over the traced window.

Each executed instruction occupies its pipe during its issue part
``[time + stall, time + duration)``. IMMED/message instructions (waits,
barriers, ``s_nop``, ``s_endpgm``) occupy their pipe for one time quantum
only, as the viewer draws them (att-format.md §4.9): their "issue" is either
0 or, for ``s_endpgm``, the tail until the wave ends. Busy = the union of the
pipe's intervals over all waves on the SIMD; window = first wave begin to last
wave end on that SIMD.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.intervals import union_length
from attlens.results import brief_repr

PIPES = ("VALU", "MFMA", "VMEM", "LDS", "SALU/SMEM", "BRANCH", "IMMED/MSG")
_CLASS_PIPE = {
    "valu": "VALU",
    "mfma": "MFMA",
    "vmem_load": "VMEM",
    "vmem_store": "VMEM",
    "vmem_atomic": "VMEM",
    "lds": "LDS",
    "lds_crosslane": "LDS",
    "salu": "SALU/SMEM",
    "smem": "SALU/SMEM",
    "branch": "BRANCH",
}


def pipe_of_class(cls: str) -> str:
    return _CLASS_PIPE.get(cls, "IMMED/MSG")


@brief_repr("total_window_cycles", ("simds", lambda p: len(p.per_simd)),
            ("busiest", lambda p: max(p.kernel, key=lambda k: p.kernel[k]["busy_cycles"]) if p.kernel else None))
@dataclass
class PipeUtilization:
    per_simd: list[dict]  # {se, cu, simd, window, pipes: {PIPE: {issue_cycles, busy_cycles, busy_share}}}
    kernel: dict[str, dict]  # PIPE -> {issue_cycles, busy_cycles, busy_share}
    total_window_cycles: int


def compute_pipes(dispatch) -> PipeUtilization:
    """Kept in the capture's digest when there is one."""
    from attlens.cache import memo
    from attlens.cache.store import DataclassCodec

    quantum = (dispatch.arch.facts or {}).get("time_quantum", 4 if dispatch.index.gfxip in (None, 9) else 1)
    return memo(dispatch, f"pipes-v2-q{quantum}", lambda: _compute_pipes(dispatch, quantum), DataclassCodec(PipeUtilization))


def _compute_pipes(dispatch, quantum) -> PipeUtilization:
    recs, w = dispatch.records, dispatch.waves
    pipe_id_by_pc = np.array([PIPES.index(pipe_of_class(c)) if c else PIPES.index("IMMED/MSG") for c in dispatch.static.cls], dtype=np.int8)
    immed_id = PIPES.index("IMMED/MSG")
    wave_key = w.se.astype(np.int64) * 1_000_000 + w.cu.astype(np.int64) * 16 + w.simd
    n_rec = (w.rec_stop - w.rec_start).astype(np.int64)
    rows = []
    tot = {p: [0, 0] for p in PIPES}
    total_window = 0
    # one SIMD at a time, gathering only its waves' records (bounded memory); the waves grouped by SIMD
    # with one stable sort (each SIMD's waves ascending, as a mask per SIMD would list them)
    by_simd = np.argsort(wave_key, kind="stable")
    keys = wave_key[by_simd]
    cuts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1], True]).tolist() if len(keys) else [0]
    for a, b in zip(cuts[:-1], cuts[1:]):
        wv = by_simd[a:b]
        se, rest = divmod(int(keys[a]), 1_000_000)
        cu, simd = divmod(rest, 16)
        window = int(w.end[wv].max() - w.begin[wv].min())
        total_window += window
        rec = _simd_records(w, wv, n_rec)
        p_m = np.take(pipe_id_by_pc, recs.pc[rec])  # as pipe_id_by_pc[...], a faster lookup
        t_m = recs.time[rec]
        s_m = t_m + recs.stall[rec]
        e_m = np.where(p_m == immed_id, s_m + quantum, t_m + recs.duration[rec])
        pipes = {}
        for pi, name in enumerate(PIPES):
            # the pipe's records in order: one byte compare (cheaper than a sort of the SIMD's records by pipe)
            on_pipe = np.flatnonzero(p_m == pi)
            s, e = s_m[on_pipe], e_m[on_pipe]
            busy = union_length(s, e)
            iss = int((e - s).sum())
            pipes[name] = {"issue_cycles": iss, "busy_cycles": busy, "busy_share": busy / window if window else None}
            tot[name][0] += iss
            tot[name][1] += busy
        rows.append({"se": se, "cu": cu, "simd": simd, "window": window, "pipes": pipes})
    kernel = {
        p: {"issue_cycles": v[0], "busy_cycles": v[1], "busy_share": v[1] / total_window if total_window else None}
        for p, v in tot.items()
    }
    return PipeUtilization(rows, kernel, total_window)


def _simd_records(w, wv: np.ndarray, n_rec: np.ndarray):
    """The records of the waves ``wv``, in wave order: a slice when they lie
    back to back (one traced CU per SE: columns are viewed, not gathered),
    else their indices."""
    from attlens.analysis.waitdeps import _ranges

    starts, stops = w.rec_start[wv], w.rec_stop[wv]
    if np.array_equal(starts[1:], stops[:-1]):
        return slice(int(starts[0]), int(stops[-1]))
    return _ranges(starts, n_rec[wv])
