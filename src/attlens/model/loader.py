"""``attlens.load(path)``: find and read a decoded ATT directory completely."""

from __future__ import annotations

import gc
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attlens.errors import (
    CorruptCapture,
    EmptyCapture,
    InputNotFound,
    NotACapture,
    SeveralCaptures,
)
from attlens.io.code_json import read_code_json
from attlens.io.filenames_json import read_filenames_json
from attlens.io.jsonfile import read_json
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


@dataclass
class CaptureSummary:
    """What a capture directory holds, without loading it."""

    path: Path
    waves: int | None
    instructions: int | None
    error: str | None = None


def summarize_capture(path: Path) -> CaptureSummary:
    waves = instructions = None
    err = None
    try:
        idx = read_filenames_json(path / "filenames.json")
        waves = len(idx.waves)
    except Exception as exc:  # listing must never fail on one bad directory
        err = str(exc)
    code = path / "code.json"
    if code.is_file():
        try:
            rows = read_json(code).get("code") or []
            instructions = sum(1 for r in rows if r and isinstance(r[0], str) and not r[0].startswith(";"))
        except Exception as exc:
            err = err or str(exc)
    else:
        instructions = 0
    return CaptureSummary(path, waves, instructions, err)


def find_captures(path: Path, max_depth: int = 4) -> list[Path]:
    """Capture directories (holding ``filenames.json``) at or below ``path``.
    A symlinked folder leading outside ``path`` is not searched: a bundle must
    not make attlens analyze a capture elsewhere (docs/security.md)."""
    if (path / "filenames.json").is_file():
        return [path]
    base = os.path.realpath(path).rstrip(os.sep) + os.sep
    found = []
    frontier = [path]
    for _ in range(max_depth):
        nxt = []
        for d in frontier:
            try:
                children = sorted(p for p in d.iterdir() if p.is_dir() and os.path.realpath(p).startswith(base))
            except OSError:
                continue
            for c in children:
                if (c / "filenames.json").is_file():
                    found.append(c)
                else:
                    nxt.append(c)
        frontier = nxt
    return found


def resolve_capture_dirs(path: str | Path, all_captures: bool = False) -> list[Path]:
    """Apply the directory rules: a capture, or a folder of captures."""
    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p}: no such file or directory")
    if not p.is_dir():
        raise InputNotFound(f"{p}: not a directory (pass a ui_output_agent_*_dispatch_* directory)")
    caps = find_captures(p)
    if not caps:
        raise NotACapture(
            f"{p}: not an ATT capture (no filenames.json here or in any subdirectory)",
            hint="pass the ui_output_agent_<handle>_dispatch_<N> directory rocprofv3 wrote",
        )
    if len(caps) > 1 and not all_captures:
        summaries = [summarize_capture(c) for c in caps]
        raise SeveralCaptures(
            f"{p}: holds {len(caps)} captures; pass one of them, or use --all",
            candidates=summaries,
        )
    return caps


def _segmented_idle(time, duration, wave_of, begins, starts):
    """Idle before each record, per wave: gap from the running maximum of the
    previous records' ends (starting at the wave's begin), clamped at 0
    (the writer's rule, att-format.md §2.2)."""
    n = len(time)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    lo = min(int(time.min()), int(begins.min()))
    span = int(max(int((time + duration).max()), int(begins.max())) - lo + 1)
    shift = wave_of.astype(np.int64) * span - lo
    ends = time + duration + shift
    cm = np.maximum.accumulate(ends)
    prev = np.empty(n, dtype=np.int64)
    prev[1:] = cm[:-1]
    begin_shifted = begins[wave_of] + shift
    first = np.zeros(n, dtype=bool)
    first[starts[starts < n]] = True
    prev[first] = begin_shifted[first]
    prev = np.maximum(prev, begin_shifted)
    return np.maximum(time + shift - prev, 0)


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


def load(path: str | Path, rocprof_dir: str | Path | None = None) -> Dispatch:
    """Load one decoded ATT directory (``ui_output_agent_*_dispatch_*``).

    Raises an :class:`attlens.errors.AttlensError` subclass for unusable
    input; recoverable problems (one unreadable wave file, a damaged optional
    file) become ``dispatch.warnings`` and set ``dispatch.partial``.
    """
    caps = resolve_capture_dirs(path)
    d = caps[0]
    warnings: list[str] = []

    index = read_filenames_json(d / "filenames.json")
    warnings.extend(f"{entry.filename}: {msg}" for entry, msg in index.refused)
    if index.pc_sampling and not index.waves:
        raise EmptyCapture(f"{d}: a PC-sampling directory, not a thread trace (no wave files)")
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

    with _no_gc():
        raw_waves, problems = read_wave_files(d, index.readable)
    for entry, msg in problems:
        warnings.append(f"{entry.filename}: {msg}; wave skipped")

    valid_pc = code.instruction_mask
    kept = []
    for rw in raw_waves:
        ins = rw.instructions
        if len(ins):
            pcs = ins[:, 4]
            bad = (pcs < 0) | (pcs >= n_pc)
            if bad.any():
                warnings.append(
                    f"{rw.entry.filename}: pc index {int(pcs[bad][0])} is outside the {n_pc}-entry listing; wave skipped"
                )
                continue
            not_instr = ~valid_pc[pcs]
            if not_instr.any():
                warnings.append(
                    f"{rw.entry.filename}: {int(not_instr.sum())} record(s) point at label rows or absent pcs; those records dropped"
                )
                rw.instructions = ins[~not_instr]
        kept.append(rw)
    if not kept:
        if problems or warnings:
            raise CorruptCapture(f"{d.name}: none of the {len(index.waves)} wave files is usable ({warnings[0]})")
        raise EmptyCapture(f"{d.name}: no traced waves")

    # Per-record arrays, wave by wave.
    counts = np.array([len(w.instructions) for w in kept], dtype=np.int64)
    rec_stop = np.cumsum(counts)
    rec_start = rec_stop - counts
    allins = np.concatenate([w.instructions for w in kept]) if counts.sum() else np.zeros((0, 5), dtype=np.int64)
    tl_counts = np.array([len(w.timeline) for w in kept], dtype=np.int64)
    tl_stop = np.cumsum(tl_counts)
    alltl = np.concatenate([w.timeline for w in kept]) if tl_counts.sum() else np.zeros((0, 2), dtype=np.int64)
    wave_of = np.repeat(np.arange(len(kept), dtype=np.int32), counts)
    begins = np.array([w.begin for w in kept], dtype=np.int64)
    time = np.ascontiguousarray(allins[:, 0])
    duration = np.ascontiguousarray(allins[:, 3])
    records = Records(
        time=time,
        category=allins[:, 1].astype(np.int8),
        stall=np.ascontiguousarray(allins[:, 2]),
        duration=duration,
        pc=allins[:, 4].astype(np.int32),
        wave=wave_of,
        idle=_segmented_idle(time, duration, wave_of, begins, rec_start),
    )
    waves = Waves(
        se=np.array([w.entry.se for w in kept], dtype=np.int32),
        simd=np.array([w.simd for w in kept], dtype=np.int32),
        slot=np.array([w.slot for w in kept], dtype=np.int32),
        instance=np.array([w.entry.instance for w in kept], dtype=np.int32),
        cu=np.array([w.cu for w in kept], dtype=np.int32),
        begin=begins,
        end=np.array([w.end for w in kept], dtype=np.int64),
        rec_start=rec_start,
        rec_stop=rec_stop,
        tl_start=tl_stop - tl_counts,
        tl_stop=tl_stop,
        filenames=[w.entry.filename for w in kept],
        _stored_waitcnt=[w.waitcnt for w in kept],
    )
    timeline = Timeline(
        state=alltl[:, 0].astype(np.int8),
        duration=np.ascontiguousarray(alltl[:, 1]),
        wave=np.repeat(np.arange(len(kept), dtype=np.int32), tl_counts),
    )

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

    kernel_name = code.labels[0][1] if code.labels else ""
    static = _build_static(code)

    from attlens.model.context import resolve_arch_and_resources

    m = _DIR_NAME.search(d.name)
    handle = int(m.group(1)) if m else None
    dispatch_id = int(m.group(2)) if m else None
    arch, resources, used = resolve_arch_and_resources(
        d, rocprof_dir, kernel_name, code, index, handle, dispatch_id, warnings
    )
    n_missing = len(index.waves) - len(kept)
    partial = bool(problems) or n_missing > 0 or any("ignored" in w or "dropped" in w for w in warnings)
    return Dispatch(
        path=d,
        kernel_name=kernel_name,
        code=code,
        static=static,
        index=index,
        waves=waves,
        records=records,
        timeline=timeline,
        occupancy=occupancy,
        realtime=realtime,
        snapshots=snapshots,
        arch=arch,
        resources=resources,
        warnings=warnings,
        partial=partial,
        rocprof_files=used,
    )
