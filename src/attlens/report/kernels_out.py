"""The kernel table (:func:`attlens.capture.kernels.kernel_table`) as JSON
(schema ``attlens.kernels`` version 1) and as a rich terminal table.

JSON rows carry every field of :class:`~attlens.capture.kernels.KernelRow`,
the resources grouped under ``resources`` (``varying`` names them by the same
keys); a value that is not known (stats-only input, a resource that differs between
dispatches, a column the rocprofv3 version did not write) is ``null``, never 0.
Times are µs; ``lds`` and ``scratch`` are bytes (``lds`` from kernel_trace.csv
is the static LDS rounded up to 512 B; from results.db/results.json it is the
dispatch's group segment size); ``grid`` is in work-items, not workgroups.
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from attlens import __version__

from attlens.report.console import Col, FitTable

SCHEMA = "attlens.kernels"
SCHEMA_VERSION = 1


def _round(x, nd=3):
    return None if x is None else round(float(x), nd)


def _list(t):
    return None if t is None else list(t)


# KernelRow field → key of the row's "resources" object (and of "varying")
_RESOURCE_KEY = {"lds": "lds_bytes", "scratch": "scratch_bytes"}


def row_to_dict(r) -> dict:
    return {
        "rank": r.rank,
        "name": r.name,
        "calls": r.calls,
        "total_us": _round(r.total_us),
        "average_us": _round(r.average_us),
        "percent": _round(r.percent, 4),
        "min_us": _round(r.min_us),
        "max_us": _round(r.max_us),
        "stddev_us": _round(r.stddev_us),
        "kernel_ids": list(r.kernel_ids) if r.kernel_ids else None,
        "dispatch_count": r.dispatch_count,
        "agents": list(r.agents) if r.agents else None,
        "excluded": bool(r.excluded),
        "resources": {
            "vgpr": r.vgpr,
            "agpr": r.agpr,
            "sgpr": r.sgpr,
            "lds_bytes": r.lds,
            "scratch_bytes": r.scratch,
            "workgroup": _list(r.workgroup),
            "grid": _list(r.grid),
        },
        "shapes": [dict(s) for s in r.shapes] if r.shapes else None,
        "several_shapes": len(r.shapes) > 1 if r.shapes else None,
        "varying": {_RESOURCE_KEY.get(k, k): [list(v) if isinstance(v, tuple) else v for v in vals] for k, vals in r.varying.items()} or None,
        "notes": list(r.notes),
    }


def kernels_to_dict(table) -> dict:
    rows = list(table.rows) if hasattr(table, "rows") else list(table)
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "attlens_version": __version__,
        "source": getattr(table, "source", None),
        "files": [str(f) for f in getattr(table, "files", [])] or None,
        "exclude": getattr(table, "exclude", None),
        "total_kernel_time_us": _round(getattr(table, "total_us", None)),
        "kernels": len(rows),
        "excluded_kernels": sum(1 for r in rows if r.excluded),
        "notes": list(getattr(table, "notes", [])),
        "rows": [row_to_dict(r) for r in rows],
    }


def _n(x, fmt="{:,}") -> str:
    return "-" if x is None else fmt.format(x)


def _dims(t) -> str:
    if t is None:
        return "-"
    t = list(t)
    while len(t) > 1 and t[-1] == 1:
        t.pop()
    return "×".join(f"{v:,}" for v in t)


def render_kernels(table, console: Console, top: int = 20) -> None:
    rows = list(table.rows) if hasattr(table, "rows") else list(table)
    files = getattr(table, "files", [])
    source = getattr(table, "source", None)
    where = ", ".join(str(f) for f in files[:3]) + (f" (+{len(files) - 3})" if len(files) > 3 else "")
    total = getattr(table, "total_us", None)
    excluded = sum(1 for r in rows if r.excluded)
    console.print(f"[bold]attlens kernels[/bold] — {len(rows)} kernel(s) from {escape(source or '?')}: {escape(where)}")
    from attlens.capture.kernels import DEFAULT_EXCLUDE

    pattern = getattr(table, "exclude", None)
    if not pattern:
        how = " (no exclude pattern)"
    elif pattern == DEFAULT_EXCLUDE:
        how = " (default pattern: HIP runtime blits, PyTorch elementwise/copy/fill/random/reduce)"
    else:
        how = f" (exclude /{escape(pattern[:60])}{'…' if len(pattern) > 60 else ''}/)"
    console.print(f"  total kernel time {_n(total, '{:,.1f}')} µs; {excluded} runtime helper kernel(s) marked [dim]helper[/dim]{how}")
    has_res = any(r.dispatch_count for r in rows)
    cols = [Col("#"), Col("total µs"), Col("%"), Col("calls"), Col("avg µs")]
    if has_res:
        # ids are numbers: they wrap between ids, never cut
        cols += [Col("kernel ids", "wrap", min_width=6), *map(Col, ("VGPR", "AGPR", "SGPR", "LDS B", "workgroup", "grid"))]
    t = FitTable(f"Top {min(top, len(rows))} kernels by total GPU time", cols + [Col("kernel", "text", min_width=24)])
    for r in rows[:top]:
        cells = [str(r.rank), _n(r.total_us, "{:,.1f}"), _n(r.percent, "{:.1f}"), _n(r.calls), _n(r.average_us, "{:,.2f}")]
        if has_res:
            several = len(r.shapes) > 1
            cells += [
                ", ".join(map(str, r.kernel_ids)) or "-",
                _n(r.vgpr) if "vgpr" not in r.varying else "var",
                _n(r.agpr) if "agpr" not in r.varying else "var",
                _n(r.sgpr) if "sgpr" not in r.varying else "var",
                _n(r.lds) if "lds" not in r.varying else "var",
                _dims(r.workgroup) if r.workgroup is not None or not several else f"{len(r.shapes)} shapes",
                _dims(r.grid) if r.grid is not None or not several else f"{len(r.shapes)} shapes",
            ]
        label = escape(r.name)
        cells.append(f"[dim](helper) {label}[/dim]" if r.excluded else label)
        t.add_row(*cells)
    console.print(t)
    if len(rows) > top:
        console.print(f"  … {len(rows) - top} more kernel(s) not shown")
    for note in getattr(table, "notes", []):
        console.print(f"  [yellow]note[/yellow] {escape(note)}")
