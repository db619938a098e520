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

The instruction and wave-state slices, nearly all of the file, are formatted
by NumPy (:mod:`attlens.report.jsonrows`: per-pc byte templates, digits from
integer arithmetic; ts/dur as ``ns / 1000`` with three decimals), a few
thousand events at a time by two processes taking turns (this one and a
forked child, :mod:`attlens.report.turns`; where a fork is not safe, two
threads, NumPy releasing the GIL); the other events are dicts written by
orjson. Each process (thread) writes the chunk it formatted when its turn
comes (one ``os.pwritev`` (``os.writev``) of the pieces, no copy), so the
file is streamed in order, never held whole in memory, and capped at ``max_events`` events (default :data:`DEFAULT_MAX_EVENTS`, about
140 MB of JSON): waves are exported in start order until the next one would pass the
cap; the metadata and the command's summary say how many waves and events
were left out (``--max-events 0`` exports everything).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from attlens.model.dispatch import STATE_NAMES
from attlens.report.jsonrows import Rows, Table
from attlens.textsafe import dumps_json  # non-UTF-8 paths as \xNN, not a TypeError

DEFAULT_MAX_EVENTS = 1_000_000
# Events formatted at once: bounds the memory of the formatting (about 200 bytes each).
CHUNK_EVENTS = 8192


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


def _chunks(chosen, per_wave, limit: int):
    """``chosen`` (ascending) cut into runs of waves of about ``limit`` events."""
    if not len(chosen):
        return
    ends = np.cumsum(per_wave[chosen])
    start = 0
    while start < len(chosen):
        stop = int(np.searchsorted(ends, ends[start] - per_wave[chosen[start]] + limit, side="right"))
        stop = max(stop, start + 1)
        yield chosen[start:stop]
        start = stop


def _ranges(starts, stops):
    """Indices ``starts[i] .. stops[i] - 1`` of every i, back to back
    (analysis.waitdeps._ranges), and where each range begins in that array
    (length n + 1)."""
    from attlens.analysis.waitdeps import _ranges as ranges

    lens = (stops - starts).astype(np.int64)
    return ranges(starts, lens), np.concatenate([[0], np.cumsum(lens)])


@dataclass
class _Chunk:
    """The instruction and wave-state rows of some waves, as bytes, wave by wave."""

    instr: list[np.ndarray]
    state: list[np.ndarray]
    wave_ts: np.ndarray
    wave_end: np.ndarray
    pcs: np.ndarray
    events: int


@dataclass
class _Written:
    """Some waves' part of the file: buffers to write in order, how many
    events they hold, and the pcs of their instructions."""

    pieces: list
    events: int
    pcs: np.ndarray


@dataclass(frozen=True)
class _Inputs:
    """What the formatting processes (threads) read, as plain arrays: a
    digest's columns load on first access, which two threads must not do at
    once, and which a forked child would do again."""

    pid: np.ndarray
    tid: np.ndarray
    rec_start: np.ndarray
    rec_stop: np.ndarray
    tl_start: np.ndarray
    tl_stop: np.ndarray
    time: np.ndarray
    duration: np.ndarray
    pc: np.ndarray
    stall: np.ndarray
    state: np.ndarray
    state_cycles: np.ndarray
    shift: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    ns: object  # cycles -> integer ns from the first wave's start
    instr_head: Table
    instr_args: Table
    state_head: Table
    se: list
    cu: list
    simd: list
    slot: list
    filenames: list
    first_proc: np.ndarray  # bool per wave: the first exported of its SE (its process is named before it)
    first_track: np.ndarray  # bool per wave: the first exported of its (CU, SIMD, slot) (its tracks are named)


def _wave_rows(x: _Inputs, waves: np.ndarray) -> _Chunk:
    """The rows of ``waves``: per record a slice from its issue to the next
    record's (at most its duration, never past the wave's end); per timeline
    segment a state slice; the wave's own slice ends at its last record."""
    ns, n_w = x.ns, len(waves)
    pid, tid = x.pid[waves].tolist(), x.tid[waves].tolist()
    ids = Table([b',"pid":%d,"tid":%d,"ts":' % pt for pt in zip(pid, tid)])
    state_ids = Table([b',"pid":%d,"tid":%d,"ts":' % (p, t + 5000) for p, t in zip(pid, tid)])
    r, r_at = _ranges(x.rec_start[waves], x.rec_stop[waves])
    of_rec = np.repeat(np.arange(n_w), np.diff(r_at))
    wave_end_c = x.end[waves]
    t0 = x.time[r] + x.shift[waves][of_rec]
    nxt = np.empty_like(t0)
    nxt[:-1] = t0[1:]
    has = np.diff(r_at) > 0
    last = r_at[1:][has] - 1
    nxt[last] = wave_end_c[has]
    t1 = np.minimum(nxt, t0 + x.duration[r])
    t1 = np.minimum(np.maximum(t1, t0), wave_end_c[of_rec])
    s_ns, e_ns = ns(t0), ns(t1)
    wave_ts, wave_end = ns(x.begin[waves]), ns(wave_end_c)
    if has.any():
        wave_end[has] = np.maximum(wave_end[has], np.maximum.reduceat(e_ns, r_at[:-1][has]))
    pcs = x.pc[r]
    instr = (Rows(len(r)).table(x.instr_head, pcs).table(ids, of_rec).thousandths(s_ns).const(b',"dur":').thousandths(e_ns - s_ns)
             .table(x.instr_args, pcs).integer(x.stall[r]).const(b"}}"))
    instr = instr.squeezed_groups(r_at)
    s, s_at = _ranges(x.tl_start[waves], x.tl_stop[waves])
    of_seg = np.repeat(np.arange(n_w), np.diff(s_at))
    cycles = x.state_cycles[s].astype(np.int64)
    run = np.cumsum(cycles)
    before = np.concatenate([[0], run])[s_at[:-1]]
    seg_end = x.begin[waves][of_seg] + (run - before[of_seg])
    a, b = ns(seg_end - cycles), ns(seg_end)
    state = (Rows(len(s)).table(x.state_head, x.state[s]).table(state_ids, of_seg).thousandths(a).const(b',"dur":').thousandths(b - a)
             .const(b"}"))
    state = state.squeezed_groups(s_at)
    return _Chunk(instr, state, wave_ts, wave_end, pcs, len(r) + len(s))


def _firsts(keys: np.ndarray, chosen: np.ndarray, n: int) -> np.ndarray:
    """Bool per wave (``n``): the first of ``chosen`` (ascending) with its key."""
    first = np.zeros(n, dtype=bool)
    first[chosen[np.unique(keys[chosen], return_index=True)[1]]] = True
    return first


def _inputs(d, chosen, shift, begin, end, ns) -> _Inputs:
    w, recs, tl, st = d.waves, d.records, d.timeline, d.static
    pid = w.se.astype(np.int64) + 1
    tid = w.cu.astype(np.int64) * 10000 + w.simd.astype(np.int64) * 100 + w.slot + 1
    return _Inputs(
        pid=pid, tid=tid,
        rec_start=w.rec_start, rec_stop=w.rec_stop, tl_start=w.tl_start, tl_stop=w.tl_stop,
        time=recs.time, duration=recs.duration, pc=recs.pc, stall=recs.stall, state=tl.state, state_cycles=tl.duration,
        shift=shift, begin=begin, end=end, ns=ns,
        instr_head=Table.of_json(b',{"ph":"X","name":', st.mnemonic),
        instr_args=Table([b',"args":{"pc":%d,"source":' % pc + dumps_json(str(o) if o else None) + b',"stall":'
                          for pc, o in enumerate(st.own_source)]),
        state_head=Table.of_json(b',{"ph":"X","name":', [STATE_NAMES.get(s, str(s)) for s in range(256)]),
        se=w.se.tolist(), cu=w.cu.tolist(), simd=w.simd.tolist(), slot=w.slot.tolist(), filenames=w.filenames,
        first_proc=_firsts(pid, chosen, w.count), first_track=_firsts(pid << 32 | tid, chosen, w.count))


def _wave_events(x: _Inputs, wi: int, wb: int, wave_end: int, n_records: int) -> list[dict]:
    """The wave's slice (``wb``..``wave_end`` ns), after the names of its
    process and tracks where they first appear."""
    se, cu, simd, slot, name = x.se[wi], x.cu[wi], x.simd[wi], x.slot[wi], x.filenames[wi]
    pid, tid = se + 1, cu * 10000 + simd * 100 + slot + 1
    events: list[dict] = []
    if x.first_proc[wi]:
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": f"SE{se}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": se}})
    if x.first_track[wi]:
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"CU{cu} SIMD{simd} slot{slot}"}})
        events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid + 5000, "args": {"name": f"CU{cu} SIMD{simd} slot{slot} states"}})
    events.append({"ph": "X", "name": f"wave {name[:-5]}", "pid": pid, "tid": tid, "ts": wb / 1000, "dur": (wave_end - wb) / 1000,
                   "args": {"file": name, "records": n_records}})
    return events


def _written(x: _Inputs, waves: np.ndarray) -> _Written:
    """The file's bytes of ``waves`` (ascending): per wave its dict events,
    instruction rows and state rows."""
    c = _wave_rows(x, waves)
    pieces, events = [], c.events
    for j, wi in enumerate(waves.tolist()):
        head = _wave_events(x, wi, int(c.wave_ts[j]), int(c.wave_end[j]), int(x.rec_stop[wi] - x.rec_start[wi]))
        events += len(head)
        pieces += [b"," + dumps_json(head)[1:-1], c.instr[j], c.state[j]]
    return _Written(pieces, events, c.pcs)


def _counter_rows(se: int, ev: np.ndarray, offset: int, ns) -> Rows:
    """The SE's waves resident after each time its occupancy changes (ends
    before starts at one time; the level after the time's last change)."""
    ev = ev[np.lexsort((ev[:, 5], ev[:, 1]))]
    t = ev[:, 1] + offset
    level = np.cumsum(np.where(ev[:, 5] == 1, 1, -1))
    last = np.r_[t[1:] != t[:-1], True]
    return (Rows(int(last.sum())).const(b',{"ph":"C","name":"waves resident (all CUs)","pid":%d,"tid":0,"ts":' % (se + 1))
            .thousandths(ns(t[last])).const(b',"args":{"waves":').integer(level[last]).const(b"}}"))


def _distinct(a: np.ndarray) -> int:
    """How many distinct values ``a`` holds (np.unique's count, without its hashing)."""
    return int(np.count_nonzero(np.diff(np.sort(a)))) + 1 if len(a) else 0


class _Ordered:
    """Items handed out one at a time to several threads, and turns to take
    their results in the items' order; the first error stops every thread."""

    def __init__(self, items):
        import threading

        self._items = enumerate(items)
        self._cond = threading.Condition()
        self._turn = 0
        self.error: BaseException | None = None

    def next(self):
        """``(index, item)``, or None when there is none left or an error stopped the work."""
        with self._cond:
            return next(self._items, None) if self.error is None else None

    def wait_turn(self, index: int) -> bool:
        """Wait until the results before ``index`` are taken; False after an error."""
        with self._cond:
            while self._turn != index and self.error is None:
                self._cond.wait()
            return self.error is None

    def taken(self) -> None:
        with self._cond:
            self._turn += 1
            self._cond.notify_all()

    def fail(self, exc: BaseException) -> None:
        with self._cond:
            self.error = self.error or exc
            self._cond.notify_all()


def _work_in_order(order: _Ordered, work, take) -> None:
    while (nxt := order.next()) is not None:
        index, item = nxt
        result = work(item)
        if not order.wait_turn(index):
            return
        take(result)
        order.taken()


def _in_order(work, items, take, threads: int = 2) -> None:
    """``take(work(item))`` for each item, in the items' order. ``work`` runs
    on ``threads`` threads, this one among them (NumPy releases the GIL);
    ``take`` on the thread that made the result, when its turn comes: the
    formatting thread writes its own chunk (no hand-over to a writer thread,
    one GIL hand-off fewer per chunk) while the other formats the next. The
    first error (or Ctrl-C, which this thread receives) stops them all and
    is raised here."""
    import threading

    order = _Ordered(items)

    def helper():
        try:
            _work_in_order(order, work, take)
        except BaseException as exc:
            order.fail(exc)

    helpers = [threading.Thread(target=helper, name=f"attlens-export-{k}", daemon=True) for k in range(threads - 1)]
    for t in helpers:
        t.start()
    try:
        _work_in_order(order, work, take)
        for t in helpers:
            t.join()
    except BaseException as exc:
        order.fail(exc)  # the helpers stop before their next write
        for t in helpers:
            t.join()
        raise
    if order.error is not None:
        raise order.error


class _Writer:
    """Writes lists of buffers to the file's descriptor, one ``os.writev``
    each (no copy, one system call, one GIL hand-off per chunk), or, in
    turns with another process, ``os.pwritev`` at a given offset; rows start
    with a comma, which the file's first drops."""

    def __init__(self, f):
        f.flush()  # nothing buffered: every byte goes through fd from here
        self.fd, self.size, self.first = f.fileno(), 0, True

    def __call__(self, pieces: list) -> None:
        n = self.rows_at(pieces, None, self.first)
        self.first = self.first and not n
        self.size += n

    def rows_at(self, pieces: list, at: int | None, first: bool) -> int:
        """Rows written at ``at`` (None: at the file position); the bytes written."""
        pieces = [p for p in pieces if len(p)]
        if first and pieces:
            pieces[0] = memoryview(pieces[0])[1:]
        return self.raw_at(pieces, self.size if at is None else at, at is not None)

    def raw(self, pieces: list) -> None:
        self.size += self.raw_at(pieces, self.size, False)

    def raw_at(self, pieces: list, at: int, positioned: bool) -> int:
        from attlens.fsutil import reserve, write_all

        n = sum(len(p) for p in pieces)
        reserve(self.fd, at, n)  # no block left to allocate when renamed: fsutil.reserve
        write_all(self.fd, pieces, at if positioned else None)
        return n


def _write_chunks(written, chunks: list, put: _Writer, used_pc: np.ndarray) -> int:
    """Each chunk's ``written`` bytes in order at the file's end, formatted
    by two processes (:mod:`attlens.report.turns`) or, where a fork is not
    safe, two threads (:func:`_in_order`); marks the chunks' pcs in
    ``used_pc``; returns the events written."""
    from attlens.report import turns

    events = [0]

    def take(chunk: _Written, at: int | None = None) -> int:  # in file order, one thread or process at a time
        used_pc[chunk.pcs] = True
        events[0] += chunk.events
        if at is None:
            put(chunk.pieces)
            return 0
        return put.rows_at(chunk.pieces, at, at == start)

    start, taken = put.size, None
    if len(chunks) > 1 and turns.usable():
        taken = turns.take_turns(written, chunks, take, lambda: (events[0], np.flatnonzero(used_pc)), start)
    if taken is None:  # one chunk, no safe fork, or the fork failed
        _in_order(written, chunks, take)
        return events[0]
    end, (child_events, child_pcs) = taken
    used_pc[child_pcs] = True
    put.size, put.first = end, False
    os.lseek(put.fd, end, os.SEEK_SET)  # pwritev left the file position where the header ended
    return events[0] + child_events


def stream_trace(result, clock, out, max_waves: int | None = None, window: tuple[int, int] | None = None,
                 max_events: int | None = DEFAULT_MAX_EVENTS) -> dict:
    """Write the trace to ``out`` (atomically, streamed); returns a summary:
    events and waves written, and what the event cap left out."""
    from attlens.fsutil import atomic_writer

    d = result.dispatch
    w = d.waves
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
        budget = cap - 2 * len(set(w.se.tolist())) - sum(_distinct(v[:, 1]) for v in counter_events.values())
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

    inputs = _inputs(d, chosen, shift, begin, end, ns)

    def written(waves):
        return _written(inputs, waves)

    used_pc = np.zeros(d.code.size, dtype=bool)
    with atomic_writer(out) as f:
        put = _Writer(f)
        put.raw([b'{"traceEvents":['])

        n_events = _write_chunks(written, list(_chunks(chosen, per_wave, CHUNK_EVENTS)), put, used_pc)
        exported_pids = set(inputs.pid[chosen].tolist())
        for se, ev in counter_events.items():
            if se + 1 in exported_pids:
                rows = _counter_rows(se, ev, offsets.get(int(se), 0), ns)
                put([rows.squeezed()])
                n_events += rows.n
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
        put.raw([b'],"displayTimeUnit":"ns","metadata":' + dumps_json(meta) + b"}"])
    meta["bytes"] = put.size  # reserve() allocated exactly what was written: nothing to truncate
    return meta
