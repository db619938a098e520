"""The kernel table of a rocprofv3 run: which kernels ran, how long, with what
resources, and which one to trace.

Input: a file (``*kernel_trace.csv``, ``*results.db``, ``*results.json`` with
dispatch records, ``*kernel_stats.csv``) or a directory searched recursively
(at most 4 levels below it) for those files, or a list of them.

Source preference, best first: ``kernel_trace.csv`` → ``results.db`` →
``results.json`` dispatch records → ``kernel_stats.csv``. The per-dispatch
sources carry kernel ids, dispatch ids and resources; the stats file has only
names and times. Files of one run are merged: ``<pid>_kernel_trace.csv`` of
several processes in one ``<host>/`` directory, several ``<pid>_results.db``
(ATTACH + UNION ALL, :mod:`attlens.io.rocpd`). Files of different runs found
under one directory (several directories, or several ``-o`` prefixes) raise
:class:`~attlens.errors.SeveralCaptures`: pass the one you mean.

Rows are grouped by kernel *name* (like ``kernel_stats.csv``) and ranked by
total GPU time. ``percent`` is the share of the summed time of every kernel
dispatch (helpers included), the same definition as the stats file's
``Percentage``. Times are in µs. Unknown values are None, never 0.

Runtime helper kernels are flagged ``excluded`` (still listed) when their name
matches :data:`DEFAULT_EXCLUDE` (``re.search``; pass ``exclude=None`` or ``""``
to flag nothing, or your own pattern). The default matches:

- ``__amd_rocclr_*``: the HIP runtime's blit kernels (``copyBuffer``,
  ``fillBufferAligned``, ...) behind hipMemcpy/hipMemset;
- PyTorch ``at::native::`` TensorIterator kernels: ``vectorized_elementwise_kernel``,
  ``vectorized_templated_elementwise_kernel``, ``unrolled_elementwise_kernel``, ``elementwise_kernel``,
  ``elementwise_kernel_manual_unroll``, ``index_elementwise_kernel`` (every
  pointwise op, fill, copy/cast, compare, index), the random-number
  ``distribution_*`` kernels and ``reduce_kernel`` (sum/max/min/all, as used by
  ``allclose``-style checks);
- the same names as ``rocprofv3 -T`` (truncated) or ``-M`` (mangled) print them,
  except a bare truncated ``reduce_kernel``, too generic a name to exclude.

These are what a test harness around a custom kernel launches to build inputs
and check results; they are rarely the kernel to trace. PyTorch kernels with
their own names (``cunn_SoftMaxForward``, GEMM libraries, ``rocprim``) are not
excluded.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from attlens import errors
from attlens.errors import AttlensError, InputNotFound, SeveralCaptures, UsageError
from attlens.io.confine import user_path
from attlens.results import brief_repr

DEFAULT_EXCLUDE = (
    r"^__amd_rocclr_"
    r"|\bat::native::(?:\(anonymous namespace\)::)?"
    r"(?:(?:vectorized_(?:templated_)?|unrolled_|index_)?elementwise_kernel(?:_manual_unroll)?|distribution_\w+|reduce_kernel)\b"
    r"|^(?:vectorized_(?:templated_)?elementwise_kernel|unrolled_elementwise_kernel|elementwise_kernel_manual_unroll"
    r"|index_elementwise_kernel|distribution_elementwise_grid_stride_kernel|distribution_nullary_kernel)$"
    r"|^_ZN2at6native(?:12_GLOBAL__N_1)?\d+(?:(?:vectorized_(?:templated_)?|unrolled_|index_)?elementwise_kernel|distribution_|reduce_kernel)"
)

MAX_DEPTH = 4

_KINDS = ("kernel_trace", "rocpd", "results.json", "kernel_stats")
_SUFFIX = {
    "kernel_trace": "kernel_trace.csv",
    "rocpd": "results.db",
    "results.json": "results.json",
    "kernel_stats": "kernel_stats.csv",
}
_PID_PREFIX = re.compile(r"^\d+_")
_SKIP_DIRS = re.compile(r"^(?:ui_output_agent_\d+_dispatch_\d+.*|empty_shells|\..*|__pycache__|node_modules)$")


class NoKernelData(AttlensError):
    """Nothing usable: no kernel dispatch and no kernel statistics in the input."""

    exit_code = errors.EXIT_NOT_A_CAPTURE


_KernelNotFound = getattr(errors, "KernelNotFound", errors.NotACapture)


class NoKernelMatch(_KernelNotFound, LookupError):
    """``pick_kernel`` found no kernel for the regex (or the table is empty)."""


@brief_repr("rank", "name", "calls", "total_us", "percent", "excluded")
@dataclass
class KernelRow:
    rank: int
    name: str
    calls: int | None
    total_us: float | None
    average_us: float | None
    percent: float | None
    kernel_ids: list[int] = field(default_factory=list)
    dispatch_count: int | None = None
    min_us: float | None = None
    max_us: float | None = None
    stddev_us: float | None = None
    vgpr: int | None = None
    agpr: int | None = None
    sgpr: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    workgroup: tuple | None = None
    grid: tuple | None = None
    shapes: list[dict] = field(default_factory=list)  # [{"workgroup", "grid", "dispatches"}], most frequent first
    varying: dict[str, list] = field(default_factory=dict)  # resource → its distinct values (the field is None)
    agents: list[int] = field(default_factory=list)
    excluded: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def several_shapes(self) -> bool:
        return len(self.shapes) > 1

    def to_dict(self) -> dict:
        """One row of ``attlens.kernels``: the resources grouped under ``resources``
        (``varying`` names them by the same keys); unknown values are None, never 0."""
        return {
            "rank": self.rank,
            "name": self.name,
            "calls": self.calls,
            "total_us": _round(self.total_us),
            "average_us": _round(self.average_us),
            "percent": _round(self.percent, 4),
            "min_us": _round(self.min_us),
            "max_us": _round(self.max_us),
            "stddev_us": _round(self.stddev_us),
            "kernel_ids": list(self.kernel_ids) if self.kernel_ids else None,
            "dispatch_count": self.dispatch_count,
            "agents": list(self.agents) if self.agents else None,
            "excluded": bool(self.excluded),
            "resources": {
                "vgpr": self.vgpr,
                "agpr": self.agpr,
                "sgpr": self.sgpr,
                "lds_bytes": self.lds_bytes,
                "scratch_bytes": self.scratch_bytes,
                "workgroup": None if self.workgroup is None else list(self.workgroup),
                "grid": None if self.grid is None else list(self.grid),
            },
            "shapes": [dict(s) for s in self.shapes] if self.shapes else None,
            "several_shapes": len(self.shapes) > 1 if self.shapes else None,
            "varying": {k: [list(v) if isinstance(v, tuple) else v for v in vals] for k, vals in self.varying.items()} or None,
            "notes": list(self.notes),
        }


def _round(x, nd=3):
    return None if x is None else round(float(x), nd)



@brief_repr("source", ("kernels", lambda t: len(t.rows)), ("helpers", lambda t: sum(1 for r in t.rows if r.excluded)), "total_kernel_time_us",
            ("top", lambda t: t.rows[0].name if t.rows else None))
@dataclass
class KernelTable:
    rows: list[KernelRow]
    dispatches: list[dict]  # per-dispatch rows (read_kernel_trace shape); [] for a stats file
    source: str  # "kernel_trace" | "rocpd" | "results.json" | "kernel_stats"
    files: list[Path]
    exclude: str | None
    total_kernel_time_us: float | None  # summed time of every kernel dispatch
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # input skipped (also in notes); exit 8

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def to_pandas(self):
        """One row per kernel (ranked by total time), one column per key of
        ``rows`` in ``to_dict()``, the resources as ``resources.vgpr`` ...
        ``resources.grid``."""
        from attlens.results import dataframe, flat

        return dataframe([flat(r.to_dict(), "resources") for r in self.rows])

    def to_dict(self) -> dict:
        """The ``attlens.kernels`` object (``attlens kernels --json``). Times are µs; ``lds_bytes``
        from kernel_trace.csv is the static LDS rounded up to 512 B, from results.db/results.json
        the dispatch's group segment size; ``grid`` is in work-items, not workgroups."""
        from attlens.jsondoc import header

        return {
            **header("attlens.kernels"),
            "source": self.source,
            "files": [str(f) for f in self.files] or None,
            "exclude": self.exclude,
            "total_kernel_time_us": _round(self.total_kernel_time_us),
            "kernels": len(self.rows),
            "excluded_kernels": sum(1 for r in self.rows if r.excluded),
            "notes": list(self.notes),
            "rows": [r.to_dict() for r in self.rows],
        }

    def row(self, name: str) -> KernelRow | None:
        for r in self.rows:
            if r.name == name:
                return r
        return None


class Pick(NamedTuple):
    row: KernelRow
    reason: str


# --------------------------------------------------------------------------- files


def _kind_by_name(p: Path) -> str | None:
    n = p.name
    for kind in _KINDS:
        if n.endswith(_SUFFIX[kind]):
            return kind
    return None


def _sniff(p: Path) -> str | None:
    """Kind of a file whose name does not say it, from its first bytes."""
    from attlens.io.confine import RefusedPath, read_head

    try:
        head = read_head(p, 4096)  # a FIFO or device is not sniffed (it would block or never end)
    except (OSError, RefusedPath):
        return None
    if head.startswith(b"SQLite format 3\x00"):
        return "rocpd"
    if head.lstrip()[:1] == b"{" and b"rocprofiler-sdk-tool" in head:
        return "results.json"
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace")
    cols = {c.strip().strip('"') for c in first.split(",")}
    if {"Kernel_Name", "Start_Timestamp", "End_Timestamp"} <= cols:
        return "kernel_trace"
    if {"Name", "Calls", "TotalDurationNs"} <= cols:
        return "kernel_stats"
    return None


def _walk(root: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {k: [] for k in _KINDS}
    root_depth = len(root.parts)
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).parts) - root_depth
        dirnames[:] = sorted(d for d in dirnames if not _SKIP_DIRS.match(d)) if depth < MAX_DEPTH else []
        for fn in sorted(filenames):
            p = Path(dirpath) / fn
            kind = _kind_by_name(p)
            if kind and p.is_file():
                found[kind].append(p)
    return found


def _run_key(p: Path, kind: str) -> tuple[str, str]:
    """Files of one run share a directory and an ``-o`` prefix; ``<pid>_`` prefixes
    (the default ``%hostname%/%pid%``) are processes of one run."""
    prefix = p.name[: -len(_SUFFIX[kind])] if p.name.endswith(_SUFFIX[kind]) else p.name
    if _PID_PREFIX.match(prefix):
        prefix = "<pid>_"
    return (str(p.parent), prefix)


def _one_run(files: list[Path], kind: str, where: Path) -> list[Path]:
    groups: dict[tuple, list[Path]] = {}
    for f in files:
        groups.setdefault(_run_key(f, kind), []).append(f)
    if len(groups) > 1:
        cands = [g[0] if len(g) == 1 else g[0].parent for g in groups.values()]
        listing = ", ".join(str(c) for c in cands[:6]) + (" ..." if len(cands) > 6 else "")
        raise SeveralCaptures(
            f"{where}: {len(groups)} rocprofv3 runs with a {_SUFFIX[kind]} ({listing}); pass one of them",
            candidates=cands,
        )
    return next(iter(groups.values()))


def _collect(paths: list[Path]) -> tuple[dict[str, list[Path]], list[tuple[Path, dict[str, list[Path]]]]]:
    """Files named on the command line (per kind) and, per given directory, the
    files found under it (per kind)."""
    explicit: dict[str, list[Path]] = {k: [] for k in _KINDS}
    walked: list[tuple[Path, dict[str, list[Path]]]] = []
    for p in paths:
        if not p.exists():
            raise InputNotFound(f"{p}: no such file or directory")
        if p.is_dir():
            walked.append((p, _walk(p)))
            continue
        p = user_path(p)  # named by the user: its symlink is followed (found files are confined)
        kind = _kind_by_name(p) or _sniff(p)
        if kind is None:
            raise NoKernelData(f"{p.name}: not a rocprofv3 kernel_trace.csv, kernel_stats.csv, results.json or results.db")
        explicit[kind].append(p)
    return explicit, walked


def _files_for(kind: str, explicit, walked) -> list[Path]:
    """The files of ``kind`` to read: every explicit one, and from each searched
    directory the files of a single run (SeveralCaptures otherwise)."""
    out = list(explicit[kind])
    for d, sub in walked:
        if sub[kind]:
            out += sub[kind] if kind == "results.json" else _one_run(sub[kind], kind, d)
    seen, uniq = set(), []
    for f in out:
        key = f.resolve()
        if key not in seen:
            seen.add(key)
            uniq.append(f)
    return uniq


# --------------------------------------------------------------------------- reading


def _read_trace(files: list[Path], warnings: list[str]) -> list[dict]:
    from attlens.io.rocprof_csv import pid_from_filename, read_kernel_trace_checked

    rows = []
    for f in files:
        pid = pid_from_filename(f)
        got = read_kernel_trace_checked(f)
        warnings += got.warnings
        for r in got:
            r.setdefault("pid", pid)
            rows.append(r)
    return rows


def _read_json(files: list[Path]) -> tuple[list[dict], list[Path]]:
    from attlens.io.results_json import read_results_json

    rows, used = [], []
    for f in files:
        got = []
        for proc in read_results_json(f):
            got += proc.kernel_dispatches
        if got:
            rows += got
            used.append(f)
    return rows, used


def _read_stats(files: list[Path], warnings: list[str]) -> list[dict]:
    from attlens.io.rocprof_csv import read_kernel_stats

    merged: dict[str, dict] = {}
    for f in files:
        got = read_kernel_stats(f)
        warnings += got.warnings
        for r in got:
            m = merged.get(r["name"])
            if m is None:
                merged[r["name"]] = dict(r)
                continue
            # the same kernel in several processes' stats: add up
            m["calls"] = (m["calls"] or 0) + (r["calls"] or 0)
            m["total_ns"] = (m["total_ns"] or 0.0) + (r["total_ns"] or 0.0)
            m["min_ns"] = min(x for x in (m["min_ns"], r["min_ns"]) if x is not None) if m["min_ns"] is not None or r["min_ns"] is not None else None
            m["max_ns"] = max(x for x in (m["max_ns"], r["max_ns"]) if x is not None) if m["max_ns"] is not None or r["max_ns"] is not None else None
            m["stddev"] = None
            m["average_ns"] = m["total_ns"] / m["calls"] if m["calls"] else None
    return list(merged.values())


# --------------------------------------------------------------------------- aggregation


def _compile_exclude(exclude: str | None):
    if not exclude:
        return None
    try:
        return re.compile(exclude)
    except re.error as exc:
        raise UsageError(f"invalid kernel exclude regex {exclude!r}: {exc}") from None


def _us(ns) -> float | None:
    return None if ns is None else ns / 1000.0


def _uniform(values: list, key: str, varying: dict) -> object:
    known = [v for v in values if v is not None]
    if not known:
        return None
    distinct = sorted(set(known))
    if len(distinct) == 1:
        return distinct[0]
    varying[key] = distinct
    return None


def _rows_from_dispatches(dispatches: list[dict], rx) -> tuple[list[KernelRow], float, list[str]]:
    by_name: dict[str, list[dict]] = {}
    notes: list[str] = []
    bad = 0
    for d in dispatches:
        by_name.setdefault(d.get("kernel_name") or "", []).append(d)
    rows = []
    grand = 0.0
    for name, ds in by_name.items():
        durs = []
        for d in ds:
            s, e = d.get("start_ns"), d.get("end_ns")
            if s is None or e is None or e < s:
                bad += 1
                continue
            durs.append(e - s)
        total = float(sum(durs))
        grand += total
        n = len(durs)
        mean = total / n if n else None
        std = None
        if n == 1:
            std = 0.0
        elif n > 1:
            std = math.sqrt(sum((x - mean) ** 2 for x in durs) / (n - 1))
        varying: dict[str, list] = {}
        shapes: dict[tuple, int] = {}
        for d in ds:
            k = (tuple(d.get("workgroup") or ()), tuple(d.get("grid") or ()))
            shapes[k] = shapes.get(k, 0) + 1
        shape_list = [
            {"workgroup": list(wg) or None, "grid": list(gr) or None, "dispatches": c}
            for (wg, gr), c in sorted(shapes.items(), key=lambda kv: (-kv[1], kv[0]))
        ]
        row = KernelRow(
            rank=0,
            name=name,
            calls=len(ds),
            total_us=_us(total) if n else None,
            average_us=_us(mean),
            percent=None,
            kernel_ids=sorted({d["kernel_id"] for d in ds if d.get("kernel_id") is not None}),
            dispatch_count=len(ds),
            min_us=_us(min(durs)) if durs else None,
            max_us=_us(max(durs)) if durs else None,
            stddev_us=_us(std),
            vgpr=_uniform([d.get("vgpr_count") for d in ds], "vgpr", varying),
            agpr=_uniform([d.get("agpr_count") for d in ds], "agpr", varying),
            sgpr=_uniform([d.get("sgpr_count") for d in ds], "sgpr", varying),
            lds_bytes=_uniform([d.get("lds_bytes") for d in ds], "lds_bytes", varying),
            scratch_bytes=_uniform([d.get("scratch_bytes") for d in ds], "scratch_bytes", varying),
            workgroup=_uniform([tuple(d["workgroup"]) if d.get("workgroup") else None for d in ds], "workgroup", varying),
            grid=_uniform([tuple(d["grid"]) if d.get("grid") else None for d in ds], "grid", varying),
            shapes=shape_list,
            varying=varying,
            agents=sorted({d["agent"] for d in ds if d.get("agent") is not None}),
            excluded=bool(rx and rx.search(name)),
        )
        if len(shape_list) > 1:
            row.notes.append(f"{len(shape_list)} launch shapes (workgroup × grid)")
        for k, vals in varying.items():
            if k not in ("workgroup", "grid"):
                row.notes.append(f"{k.removesuffix('_bytes')} differs between dispatches: {', '.join(map(str, vals[:6]))}")
        if n < len(ds):
            row.notes.append(f"{len(ds) - n} dispatch(es) without valid timestamps")
        rows.append(row)
    if bad:
        notes.append(f"{bad} dispatch(es) without valid start/end timestamps are counted but not timed")
    return rows, grand, notes


def _rows_from_stats(stats: list[dict], rx) -> tuple[list[KernelRow], float]:
    rows = []
    grand = 0.0
    for s in stats:
        total = s.get("total_ns")
        grand += total or 0.0
        rows.append(
            KernelRow(
                rank=0,
                name=s["name"],
                calls=s.get("calls"),
                total_us=_us(total),
                average_us=_us(s.get("average_ns")),
                percent=None,
                kernel_ids=[],
                dispatch_count=None,
                min_us=_us(s.get("min_ns")),
                max_us=_us(s.get("max_ns")),
                stddev_us=_us(s.get("stddev")),
                excluded=bool(rx and rx.search(s["name"])),
            )
        )
    return rows, grand


def _rank(rows: list[KernelRow], grand: float) -> None:
    rows.sort(key=lambda r: (-(r.total_us or 0.0), r.name))
    for i, r in enumerate(rows, 1):
        r.rank = i
        r.percent = (100.0 * r.total_us * 1000.0 / grand) if (grand and r.total_us is not None) else None


def _stats_crosscheck(table: KernelTable, stats_files: list[Path]) -> None:
    """Compare the trace aggregation with the stats file of the same run (one
    trace file only: a stats file covers one process)."""
    from attlens.io.rocprof_csv import read_kernel_stats

    if len(table.files) != 1:
        return
    trace_dirs = {(f.parent, f.name[: -len("kernel_trace.csv")]) for f in table.files}
    for sf in stats_files:
        if (sf.parent, sf.name[: -len("kernel_stats.csv")]) not in trace_dirs:
            continue
        try:
            stats = read_kernel_stats(sf)
        except AttlensError:
            continue
        differ = []
        by_name = {r.name: r for r in table.rows}
        for s in stats:
            r = by_name.get(s["name"])
            if r is None or r.calls != s["calls"] or (s["total_ns"] is not None and r.total_us is not None and abs(r.total_us * 1000 - s["total_ns"]) > 1):
                differ.append(s["name"])
        if differ:
            table.notes.append(f"{sf.name} disagrees with the trace for {len(differ)} kernel(s) (e.g. {differ[0][:60]})")


def kernel_table(path_or_paths, exclude: str | None = DEFAULT_EXCLUDE) -> KernelTable:
    """Kernels of a rocprofv3 run, ranked by total GPU time (see module doc)."""
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [Path(path_or_paths)]
    else:
        paths = [Path(p) for p in path_or_paths]
    if not paths:
        raise InputNotFound("no rocprofv3 output given")
    rx = _compile_exclude(exclude)
    explicit, walked = _collect(paths)
    where = paths[0] if len(paths) == 1 else Path(os.path.commonpath([str(p.resolve()) for p in paths]))
    notes: list[str] = []
    warnings: list[str] = []

    def has(kind: str) -> bool:
        return bool(explicit[kind]) or any(sub[kind] for _, sub in walked)

    dispatches: list[dict] = []
    source = None
    used: list[Path] = []
    if has("kernel_trace"):
        used = _files_for("kernel_trace", explicit, walked)
        dispatches, source = _read_trace(used, warnings), "kernel_trace"
    elif has("rocpd"):
        from attlens.io.rocpd import read_rocpd

        used = _files_for("rocpd", explicit, walked)
        data = read_rocpd(used)
        dispatches, source = data.dispatches, "rocpd"
        notes += data.notes
    if source is None and has("results.json"):
        jsons = _files_for("results.json", explicit, walked)
        dispatches, used = _read_json(jsons)
        if dispatches:
            source = "results.json"
            runs = {_run_key(f, "results.json") for f in used}
            if len(runs) > 1:
                raise SeveralCaptures(
                    f"{where}: {len(runs)} results.json files with dispatch records; pass one of them",
                    candidates=list(used),
                )
        else:
            from attlens.io.legacy import is_v1_results_json, legacy_message

            v1 = [f for f in jsons if is_v1_results_json(f)]
            if v1 and len(v1) == len(jsons):
                from attlens.errors import UnsupportedLayout

                raise UnsupportedLayout(legacy_message(v1[0], "results.json (a Chrome trace)"))
            notes.append(f"{', '.join(f.name for f in jsons[:3])}: no kernel dispatch records (rocprofv3 ran without --kernel-trace)")

    if source is not None:
        if not dispatches:
            raise NoKernelData(f"{where}: the {source} output holds no kernel dispatch ({', '.join(f.name for f in used[:3])})")
        rows, grand, more = _rows_from_dispatches(dispatches, rx)
        notes += more
    elif has("kernel_stats"):
        used = _files_for("kernel_stats", explicit, walked)
        stats = _read_stats(used, warnings)
        if not stats:
            raise NoKernelData(f"{where}: {used[0].name} lists no kernel")
        rows, grand = _rows_from_stats(stats, rx)
        source = "kernel_stats"
        notes.append("from kernel_stats.csv alone: no kernel ids, dispatch ids or resources (run with --kernel-trace for those)")
    else:
        why = f"; {notes[-1]}" if notes else ""
        raise NoKernelData(
            f"{where}: no kernel_trace.csv, results.db, results.json with dispatch records or kernel_stats.csv "
            f"(searched {MAX_DEPTH} levels deep){why}",
            hint="run rocprofv3 --kernel-trace --stats -f csv ... and pass its output directory",
        )
    _rank(rows, grand)
    table = KernelTable(
        rows=rows,
        dispatches=dispatches,
        source=source,
        files=list(used),
        exclude=exclude or None,
        total_kernel_time_us=_us(grand),
        notes=warnings + notes,
        warnings=warnings,
    )
    if source == "kernel_trace" and has("kernel_stats"):
        stats_files = list(explicit["kernel_stats"]) + [f for _, sub in walked for f in sub["kernel_stats"]]
        _stats_crosscheck(table, stats_files)
    return table


# --------------------------------------------------------------------------- choosing


def _rows_of(table) -> list[KernelRow]:
    return list(table.rows) if hasattr(table, "rows") else list(table)


def _fmt_row(r: KernelRow) -> str:
    parts = []
    if r.total_us is not None:
        parts.append(f"{r.total_us:,.1f} µs total")
    if r.percent is not None:
        parts.append(f"{r.percent:.1f}% of kernel time")
    if r.calls is not None:
        parts.append(f"{r.calls} call{'s' if r.calls != 1 else ''}")
    return ", ".join(parts)


def pick_kernel(table, regex: str | None = None) -> Pick:
    """The kernel to trace, with the reason: the first row (by total time) whose
    name matches ``regex`` (``re.search``; helpers included), or without a
    regex the largest total time among the rows not flagged ``excluded``."""
    rows = sorted(_rows_of(table), key=lambda r: r.rank)
    if not rows:
        raise NoKernelMatch("the kernel table is empty: no kernel ran")
    if regex:
        try:
            rx = re.compile(regex)
        except re.error as exc:
            raise UsageError(f"invalid kernel regex {regex!r}: {exc}") from None
        hits = [r for r in rows if rx.search(r.name)]
        if not hits:
            top = "; ".join([r.name[:50] for r in rows if not r.excluded][:3]) or rows[0].name[:50]
            raise NoKernelMatch(
                f"no kernel name matches /{regex}/ among {len(rows)} kernels (largest: {top})",
                hint="regexes match substrings of the full kernel name; see `attlens kernels`",
            )
        r = hits[0]
        reason = f"first kernel by total time matching /{regex}/: rank {r.rank} ({_fmt_row(r)})"
        if len(hits) > 1:
            reason += f"; {len(hits) - 1} other kernel(s) match too"
        if r.excluded:
            reason += "; it matches the helper-kernel exclude pattern, taken because the regex names it"
        return Pick(r, reason)
    kept = [r for r in rows if not r.excluded]
    helpers = len(rows) - len(kept)
    if not kept:
        r = rows[0]
        return Pick(r, f"every kernel matches the helper-kernel exclude pattern; taking the largest anyway ({_fmt_row(r)})")
    r = kept[0]
    reason = f"largest total GPU time ({_fmt_row(r)}) among {len(kept)} kernel(s)"
    if helpers:
        reason += f"; {helpers} runtime helper kernel(s) excluded by pattern"
        if rows[0].excluded:
            reason += f" (the overall largest, {rows[0].name[:40]}…, is one)" if len(rows[0].name) > 40 else f" (the overall largest, {rows[0].name}, is one)"
    return Pick(r, reason)


def dispatches_of(rows, kernel_ids) -> list[int]:
    """Dispatch ids of the given kernel id(s), in dispatch order (process, then
    ``Dispatch_Id``). The position in this list + 1 is the rocprofv3 iteration
    number when one kernel id is given (the counter is per ``Kernel_Id``)."""
    if hasattr(rows, "dispatches"):
        rows = rows.dispatches
    if isinstance(kernel_ids, int):
        ids = {kernel_ids}
    else:
        ids = set(kernel_ids)
    hit = [d for d in rows if d.get("kernel_id") in ids and d.get("dispatch_id") is not None]
    hit.sort(key=lambda d: (d.get("pid") if d.get("pid") is not None else -1, d["dispatch_id"]))
    return [d["dispatch_id"] for d in hit]
