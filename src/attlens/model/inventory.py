"""What a folder holds, without loading any wave file.

``captures``: each thread-trace (or PC-sampling) capture directory found at
the folder or up to :data:`MAX_DEPTH` levels below, with its layout generation
(docs/formats.md), kernel (the listing's first label), target (the same
context lookup as ``load``), traced waves and listed instructions, agent handle
and dispatch id (from the directory name), and a status: ``ok``, ``empty`` (an
empty shell: no wave landed on the traced CU, an empty listing, or a
PC-sampling directory) or ``broken`` (with the error). One bad directory never
hides the others.

``others``: the other profiler outputs found on the way, each named by its
layout: rocprofiler-compute workloads, rocprofv3 run outputs (kernel traces,
counters, raw ``.att`` files), legacy rocprof v1 files; status ``ok``,
``unsupported`` (named, with what to run instead) or ``broken``.

The walk is bounded (:data:`MAX_DEPTH` levels, :data:`MAX_FOLDERS` folders)
and ``stopped`` says where it stopped; a symlinked folder leading outside the
searched folder is not entered (docs/security.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import AttlensError, EmptyCapture, InputNotFound
from attlens.results import brief_repr

MAX_DEPTH = 8
MAX_FOLDERS = 20_000
MAX_NAMES_PER_FOLDER = 10_000


@brief_repr("status", "layout", "kernel", "target", "waves", "instructions", "dispatch_id", "path")
@dataclass
class CaptureInfo:
    path: Path
    status: str  # ok | empty | broken
    kernel: str | None
    target: str | None
    target_source: str | None
    waves: int | None
    instructions: int | None
    agent_handle: int | None
    dispatch_id: int | None
    error: str | None = None
    layout: str | None = None  # model/layouts.py; None when the files could not be read

    def to_dict(self) -> dict:
        return {"path": str(self.path), "status": self.status, "layout": self.layout, "kernel": self.kernel, "target": self.target,
                "target_source": self.target_source, "waves": self.waves, "instructions": self.instructions,
                "agent_handle": self.agent_handle, "dispatch_id": self.dispatch_id, "error": self.error}


@brief_repr("status", "layout", "path")
@dataclass
class OtherOutput:
    """A profiler output that is not a thread-trace capture."""

    path: Path
    layout: str  # rocprof-compute | rocprofv3-run | rocprof-v1
    status: str  # ok | unsupported | broken
    files: list[str]  # what makes it that layout (names)
    target: str | None = None
    error: str | None = None

    def to_dict(self) -> dict:
        return {"path": str(self.path), "layout": self.layout, "status": self.status, "files": list(self.files),
                "target": self.target, "error": self.error}


@brief_repr(("captures", lambda c: len(c.captures)), ("ok", lambda c: sum(1 for x in c.captures if x.status == "ok")),
            ("empty", lambda c: sum(1 for x in c.captures if x.status == "empty")), ("broken", lambda c: sum(1 for x in c.captures if x.status == "broken")),
            ("others", lambda c: len(c.others)), "stopped", "path")
@dataclass
class CaptureList:
    path: Path  # the folder searched
    captures: list[CaptureInfo] = field(default_factory=list)
    others: list[OtherOutput] = field(default_factory=list)
    stopped: str | None = None  # why the walk did not see everything (depth or folder bound), None when it did

    def to_dict(self) -> dict:
        """The ``attlens.captures`` object (``attlens captures --json``)."""
        from attlens.jsondoc import header

        return {**header("attlens.captures"), "path": str(self.path), "captures": [c.to_dict() for c in self.captures],
                "others": [o.to_dict() for o in self.others], "stopped": self.stopped}


def _describe(d: Path) -> CaptureInfo:
    from attlens.io.code_json import read_code_json
    from attlens.io.filenames_json import read_filenames_json
    from attlens.model.context import resolve_arch_and_resources
    from attlens.model.layouts import LAYOUT_PC_SAMPLING, capture_layout
    from attlens.model.loader import _DIR_NAME

    m = _DIR_NAME.search(d.name)
    handle = int(m.group(1)) if m else None
    dispatch_id = int(m.group(2)) if m else None
    info = CaptureInfo(d, "ok", None, None, None, None, None, handle, dispatch_id)
    try:
        index = read_filenames_json(d / "filenames.json")
        info.waves = len(index.waves)
        if index.pc_sampling and not index.waves:
            info.layout = LAYOUT_PC_SAMPLING
        code = read_code_json(d / "code.json")
        info.layout = capture_layout(index, code)
        info.instructions = int(code.instruction_mask.sum())
        info.kernel = code.labels[0][1] if code.labels else None
        arch, _res, _used = resolve_arch_and_resources(d, None, info.kernel or "", code, index, handle, dispatch_id, [])
        info.target, info.target_source = arch.target, arch.source
        if info.layout == LAYOUT_PC_SAMPLING:  # not a shell: rocprof-compute-viewer's PC-sampling listing
            info.status = "empty"
            info.error = "PC samples, no thread trace: attlens analyze shows why its instructions stalled (docs/pcsampling.md)"
        elif not index.waves or not info.instructions:
            info.status = "empty"
    except EmptyCapture as exc:
        info.status, info.error = "empty", exc.message
    except AttlensError as exc:
        info.status, info.error = "broken", exc.message
    except OSError as exc:
        info.status, info.error = "broken", f"{type(exc).__name__}: {exc}"
    if info.status == "ok" and info.waves == 0:
        info.status = "empty"
    return info


# --------------------------------------------------------------------------- other profiler outputs

_RUN_SUFFIXES = ("kernel_trace.csv", "counter_collection.csv", "results.json", "results.db", "agent_info.csv", "kernel_stats.csv")


def _other(d: Path, names: list[str]) -> OtherOutput | None:
    """The non-capture profiler output a folder holds, by its file names (and,
    for results.db / results.json, their first bytes or tables)."""
    perf = sorted(n for n in names if n == "pmc_perf.csv" or (n.startswith("pmc_perf_") and n.endswith(".csv")))
    if perf or "sysinfo.csv" in names:
        files = perf[:3] + (["sysinfo.csv"] if "sysinfo.csv" in names else [])
        target = None
        if "sysinfo.csv" in names:
            from attlens.io.sysinfo_csv import read_sysinfo

            try:
                target = read_sysinfo(d / "sysinfo.csv")["target"]
            except AttlensError as exc:
                return OtherOutput(d, "rocprof-compute", "broken", files, None, exc.message)
        return OtherOutput(d, "rocprof-compute", "ok", files + ([f"+{len(perf) - 3} more"] if len(perf) > 3 else []), target)
    run = sorted(n for n in names if n.endswith(_RUN_SUFFIXES))
    att = [n for n in names if n.endswith(".att")]
    if not run and not att:
        return None
    legacy = _legacy(d, run)
    if legacy is not None:
        return legacy
    files = run[:6] + ([f"{len(att)} raw .att file(s)"] if att else [])
    return OtherOutput(d, "rocprofv3-run", "ok", files, _run_target(d, run))


def _run_target(d: Path, run: list[str]) -> str | None:
    """The one GPU target of a run's agent_info.csv, if it names one."""
    from attlens.io.rocprof_csv import read_agent_info

    for n in run:
        if n.endswith("agent_info.csv"):
            try:
                names = {a["name"] for a in read_agent_info(d / n) if a["type"] == "GPU" and a["name"]}
            except AttlensError:
                return None
            return names.pop() if len(names) == 1 else None
    return None


def _legacy(d: Path, run: list[str]) -> OtherOutput | None:
    from attlens.io.legacy import is_v1_results_json, is_v1_tables, legacy_message

    for n in run:
        if n.endswith("results.json") and is_v1_results_json(d / n):
            return OtherOutput(d, "rocprof-v1", "unsupported", run, None, legacy_message(d / n, "results.json (a Chrome trace)"))
        if n.endswith("results.db") and is_v1_tables(_sqlite_tables(d / n)):
            return OtherOutput(d, "rocprof-v1", "unsupported", run, None, legacy_message(d / n, "results.db (a KERN table)"))
    return None


def _sqlite_tables(path: Path) -> list[str]:
    import sqlite3

    from attlens.io.confine import RefusedPath, read_head, resolve_inside

    try:
        if not read_head(resolve_inside(path.parent, path.name), 16).startswith(b"SQLite format 3"):
            return []
        conn = sqlite3.connect(f"file:{resolve_inside(path.parent, path.name)}?mode=ro&immutable=1", uri=True)
        try:
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()]
        finally:
            conn.close()
    except (OSError, RefusedPath, sqlite3.Error):
        return []


# --------------------------------------------------------------------------- the walk


def _walk(root: Path) -> tuple[list[Path], list[OtherOutput], str | None]:
    """Capture directories and other outputs at or below ``root``, breadth first."""
    base = os.path.realpath(root).rstrip(os.sep) + os.sep
    caps, others = [], []
    frontier, seen, depth = [root], 0, 0
    while frontier:
        nxt = []
        for d in frontier:
            seen += 1
            if seen > MAX_FOLDERS:
                return caps, others, f"stopped after {MAX_FOLDERS:,} folders; {len(frontier) + len(nxt):,} or more were not searched"
            try:
                with os.scandir(d) as it:
                    entries = [e for _, e in zip(range(MAX_NAMES_PER_FOLDER), it)]
            except OSError:
                continue
            names = [e.name for e in entries if e.is_file()]
            if "filenames.json" in names:
                caps.append(d)
                continue  # a capture's own folders are part of it
            other = _other(d, names)
            if other is not None:
                others.append(other)
            for e in sorted(entries, key=lambda e: e.name):
                p = Path(d) / e.name
                if e.is_dir() and os.path.realpath(p).startswith(base):
                    nxt.append(p)
        depth += 1
        if nxt and depth > MAX_DEPTH:
            return caps, others, f"stopped at {MAX_DEPTH} levels below {root}: {len(nxt):,} deeper folder(s) were not searched"
        frontier = nxt
    return caps, others, None


def list_captures(path: str | Path) -> CaptureList:
    p = Path(path)
    if not p.is_dir():
        raise InputNotFound(f"{p}: no such directory" if not p.exists() else f"{p}: not a directory")
    caps, others, stopped = _walk(p)
    return CaptureList(p, [_describe(d) for d in sorted(caps)], others, stopped)
