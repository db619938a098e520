"""Per-execution distributions, execution phases, and whether the traced
waves reached the kernel's main work.

Phases of a record, per wave: instructions executed more than once in that
wave form its loop(s); records before the wave's first looped record are
``before_loop``, after its last ``after_loop``; in between, a pc's first
execution in the wave is ``loop_first`` (the cold first iteration) and later
ones ``loop_steady``. A wave that never loops is all ``straight_line``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.loops import StaticLoop, backward_branches
from attlens.analysis.waitdeps import _ranges
from attlens.results import brief_repr

PHASES = ("straight_line", "before_loop", "loop_first", "loop_steady", "after_loop")


@brief_repr("pc", "executions", "stall_p50", "stall_p90", "stall_max")
@dataclass
class InstructionDistribution:
    pc: int
    executions: int
    stall_p50: float
    stall_p90: float
    stall_max: int
    first_execution_stall_mean: float  # its first execution in each wave
    later_execution_stall_mean: float | None  # later executions (None: never repeats)
    stall_by_phase: dict[str, int]


@brief_repr(("records", lambda p: len(p.phase)), ("instructions", lambda p: len(p.instructions)), ("static_loops", lambda p: len(p.static_loops)),
            "short_waves", ("flags", lambda p: len(p.flags)))
@dataclass
class Phases:
    phase: np.ndarray  # per record, index into PHASES
    exec_index: np.ndarray  # per record: how many times its pc ran before in this wave
    kernel: dict[str, dict[str, int]]  # phase -> {records, stall, latency}
    instructions: list[InstructionDistribution]  # the top instructions' per-execution stalls
    static_loops: list[StaticLoop]
    short_waves: int  # waves that ran < 10 % of the longest wave's instructions
    short_wave_threshold: int
    traced_cu_share_of_median: dict[int, float | None]  # SE -> traced CU waves / median waves per CU (occupancy.json)
    flags: list[str] = field(default_factory=list)


PHASE_BATCH_RECORDS = 1 << 17  # records of whole waves handled together (bounds the temporaries)


def _phase_arrays(dispatch, batch: int = PHASE_BATCH_RECORDS) -> tuple[np.ndarray, np.ndarray]:
    """Per record: its phase and how many times its pc ran before in its wave
    (whole waves at a time: both only depend on the record's own wave)."""
    recs, w = dispatch.records, dispatch.waves
    n = recs.count
    exec_index = np.zeros(n, dtype=np.int64)  # fresh zero pages: straight-line waves leave them untouched
    phase = np.zeros(n, dtype=np.int8)
    starts = w.rec_start.astype(np.int64)
    stops = w.rec_stop.astype(np.int64)
    v = 0
    while v < w.count:
        a = int(starts[v])
        u = max(int(np.searchsorted(stops, a + batch, side="right")), v + 1)
        b = int(stops[u - 1])
        if b > a:
            _phase_block(recs.wave[a:b], recs.pc[a:b], dispatch.code.size, starts[v:u] - a, stops[v:u] - a,
                         exec_index[a:b], phase[a:b])
        v = u
    return phase, exec_index


def _phase_block(wave, pc, n_pc, starts, stops, exec_index, phase) -> None:
    """Fills ``exec_index`` and ``phase`` (both given zeroed) for whole waves."""
    n = len(pc)
    if np.all((pc[1:] > pc[:-1]) | (wave[1:] != wave[:-1])):  # straight-line: each wave's pcs ascend, none runs twice
        return  # exec_index stays 0 (it comes zeroed), phase straight_line
    key = wave.astype(np.int64) * n_pc + pc
    order = np.argsort(key, kind="stable")
    ks = key[order]
    new = np.r_[True, ks[1:] != ks[:-1]]
    gstart = np.flatnonzero(new)
    if len(gstart) == n:  # no pc runs twice in these waves: all first executions (exec_index stays 0), all straight_line
        return
    gid = np.cumsum(new) - 1
    exec_index[order] = np.arange(n) - gstart[gid]
    counts = np.diff(np.r_[gstart, n])
    repeats = np.zeros(n, dtype=bool)
    repeats[order] = counts[gid] > 1  # this record's pc runs more than once in its wave
    _loop_phases(repeats, exec_index, starts, stops, phase)


def _loop_phases(repeats, exec_index, starts, stops, phase) -> None:
    """Per record of a wave with a repeated pc: before its first repeated
    record (before_loop), after its last (after_loop), else its pc's first
    execution (loop_first) or a later one (loop_steady); the records of
    other waves stay straight_line. All waves at once: each wave's first and
    last repeated record found by a search in the sorted positions of all."""
    rep = np.flatnonzero(repeats)
    i0 = np.searchsorted(rep, starts)
    i1 = np.searchsorted(rep, stops)
    looped = np.flatnonzero(i1 > i0)
    if len(looped) == 0:
        return
    lo, hi = rep[i0[looped]], rep[i1[looped] - 1]
    a, b = starts[looped], stops[looped]
    rows = _ranges(a, b - a)
    first, last = np.repeat(lo, b - a), np.repeat(hi, b - a)
    phase[rows] = np.where(rows < first, 1, np.where(rows > last, 4, np.where(exec_index[rows] == 0, 2, 3)))


class _PhasesCodec:
    """Phases to and from a digest (arrays + JSON)."""

    def encode(self, p: Phases):
        from dataclasses import asdict

        return {"phase": p.phase, "exec_index": p.exec_index}, {
            "kernel": p.kernel, "instructions": [asdict(x) for x in p.instructions],
            "static_loops": [asdict(x) for x in p.static_loops], "short_waves": p.short_waves,
            "short_wave_threshold": p.short_wave_threshold, "traced_cu_share_of_median": list(p.traced_cu_share_of_median.items()),
            "flags": p.flags}

    def decode(self, arrays, meta):
        return Phases(arrays["phase"], arrays["exec_index"], meta["kernel"],
                      [InstructionDistribution(**x) for x in meta["instructions"]],
                      [StaticLoop(**x) for x in meta["static_loops"]], meta["short_waves"], meta["short_wave_threshold"],
                      {int(k): v for k, v in meta["traced_cu_share_of_median"]}, meta["flags"])


ROWS_CHUNK = 1 << 20  # records tested together for the wanted pcs


def _rows_of_pcs(pc: np.ndarray, pcs: list, n_pc: int) -> dict:
    """{pc: its record indices, ascending} for a few pcs, in one pass over the
    records (not one per pc), grouped by a stable sort of the few selected."""
    from attlens.analysis.groups import stable_pc_order

    want = np.zeros(n_pc, dtype=bool)
    want[pcs] = True
    # a chunk of records at a time: no record-long mask (np.take: the same lookup as want[...], about twice as fast)
    parts = [np.flatnonzero(np.take(want, pc[a:a + ROWS_CHUNK])) + a for a in range(0, len(pc), ROWS_CHUNK)]
    sel = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    sel = sel[stable_pc_order(pc[sel], n_pc)]
    spc = pc[sel]
    return {p: sel[np.searchsorted(spc, p, side="left"):np.searchsorted(spc, p, side="right")] for p in pcs}


def _phase_totals(phase: np.ndarray, recs) -> dict[str, dict[str, int]]:
    """Records, stall and latency per phase. The most common phase's sums are
    the totals less the other phases' (its records, often nearly all, are not
    gathered)."""
    if np.count_nonzero(phase):
        counts = [int(np.count_nonzero(phase == i)) for i in range(len(PHASES))]  # byte compares: no intp copy as bincount makes
    else:  # no wave loops (every record straight_line): one count says so, not one compare per phase
        counts = [len(phase)] + [0] * (len(PHASES) - 1)
    top = counts.index(max(counts))
    stall, latency = [0] * len(PHASES), [0] * len(PHASES)
    for i in range(len(PHASES)):
        if i != top and counts[i]:
            m = phase == i
            stall[i], latency[i] = int(recs.stall[m].sum()), int(recs.duration[m].sum())
    stall[top] = int(recs.stall.sum()) - sum(stall)
    latency[top] = int(recs.duration.sum()) - sum(latency)
    return {name: {"records": counts[i], "stall": stall[i], "latency": latency[i]} for i, name in enumerate(PHASES)}


def compute_phases(dispatch, hotspots=None, top: int = 20) -> Phases:
    """Kept in the capture's digest when there is one (the hotspot ranking
    it starts from depends on the dispatch and the wait-counter model only)."""
    from attlens.cache import memo

    key = f"phases-v2-{dispatch.arch.waitcnt_model}-top{top}" if hotspots is not None else "phases-v2-nohot"
    return memo(dispatch, key, lambda: _compute_phases(dispatch, hotspots, top), _PhasesCodec())


def _compute_phases(dispatch, hotspots, top: int) -> Phases:
    recs = dispatch.records
    phase, exec_index = _phase_arrays(dispatch)
    kernel = _phase_totals(phase, recs)

    dists = []
    if hotspots is not None:
        pcs = [hotspots.instructions[i].pc for i in hotspots.by_stall[:top]]
        rows_of = _rows_of_pcs(recs.pc, pcs, dispatch.code.size)
        for pc in pcs:
            rows = rows_of[pc]
            if len(rows) == 0:
                continue
            s = recs.stall[rows]
            first = exec_index[rows] == 0
            dists.append(
                InstructionDistribution(
                    pc=int(pc),
                    executions=len(rows),
                    stall_p50=float(np.percentile(s, 50)),
                    stall_p90=float(np.percentile(s, 90)),
                    stall_max=int(s.max()),
                    first_execution_stall_mean=float(s[first].mean()),
                    later_execution_stall_mean=float(s[~first].mean()) if (~first).any() else None,
                    stall_by_phase={PHASES[i]: int(s[phase[rows] == i].sum()) for i in range(len(PHASES)) if (phase[rows] == i).any()},
                )
            )

    flags = []
    loops = backward_branches(dispatch)
    unreached = [lp for lp in loops if not lp.executed]
    if loops and len(unreached) == len(loops):
        lp = max(unreached, key=lambda x: x.last_pc - x.first_pc)
        flags.append(
            f"the traced waves never reached the kernel's loop (pcs {lp.first_pc}–{lp.last_pc}, backward branch at pc "
            f"{lp.branch_pc} never executed): this capture shows only the code before it, not the main work"
        )
    w = dispatch.waves
    n_rec = w.n_records
    longest = int(n_rec.max()) if len(n_rec) else 0
    threshold = max(longest // 10, 1)
    short = int(np.count_nonzero(n_rec < threshold))
    if w.count and short / w.count >= 0.25:
        flags.append(
            f"{short} of {w.count} traced waves executed fewer than {threshold} instructions (the longest ran {longest}): "
            "they exited early; per-instruction totals mix these with the waves that did the work"
        )
    share: dict[int, float | None] = {}
    occ = dispatch.occupancy
    if occ is not None and len(occ.events):
        share = traced_cu_share(w, occ.events)
        low = [se for se, v in share.items() if v is not None and v < 0.5]
        if low:
            flags.append(
                f"the traced CU received fewer than half the median waves of its SE's CUs in SE {low} "
                "(occupancy.json): too few waves there to be representative"
            )
    return Phases(phase, exec_index, kernel, dists, loops, short, threshold, share, flags)


def traced_cu_share(w, events: np.ndarray) -> dict[int, float | None]:
    """SE -> the traced CUs' wave starts / the median starts per CU of that SE
    (occupancy.json; None for a traced SE without starts), SEs ascending.
    The starts are counted per (SE, CU) in one grouping, then each SE is a
    slice of those counts (not a pass over all starts per SE)."""
    from attlens.analysis.groups import tuple_groups

    is_start = events[:, 5] == 1
    se, cu = events[is_start, 0], events[is_start, 2]
    ids, first = tuple_groups(se, cu)  # (SE, CU) ascending
    counts = np.bincount(ids, minlength=len(first))
    se_of, cu_of = se[first], cu[first]
    traced = set(w.cu.tolist())
    share: dict[int, float | None] = {}
    for s in sorted(set(w.se.tolist()) | set(se_of.tolist())):
        a, b = np.searchsorted(se_of, s, side="left"), np.searchsorted(se_of, s, side="right")
        if a == b:
            share[int(s)] = None
            continue
        cnt = counts[a:b]
        med = float(np.median(cnt))
        mine = sum(int(c) for c_u, c in zip(cu_of[a:b].tolist(), cnt.tolist()) if c_u in traced)
        share[int(s)] = mine / med if med else None
    return share
