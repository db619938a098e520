"""``attlens.load(path)``: find and read a decoded ATT directory completely."""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture, EmptyCapture, InputNotFound
from attlens.io.code_json import read_code_json
from attlens.io.filenames_json import read_filenames_json
from attlens.io.occupancy_json import read_occupancy_json
from attlens.io.realtime_json import read_realtime_json
from attlens.io.snapshots_json import read_snapshots_json
from attlens.io.wave_files import read_wave_files
from attlens.model.dispatch import (
    Dispatch,
    Records,
    StaticCode,
    Timeline,
    Waves,
    parse_source,
)
from attlens.model.isa import mnemonic
from attlens.model.layouts import LAYOUT_V2, capture_layout, stall_recorded
from attlens.model.locate import CaptureSummary, find_captures, resolve_capture_dirs, summarize_capture  # noqa: F401  (re-exported)

_DIR_NAME = re.compile(r"ui_output_agent_(\d+)_dispatch_(\d+)")


@contextmanager
def _no_gc():
    # Parsing creates millions of small containers; the cyclic collector would
    # run hundreds of times for nothing (none of them form cycles).
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


IDLE_BATCH_RECORDS = 1 << 18  # records per step of the idle computation (bounds its temporaries)


def segmented_idle(time, duration, wave_of, begins, starts, batch: int = IDLE_BATCH_RECORDS):
    """Idle before each record, per wave: gap from the running maximum of the
    previous records' ends (starting at the wave's begin), clamped at 0
    (the writer's rule, att-format.md §2.2). Whole waves at a time, about
    ``batch`` records per step."""
    n = len(time)
    out = np.zeros(n, dtype=np.int64)
    if n == 0:
        return out
    stops = np.r_[starts[1:], n].astype(np.int64)
    starts = np.asarray(starts, dtype=np.int64)
    w = 0
    n_w = len(starts)
    while w < n_w:
        a = int(starts[w])
        # whole waves up to about `batch` records (at least one wave)
        v = int(np.searchsorted(stops, a + batch, side="right"))
        v = max(v, w + 1)
        b = int(stops[v - 1])
        if b > a:
            out[a:b] = _idle_block(time[a:b], duration[a:b], wave_of[a:b] - w, begins[w:v], starts[w:v] - a)
        w = v
    return out


_segmented_idle = segmented_idle  # the name the property tests use


def _idle_block(time, duration, wave_of, begins, starts):
    n = len(time)
    time = time.astype(np.int64, copy=False)
    ends = time + duration
    lo = min(int(time.min()), int(begins.min()))
    span = int(max(int(ends.max()), int(begins.max())) - lo + 1)
    if span * (len(begins) + 1) >= 2**62:
        # Values too far apart to shift every wave into its own range: per wave.
        out = np.empty(n, dtype=np.int64)
        stops = np.r_[starts[1:], n]
        for w, (a, b) in enumerate(zip(starts.tolist(), stops.tolist())):
            if a < b:
                prev = np.maximum.accumulate(np.r_[begins[w], ends[a : b - 1]])
                out[a:b] = np.maximum(time[a:b] - np.maximum(prev, begins[w]), 0)
        return out
    # One running maximum over all records, each wave shifted above the last.
    shift = wave_of.astype(np.int64) * span - lo
    ends += shift
    cm = np.maximum.accumulate(ends)
    del ends
    prev = np.empty(n, dtype=np.int64)
    prev[1:] = cm[:-1]
    del cm
    begin_shifted = begins[wave_of] + shift
    first = starts[starts < n]
    prev[first] = begin_shifted[first]
    np.maximum(prev, begin_shifted, out=prev)
    del begin_shifted
    shift += time
    shift -= prev
    return np.maximum(shift, 0, out=shift)


def _build_static(code) -> StaticCode:
    from attlens.analysis.taxonomy import classify_mnemonic

    mn = [mnemonic(t) if not lab else "" for t, lab in zip(code.isa, code.is_label)]
    cls = [classify_mnemonic(m) if m else "" for m in mn]
    own, chains = [], []
    for raw in code.source:
        o, ch = parse_source(raw)
        own.append(o)
        chains.append(ch)
    return StaticCode(mnemonic=mn, cls=cls, own_source=own, inline_chain=chains)


@dataclass
class CaptureData:
    """Everything read from the capture directory alone (what a digest holds);
    the target and resources, which also depend on files beside it, are
    resolved on every load. The capture's layout generation (docs/formats.md)
    follows from ``code``, ``index`` and ``records`` (:func:`capture_layout`)."""

    code: object  # CodeListing
    index: object  # FilenamesIndex
    waves: Waves
    records: Records
    timeline: Timeline
    occupancy: object | None
    realtime: object | None
    snapshots: dict
    warnings: list[str]  # warnings about the capture's own files, in order
    skipped_waves: bool  # some wave file was unusable
    # per-pc partial results the parse processes computed on their parts
    # (:func:`_part_pass`, merged by :func:`_prepared`); empty when read from a digest
    prepared: dict = field(default_factory=dict)
    # the target and resources (:func:`_resolve_context`) and the per-pc
    # static facts, made while the wave files were parsed; None when read from a digest
    context: tuple | None = None
    static: StaticCode | None = None
    # what each parse process computed on its parts (:func:`_part_pass`; a list of its
    # parts' results per process), merged into ``prepared`` by :func:`_prepared` once
    # the digest's writer has started
    parts: list = field(default_factory=list)


def load(path: str | Path, rocprof_dir: str | Path | None = None, cache=None, progress=None, hidden: bool = True,
         samples: bool = True) -> Dispatch:
    """Load one decoded ATT directory (``ui_output_agent_*_dispatch_*``).

    ``progress``: optional ``callback(stage, done, total)`` told about the
    wave files (the CLI draws it on a terminal, :func:`attlens.report.console.progress`).

    Raises an :class:`attlens.errors.AttlensError` subclass for unusable
    input; recoverable problems (one unreadable wave file, a damaged optional
    file) become ``dispatch.warnings`` and set ``dispatch.partial``.

    ``cache``: None uses the digest store in the user cache directory
    (:mod:`attlens.cache`), False reads the capture afresh, a path names
    another cache directory. A digest gives the same dispatch as a fresh read.

    ``hidden``: when the capture is parsed, the parse processes also compute
    the hidden-latency model's per-pc cycles on their halves (both cores);
    False when no hidden latency will be asked for (it is then computed on
    first use, as always).

    ``samples``: when the capture is parsed, the PC-sample files beside it
    that the analysis looks for (:func:`attlens.model.pcsampling.find_samples`)
    are read meanwhile; False when the caller will not look for them.
    """
    caps = resolve_capture_dirs(path)
    d = caps[0]
    from attlens.cache import inside_capture, note, open_cache

    store = open_cache(cache)
    if store is not None and inside_capture(store.root, d):
        note(f"{d}: the cache directory {store.root} is inside the capture; no digest is stored there (a capture is only read)")
        store = None
    digest = data = None
    if store is not None:
        from attlens.cache.capture import digest_of, read_digest

        try:
            key = digest_of(d)
        except OSError:
            store = None
        else:
            digest = store.open(d, key)
            if digest is not None:
                data = read_digest(digest, lambda: read_capture(d, progress, hidden, rocprof_dir, samples))
    if data is None:
        data = read_capture(d, progress, hidden, rocprof_dir, samples)
        if store is not None:
            from attlens.cache import behind

            digest = behind.write(store, d, key, data)  # by a forked child while the command goes on, within behind.scope()
    return _assemble(d, data, rocprof_dir, digest)


def read_capture(d: Path, progress=None, hidden: bool = True, rocprof_dir=None, samples: bool = True) -> CaptureData:
    """Read every file of one capture directory (no cache); ``progress``,
    ``hidden`` and ``samples`` as in :func:`load`. While the wave files are
    parsed, the target and resources are resolved too (``rocprof_dir`` as in
    :func:`load`)."""
    warnings: list[str] = []

    index = read_filenames_json(d / "filenames.json")
    warnings.extend(f"{entry.filename}: {msg}" for entry, msg in index.refused)
    if index.pc_sampling and not index.waves:
        raise EmptyCapture(f"{d}: a PC-sampling directory, not a thread trace (no wave files)",
                           hint=f"attlens analyze {d} (or attlens pcsampling) shows its samples and stall reasons")
    code_path = d / "code.json"
    if index.waves and not index.readable:
        raise CorruptCapture(f"{d.name}: none of the {len(index.refused)} wave files is usable ({warnings[0]})")
    if not index.waves:
        raise EmptyCapture(
            f"{d.name}: no traced waves (an empty shell directory: no wave ran on the traced CU)",
            hint="widen --att-shader-engine-mask, change --att-target-cu, or launch more workgroups",
        )
    if not code_path.exists():  # a FIFO or device: refused by the reader, not "missing"
        raise CorruptCapture(f"{d.name}: filenames.json lists {len(index.waves)} waves but code.json is missing")
    code = read_code_json(code_path)
    n_pc = code.size
    if not code.labels:
        warnings.append("code.json: no kernel label row ('; <symbol>'): the kernel's name is unknown")
    layout = capture_layout(index, code)
    unlisted = _unlisted_wave_files(d, index)
    if unlisted:
        warnings.append(
            f"the folder holds {len(unlisted)} wave file(s) that filenames.json does not list (e.g. {unlisted[0]}): "
            f"only the {len(index.waves)} listed waves are read"
        )

    if progress is not None:
        progress(f"reading {len(index.waves):,} wave files of {d.name}", 0, len(index.waves))
    with _no_gc():
        table = read_wave_files(d, index.readable, n_pc=n_pc, valid_pc=code.instruction_mask,
                                per_part=_part_pass(code, hidden), fold=list, extra_columns={"idle": np.int64},
                                meanwhile=lambda: _side_work(d, rocprof_dir, code, index, samples))
    if progress is not None:
        progress(f"read {len(index.waves):,} wave files of {d.name}", len(index.waves), len(index.waves))
    for entry, msg in table.problems:
        warnings.append(f"{entry.filename}: {msg}; wave skipped")
    for entry, msg in table.notes:
        warnings.append(f"{entry.filename}: {msg}")
    n_kept = len(table.entries)
    if not n_kept:
        if table.problems:
            raise CorruptCapture(f"{d.name}: none of the {len(index.waves)} wave files is usable ({warnings[0]})")
        raise EmptyCapture(f"{d.name}: no traced waves")

    # Records of all waves back to back, wave by wave (the reader's order).
    counts = table.rec_count
    rec_stop = np.cumsum(counts)
    rec_start = rec_stop - counts
    tl_stop = np.cumsum(table.tl_count)
    wave_of = np.repeat(np.arange(n_kept, dtype=np.int32), counts)
    rc = table.records
    records = Records(
        time=rc["time"],
        category=rc["category"],
        stall=rc["stall"],
        duration=rc["duration"],
        pc=rc["pc"],
        wave=wave_of,
        idle=rc["idle"],  # filled by _part_pass in the parse processes
    )
    waves = Waves(
        se=np.array([e.se for e in table.entries], dtype=np.int32),
        simd=table.simd,
        slot=table.slot,
        instance=np.array([e.instance for e in table.entries], dtype=np.int32),
        cu=table.cu,
        begin=table.begin,
        end=table.end,
        rec_start=rec_start,
        rec_stop=rec_stop,
        tl_start=tl_stop - table.tl_count,
        tl_stop=tl_stop,
        filenames=[e.filename for e in table.entries],
        waitcnt_blob=table.waitcnt_blob,
        waitcnt_off=table.waitcnt_off,
    )
    timeline = Timeline(
        state=table.states["state"],
        duration=table.states["duration"],
        wave=np.repeat(np.arange(n_kept, dtype=np.int32), table.tl_count),
    )
    problems = table.problems

    (occupancy, realtime, snapshots, side_warnings), (context, static) = table.meanwhile
    warnings.extend(side_warnings)
    if occupancy is not None and (waves.cu < 0).all():
        warnings.extend(_cu_from_occupancy(waves, occupancy))
    warnings.extend(_stats_cross_check(d, code))
    warnings.extend(_prologue_note(code, records))
    if layout == LAYOUT_V2 and records.count and not records.stall.any():
        warnings.append(STALL_NOT_RECORDED)

    return CaptureData(code, index, waves, records, timeline, occupancy, realtime, snapshots, warnings, bool(problems),
                       {}, context, static, parts=table.derived)


STALL_NOT_RECORDED = (
    "the rocprofv2 ATT plugin records no stall cycles (every record's stall field is 0): stall figures are "
    "unavailable, not zero; latency (stall + issue together) and idle are measured"
)


def _unlisted_wave_files(d: Path, index) -> list[str]:
    """Wave files in the folder that filenames.json does not list (the
    rocprofv2 plugin may list fewer than it wrote)."""
    import os

    listed = {w.filename for w in index.waves}
    try:
        with os.scandir(d) as it:
            names = [e.name for e in it if _WAVE_FILE.fullmatch(e.name)]
    except OSError:
        return []
    return sorted(n for n in names if n not in listed)


_WAVE_FILE = re.compile(r"se\d+_sm\d+_sl\d+_wv\d+\.json")


def _cu_from_occupancy(waves: Waves, occupancy) -> list[str]:
    """Wave files without a CU (rocprofv2): each wave's CU is the CU of the
    occupancy start event on its SE, SIMD and slot at its begin time (to the
    events' resolution); a wave whose start matches several CUs takes the CU
    most unambiguous waves matched."""
    ev = occupancy.events  # se, time, cu, simd, slot, start, kernel_id
    res = max(int(occupancy.time_resolution), 1)
    starts = ev[ev[:, 5] == 1]
    index: dict[tuple, set] = {}
    for se, t, cu, simd, slot in starts[:, :5].tolist():
        index.setdefault((se, t, simd, slot), set()).add(cu)
    found = [index.get((int(se), int(b) // res * res, int(sm), int(sl)), set())
             for se, b, sm, sl in zip(waves.se, waves.begin, waves.simd, waves.slot)]
    sure = [next(iter(c)) for c in found if len(c) == 1]
    if not sure:
        return ["wave files carry no CU and no occupancy start event matches a wave: the traced CU is unknown"]
    common = max(set(sure), key=sure.count)
    cu = np.array([next(iter(c)) if len(c) == 1 else (common if common in c else -1) for c in found], dtype=np.int32)
    waves.cu[:] = cu
    unknown = int(np.count_nonzero(cu < 0))
    note = (f"wave files carry no CU: the CU of each wave comes from its occupancy.json start event "
            f"({len(sure)} of {waves.count} matched one CU")
    return [note + (f", {unknown} matched none" if unknown else "") + ")"]


# AMDGPU kernel-argument preloading: the first 256 bytes of the kernel are a
# compatibility prologue (load the arguments into SGPRs, wait, branch to entry
# + 256); firmware that preloads starts the waves at entry + 256 (docs/formats.md).
PRELOAD_PROLOGUE_BYTES = 256


def preload_prologue(code) -> tuple[int, int] | None:
    """(first pc, first pc after it) of a kernarg-preload prologue at the
    kernel's entry: only s_load / s_waitcnt / s_nop and an s_branch to entry
    + 256 in the first 256 bytes; None when the listing has no such prologue."""
    if not code.has_addresses:
        return None
    pcs = np.flatnonzero(code.instruction_mask)
    if not len(pcs):
        return None
    first = int(pcs[0])
    entry = int(code.vaddr[first])
    after = entry + PRELOAD_PROLOGUE_BYTES
    loads = branch = False
    for pc in pcs.tolist():
        va = int(code.vaddr[pc])
        if va >= after:
            return (first, pc) if loads and branch and va == after else None
        m = mnemonic(code.isa[pc])
        if m.startswith("s_load"):
            loads = True
        elif m == "s_branch":
            try:
                branch = va + 4 + 4 * int(code.isa[pc].split()[1], 0) == after
            except (IndexError, ValueError):
                return None
        elif m not in ("s_waitcnt", "s_nop"):
            return None
    return None


def _prologue_note(code, records) -> list[str]:
    span = preload_prologue(code)
    if span is None:
        return []
    a, b = span
    ran = bool(records.count) and bool(((records.pc >= a) & (records.pc < b)).any())
    if ran:
        return []
    return [f"pcs {a}-{b - 1} are the kernel-argument preload prologue ({PRELOAD_PROLOGUE_BYTES} bytes at the entry: load "
            f"the arguments, then branch to pc {b}); firmware that preloads arguments starts the waves at pc {b}, so they "
            "never run: not dead code"]


def _stats_cross_check(d: Path, code) -> list[str]:
    """The decoder's own stats table inside the capture (``att_output.csv``)
    against code.json: a warning when they differ or the table is unreadable."""
    from attlens.io.stats_csv import compare_stats, read_stats_csv

    p = d / "att_output.csv"
    if not p.exists() or not code.has_addresses:
        return []
    try:
        stats = read_stats_csv(p)
    except (CorruptCapture, InputNotFound) as exc:
        return [f"{exc}; the stats table is not used as a cross-check"]
    bad = {k: v for k, v in compare_stats(stats, code).items() if v}
    if not bad:
        return []
    return ["att_output.csv differs from code.json (" + ", ".join(f"{k}: {v} rows" for k, v in bad.items())
            + "); attlens reports the wave-file sums"]


def _side_work(d: Path, rocprof_dir, code, index, samples: bool):
    """What the parent process does first while the other already parses wave
    files (it then takes fewer of them): the optional files, then the target
    and resources, which need only them, the listing and the files beside,
    the per-pc static facts of the listing, and with ``samples`` the PC-sample
    files the analysis will look for."""
    side = _read_side_files(d)
    kernel_name, handle, dispatch_id = _context_keys(d, code)
    context = _context_now(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, side[0])
    if samples:
        from attlens.model.pcsampling import prefetch_samples

        prefetch_samples(d)
    return side, (context, _build_static(code))


def _context_keys(d: Path, code) -> tuple[str, int | None, int | None]:
    """The kernel's name (the listing's label) and the handle and dispatch id the folder's name gives."""
    m = _DIR_NAME.search(d.name)
    return (code.labels[0][1] if code.labels else ""), (int(m.group(1)) if m else None), (int(m.group(2)) if m else None)


def _context_now(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, occupancy) -> tuple:
    """(arch, resources, files used, warnings) resolved from the files."""
    from attlens.model.context import resolve_arch_and_resources

    added: list[str] = []
    arch, resources, used = resolve_arch_and_resources(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, added,
                                                       occupancy=occupancy)
    return arch, resources, used, added


def _read_side_files(d: Path):
    """(occupancy, realtime, snapshots, warnings) of the capture's optional
    files; the parent process reads them first while the other already parses
    wave files (it then takes fewer of them)."""
    warnings: list[str] = []
    occupancy = realtime = None
    snapshots: dict = {}
    for name, reader in (("occupancy.json", read_occupancy_json), ("realtime.json", read_realtime_json)):
        p = d / name
        if not p.exists():  # absent is fine; a FIFO, device or folder is refused by the reader (a warning)
            continue
        try:
            value = reader(p)
        except (CorruptCapture, InputNotFound) as exc:
            warnings.append(f"{exc}; ignored")
            continue
        warnings.extend(value.warnings)
        if name == "occupancy.json":
            occupancy = value
        else:
            realtime = value
    snap = d / "snapshots.json"
    if snap.exists():
        try:
            snapshots = read_snapshots_json(snap, warnings)
        except (CorruptCapture, InputNotFound) as exc:
            warnings.append(f"{exc}; ignored")
    return occupancy, realtime, snapshots, warnings


# The wait-counter simulation the parse processes run on their parts: the
# model of every Instinct target (model/archdata.py); a capture of another
# model simulates after the parse, as before (analysis.waitdeps.compute_wait_deps).
WAITDEPS_MODEL = "gfx9"
WAITDEPS_KEY = f"waitdeps-{WAITDEPS_MODEL}"


def _part_pass(code, hidden: bool):
    """What the parse processes compute on each part of the wave files as soon
    as they parsed it (io/wave_files.py ``per_part``): the idle column (in
    place), the per-pc sums of executions, latency, stall and idle, the gfx9
    wait-counter simulation, its wait/producer pairs and their class sums,
    and with ``hidden`` the hidden-latency model's per-pc cycles. All are
    sums or concatenations over waves (the hidden cycles over whole (SE,
    SIMD) scopes), so the parts add up exactly (:func:`_merge_parts`)."""
    from attlens.analysis.hidden import hidden_cycles, matrix_pcs, scope_keys
    from attlens.analysis.stalls import basic_pc_sums, wait_shares
    from attlens.analysis.waitattr import split_waits
    from attlens.analysis.waitdeps import part_wait_deps

    n_pc = code.size
    mnemonics = [mnemonic(t) if not lab else "" for t, lab in zip(code.isa, code.is_label)]
    is_matrix = matrix_pcs(mnemonics) if hidden else None
    tables: list = []  # per-pc tables of the wait simulation and its class sums, made once per process on its first part

    def run(table) -> dict:
        from types import SimpleNamespace

        counts = table.rec_count
        rec_stop = np.cumsum(counts)
        rec_start = rec_stop - counts
        rc = table.records
        wave_of = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
        rc["idle"][:] = segmented_idle(rc["time"], rc["duration"], wave_of, table.begin, rec_start)
        if not tables:
            tables.extend(_wait_tables(code, mnemonics))
        recs = SimpleNamespace(**rc)
        deps = part_wait_deps(code, tables[0], WAITDEPS_MODEL, rc["pc"], wave_of, rec_start)
        del wave_of
        pairs = split_waits(SimpleNamespace(records=recs), deps)
        out = {"n_rec": int(counts.sum()), "n_waves": len(counts), WAITDEPS_KEY: deps, "wait_pairs": pairs,
               "wait_shares": wait_shares(recs, pairs, tables[1], n_pc)}
        out["pc_basic"] = basic_pc_sums(recs, n_pc)
        if is_matrix is not None:
            se = np.array([e.se for e in table.entries], dtype=np.int32)
            waves = SimpleNamespace(se=se, simd=table.simd, begin=table.begin, rec_start=rec_start, rec_stop=rec_stop)
            out["hidden_acc"] = hidden_cycles(recs, waves, is_matrix)
            out["scopes"] = _distinct(scope_keys(se, table.simd))
        return out

    return run


def _prepared(data: CaptureData) -> dict:
    """``data.prepared``, with the parse processes' parts (a list of each
    process' part results) merged into it in one pass (:func:`_merge_parts`;
    the parts' wait results only when they cover every kept wave)."""
    if not data.parts:
        return data.prepared
    prepared = {**data.prepared, **_merge_parts([part for parts in data.parts for part in parts])}
    data.parts = []
    if (prepared.get("n_rec"), prepared.get("n_waves")) != (data.records.count, data.waves.count):
        for k in (WAITDEPS_KEY, "wait_pairs", "wait_shares"):
            prepared.pop(k, None)
    data.prepared = prepared
    return prepared


def _wait_tables(code, mnemonics: list[str]) -> tuple:
    """The wait simulation's per-pc actions and the class sums' per-pc classes
    (analysis.waitdeps.listing_actions, analysis.stalls.class_tables)."""
    from types import SimpleNamespace

    from attlens.analysis.stalls import class_tables
    from attlens.analysis.taxonomy import classify_mnemonic
    from attlens.analysis.waitdeps import listing_actions

    static = SimpleNamespace(mnemonic=mnemonics, cls=[classify_mnemonic(m) if m else "" for m in mnemonics])
    return listing_actions(code, WAITDEPS_MODEL), class_tables(static, code.instruction_mask)


def _distinct(a: np.ndarray) -> np.ndarray:
    """The sorted distinct values of ``a``: ``np.unique`` without its first
    call's import of ``numpy.ma`` (10 ms in each parse process, NumPy 2.4)."""
    a = np.sort(a)
    return a[np.r_[True, a[1:] != a[:-1]]] if len(a) else a


def _merge_parts(parts: list) -> dict:
    """The sum of what :func:`_part_pass` returned for the parts, in file
    order (every part of both processes at once: each column copied once);
    the hidden cycles only when no (SE, SIMD) scope was split between two parts."""
    import functools
    import operator

    from attlens.analysis.waitattr import join_wait_pairs
    from attlens.analysis.waitdeps import join_wait_deps

    parts = [p for p in parts if p]
    if not parts:
        return {}
    out = {"pc_basic": tuple(sum(p["pc_basic"][k] for p in parts) for k in range(4)),
           "n_rec": sum(p["n_rec"] for p in parts), "n_waves": sum(p["n_waves"] for p in parts),
           WAITDEPS_KEY: join_wait_deps([(p[WAITDEPS_KEY], p["n_rec"], p["n_waves"]) for p in parts]),
           "wait_pairs": join_wait_pairs([(p["wait_pairs"], p["n_rec"]) for p in parts]),
           "wait_shares": functools.reduce(operator.add, (p["wait_shares"] for p in parts))}
    if all("hidden_acc" in p for p in parts):
        scopes = np.concatenate([p["scopes"] for p in parts])
        if len(_distinct(scopes)) == len(scopes):
            out["hidden_acc"] = sum(p["hidden_acc"] for p in parts)
            out["scopes"] = scopes
    return out


class _ContextCodec:
    def encode(self, value):
        import dataclasses

        arch, resources, used, added = value
        return {}, {"arch": dataclasses.asdict(arch), "resources": dataclasses.asdict(resources), "used": used, "warnings": added}

    def decode(self, arrays, meta):
        import dataclasses

        from attlens.model.dispatch import ArchInfo, Resources

        from attlens.cache.store import DamagedDigest, checked_fields

        res = dict(meta["resources"])
        for f in dataclasses.fields(Resources):
            if "tuple" in str(f.type) and isinstance(res.get(f.name), list):
                res[f.name] = tuple(res[f.name])
        used, added = meta["used"], meta["warnings"]
        if not (isinstance(used, list) and isinstance(added, list) and all(isinstance(x, str) for x in used + added)):
            raise DamagedDigest("context: files or warnings are not lists of text")
        return (ArchInfo(**checked_fields(ArchInfo, dict(meta["arch"]))), Resources(**checked_fields(Resources, res)), list(used),
                list(added))


def _resolve_context(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, digest, occupancy=None, ready=None):
    """Target and resources (kept in the digest, keyed by the files beside the
    capture, when there is one). Returns (arch, resources, files used,
    warnings). ``ready``: the same, already resolved (:func:`_side_work`)."""

    def compute():
        return ready if ready is not None else _context_now(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, occupancy)

    if digest is None:
        return compute()
    from attlens.cache import memo

    try:
        from attlens.cache.keys import context_key

        key = context_key(d, rocprof_dir)
    except OSError:
        return compute()
    try:
        return memo(digest, f"context-{key}", compute, _ContextCodec())
    except TypeError:  # a value JSON cannot hold: not stored
        return compute()


def _assemble(d: Path, data: CaptureData, rocprof_dir, digest) -> Dispatch:
    code, index = data.code, data.index
    warnings = list(data.warnings)
    kernel_name, handle, dispatch_id = _context_keys(d, code)
    static = data.static or _build_static(code)
    arch, resources, used, added = _resolve_context(d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, digest,
                                                    data.occupancy, data.context)
    warnings += added
    n_missing = len(index.waves) - data.waves.count
    partial = data.skipped_waves or n_missing > 0 or any("ignored" in w or "dropped" in w for w in warnings)
    layout = capture_layout(index, code)
    return Dispatch(
        path=d,
        kernel_name=kernel_name,
        code=code,
        static=static,
        index=index,
        waves=data.waves,
        records=data.records,
        timeline=data.timeline,
        occupancy=data.occupancy,
        realtime=data.realtime,
        snapshots=data.snapshots,
        arch=arch,
        resources=resources,
        warnings=warnings,
        partial=partial,
        rocprof_files=used,
        digest=digest,
        prepared=_prepared(data),
        layout=layout,
        stall_recorded=stall_recorded(layout, data.records),
    )
