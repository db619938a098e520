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

The file is streamed to disk wave by wave (never held whole in memory) and
capped at ``max_events`` events (default :data:`DEFAULT_MAX_EVENTS`, about
140 MB of JSON): waves are exported in start order until the next one would pass the
cap; the metadata and the command's summary say how many waves and events
were left out (``--max-events 0`` exports everything).
"""

from __future__ import annotations

import numpy as np

from attlens.model.dispatch import STATE_NAMES
from attlens.textsafe import dumps_json  # non-UTF-8 paths as \xNN, not a TypeError

DEFAULT_MAX_EVENTS = 1_000_000


def _chosen_waves(d, clock, max_waves, window):
    w = d.waves
    offsets = clock.se_offsets_cycles or {}
    shift = np.array([offsets.get(int(se), 0) for se in w.se.tolist()], dtype=np.int64)
    begin = w.begin + shift
    end = w.end + shift
    origin = int(begin.min())
    chosen = np.argsort(begin, kind="stable")
    if window is not None:
        lo, hi = window
        keep = (end[chosen] - origin > lo) & (begin[chosen] - origin < hi)
        chosen = chosen[keep]
    if max_waves is not None:
        chosen = chosen[:max_waves]
    return chosen, shift, begin, end, origin


def stream_trace(result, clock, out, max_waves: int | None = None, window: tuple[int, int] | None = None,
                 max_events: int | None = DEFAULT_MAX_EVENTS) -> dict:
    """Write the trace to ``out`` (atomically, streamed); returns a summary:
    events and waves written, and what the event cap left out."""
    from attlens.fsutil import atomic_writer

    d = result.dispatch
    w, recs, tl = d.waves, d.records, d.timeline
    offsets = clock.se_offsets_cycles or {}
    chosen, shift, begin, end, origin = _chosen_waves(d, clock, max_waves, window)
    freq = clock.frequency_hz
    scale = 1e9 / freq if freq else 1.0  # ns per cycle
    occ = d.occupancy
    counter_events = {}
    if occ is not None and len(occ.events):
        for se in sorted(set(occ.events[:, 0].tolist())):
            ev = occ.events[occ.events[:, 0] == se]
            counter_events[int(se)] = ev
    # Events per wave: its slice + instructions + states + 4 track names at most.
    per_wave = (w.rec_stop - w.rec_start) + (w.tl_stop - w.tl_start) + 1
    cap = None if not max_events else int(max_events)
    if cap is not None:
        budget = cap - 2 * len(set(w.se.tolist())) - sum(len(np.unique(v[:, 1])) for v in counter_events.values())
        fits = np.cumsum(per_wave[chosen] + 4) <= max(budget, 0)
        cut = int((~fits).sum())
        chosen_all = chosen
        chosen = chosen[fits]
    else:
        cut = 0
        chosen_all = chosen
    chosen = np.sort(chosen)

    def ns(c):
        return np.rint((np.asarray(c, dtype=np.float64) - origin) * scale).astype(np.int64)

    st = d.static
    names = st.mnemonic
    sources = [str(o) if o else None for o in st.own_source]
    seen_proc, seen_thread = set(), set()
    used_pc = np.zeros(d.code.size, dtype=bool)
    n_events = 0
    with atomic_writer(out) as f:
        f.write(b'{"traceEvents":[')
        first = True

        def emit(events: list) -> None:
            nonlocal first, n_events
            if not events:
                return
            body = dumps_json(events)[1:-1]
            f.write(body if first else b"," + body)
            first = False
            n_events += len(events)

        for wi in chosen.tolist():
            events: list[dict] = []
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
            pcs = recs.pc[a:b]
            used_pc[pcs] = True
            for s0, e0, pc, stall in zip(s_ns.tolist(), e_ns.tolist(), pcs.tolist(), recs.stall[a:b].tolist()):
                events.append({"ph": "X", "name": names[pc], "pid": pid, "tid": tid, "ts": s0 / 1000, "dur": (e0 - s0) / 1000,
                               "args": {"pc": pc, "source": sources[pc], "stall": stall}})
            ta, tb = int(w.tl_start[wi]), int(w.tl_stop[wi])
            tdur = tl.duration[ta:tb].astype(np.int64)
            seg_end = begin[wi] + np.cumsum(tdur)
            seg_start = seg_end - tdur
            for s0, e0, state in zip(ns(seg_start).tolist(), ns(seg_end).tolist(), tl.state[ta:tb].tolist()):
                events.append({"ph": "X", "name": STATE_NAMES.get(int(state), str(state)), "pid": pid, "tid": state_tid, "ts": s0 / 1000, "dur": (e0 - s0) / 1000})
            emit(events)
        for se, ev in counter_events.items():
            if se + 1 not in seen_proc:
                continue
            order = np.lexsort((ev[:, 5], ev[:, 1]))
            ev = ev[order]
            t = ev[:, 1] + offsets.get(int(se), 0)
            level = np.cumsum(np.where(ev[:, 5] == 1, 1, -1))
            last = np.r_[t[1:] != t[:-1], True]
            emit([{"ph": "C", "name": "waves resident (all CUs)", "pid": se + 1, "tid": 0, "ts": tt / 1000, "args": {"waves": lv}}
                  for tt, lv in zip(ns(t[last]).tolist(), level[last].tolist())])
        meta = {
            "generator": "attlens",
            "kernel": d.kernel_name,
            "capture": str(d.path),
            "time_unit": "ns from realtime clock" if freq else "1 ns per shader cycle (clock unknown)",
            "shader_clock_hz": freq,
            "se_offsets_cycles": {str(k): v for k, v in offsets.items()},
            "waves_exported": int(len(chosen)),
            "waves_total": int(w.count),
            "waves_selected": int(len(chosen_all)),
            "max_events": cap,
            "waves_cut_by_max_events": cut,
            "events": n_events,
            "instructions": {str(pc): d.code.isa[pc] for pc in np.flatnonzero(used_pc).tolist()},
        }
        f.write(b'],"displayTimeUnit":"ns","metadata":' + dumps_json(meta) + b"}")
        size = f.tell()
    meta["bytes"] = size
    return meta
