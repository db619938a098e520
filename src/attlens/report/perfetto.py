"""Chrome/Perfetto JSON trace of a capture (loads in ui.perfetto.dev).

Tracks: one process per shader engine; per (CU, SIMD, slot) one thread with a
slice per wave and, nested inside it, one slice per instruction (name =
mnemonic; args = pc, source line, stall; the full instruction text is in
the metadata's ``instructions`` table by pc, to keep the file small); a sibling thread with the
wave-state slices; a counter track per SE with the waves resident on its CUs
(occupancy.json). Times are shader cycles, shifted by the per-SE realtime
alignment when available, converted to nanoseconds with the realtime clock
(1 cycle = 1 ns when the clock is unknown, stated in the metadata). Each
instruction slice is cut at the next instruction's start and at the wave end
so slices nest exactly, as the trace-event format requires.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attlens.model.dispatch import STATE_NAMES


def build_trace(result, clock, max_waves: int | None = None, window: tuple[int, int] | None = None) -> dict:
    d = result.dispatch
    w, recs, tl = d.waves, d.records, d.timeline
    offsets = clock.offsets or {}
    shift = np.array([offsets.get(int(se), 0) for se in w.se.tolist()], dtype=np.int64)
    begin = w.begin + shift
    end = w.end + shift
    origin = int(begin.min())
    freq = clock.frequency_hz
    scale = 1e9 / freq if freq else 1.0  # ns per cycle

    def ns(c):
        return np.rint((np.asarray(c, dtype=np.float64) - origin) * scale).astype(np.int64)

    chosen = np.argsort(begin, kind="stable")
    if window is not None:
        lo, hi = window
        keep = (end[chosen] - origin > lo) & (begin[chosen] - origin < hi)
        chosen = chosen[keep]
    if max_waves is not None:
        chosen = chosen[:max_waves]
    chosen = np.sort(chosen)

    events: list[dict] = []
    seen_proc, seen_thread = set(), set()
    st = d.static
    for wi in chosen.tolist():
        se, cu, simd, slot = int(w.se[wi]), int(w.cu[wi]), int(w.simd[wi]), int(w.slot[wi])
        pid = se + 1
        tid = cu * 10000 + simd * 100 + slot + 1
        state_tid = tid + 5000
        if pid not in seen_proc:
            seen_proc.add(pid)
            events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"SE{se}"}})
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": se}})
        if (pid, tid) not in seen_thread:
            seen_thread.add((pid, tid))
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"CU{cu} SIMD{simd} slot{slot}"}})
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": state_tid, "args": {"name": f"CU{cu} SIMD{simd} slot{slot} states"}})
        wb, we = int(ns(begin[wi])), int(ns(end[wi]))
        a, b = int(w.rec_start[wi]), int(w.rec_stop[wi])
        t0 = recs.time[a:b] + shift[wi]
        t1 = np.minimum(np.r_[t0[1:], end[wi]], t0 + recs.duration[a:b])
        t1 = np.minimum(np.maximum(t1, t0), end[wi])
        s_ns, e_ns = ns(t0), ns(t1)
        wave_end = max(we, int(e_ns.max()) if len(e_ns) else we)
        events.append({"ph": "X", "name": f"wave {w.filenames[wi][:-5]}", "pid": pid, "tid": tid, "ts": wb / 1000, "dur": (wave_end - wb) / 1000,
                       "args": {"file": w.filenames[wi], "records": b - a}})
        pcs = recs.pc[a:b].tolist()
        stalls = recs.stall[a:b].tolist()
        for s0, e0, pc, stall in zip(s_ns.tolist(), e_ns.tolist(), pcs, stalls):
            own = st.own_source[pc]
            events.append({"ph": "X", "name": st.mnemonic[pc], "pid": pid, "tid": tid, "ts": s0 / 1000, "dur": (e0 - s0) / 1000,
                           "args": {"pc": pc, "source": str(own) if own else None, "stall": stall}})
        ta, tb = int(w.tl_start[wi]), int(w.tl_stop[wi])
        seg_end = begin[wi] + np.cumsum(tl.duration[ta:tb])
        seg_start = seg_end - tl.duration[ta:tb]
        for s0, e0, state in zip(ns(seg_start).tolist(), ns(seg_end).tolist(), tl.state[ta:tb].tolist()):
            events.append({"ph": "X", "name": STATE_NAMES.get(int(state), str(state)), "pid": pid, "tid": state_tid, "ts": s0 / 1000, "dur": (e0 - s0) / 1000})
    occ = d.occupancy
    if occ is not None and len(occ.events):
        for se in sorted(set(occ.events[:, 0].tolist())):
            if se + 1 not in seen_proc:
                continue
            ev = occ.events[occ.events[:, 0] == se]
            order = np.lexsort((ev[:, 5], ev[:, 1]))
            ev = ev[order]
            t = ev[:, 1] + offsets.get(int(se), 0)
            level = np.cumsum(np.where(ev[:, 5] == 1, 1, -1))
            last = np.r_[t[1:] != t[:-1], True]
            for tt, lv in zip(ns(t[last]).tolist(), level[last].tolist()):
                events.append({"ph": "C", "name": "waves resident (all CUs)", "pid": se + 1, "tid": 0, "ts": tt / 1000, "args": {"waves": lv}})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "metadata": {
            "generator": "attlens",
            "kernel": d.kernel_name,
            "capture": str(d.path),
            "time_unit": "ns from realtime clock" if freq else "1 ns per shader cycle (clock unknown)",
            "shader_clock_hz": freq,
            "se_offsets_cycles": {str(k): v for k, v in offsets.items()},
            "waves_exported": int(len(chosen)),
            "waves_total": int(w.count),
            "instructions": {str(pc): d.code.isa[pc] for pc in sorted(set(recs.pc[np.concatenate([np.arange(w.rec_start[i], w.rec_stop[i]) for i in chosen.tolist()])].tolist()))} if len(chosen) else {},
        },
    }


def write_trace(trace: dict, out: Path) -> int:
    """Write atomically; returns the file size in bytes."""
    from attlens.fsutil import write_atomic
    from attlens.textsafe import dumps_json  # non-UTF-8 paths as \xNN, not a TypeError

    return write_atomic(out, dumps_json(trace))
