"""Every HTML page: the self-contained report of one capture (``attlens
report DIR -o report.html``), the index page of several captures and the diff
page of two (``attlens report --diff A B``) (docs/report.md).

One file, no server, no network: the page's CSS and JavaScript are inlined
from ``templates/`` and every number is embedded once as JSON inside
``<script type="application/json">``. Trace strings (kernel names, source
text, paths) reach the page only inside that JSON block, with ``<``, ``>`` and
``&`` escaped as ``\\u003c`` ``\\u003e`` ``\\u0026`` so no text can close the
block, and the page's script puts them in the document with ``textContent``
only. A Content-Security-Policy allows the page's own script (by its SHA-256)
and nothing else: no other script, no fetch, no remote font or image.

The wave timeline is downsampled: the traced window is cut into at most
``TIMELINE_BINS`` bins, each (lane, bin) keeps its dominant wave state and
instruction class, runs of equal bins are merged and delta-encoded. Occupancy
over time is the mean number of resident waves (and of waves in each state)
per bin.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shlex
from importlib import resources
from pathlib import Path

import numpy as np
import orjson

from attlens import __version__
from attlens.analysis.stalls import CLASS_IDS
from attlens.model.dispatch import STATE_NAMES
from attlens.report.text import n as fmt_int, pct as fmt_pct, predicted_label
from attlens.report.viewerdata import pack

TIMELINE_BINS = 6000  # horizontal resolution of the downsampled timeline
MIN_BIN_CYCLES = 4  # never finer than this (gfx9 time quantum)
# Source embedding caps (docs/security.md). Each snapshot file is read at most
# MAX_SOURCE_FILE_BYTES (attlens.io.snapshots_json) and shown whole up to
# MAX_SOURCE_FILE_LINES lines; all embedded source text together stays under
# MAX_EMBEDDED_SOURCE_BYTES. A file left out is listed with the reason.
MAX_SOURCE_FILE_LINES = 20_000
MAX_EMBEDDED_SOURCE_BYTES = 16 << 20
REPORT_SCHEMA = "attlens.report_data"
_MARKER = re.compile(r"\{\{([A-Z]+)\}\}")


# ---------------------------------------------------------------------------
# helpers shared with markdown.py
# ---------------------------------------------------------------------------


from attlens.fsutil import write_atomic  # noqa: E402,F401  (re-exported for markdown.py)


def json_for_script(obj) -> str:
    """JSON safe to place inside ``<script type="application/json">``: no
    ``<``, ``>`` or ``&`` survives (``\\u003c`` etc. are the same string to
    ``JSON.parse``), so ``</script>`` or ``<!--`` in the data cannot end the
    block. U+2028/U+2029 are escaped too."""
    from attlens.textsafe import dumps_json  # non-UTF-8 paths as \xNN, not a TypeError

    text = dumps_json(obj, orjson.OPT_NON_STR_KEYS | orjson.OPT_SERIALIZE_NUMPY).decode("utf-8")
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _template(name: str) -> str:
    return resources.files("attlens.report").joinpath("templates", name).read_text(encoding="utf-8")


def _csp(script: str | None) -> str:
    parts = ["default-src 'none'", "style-src 'unsafe-inline'", "img-src data:", "base-uri 'none'", "form-action 'none'"]
    if script is not None:
        digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
        parts.insert(1, f"script-src 'sha256-{digest}'")
    return "; ".join(parts)


# ---------------------------------------------------------------------------
# data model of the page
# ---------------------------------------------------------------------------


def _isa_table(result) -> dict:
    """Every listed instruction, columnar."""
    d = result.dispatch
    s = result.sums
    st = d.static
    code = d.code
    pcs = np.flatnonzero(code.instruction_mask)
    hot_cls = {h.pc: h.class_ for h in result.hotspots.instructions}
    classes: list[str] = []
    cls_idx: dict[str, int] = {}

    def ci(c: str) -> int:
        c = c or "other"
        if c not in cls_idx:
            cls_idx[c] = len(classes)
            classes.append(c)
        return cls_idx[c]

    exposed = None if result.hidden is None else result.hidden.exposed[pcs].astype(np.int64).tolist()
    return {
        "pc": pcs.tolist(),
        # null: the layout records no addresses (rocprofv2: that column counts lines)
        "vaddr": code.vaddr[pcs].astype(np.int64).tolist() if code.has_addresses else [None] * len(pcs),
        "text": [code.isa[p] for p in pcs.tolist()],
        "cls": [ci(hot_cls.get(p, st.cls[p])) for p in pcs.tolist()],
        "hit": s.hit[pcs].astype(np.int64).tolist(),
        "latency": s.latency[pcs].astype(np.int64).tolist(),
        "stall": s.stall[pcs].astype(np.int64).tolist(),
        "idle": s.idle[pcs].astype(np.int64).tolist(),
        "exposed": exposed,
        "waited_on": s.producer_wait[pcs].astype(np.int64).tolist(),
        "source": [str(st.own_source[p]) if st.own_source[p] else None for p in pcs.tolist()],
        "classes": classes,
        "pc_samples": _isa_samples(result, pcs),
    }


def _isa_samples(result, pcs) -> dict | None:
    """Sampled stall reasons per listed instruction, columnar (None: no PC samples joined)."""
    join = getattr(result, "pc_sampling", None)
    if join is None or join.mode == "none":
        return None
    from attlens.io.pcsampling import REASONS

    known = join.issue_known
    return {
        "reasons": list(REASONS),
        "samples": join.samples[pcs].astype(np.int64).tolist(),
        "stalled": join.stalled[pcs].astype(np.int64).tolist() if known else None,
        "by_reason": join.reasons[pcs].astype(np.int64).tolist() if known else None,
    }


def _source_view(result) -> dict:
    """Source lines (every line holding a listed instruction) and, per file,
    the snapshot text when the capture has it."""
    d = result.dispatch
    s = result.sums
    st = d.static
    code = d.code
    hidden = result.hidden
    hot = {ln.source: ln for ln in result.hotspots.lines}
    groups: dict[str, list[int]] = {}
    for pc in np.flatnonzero(code.instruction_mask).tolist():
        own = st.own_source[pc]
        groups.setdefault(str(own) if own else "(no source)", []).append(pc)
    lines = []
    for key, pcs in groups.items():
        arr = np.array(pcs)
        own = st.own_source[pcs[0]]
        h = hot.get(key)
        lines.append(
            {
                "key": key,
                "file": own.file if own else None,
                "line": own.line if own else None,
                "pcs": pcs,
                "hit": int(s.hit[arr].sum()),
                "latency": int(s.latency[arr].sum()),
                "stall": int(s.stall[arr].sum()),
                "idle": int(s.idle[arr].sum()),
                "exposed": None if hidden is None else int(hidden.exposed[arr].sum()),
                "executed": int(np.count_nonzero(s.hit[arr])),
                "dominant_class": h.dominant_class if h else None,
                "class_stall": h.class_stall if h else {},
                "inline_chains": h.inline_chains[:4] if h else [],
                "pc_samples": _line_samples(result, pcs),
            }
        )
    return {"lines": lines, "files": _source_files(d, [ln["file"] for ln in lines])}


def _line_samples(result, pcs) -> dict | None:
    join = getattr(result, "pc_sampling", None)
    return None if join is None or join.mode == "none" else join.row(pcs)


def _source_files(d, names) -> list[dict]:
    """Per source file (first-seen order): its snapshot text, or None with
    ``omitted`` saying why when a copy exists but is not embedded (over a cap,
    refused). Files without a copy in the capture have neither."""
    files, seen, total = [], set(), 0
    for f in names:
        if f is None or f in seen:
            continue
        seen.add(f)
        text, why = d.source_file(f)
        omitted = why if d.snapshots.get(f) is not None else None
        if text is not None:
            size = sum(len(t) + 1 for t in text)
            if len(text) > MAX_SOURCE_FILE_LINES:
                text, omitted = None, f"{len(text):,} lines, more than the {MAX_SOURCE_FILE_LINES:,}-line cap per file"
            elif total + size > MAX_EMBEDDED_SOURCE_BYTES:
                text, omitted = None, f"the report already embeds {total / 2**20:.1f} MiB of source (cap {MAX_EMBEDDED_SOURCE_BYTES / 2**20:.0f} MiB)"
            else:
                total += size
        files.append({"file": f, "text": text, "omitted": omitted})
    return files


def _deps(waves) -> dict:
    att = waves.attribution
    waits = {int(w): sorted(([int(p), int(c)] for p, c in prods.items()), key=lambda x: -x[1]) for w, prods in att.by_wait_pc.items()}
    producers = {
        int(p.pc): {
            "waited": int(p.waited_cycles),
            "pairs": int(p.pairs),
            "class": p.wait_class,
            "dist_instr_median": float(p.distance_instructions_median),
            "dist_cycles_median": float(p.distance_cycles_median),
            "outstanding_mean": round(float(p.outstanding_mean), 2),
        }
        for p in att.producers
    }
    return {"total_charged": int(att.total_charged), "waits": waits, "producers": producers}


GRID_CHUNK_CELLS = 1 << 18  # lane x bin x category cells computed at a time


def _coverage(lane, start, end, cat, n_lanes: int, n_bins: int, n_cat: int, t0: int, width: int, dtype=np.int64) -> np.ndarray:
    """Cycles of each (lane, bin, category) covered by the intervals
    ``[start, end)`` (cycle t in bin ``(t - t0) // width`` clipped to the
    bins); array (n_lanes, n_bins, n_cat), a view of one laid out
    category-major (each category's grid contiguous: the bin-axis sums and
    :func:`_dominant` pass over contiguous rows). Callers pass one bounded
    chunk of lanes at a time (:data:`GRID_CHUNK_CELLS`). ``dtype``: int64,
    or float64 where the cycles are only compared and summed (whole numbers
    below 2**53: exact; a pass over the grid to convert them saved)."""
    m = end > start
    if not m.all():  # records always last a cycle: most calls keep everything and copy nothing
        lane, start, end, cat = lane[m], start[m], end[m], cat[m]
    size = n_lanes * n_bins * n_cat
    if len(start) == 0:
        return np.zeros((n_lanes, n_bins, n_cat), dtype=dtype)
    # times from t0 already (the timeline's grids: t0 taken off once a wave): no pass to copy them
    rel_s = start - t0 if t0 else start
    rel_e = end - t0 if t0 else end
    b0 = rel_s // width
    b1 = rel_e - 1
    b1 //= width
    if b0.min() < 0 or b1.max() >= n_bins:  # cycles outside the window: they pile into the edge bins
        _clip_bins(b0, n_bins)
        _clip_bins(b1, n_bins)
    base = np.multiply(cat, n_lanes, dtype=np.int64)  # (cat * n_lanes + lane) * n_bins, in place
    base += lane
    base *= n_bins
    span = b1 - b0  # bins after the first
    sp = np.flatnonzero(span != 0)  # over booleans: twice as fast as over the int64 spans
    # full bins b0+1 .. b1-1 of spanning intervals (width cycles each)
    more = span[sp] > 1
    full = sp[more]
    n_full = span[full] - 1
    cells = int(n_full.sum())
    # as many cells as one grid of lanes at most (the usual case: a lane's intervals barely
    # overlap): listed one by one into the same bincount, no difference array over whole rows
    listed = cells <= n_lanes * n_bins
    # every cell and its cycles in one pair of arrays, filled in place (not grown by concatenation):
    # each interval's first bin (all of it when it ends there), the spanning ones' last bins, then the
    # listed full bins (bincount sums exact integers in float64, in any order)
    m, k = len(rel_s), len(sp)
    first = np.empty(m + k + (cells if listed else 0), dtype=np.int64)
    wts = np.empty_like(first)
    np.add(base, b0, out=first[:m])
    np.subtract(rel_e, rel_s, out=wts[:m])
    if k:
        b1_sp = b1[sp]
        wts[sp] = (b0[sp] + 1) * width - rel_s[sp]
        first[m:m + k] = first[sp] - b0[sp] + b1_sp
        wts[m:m + k] = rel_e[sp] - b1_sp * width
    if listed:
        if cells:
            _fill_ranges(first[m + k:], first[full] + 1, n_full)
            wts[m + k:] = width
        return np.bincount(first, weights=wts, minlength=size).astype(dtype, copy=False).reshape(n_cat, n_lanes, n_bins).transpose(1, 2, 0)
    out = np.bincount(first, weights=wts, minlength=size).astype(dtype, copy=False)
    _add_full_bins(out.reshape(n_cat * n_lanes, n_bins), base[full] + b0[full] + 1, base[full] + b1[full], width)
    return out.reshape(n_cat, n_lanes, n_bins).transpose(1, 2, 0)


def _add_full_bins(grid: np.ndarray, lo: np.ndarray, hi: np.ndarray, width: int) -> None:
    """Add ``width`` to the flat cells ``lo .. hi - 1`` of each interval (each
    within one row of ``grid``): a difference array along the bin axis, over
    only the rows some interval spans (intervals that overlap a lot: listing
    their cells would outgrow the grid)."""
    n_bins = grid.shape[1]
    didx = np.concatenate([lo, hi])
    k = len(lo)
    dw = np.concatenate([np.full(k, width, dtype=np.int64), np.full(k, -width, dtype=np.int64)])
    rows = np.unique(didx // n_bins)
    if len(rows) == len(grid):
        grid += np.cumsum(np.bincount(didx, weights=dw, minlength=grid.size).astype(np.int64).reshape(grid.shape), axis=1)
    else:
        local = np.searchsorted(rows, didx // n_bins) * n_bins + didx % n_bins
        diff = np.bincount(local, weights=dw, minlength=len(rows) * n_bins).astype(np.int64).reshape(len(rows), n_bins)
        grid[rows] += np.cumsum(diff, axis=1)


def _rle(rows: np.ndarray) -> dict:
    """Per lane (a row of ``rows``, lanes x bins) runs of equal values:
    delta-encoded starts (each lane's first run starts at 0), values (-1
    empty), packed. All lanes in a few passes over the whole grid, as one
    flat row (flat indices: cheaper than np.nonzero's pairs)."""
    n_lanes, n_bins = rows.shape
    flat = rows.ravel()
    new = np.empty(flat.shape, dtype=bool)
    np.not_equal(flat[1:], flat[:-1], out=new[1:])
    new[::n_bins] = True  # every lane's first bin starts a run
    at = np.flatnonzero(new)
    off = np.searchsorted(at, np.arange(n_lanes + 1) * n_bins)  # each lane's first run
    step = np.empty_like(at)
    np.subtract(at[1:], at[:-1], out=step[1:])
    step[off[:-1]] = 0  # a lane's first run: 0, not the gap from the last lane's last run
    return {"off": off.tolist(), "start": pack(step), "val": pack(flat[at])}


def _clip_bins(b: np.ndarray, n_bins: int) -> np.ndarray:
    """``b`` clipped to the bins 0 .. n_bins - 1, in place (np.clip costs several passes)."""
    np.maximum(b, 0, out=b)
    return np.minimum(b, n_bins - 1, out=b)


def _dominant(cov: np.ndarray, most: int) -> np.ndarray:
    """Per (lane, bin): the category covering most cycles (the first of
    equals), -1 where none (coverage is never negative: the largest is 0
    only where nothing ran). ``cov``: :func:`_coverage`'s grid, whose cells
    this overwrites in float64; ``most``: a bound on any cell's cycles (the
    intervals' total: cycles outside the window pile into the edge bins)."""
    by_cat = cov.transpose(2, 0, 1)  # category-major: each category's (lane, bin) grid contiguous
    # a byte a cell where the categories fit (the report's classes and states): the lanes' grids
    # are concatenated and run-length encoded afterwards, 8x less memory than int64
    dtype = np.int8 if len(by_cat) < 128 else np.int64
    if len(by_cat) == 0:
        return np.full(cov.shape[:2], -1, dtype=dtype)
    tie = 1 << (len(by_cat) - 1).bit_length()  # a power of two above every category
    if cov.dtype == np.float64 and most * tie < 2**53:
        return _dominant_by_max(by_cat, tie, dtype)
    best = by_cat[0].copy()
    dom = np.zeros(cov.shape[:2], dtype=dtype)
    more = np.empty(best.shape, dtype=bool)
    for c in range(1, len(by_cat)):  # one pass per category beats argmax across the grids (strided)
        np.greater(by_cat[c], best, out=more)
        np.maximum(best, by_cat[c], out=best)  # a plain maximum: faster than a masked copy (same values)
        dom[more] = c
    dom[best <= 0] = -1
    return dom


def _dominant_by_max(by_cat: np.ndarray, tie: int, dtype) -> np.ndarray:
    """:func:`_dominant` as one maximum over the categories: category c's
    whole cycles get the fraction (tie - 1 - c) / tie (exact while cycles x
    tie < 2**53), so more cycles win and equal cycles go to the first
    category; two passes over the grid instead of three per category."""
    by_cat += ((tie - 1 - np.arange(len(by_cat))) / tie)[:, None, None]
    # the largest of non-negative float64s is the largest of their bits read as int64 (no NaN checks: faster)
    bits = np.maximum.reduce(by_cat.reshape(len(by_cat), -1).view(np.int64))
    frac, whole = np.modf(bits.view(np.float64).reshape(by_cat.shape[1:]))
    dom = (tie - 1 - frac * tie).astype(dtype)
    dom[whole == 0] = -1
    return dom


def _fill_ranges(out: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> None:
    """:func:`_ranges` written into ``out`` (its length: ``counts.sum()``): one copy of them fewer."""
    ends = np.cumsum(counts)
    np.add(np.repeat(starts - (ends - counts), counts), np.arange(len(out)), out=out)


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    from attlens.analysis.waitdeps import _ranges as ranges

    return ranges(starts, counts)


def _back_to_back(starts: np.ndarray, counts: np.ndarray):
    """The rows ``starts[i] .. starts[i] + counts[i] - 1`` of every i, in
    order: a slice when the ranges follow one another (the loader stores a
    lane's waves one after the other: the columns are then read as views,
    not gathered copies), else their indices."""
    if len(starts) and (starts[1:] == starts[:-1] + counts[:-1]).all():
        a = int(starts[0])
        return slice(a, a + int(counts.sum()))
    return _ranges(starts, counts)


def _frame(d, clk) -> tuple:
    """The timeline's frame of a dispatch with waves: per wave its SE's clock
    offset, begin and end on the aligned clock; the traced window ``t0``,
    ``t1``; the bin width in cycles and the number of bins."""
    w = d.waves
    offsets = clk.se_offsets_cycles or {}
    shift = np.array([offsets.get(int(se), 0) for se in w.se.tolist()], dtype=np.int64)
    begin = w.begin.astype(np.int64) + shift
    end = w.end.astype(np.int64) + shift
    t0 = int(begin.min())
    t1 = int(end.max())
    span = max(t1 - t0, 1)
    width = max(MIN_BIN_CYCLES, -(-span // TIMELINE_BINS))
    return shift, begin, end, t0, t1, width, -(-span // width)


def _executions(result, n_pc: int) -> np.ndarray:
    """Executions per pc: the analysis' sums (no pass over every record), or
    counted when they do not cover ``n_pc`` pcs."""
    hit = result.sums.hit
    return hit if len(hit) == n_pc else np.bincount(result.dispatch.records.pc, minlength=n_pc)


def _lanes(w) -> tuple:
    """The timeline's lanes: the waves' distinct (SE, CU, SIMD, slot) rows,
    sorted (an int64 array, lanes x 4), and per wave its lane."""
    rows = np.stack([w.se, w.cu, w.simd, w.slot], axis=1).astype(np.int64)
    order = np.lexsort(rows.T[::-1])  # a few int64 sorts: faster than np.unique over rows
    rows = rows[order]
    new = np.ones(len(rows), dtype=bool)
    np.any(rows[1:] != rows[:-1], axis=1, out=new[1:])
    lane = np.empty(len(rows), dtype=np.int64)
    lane[order] = np.cumsum(new) - 1
    return rows[new], lane


def _simds_per_se(lane_keys: np.ndarray, se_of_lane: np.ndarray, n_se: int) -> list[int]:
    """Per SE (``se_of_lane``: each lane's): its distinct (CU, SIMD) pairs
    among the sorted lanes ``lane_keys`` (a pair's lanes are adjacent)."""
    simd = lane_keys[:, :3]
    first = np.ones(len(simd), dtype=bool)
    np.any(simd[1:] != simd[:-1], axis=1, out=first[1:])
    return np.bincount(se_of_lane[first], minlength=n_se).tolist()


def _lane_chunks(lane: np.ndarray, n_lanes: int, per_lane: int):
    """Lanes in chunks of about :data:`GRID_CHUNK_CELLS` grid cells
    (``per_lane`` a lane): per chunk its first and end lane, its waves and
    their lanes within the chunk."""
    wave_order = np.argsort(lane, kind="stable")
    lane_ptr = np.searchsorted(lane[wave_order], np.arange(n_lanes + 1))
    step = max(1, GRID_CHUNK_CELLS // per_lane)
    for lo in range(0, n_lanes, step):
        hi = min(lo + step, n_lanes)
        wv = wave_order[lane_ptr[lo]:lane_ptr[hi]]
        yield lo, hi, wv, lane[wv] - lo


def _state_grids(d, lane, n_lanes: int, begin, se_of_lane, n_se: int, t0: int, width: int, n_bins: int) -> tuple:
    """Per (lane, bin) the wave state covering most cycles (lanes x bins), and
    per SE the cycles of each state per bin (SE x state x bin, float64 whole
    numbers). Each chunk of lanes gathers only its waves' timeline segments
    (stored wave by wave, contiguous from each wave's begin)."""
    w, tl = d.waves, d.timeline
    tl_count = (w.tl_stop - w.tl_start).astype(np.int64)
    rows = []
    per_se_state = np.zeros((n_se, 5, n_bins))  # whole cycles in float64 (exact), as the grids
    begin_from_t0 = begin - t0  # once a wave: the segments' times are then from t0 (_coverage's t0 = 0)
    for lo, hi, wv, wlane in _lane_chunks(lane, n_lanes, n_bins * 5):
        # per-wave values repeated over a wave's segments: np.repeat, cheaper than a gather through a wave index
        n_seg = tl_count[wv]
        seg = _back_to_back(w.tl_start[wv], n_seg)
        dur = tl.duration[seg].astype(np.int64)
        before = np.zeros(len(dur) + 1, dtype=np.int64)  # the chunk's cycles before each segment (and after all)
        np.cumsum(dur, out=before[1:])
        seg_start = before[:-1] + np.repeat(begin_from_t0[wv] - before[np.cumsum(n_seg) - n_seg], n_seg)
        state = tl.state[seg].astype(np.int64)
        np.minimum(state, 4, out=state)  # states are unsigned: all np.clip(0, 4) did, in one pass
        cov = _coverage(np.repeat(wlane, n_seg), seg_start, seg_start + dur, state, hi - lo, n_bins, 5, 0, width, np.float64)
        # lanes are sorted by SE first: each SE's lanes of the chunk are one slice, summed (before
        # _dominant overwrites the grid) over the contiguous state-major layout
        by_state = cov.transpose(2, 0, 1)
        cut = np.searchsorted(se_of_lane[lo:hi], np.arange(n_se + 1))
        for si in np.flatnonzero(np.diff(cut)).tolist():
            per_se_state[si] += by_state[:, cut[si]:cut[si + 1]].sum(axis=1)
        rows.append(_dominant(cov, int(dur.sum())))  # no cell holds more than all the chunk's cycles
    return np.concatenate(rows), per_se_state


def _class_grids(d, lane, n_lanes: int, shift, pc_code, n_cls: int, t0: int, width: int, n_bins: int) -> np.ndarray:
    """Per (lane, bin) the instruction class covering most cycles (lanes x
    bins; ``pc_code``: each pc's class). Each chunk of lanes gathers only its
    waves' records (stored wave by wave)."""
    w, recs = d.waves, d.records
    rec_count = (w.rec_stop - w.rec_start).astype(np.int64)
    rows = []
    shift_from_t0 = shift - t0  # once a wave: the records' times are then from t0 (_coverage's t0 = 0)
    for lo, hi, wv, wlane in _lane_chunks(lane, n_lanes, n_bins * max(n_cls, 1)):
        n_rec = rec_count[wv]
        rec = _back_to_back(w.rec_start[wv], n_rec)
        r_start = recs.time[rec] + np.repeat(shift_from_t0[wv], n_rec)
        cycles = np.maximum(recs.duration[rec], 1)
        cov = _coverage(np.repeat(wlane, n_rec), r_start, r_start + cycles, pc_code[recs.pc[rec]], hi - lo, n_bins, max(n_cls, 1), 0, width, np.float64)
        rows.append(_dominant(cov, int(cycles.sum())))  # no cell holds more than all the chunk's cycles
    return np.concatenate(rows)


def _timeline(result, waves) -> dict:
    d = result.dispatch
    w = d.waves
    clk = waves.clock
    n = w.count
    if n == 0:
        return {"lanes": [], "bins": 0}
    shift, begin, end, t0, t1, width, n_bins = _frame(d, clk)
    lane_keys, lane = _lanes(w)
    keys = [tuple(k) for k in lane_keys.tolist()]
    n_lanes = len(keys)

    # instruction classes (waits: the class holding most of their cycles), only those that ran
    pc_cls = np.array([CLASS_IDS.index(c) if c in CLASS_IDS else CLASS_IDS.index("other") for c in d.static.cls], dtype=np.int64)
    for h in result.hotspots.instructions:
        if h.class_ in CLASS_IDS:
            pc_cls[h.pc] = CLASS_IDS.index(h.class_)
    ran = _executions(result, len(pc_cls)) > 0  # the pcs that ran
    present = np.flatnonzero(np.bincount(pc_cls[ran], minlength=len(CLASS_IDS)))
    cls_code = np.full(len(CLASS_IDS), -1, dtype=np.int64)
    cls_code[present] = np.arange(len(present))
    pc_code = cls_code[pc_cls]
    n_cls = len(present)

    # the grids by chunks of lanes, each its own: the states' 5 categories take fewer cells a lane
    se_ids, se_of_lane = np.unique(lane_keys[:, 0], return_inverse=True)
    se_ids = se_ids.tolist()
    state_rows, per_se_state = _state_grids(d, lane, n_lanes, begin, se_of_lane, len(se_ids), t0, width, n_bins)
    cls_rows = _class_grids(d, lane, n_lanes, shift, pc_code, n_cls, t0, width, n_bins)
    # occupancy over time: resident waves, all lanes as one (their sum)
    res = _coverage(np.zeros(n, dtype=np.int64), begin, end, np.zeros(n, dtype=np.int64), 1, n_bins, 1, t0, width)[0, :, 0]

    per_state = per_se_state.sum(axis=0)  # every lane's SE is one of them (integer sums: exact)
    scale = 100.0 / width  # stored as hundredths of a wave
    simds_per_se = _simds_per_se(lane_keys, se_of_lane, len(se_ids))
    occupancy = {
        "resident": pack(np.rint(res * scale)),
        "states": {STATE_NAMES[s]: pack(np.rint(per_state[s] * scale)) for s in (1, 2, 3, 4)},
        "scale": 100,
        # per traced SE: waves in each state, summed over the SE's traced SIMDs (row-major SE x bin)
        "per_se": {"se": se_ids, "simds": simds_per_se,
                   "states": {STATE_NAMES[s]: pack(np.rint(per_se_state[:, s] * scale)) for s in (1, 2, 3, 4)}},
    }
    order = np.lexsort((begin, lane))
    per_wave = waves.states.per_wave
    return {
        "t0": t0,
        "t1": t1,
        "bin_cycles": width,
        "bins": n_bins,
        "aligned": bool(clk.aligned),
        "clock_mhz": None if not clk.frequency_hz else round(clk.frequency_hz / 1e6, 3),
        "clock_note": clk.note,
        "lanes": [{"se": k[0], "cu": k[1], "simd": k[2], "slot": k[3]} for k in keys],
        "waves": {
            "index": pack(order),
            "lane": pack(lane[order]),
            "begin": pack(begin[order] - t0),
            "end": pack(end[order] - t0),
            # per wave: IDLE, EXEC, WAIT, STALL cycles (4 values a wave)
            "states": pack(np.asarray(per_wave)[order][:, [1, 2, 3, 4]]),
            "records": pack(w.n_records[order]),
        },
        "state_names": [STATE_NAMES[s] for s in range(5)],
        "state": _rle(state_rows),
        "class_names": [CLASS_IDS[i] for i in present.tolist()],
        "cls": _rle(cls_rows),
        "occupancy": occupancy,
    }


def _pmc_dict(pmc, dispatch_id) -> dict | None:
    """A PmcAttachment (checked against the capture: the block says what was
    attached), a PmcResult, a list of them, or an ``attlens.pmc`` /
    per-dispatch dict."""
    if pmc is None:
        return None
    from attlens.analysis.pmc import PmcResult
    from attlens.analysis.pmc_attach import PmcAttachment

    if isinstance(pmc, PmcAttachment):
        return {**pmc.result.to_dict(), "attached": pmc.label()}

    items = pmc
    if isinstance(pmc, PmcResult):
        items = [pmc]
    elif isinstance(pmc, dict):
        items = pmc.get("dispatches", [pmc])
    rows = [x.to_dict() if isinstance(x, PmcResult) else x for x in items]
    if not rows:
        return None
    for r in rows:
        if dispatch_id is not None and r.get("dispatch_id") == dispatch_id:
            return r
    return rows[0]


def reproduce_commands(path: str) -> list[str]:
    q = _shell_quote(path)
    return [
        f"attlens analyze {q} --json > analysis.json",
        f"attlens plan {q} --format md -o PLAN.md",
        f"attlens waves {q}",
        f"attlens deps {q}",
        f"attlens report {q} -o report.html",
        f"attlens report {q} --format md -o report/",
    ]


def _shell_quote(s: str) -> str:
    return shlex.quote(str(s))


def build_report_data(result, plan, waves, pmc=None, topk: int = 20, parts: dict | None = None) -> dict:
    """Everything the page shows, as one JSON-able dict. ``plan``: a Plan or
    its ``to_dict()``; ``parts``: what
    :func:`page_parts` made of the same capture (computed here if not given)."""
    parts = page_parts(result, waves, pmc, topk) if parts is None else parts
    return {"schema": REPORT_SCHEMA, "schema_version": 1, "attlens_version": __version__, "analysis": parts["analysis"],
            "plan": plan if isinstance(plan, dict) else plan.to_dict(), **{k: v for k, v in parts.items() if k != "analysis"}}


def page_parts(result, waves, pmc=None, topk: int = 20, panels: dict | None = None, timeline: bool = True) -> dict:
    """The page's data that does not depend on the plan (made while the plan's
    replay runs beside it: :func:`render_captures`). ``panels``: what
    :func:`viewer_panels` made of the same capture (computed here if not
    given; a panel the other process makes is there as None); ``timeline``:
    False when the other process makes it (its place is kept, None)."""
    d = result.dispatch
    wd = waves.to_dict(per_wave=False)
    timeline = _timeline(result, waves) if timeline else None
    return {
        "analysis": result.to_dict(topk),
        "waves": {k: wd[k] for k in ("clock", "states", "pipes", "phases", "flags")},
        "headline": headline(result),
        "isa": _isa_table(result),
        "source": _source_view(result),
        "deps": _deps(waves),
        "timeline": timeline,
        **(viewer_panels(d, waves.clock, result.sums.hit) if panels is None else panels),
        "pmc": _pmc_dict(pmc, d.resources.dispatch_id),
        "reproduce": reproduce_commands(str(d.path)),
    }


def viewer_panels(d, clock, hits=None, panels=("scope", "wave_detail")) -> dict:
    """The hotspot scope (clock-range brush, latency histogram) and the
    single-wave timeline's records (attlens.report.viewerdata), on the
    timeline's frame. ``clock``: the dispatch's ClockInfo (analysis.clock);
    ``hits``: the executions per pc when known (the analysis' sums);
    ``panels``: which of the two (the report makes them on two processes)."""
    from attlens.report import viewerdata as vd

    if d.waves.count == 0:
        return {k: None for k in panels}
    _, begin, end, t0, t1, width, _ = _frame(d, clock)
    out = {}
    if "scope" in panels:
        out["scope"] = vd.scope(d, clock.se_offsets_cycles or {}, t0, t1, width, hits)
    if "wave_detail" in panels:
        out["wave_detail"] = vd.wave_detail(d, vd.detail_waves(begin, end))
    return out


def headline(result) -> dict:
    """The headline numbers (same values as the JSON analysis)."""
    b = result.breakdown
    o = result.occupancy
    cycles = b.total_latency + b.total_idle
    rec = result.dispatch.stall_recorded  # False (rocprofv2): stall figures unavailable (null), never 0
    return {
        "total_cycles": cycles,
        "latency": b.total_latency,
        "stall": b.total_stall if rec else None,
        "idle": b.total_idle,
        "issue": b.total_issue if rec else None,
        "stall_share": (b.total_stall / b.total_latency if b.total_latency else None) if rec else None,
        "hidden_share": None if result.hidden is None else round(result.hidden.hidden_share, 6),
        "theoretical_waves_per_simd": o.theoretical_waves_per_simd,
        "limiters": o.limiters,
        "observed_max_waves_per_simd": o.observed_max_waves_per_simd_traced_cu,
    }


# ---------------------------------------------------------------------------
# pages
# ---------------------------------------------------------------------------


def _fill(template: str, values: dict[str, str]) -> str:
    """Replace every ``{{NAME}}`` marker in one pass: text inserted for one
    marker is never searched for another (trace text may contain ``{{...}}``)."""
    return _MARKER.sub(lambda m: values[m.group(1)], template)


# The page's script: one function scope written in parts (report.js opens
# it, report_init.js closes it); joined here in this order.
REPORT_SCRIPTS = ("report.js", "report_code.js", "report_hotspots.js", "report_timeline.js", "report_init.js")


def report_script() -> str:
    return "\n".join(_template(name) for name in REPORT_SCRIPTS)


def render_html_text(result, plan, waves, pmc=None, parts: dict | None = None) -> str:
    data = build_report_data(result, plan, waves, pmc, parts=parts)
    script = report_script()
    if "</script" in script.lower():  # pragma: no cover - template invariant
        raise ValueError("the report's script must not contain </script")
    kernel = result.dispatch.kernel_name or "(unnamed kernel)"
    return _fill(
        _template("report.html"),
        {
            "TITLE": html.escape(f"attlens report — {kernel}", quote=True),
            "CSP": html.escape(_csp(script), quote=True),
            "STYLE": _template("report.css"),
            "SCRIPT": script,
            "DATA": json_for_script(data),
        },
    )


def render_html(result, plan, waves, out_path, pmc=None, parts: dict | None = None) -> int:
    """Write the self-contained HTML report of one capture atomically;
    returns its size in bytes.

    ``result``: :func:`attlens.analyze`; ``plan``: :func:`attlens.analysis.plan.make_plan` (or its ``to_dict()``);
    ``waves``: :func:`attlens.analysis.waves.analyze_waves`; ``pmc``: optional
    ``PmcResult`` (or a list of them, or an ``attlens.pmc`` dict) for the L2/HBM block."""
    return write_atomic(out_path, render_html_text(result, plan, waves, pmc, parts))


def index_entry(result, plan, href: str) -> dict:
    """One row of :func:`render_index`: headline numbers and top finding of a
    capture whose report is at ``href`` (relative to the index page)."""
    d = result.dispatch
    b = result.breakdown
    o = result.occupancy
    top_cls = max(((c, v) for c, v in b.by_class_stall.items() if v), key=lambda kv: kv[1], default=None)
    f = plan.findings[0] if plan.findings else None
    return {
        "href": href,
        "kernel": d.kernel_name,
        "path": str(d.path),
        "dispatch_id": d.resources.dispatch_id,
        "target": d.arch.target,
        "waves": d.waves.count,
        "total_cycles": b.total_latency + b.total_idle,
        "latency": b.total_latency,
        "stall": b.total_stall if d.stall_recorded else None,
        "stall_share": (b.total_stall / b.total_latency if b.total_latency else None) if d.stall_recorded else None,
        "top_class": None if top_cls is None else top_cls[0],
        "top_class_share": None if top_cls is None or not b.total_stall else top_cls[1] / b.total_stall,
        "occupancy_theoretical": o.theoretical_waves_per_simd,
        "occupancy_limiters": o.limiters,
        "occupancy_observed": o.observed_max_waves_per_simd_traced_cu,
        "top_finding": None
        if f is None
        else {"severity": f.severity, "title": f.title, "rule": f.rule, "share": f.share_of_cycles if f.kind == "performance" else None,
              "predicted_text": predicted_label(f)},
        "findings": len(plan.findings),
        "warnings": len(result.warnings),
    }


def _safe_href(href: str) -> str:
    """A relative link (quoted per path segment); anything with a scheme or
    an absolute path is made a file-relative path."""
    from urllib.parse import quote

    href = str(href).replace("\\", "/")
    return "/".join(quote(seg, safe="") for seg in href.split("/") if seg not in ("", "."))


def render_index_text(entries, title: str = "attlens reports") -> str:
    e = html.escape
    rows = []
    for i, x in enumerate(entries, 1):
        if x.get("error"):
            rows.append(
                f'<tr class="err"><td>{i}</td><td colspan="8">{e(str(x.get("path", "")))}</td><td>{e(str(x["error"]))}</td></tr>'
            )
            continue
        f = x.get("top_finding")
        finding = "no rule fired" if not f else f'<span class="sev sev-{e(f["severity"])}">{e(f["severity"])}</span> {e(f["title"])} <code>[{e(f["rule"])}]</code>' + (
            f' — {fmt_pct(f["share"])} of traced wave-cycles' if f.get("share") is not None else "") + (
            f'<div class="predicted">{e(f["predicted_text"])}</div>' if f.get("predicted_text") else "")
        occ = "n/a" if x.get("occupancy_theoretical") is None else f'{x["occupancy_theoretical"]} ({e(", ".join(x.get("occupancy_limiters") or []))})'
        top = "-" if not x.get("top_class") else f'{e(x["top_class"])} {fmt_pct(x.get("top_class_share"))}'
        rows.append(
            "<tr>"
            f"<td>{i}</td>"
            f'<td><a class="report-link" href="{e(_safe_href(x["href"]), quote=True)}">{e(x["kernel"] or "(unnamed kernel)")}</a>'
            f'<div class="path">{e(x["path"])}</div></td>'
            f'<td>{e(x.get("target") or "unknown")}</td>'
            f'<td class="num">{fmt_int(x.get("waves"))}</td>'
            f'<td class="num">{fmt_int(x.get("total_cycles"))}</td>'
            f'<td class="num">{fmt_int(x.get("stall"))}</td>'
            f'<td class="num">{fmt_pct(x.get("stall_share"))}</td>'
            f"<td>{top}</td>"
            f'<td class="num">{occ} / {fmt_int(x.get("occupancy_observed"))}</td>'
            f"<td>{finding}</td>"
            "</tr>"
        )
    return _fill(
        _template("index.html"),
        {
            "CSP": e(_csp(None), quote=True),
            "STYLE": _template("report.css"),
            "VERSION": e(__version__),
            "COUNT": str(len(entries)),
            "TITLE": e(title),
            "ROWS": "\n".join(rows),
        },
    )


def render_index(entries, out_path, title: str = "attlens reports") -> int:
    """Write the index page of several captures atomically; ``entries`` are
    :func:`index_entry` dicts (or ``{"path", "error"}`` for a capture that
    could not be read). Returns its size in bytes."""
    return write_atomic(out_path, render_index_text(entries, title))


# ---------------------------------------------------------------------------
# diff page
# ---------------------------------------------------------------------------



def _fmt_cycles(x, signed: bool = False) -> str:
    """Cycles per wave: whole cycles, one decimal below 10 (so a small change
    is not shown as ``-0``)."""
    if x is None:
        return "n/a"
    nd = 1 if 0 < abs(x) < 9.95 else 0
    return f"{x:+,.{nd}f}" if signed else f"{x:,.{nd}f}"


def _fmt_change(x, signed: bool = True) -> str:
    return "n/a" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def _delta_class(x) -> str:
    return "" if not x else ("delta-worse" if x > 0 else "delta-better")


def _bars_svg(rows: list[tuple[str, float, str]], title: str, width: int = 900) -> str:
    """A diverging horizontal bar chart (inline SVG, no script): one row per
    ``(label, delta, value text)``; slower (more cycles) to the right in red,
    faster to the left in green, scaled to the largest change; labels on the
    left, values in a column on the right."""
    from html import escape as h

    if not rows:
        return ""
    row_h, label_w, value_w, pad = 22, 300, 190, 6
    half = (width - label_w - value_w) // 2 - 4
    mid = label_w + half + 4
    top = max(abs(d) for _, d, _ in rows) or 1.0
    height = row_h * len(rows) + 2 * pad
    out = [f'<svg class="chart" role="img" aria-label="{h(title, quote=True)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{h(title)}</title>",
           f'<line class="axis" x1="{mid}" y1="0" x2="{mid}" y2="{height}"/>']
    for i, (label, delta, text) in enumerate(rows):
        y = pad + i * row_h
        w = max(round(half * abs(delta) / top), 1 if delta else 0)
        short = label if len(label) <= 40 else "…" + label[-39:]
        out.append(f'<g><title>{h(label)}: {h(text)}</title>'
                   f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{h(short)}</text>'
                   f'<rect class="{"worse" if delta > 0 else "better"}" x="{mid if delta >= 0 else mid - w}" y="{y + 3}" width="{w}" height="{row_h - 6}" rx="2"/>'
                   f'<text x="{width - 4}" y="{y + 15}" text-anchor="end">{h(text)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _html_table(head: list[tuple[str, bool]], rows: list[list[str]], table_id: str) -> str:
    """``head``: (label, numeric); cells are already-escaped HTML."""
    from html import escape as h

    ths = "".join(f'<th class="num">{h(x)}</th>' if num else f"<th>{h(x)}</th>" for x, num in head)
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if num else f"<td>{c}</td>" for c, (_, num) in zip(r, head)) + "</tr>" for r in rows)
    return f'<table class="data" id="{table_id}"><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>'


def diff_to_html(res, top: int = 30) -> str:
    """A self-contained HTML page of a diff, in the look of the HTML report
    (its stylesheet and navigation): verdict cards, charts of the per-class
    and per-line change (inline SVG), tables with percentages, the
    instruction sites matched / moved / added / removed. No script: the
    Content-Security-Policy allows none; every trace string is escaped."""
    from html import escape as h

    v = res.verdict
    st = res.site_totals
    b, a = res.before, res.after
    code = lambda s: f"<code>{h(str(s))}</code>"  # noqa: E731
    parts = ['<section id="header">', f'<h1>Diff — <span id="kernel-name">{h(b.kernel)}</span></h1>', '<dl class="facts">']
    for label, side in (("before", b), ("after", a)):
        parts.append(f"<dt>{label}</dt><dd>{code(side.label)} — {h(side.target or 'unknown target')}, {side.waves:,} traced waves</dd>")
    parts.append(f"<dt>normalization</dt><dd>{h(res.normalization)}</dd></dl>")
    if res.comparability:
        parts.append('<ul class="warnings" id="comparability">' + "".join(
            f"<li>{h(c['field'])} differs: {code(c['before'])} → {code(c['after'])}" + (" (compared with --force)" if c["blocking"] else "") + "</li>"
            for c in res.comparability) + "</ul>")
    from attlens.analysis.diff import side_warnings, stall_unrecorded_note

    warns = side_warnings(b, a)  # a capture partly read: what analyze says about it
    if warns:
        parts.append('<ul class="warnings" id="input-warnings">' + "".join(f"<li>{h(w)}</li>" for w in warns) + "</ul>")
    parts.append("</section>")

    rel = v["relative_change"]
    floor = v["noise_floor"]
    sig = "noise floor unknown (give --noise-floor PCT or --noise A B)" if v["significant"] is None else (
        f"beyond the noise floor of {_fmt_change(floor, False)}" if v["significant"] else f"within the noise floor of {_fmt_change(floor, False)}")
    parts += ['<section id="verdict"><h2>Verdict</h2>', f'<p id="verdict-summary"><b>{h(v["summary"])}</b> — {h(sig)}.</p>', '<div class="cards">',
              f'<div class="card"><div class="v" id="lat-before">{_fmt_cycles(v["latency_per_wave_before"])}</div><div class="l">latency cycles per wave, before</div></div>',
              f'<div class="card"><div class="v" id="lat-after">{_fmt_cycles(v["latency_per_wave_after"])}</div><div class="l">latency cycles per wave, after</div></div>',
              f'<div class="card"><div class="v {_delta_class(rel)}" id="lat-change">{_fmt_change(rel)}</div><div class="l">change</div></div>',
              f'<div class="card"><div class="v">{_fmt_cycles(b.total_stall / max(b.waves, 1) if b.stall_recorded else None)} → '
              f'{_fmt_cycles(a.total_stall / max(a.waves, 1) if a.stall_recorded else None)}</div><div class="l">instruction stall cycles per wave</div></div>',
              "</div>"]
    if v["class_moves"]:
        parts.append("<ul>" + "".join(f"<li>{h(m)}</li>" for m in v["class_moves"][:5]) + "</ul>")
    parts.append("</section>")

    # a side without stall cycles (rocprofv2): no stall delta to draw (the warnings say why)
    classes = [c for c in res.classes if c["stall_before"] or c["stall_after"]][:top] if res.stall_compared else []
    parts += ['<section id="classes"><h2>Per class (instruction stall cycles per wave)</h2>',
              "" if res.stall_compared else f'<p id="stall-unrecorded">{h(stall_unrecorded_note(b, a))}.</p>',
              _bars_svg([(c["class"], c["stall_delta"], f"{_fmt_cycles(c['stall_delta'], True)} ({_fmt_change(c['stall_relative'])})") for c in classes], "stall change per class"),
              _html_table([("class", False), ("before", True), ("after", True), ("delta", True), ("change", True), ("share before", True), ("share after", True)],
                          [[code(c["class"]), _fmt_cycles(c["stall_before"]), _fmt_cycles(c["stall_after"]), f'<span class="{_delta_class(c["stall_delta"])}">{_fmt_cycles(c["stall_delta"], True)}</span>',
                            _fmt_change(c["stall_relative"]), _fmt_change(c["stall_before"] / (b.total_stall / max(b.waves, 1)) if b.total_stall else None, False),
                            _fmt_change(c["stall_after"] / (a.total_stall / max(a.waves, 1)) if a.total_stall else None, False)] for c in classes], "classes-table"),
              "</section>"]

    lines = [ln for ln in res.lines if ln.delta][:top]
    parts += ['<section id="lines"><h2>Per source line (latency cycles per wave), largest changes</h2>',
              _bars_svg([(os.path.basename(ln.line) if ln.line != "(no source)" else ln.line, ln.delta,
                          _fmt_cycles(ln.delta, True) + (f" ({_fmt_change(ln.relative)})" if ln.relative is not None else " (new)")) for ln in lines],
                        "latency change per source line"),
              _html_table([("line", False), ("before", True), ("after", True), ("delta", True), ("change", True), ("dominant class", False)],
                          [[code(ln.line) + (f'<div class="muted">was {code(ln.before_line)}</div>' if ln.before_line and ln.before_line != ln.line else ""),
                            _fmt_cycles(ln.latency_before), _fmt_cycles(ln.latency_after), f'<span class="{_delta_class(ln.delta)}">{_fmt_cycles(ln.delta, True)}</span>',
                            _fmt_change(ln.relative), h(f"{ln.dominant_before or '-'} → {ln.dominant_after or '-'}")] for ln in lines], "lines-table"),
              "</section>"]

    total_sites = sum(st[k] for k in ("matched", "moved", "added", "removed")) or 1
    segs = "".join(f'<div class="seg-{k}" style="width:{100 * st[k] / total_sites:.3f}%" title="{k} {st[k]:,}"></div>' for k in ("matched", "moved", "added", "removed") if st[k])
    legend = "".join(f'<span><span class="swatch seg-{k}"></span>{k} <b id="sites-{k}">{st[k]:,}</b> ({100 * st[k] / total_sites:.1f}%)</span>'
                     for k in ("matched", "moved", "added", "removed"))
    moved = res.moved_lines()
    changed = res.changed_sites()
    parts += ['<section id="sites"><h2>Instruction sites</h2>',
              "<p>Each executed instruction of one side is matched to the other by aligning mnemonics on its source line; "
              "a second pass pairs the rest across the kernel (<i>moved</i>: the same instruction now on another line).</p>",
              f'<div class="hbar">{segs}</div><div class="legend">{legend}</div>']
    if moved:
        parts += ["<h3>Moved between lines</h3>", _html_table(
            [("from", False), ("to", False), ("sites", True), ("latency after", True)],
            [[code(m["from"]), code(m["to"]), f"{m['sites']:,}", f"{m['latency_after']:,}"] for m in moved[:top]], "moved-table")]
    if changed:
        parts += ["<h3>Added and removed</h3>", _html_table(
            [("line", False), ("kind", False), ("instruction", False), ("latency", True), ("stall", True)],
            [[code(s.line), h(s.kind), code((s.after or s.before).isa), f"{(s.after or s.before).latency:,}", f"{(s.after or s.before).stall:,}"]
             for s in changed[:top]], "changed-table")]
    parts.append("</section>")
    base = f"attlens diff {shlex.quote(b.label)} {shlex.quote(a.label)}"
    cmds = [base, base + " --json > diff.json", base + " --format md -o DIFF.md"]
    parts += ['<section id="reproduce"><h2>Reproduce</h2>', f'<pre class="cmds">{h(chr(10).join(cmds))}</pre>',
              f'<p class="muted">Generated by attlens {h(__version__)}; `attlens diff --json` (schema attlens.diff) has every number of this page.</p></section>']
    return _fill(_template("diff.html"), {"CSP": h(_csp(None), quote=True), "TITLE": h(f"attlens diff — {b.kernel}", quote=True),
                                          "STYLE": _template("report.css"), "BODY": "\n".join(parts)})


# ---------------------------------------------------------------------------
# convenience for the CLI
# ---------------------------------------------------------------------------


def report_name(result, used: set[str] | None = None) -> str:
    """A file name for a capture's report: ``<kernel>-d<dispatch>.html``,
    made of safe characters and unique within ``used``."""
    d = result.dispatch
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", d.kernel_name or "kernel")[:60].strip("._") or "kernel"
    did = d.resources.dispatch_id
    name = f"{base}-d{did}" if did is not None else base
    cand, k = name + ".html", 2
    while used is not None and cand in used:
        cand, k = f"{name}-{k}.html", k + 1
    if used is not None:
        used.add(cand)
    return cand


def _attach(pmc, result, force: bool, several: bool):
    """Counters read with ``--pmc`` (a PmcCounters) checked against one
    capture: ``(PmcAttachment, None)``, or ``(None, why)`` for a capture of an
    index they do not match; anything else is passed through as given."""
    if pmc is None:
        return None, None  # (without importing the counters' modules: the replay's child forks after this)
    from attlens.analysis.pmc import PmcCounters
    from attlens.analysis.pmc_attach import attach_pmc
    from attlens.errors import Incomparable

    if not isinstance(pmc, PmcCounters):
        return pmc, None
    d = result.dispatch
    try:
        return attach_pmc(pmc, d.kernel_name, d.arch.target, d.resources.dispatch_id, force=force), None
    except Incomparable as exc:
        if several:
            return None, exc.message
        raise


def _import_later_steps() -> None:
    """Import the modules of the report's steps after the load (the plan and
    its rules, the wave analyses, the replay, the viewer panels): run when
    the load waits for the parse child's last parts
    (attlens.forked.while_waiting), else just before the replay's child
    forks: either way the two processes do not both import them. Also what
    their first calls import: numpy.ma (np.unique, np.median: 10 ms on
    NumPy 2.4), heapq (the replay's slots, Counter.most_common), the rules'
    helpers, the PC samples' join (the analysis imports it even without samples)."""
    import heapq  # noqa: F401

    import numpy.ma  # noqa: F401

    from attlens.analysis import lanes, pcsampling, plan, verdict, waves  # noqa: F401
    from attlens.analysis.registry import load_rules
    from attlens.analysis.replay import calibrate, findings, predict  # noqa: F401
    from attlens.report import viewerdata  # noqa: F401

    load_rules()


def _replay_ahead(result) -> None:
    """Build the replay engine the plan's predictions use (kept on ``result``)
    before the plan exists: it needs only the analysis (a forked child starts
    it while this process analyzes the waves; attlens.forked.relay)."""
    from attlens.analysis.plan import cycle_collector_paused, replays_with_plan
    from attlens.analysis.replay.calibrate import engine_of

    if not replays_with_plan(result):
        return
    try:
        with cycle_collector_paused():
            engine_of(result)
    except Exception:  # the predictions meet it again and say why
        pass


# The page's viewer panels in their order, and the ones the replay's child makes: none, its
# replay and predictions already match this side's wave analyses, rules and panels (after issue
# 24's fifth round the single-wave records made here shortened softmax's report by 30-40 ms)
VIEWER_PANELS = ("scope", "wave_detail")
CHILD_PANELS = ()
# Without a replay (too many records, no stalls recorded) the child has no replay to run: it makes the
# timeline and both panels, this side the wave analyses and the plan (softmax x30: 8 s and 10 s, against
# 0.06 s and 17 s when the child made the single-wave records only)
CHILD_PARTS_NO_REPLAY = ("timeline", "scope", "wave_detail")


def _child_parts(result) -> tuple:
    """The parts of the page the child makes (:func:`_child_ahead`)."""
    from attlens.analysis.plan import replays_with_plan

    return CHILD_PANELS if replays_with_plan(result) else CHILD_PARTS_NO_REPLAY


def _child_ahead(result) -> dict:
    """What the child makes before it gets the plan's findings: the replay
    engine (kept on ``result``) and the parts of :func:`_child_parts` (returned).
    The timeline needs the wave states and the clock only, not the whole
    wave analysis this side makes meanwhile."""
    from types import SimpleNamespace

    from attlens.analysis.clock import compute_clock
    from attlens.analysis.wavestates import compute_wave_states

    _replay_ahead(result)
    d, parts = result.dispatch, _child_parts(result)
    clock = compute_clock(d)
    out = viewer_panels(d, clock, result.sums.hit, panels=tuple(p for p in VIEWER_PANELS if p in parts))
    if "timeline" in parts:
        # not stored from here: this side's wave analysis stores the same states meanwhile (two
        # processes writing one record would leave one data file behind)
        out["timeline"] = _timeline(result, SimpleNamespace(clock=clock, states=compute_wave_states(d, store=False)))
    return out


def _predictions(result, message) -> list:
    """The predictions of a plan's findings, from what :func:`_page_side` sends: (findings, dispatch facts, bandwidth)."""
    from types import SimpleNamespace

    from attlens.analysis.plan import cycle_collector_paused, predictions

    findings, facts, bandwidth = message
    with cycle_collector_paused():
        return predictions(SimpleNamespace(result=result, findings=findings, dispatch_facts=facts, bandwidth=bandwidth))


def _page_side(result, pmc, send):
    """The wave analyses, the plan's rules (their findings sent to the child
    that replays them) and the page's parts but the child's (:func:`_child_parts`):
    ``(waves, plan, parts)``, the plan still without predictions.
    Counters attached to the capture give the bandwidth rule its bytes (not
    when attached only by --force over a mismatch: see bandwidth._pmc_for)."""
    from attlens.analysis.plan import make_plan
    from attlens.analysis.waves import analyze_waves

    waves = analyze_waves(result)
    plan = make_plan(result, waves=waves, pmc=pmc, predict=False)
    send((plan.findings, plan.dispatch_facts, plan.bandwidth))
    theirs = _child_parts(result)
    mine = tuple(p for p in VIEWER_PANELS if p not in theirs)
    made = viewer_panels(result.dispatch, waves.clock, result.sums.hit, panels=mine)
    panels = {p: made.get(p) for p in VIEWER_PANELS}  # the child's as None, in the page's order
    return waves, plan, page_parts(result, waves, pmc, panels=panels, timeline="timeline" not in theirs)


def _with_panels(parts: dict, panels: dict) -> dict:
    """The page's parts with the ones the child made put in their places
    (:func:`page_parts` keeps a place for each: the page's JSON keeps its key order)."""
    return {k: panels[k] if k in panels else v for k, v in parts.items()}


def render_captures(dirs, out_path, rocprof_dir=None, pmc=None, force: bool = False, progress=None, log: list | None = None,
                    analyze_kw: dict | None = None) -> list[Path]:
    """Load, analyze and report capture directories. One directory: its
    report at ``out_path``. Several: each report beside ``out_path`` (named by
    :func:`report_name`) and the index page at ``out_path``. A capture that
    fails to load is listed in the index with its error (single capture: the
    error is raised). Returns the files written, the index last.

    ``pmc``: a :class:`~attlens.analysis.pmc.PmcCounters` is checked
    against each capture (kernel, target, dispatch): one capture that does
    not match raises :class:`~attlens.errors.Incomparable` unless ``force``;
    in an index, a capture that does not match gets no counters (its log
    entry says why). ``progress``: ``callback(stage, done, total)``.
    ``log``: a list that receives one dict per capture (``path``, ``kernel``,
    ``dispatch_id``, ``target``, ``report``, ``error``, ``partial``, ``pmc``: the
    attached counters' label or None, ``pmc_refused``: why not, or None,
    ``warnings``: the analysis' warnings). ``analyze_kw``: extra arguments of
    :func:`attlens.analysis.analyze.analyze` (the PC samples to join)."""
    from attlens.analysis.analyze import analyze
    from attlens.errors import AttlensError
    from attlens.forked import relay, while_waiting
    from attlens.model.loader import load

    step = progress or (lambda stage, done=None, total=None: None)
    dirs = list(dirs)
    out = Path(out_path)
    several = len(dirs) > 1
    written, entries, used = [], [], {out.name}
    for p in dirs:
        try:
            with while_waiting(_import_later_steps):
                d = load(p, rocprof_dir=rocprof_dir, progress=step, samples="pc_sampling" not in (analyze_kw or {}))
        except AttlensError as exc:
            if not several:
                raise
            entries.append({"path": str(p), "error": exc.message})
            if log is not None:
                log.append({"path": str(p), "kernel": None, "dispatch_id": None, "target": None, "report": None, "error": exc.message,
                            "partial": None, "pmc": None, "pmc_refused": None, "warnings": []})
            continue
        step(f"analyzing {Path(p).name}")
        r = analyze(d, **(analyze_kw or {}))
        attached, refused = _attach(pmc, r, force, several)
        # the replay's engine on the other core from here (it needs only the analysis), its predictions
        # once this one has run the rules; meanwhile this one lays out the rest of the page. With a
        # replay the digest first, so what the child stores reaches it (a child's kept results would
        # die with it); without one the child stores nothing, and the digest's writer goes on beside
        # the two (softmax x30: this side waited 0.7 s for it here, one core idle)
        from attlens.analysis.plan import replays_with_plan
        from attlens.cache import behind

        if replays_with_plan(r):
            behind.settle()
        _import_later_steps()  # done already if the load waited for its parse child
        (preds, panels), (waves, plan, parts) = relay(lambda: _child_ahead(r), lambda panels, message: (_predictions(r, message), panels),
                                                      lambda send: _page_side(r, attached, send))
        parts = _with_panels(parts, panels)
        for f, p in zip(plan.findings, preds):
            f.predicted = p
        plan_doc, entry = plan.to_dict(), index_entry(r, plan, "")
        target = out if not several else out.parent / report_name(r, used)
        step(f"writing {target.name}")
        render_html(r, plan_doc, waves, target, pmc=attached, parts=parts)
        written.append(target)
        if several:
            entries.append({**entry, "href": target.name})
        if log is not None:
            label = attached.label() if hasattr(attached, "label") else None
            log.append({"path": str(d.path), "kernel": d.kernel_name, "dispatch_id": d.resources.dispatch_id, "target": d.arch.target,
                        "report": str(target), "error": None, "partial": bool(d.partial), "pmc": label, "pmc_refused": refused,
                        "warnings": list(r.warnings)})
    if several:
        render_index(entries, out)
        written.append(out)
    return written
