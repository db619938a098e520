"""Compact data of the HTML report's viewer panels (docs/report.md): the
clock-range scope of the hotspot tables and latency histogram, and the
per-wave instruction records of the single-wave timeline.

Large integer arrays travel packed: little-endian int32 (float64 when a value
does not fit), zlib-compressed, base64 text — ``{"$z": ..., "n": count, "t":
"i32" | "f64"}``. The page inflates them with the browser's own
``DecompressionStream("deflate")`` (no library); :func:`unpack` is the same
in Python (tests, readers of the data block).
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

SCOPE_BINS = 100  # clock-range resolution of the hotspot scope (bins over the traced window)
WAVE_DETAIL_LIMIT = 256  # waves whose instruction records are embedded for the single-wave timeline
PACK_LEVEL = 1  # zlib level: on softmax 1 packs in 0.11 s less than 6 for 11 % more bytes (1.35 vs 1.22 MB); 9 gains < 2 % over 6


# the packed integer types and their ranges (looked up once: the wave detail packs six columns a wave)
_KINDS = tuple((kind, dtype, int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)) for kind, dtype in (("i8", "<i1"), ("i16", "<i2"), ("i32", "<i4")))


def _narrow(values) -> tuple[str, bytes]:
    """The narrowest little-endian integer type that holds every value
    (float64 beyond int32: exact up to 2**53, far beyond any cycle count)."""
    a = np.asarray(values)
    # integers that int64 holds are looked at as they are (a byte grid: no 8x wider copy first)
    if not (a.dtype.kind == "i" or (a.dtype.kind == "u" and a.dtype.itemsize < 8)):
        a = a.astype(np.int64)
    a = a.ravel()
    lo, hi = (int(a.min()), int(a.max())) if a.size else (0, 0)
    for kind, dtype, least, most in _KINDS:
        if least <= lo and hi <= most:
            return kind, a.astype(dtype).tobytes()
    return "f64", a.astype("<f8").tobytes()


def pack(values, level: int = PACK_LEVEL) -> dict:
    """One integer array, packed (see the module docstring)."""
    kind, raw = _narrow(values)
    return {"$z": base64.b64encode(zlib.compress(raw, level)).decode("ascii"), "n": int(np.size(values)), "t": kind}


def pack_columns(columns, level: int = PACK_LEVEL) -> dict:
    """Several integer arrays in one stream (each in its own narrowest type):
    ``{"$z", "n": [counts], "t": [types]}``; zlib then finds the repeats
    across them."""
    parts = [_narrow(c) for c in columns]
    return {"$z": base64.b64encode(zlib.compress(b"".join(raw for _, raw in parts), level)).decode("ascii"),
            "n": [int(np.size(c)) for c in columns], "t": [kind for kind, _ in parts]}


_DTYPES = {"i8": "<i1", "i16": "<i2", "i32": "<i4", "f64": "<f8"}


def unpack(obj):
    """The int64 array of a :func:`pack` object; the list of arrays of a
    :func:`pack_columns` object."""
    raw = zlib.decompress(base64.b64decode(obj["$z"]))
    many = isinstance(obj["t"], list)
    kinds, counts = (obj["t"], obj["n"]) if many else ([obj["t"]], [obj["n"]])
    out, pos = [], 0
    for kind, n in zip(kinds, counts):
        dt = np.dtype(_DTYPES[kind])
        out.append(np.frombuffer(raw, dtype=dt, count=n, offset=pos).astype(np.int64))
        pos += n * dt.itemsize
    if pos != len(raw):
        raise ValueError(f"packed data holds {len(raw)} bytes, its header describes {pos}")
    return out if many else out[0]


SCOPE_CHUNK = 1 << 20  # records keyed at a time: the key buffers are reused, never one record-long temporary each


def _se_shift(dispatch, se_offsets: dict | None) -> np.ndarray:
    """Per wave: its SE's clock offset (added to its records' times on the common clock)."""
    offs = se_offsets or {}
    return np.array([offs.get(int(se), 0) for se in dispatch.waves.se.tolist()], dtype=np.int64)


def scope(dispatch, se_offsets: dict | None, t0: int, t1: int, timeline_bin_cycles: int, hits=None) -> dict:
    """Hit, latency (Σ duration), stall and idle per (pc, clock bin): the
    hotspot tables, the per-class totals and the latency histogram of any
    range of whole bins are sums of these cells. A record belongs to the bin
    of its issue-attempt time on the aligned clock. Bins are whole multiples
    of the wave timeline's bins, so a range read off the timeline falls on
    bin edges. Only cells with a record are kept (flat index ``pc * bins +
    bin``, delta-encoded). ``hits``: executions per pc when known (the
    analysis' sums), else counted here."""
    recs = dispatch.records
    span = max(t1 - t0, 1)
    k = max(1, -(-span // (timeline_bin_cycles * SCOPE_BINS)))
    width = timeline_bin_cycles * k
    n_bins = -(-span // width)
    # cells of the pcs that ran, counted with bincount (no sort, no copy of the records per column)
    if hits is None or len(hits) != dispatch.code.size:
        hits = np.bincount(recs.pc, minlength=dispatch.code.size)
    ran = np.flatnonzero(hits)
    row = np.full(dispatch.code.size, -1, dtype=np.int64)
    row[ran] = np.arange(len(ran))
    size = len(ran) * n_bins
    hit, sums = _scope_cells(recs, _se_shift(dispatch, se_offsets), t0, width, n_bins, row, size)
    nz = np.flatnonzero(hit)
    cells = ran[nz // n_bins] * n_bins + nz % n_bins
    hit = hit[nz]
    sums = {name: v[nz] for name, v in sums.items()}
    return {
        "t0": int(t0),
        "bins": int(n_bins),
        "bin_cycles": int(width),
        # cell step (flat index pc * bins + bin, delta-encoded), hit, latency, stall, idle
        "cells": pack_columns([np.diff(np.r_[0, cells]), hit, sums["latency"], sums["stall"], sums["idle"]]),
    }


def _scope_cells(recs, shift: np.ndarray, t0: int, width: int, n_bins: int, row: np.ndarray, size: int) -> tuple:
    """Per cell (``row[pc] * n_bins + bin``): records, and the sums of their
    duration, stall and idle. The records are keyed a chunk at a time into
    two reused buffers (at softmax x30 a record-long int64 temporary is
    330 MB of fresh pages); the chunks' float64 sums of integers are exact
    below 2**53, so adding them up gives the same sums as one pass."""
    n = recs.count
    hit = np.zeros(size, dtype=np.int64)
    cols = (("latency", recs.duration), ("stall", recs.stall), ("idle", recs.idle))
    acc = {name: np.zeros(size) for name, _ in cols}
    key = np.empty(min(n, SCOPE_CHUNK), dtype=np.int64)
    tmp = np.empty_like(key)
    # per wave and per pc, once: the lookups then hand each record its part of the key directly
    wave_from_t0 = shift - t0
    row_cell = row * n_bins
    for lo in range(0, n, SCOPE_CHUNK):
        m = min(lo + SCOPE_CHUNK, n) - lo
        k, t = key[:m], tmp[:m]
        # mode "clip": the records' waves and pcs are in range (the loader checks them), and the
        # default "raise" writes through a temporary buffer (3.5x slower)
        np.take(wave_from_t0, recs.wave[lo:lo + m], out=k, mode="clip")
        k += recs.time[lo:lo + m]
        k //= width
        np.clip(k, 0, n_bins - 1, out=k)
        np.take(row_cell, recs.pc[lo:lo + m], out=t, mode="clip")
        k += t
        hit += np.bincount(k, minlength=size)
        for name, col in cols:
            acc[name] += np.bincount(k, weights=col[lo:lo + m], minlength=size)
    return hit, {name: np.rint(v).astype(np.int64) for name, v in acc.items()}


def detail_waves(begin: np.ndarray, end: np.ndarray, limit: int = WAVE_DETAIL_LIMIT) -> list[int]:
    """The waves whose records are embedded: all of them up to ``limit``;
    beyond, ``limit - 2`` spread evenly over the dispatch by begin time plus
    the longest and the shortest wave."""
    n = len(begin)
    if n <= limit:
        return list(range(n))
    by_begin = np.argsort(begin, kind="stable")
    picks = set(by_begin[np.unique(np.linspace(0, n - 1, limit - 2).round().astype(np.int64))].tolist())
    life = end - begin
    picks.add(int(np.argmax(life)))
    picks.add(int(np.argmin(life)))
    return sorted(picks)


def wave_detail(dispatch, waves: list[int]) -> dict:
    """Per picked wave, one :func:`pack_columns` block: per record the pc
    step from the previous record's pc, the gap from the previous record's end (time + duration; the first record: from the
    wave's begin), the issue cycles (duration − stall) and the stall, then
    the wave-state segments' state and duration. Steps and gaps are mostly 1
    and 0, which zlib packs to about 1 kB a wave (softmax)."""
    w, recs, tl = dispatch.waves, dispatch.records, dispatch.timeline
    picks = np.asarray(waves, dtype=np.int64)
    step, gap, issue, stall, off, n = _detail_columns(w, recs, picks)
    blobs = []
    for i, a, k in zip(picks.tolist(), off.tolist(), n.tolist()):
        s, e = int(w.tl_start[i]), int(w.tl_stop[i])
        blobs.append(pack_columns([step[a:a + k], gap[a:a + k], issue[a:a + k], stall[a:a + k], tl.state[s:e], tl.duration[s:e]]))
    return {"limit": WAVE_DETAIL_LIMIT, "waves": [int(i) for i in waves], "blob": blobs}


def _detail_columns(w, recs, picks: np.ndarray):
    """:func:`wave_detail`'s record columns of the picked waves, computed for
    all of them at once (the records of each wave back to back: ``off``,
    ``n``): pc step, gap, issue cycles, stall (int64)."""
    from attlens.analysis.waitdeps import _ranges

    n = (w.rec_stop[picks] - w.rec_start[picks]).astype(np.int64)
    off = np.cumsum(n) - n
    rec = _ranges(w.rec_start[picks], n)
    t = recs.time[rec].astype(np.int64)
    dur = recs.duration[rec].astype(np.int64)
    stall = recs.stall[rec].astype(np.int64)
    pc = recs.pc[rec].astype(np.int64)
    gap = np.empty_like(t)
    gap[1:] = t[1:] - t[:-1] - dur[:-1]
    step = np.empty_like(pc)
    step[1:] = pc[1:] - pc[:-1]
    first = off[n > 0]  # a wave's first record: from its begin, and its pc from 0
    gap[first] = t[first] - w.begin[picks][n > 0].astype(np.int64)
    step[first] = pc[first]
    return step, gap, dur - stall, stall, off, n


def unpack_wave(blob: dict) -> dict:
    """A :func:`wave_detail` block as arrays: pc, time (relative to the wave's
    begin), duration, stall per record; state, state_cycles per segment."""
    step, gap, issue, stall, state, state_cycles = unpack(blob)
    dur = issue + stall
    time = np.cumsum(gap + np.r_[0, dur[:-1]]) if len(dur) else np.zeros(0, np.int64)
    return {"pc": np.cumsum(step), "time": time, "duration": dur, "stall": stall, "state": state, "state_cycles": state_cycles}
