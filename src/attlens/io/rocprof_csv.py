"""rocprofv3 CSV outputs, read by header name (rocprofv3-interfaces.md §3).

Headers are quoted, strings are quoted without escaping, floats may be in
scientific notation, and files re-quoted by other tools quote every field; the
standard csv module handles all of these. Unknown leading columns (``Guid``,
``Pid`` from ``rocpd convert``) are ignored because lookups are by name.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from pathlib import Path

from attlens.errors import CorruptCapture

_AGENT = re.compile(r"^\s*(?:(Agent|GPU|CPU)\s+)?(\d+)\s*$")


# Largest CSV attlens reads (docs/security.md): a kernel_trace.csv of a long
# run is a few hundred MB; this only stops what cannot be a profiler output.
MAX_CSV_BYTES = 2 << 30


class Rows(list):
    """Rows of one CSV file (dicts by header name) and ``warnings``: rows that
    were skipped because their field count is not the header's (a name with
    an unquoted comma, a line cut short). Callers that report to the user
    carry the warnings on; rocprofv3 itself always quotes names."""

    def __init__(self, rows=(), warnings: list[str] | None = None):
        super().__init__(rows)
        self.warnings: list[str] = warnings or []


def read_text(path: Path) -> str:
    """A CSV file's text: a regular file, confined to its own directory (a
    symlink leading elsewhere is refused), UTF-8 with an optional BOM."""
    from attlens.io.confine import read_input_file

    data = read_input_file(path, MAX_CSV_BYTES)
    return data.decode("utf-8-sig", errors="replace")


def read_table(path: Path) -> tuple[list[str], Rows]:
    """(stripped header names, rows) of a CSV file; ([], []) for an empty one.

    A row whose field count differs from the header's is skipped, and
    ``rows.warnings`` says which lines were (csv.DictReader would silently
    shift or pad its fields). Blank lines are not rows."""
    import io

    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # kernel names exceed 5 KB
    path = Path(path)
    text = read_text(path)
    try:
        reader = csv.reader(io.StringIO(text, newline=""))
        header = next(reader, None)
        if header is None:
            return [], Rows()
        header = [f.strip() for f in header]
        rows, bad = [], []
        for fields in reader:
            if not fields:
                continue
            if len(fields) != len(header):
                bad.append((reader.line_num, len(fields)))
                continue
            rows.append(dict(zip(header, fields)))
    except csv.Error as exc:
        raise CorruptCapture(f"{path.name}: unreadable CSV ({exc})") from None
    warnings = []
    if bad:
        lines = ", ".join(str(n) for n, _ in bad[:5]) + (" ..." if len(bad) > 5 else "")
        warnings.append(
            f"{path.name}: {len(bad)} row(s) skipped (line {lines}): {bad[0][1]} fields where the header has {len(header)} "
            "(a name with an unquoted comma, or a line cut short)"
        )
    return header, Rows(rows, warnings)


def read_rows(path: Path) -> Rows:
    return read_table(path)[1]


def as_int(value) -> int | None:
    """An integer field; accepts floats and scientific notation ("1.0e+03").
    Not a number that fits 64 bits (text, ``inf``, ``1e999``, ``nan``,
    ``2**64``): None, i.e. unavailable."""
    if value is None:
        return None
    value = str(value).strip()
    if not value:
        return None
    try:
        n = int(value)
    except ValueError:
        x = as_float(value)
        n = None if x is None or not -(2.0**63) <= x < 2.0**63 else int(x)
    return n if n is None or -(1 << 63) <= n < (1 << 63) else None


def as_count(value) -> int | None:
    """A size or count field (registers, bytes, grid): :func:`as_int`, and
    None when negative."""
    n = as_int(value)
    return n if n is None or n >= 0 else None


def as_float(value) -> float | None:
    """A float field; None when empty or not a finite number."""
    if value is None or not str(value).strip():
        return None
    try:
        x = float(value)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def parse_agent_id(value) -> tuple[str | None, int | None]:
    """``"Agent 2"`` → ("Agent", 2); ``"2"`` → (None, 2); ``"GPU 0"`` → ("GPU", 0)."""
    m = _AGENT.match(str(value or ""))
    if not m:
        return None, None
    return m.group(1), int(m.group(2))


def read_agent_info(path: Path) -> Rows:
    """GPU and CPU agents with the fields attlens uses, typed."""
    rows = read_rows(path)
    agents = Rows(warnings=rows.warnings)
    for row in rows:
        agents.append(
            {
                "node_id": as_int(row.get("Node_Id")),
                "logical_node_id": as_int(row.get("Logical_Node_Id")),
                "type": (row.get("Agent_Type") or "").strip().upper(),
                "name": (row.get("Name") or "").strip(),
                "product_name": (row.get("Product_Name") or row.get("Marketing_Name") or "").strip(),
                "gfx_target_version": as_int(row.get("Gfx_Target_Version")),
                "cu_count": as_int(row.get("Cu_Count")),
                "simd_per_cu": as_int(row.get("Simd_Per_Cu")),
                "max_waves_per_simd": as_int(row.get("Max_Waves_Per_Simd")),
                "wave_front_size": as_int(row.get("Wave_Front_Size")),
                "lds_size_kb": as_int(row.get("Lds_Size_In_Kb")),
                "num_xcc": as_int(row.get("Num_Xcc")),
                "num_shader_banks": as_int(row.get("Num_Shader_Banks")),
                "max_engine_clk_mhz": as_int(row.get("Max_Engine_Clk_Fcompute")),
            }
        )
    return agents


def read_kernel_trace(path: Path) -> Rows:
    """Dispatch rows of kernel_trace.csv (22-column 7.x and 18-column ≤ 6.4 layouts)."""
    return _dispatch_rows(read_rows(path))


def _dispatch_rows(rows: Rows) -> Rows:
    out = Rows(warnings=rows.warnings)
    for row in rows:
        kind, agent = parse_agent_id(row.get("Agent_Id"))
        lds = row.get("LDS_Block_Size")
        if lds is None:  # ≤ 6.4 layout: dispatch group segment size
            lds = row.get("Group_Segment_Size")
        out.append(
            {
                "dispatch_id": as_int(row.get("Dispatch_Id")),
                "kernel_id": as_int(row.get("Kernel_Id")),
                "kernel_name": row.get("Kernel_Name") or "",
                "agent": agent,
                "agent_kind": kind,
                "start_ns": as_int(row.get("Start_Timestamp")),
                "end_ns": as_int(row.get("End_Timestamp")),
                "lds_bytes": as_count(lds),
                "scratch_bytes": as_count(row.get("Scratch_Size") or row.get("Private_Segment_Size")),
                "vgpr_count": as_count(row.get("VGPR_Count")),
                "agpr_count": as_count(row.get("Accum_VGPR_Count")),
                "sgpr_count": as_count(row.get("SGPR_Count")),
                "workgroup": tuple(as_count(row.get(f"Workgroup_Size_{a}")) or 1 for a in "XYZ"),
                "grid": tuple(as_count(row.get(f"Grid_Size_{a}")) or 1 for a in "XYZ"),
            }
        )
    return out


# --- additions: checked opening, stats, counter collection -------------------------

# Column aliases: direct rocprofv3 CSV name first, then the ``rocpd summary`` /
# 7.0 ``kernel_summary`` spellings (rocprofv3-interfaces.md §3.3, §4.3).
_STATS_COLUMNS = {
    "name": ("Name", "name", "NAME"),
    "calls": ("Calls", "calls", "total_calls", "CALLS"),
    "total_ns": ("TotalDurationNs", "DURATION (nsec)", "Total_Duration_Ns"),
    "average_ns": ("AverageNs", "AVERAGE (nsec)", "Average_Ns"),
    "percentage": ("Percentage", "PERCENT (INC)", "percentage"),
    "min_ns": ("MinNs", "MIN (nsec)", "Min_Ns"),
    "max_ns": ("MaxNs", "MAX (nsec)", "Max_Ns"),
    "stddev": ("StdDev", "STD_DEV", "Std_Dev"),
}


def read_header(path: Path) -> list[str]:
    """The stripped header names of a CSV file ([] for an empty file)."""
    return read_table(path)[0]


def read_checked_rows(path: Path, required: tuple[str, ...], what: str) -> Rows:
    """The rows of a CSV file after checking that the file exists and that every
    column of ``required`` (each entry may be ``"A|B"`` = A or B) is in the header."""
    header, rows = read_table(path)
    if not header:
        raise CorruptCapture(f"{Path(path).name}: empty file (expected a {what})")
    have = set(header)
    missing = [r.replace("|", " or ") for r in required if not any(alt in have for alt in r.split("|"))]
    if missing:
        raise CorruptCapture(f"{Path(path).name}: not a {what} (missing column {', '.join(missing)})")
    return rows


def _pick(row: dict, names: tuple[str, ...]):
    for n in names:
        v = row.get(n)
        if v is not None:
            return v
    return None


def read_kernel_stats(path: Path) -> Rows:
    """``*_kernel_stats.csv`` (also ``domain_stats.csv`` and the other
    ``*_stats.csv``): one row per name, in file order (total time, descending).

    Keys: name, calls, total_ns, average_ns, percentage, min_ns, max_ns,
    stddev. Missing optional columns give None; numbers accept scientific
    notation (``2.033e-03``, ``0.00000000e+00``)."""
    header, rows = read_table(path)
    required = []
    for key in ("name", "calls", "total_ns"):
        if not any(a in header for a in _STATS_COLUMNS[key]):
            required.append(_STATS_COLUMNS[key][0])
    if not header:
        raise CorruptCapture(f"{Path(path).name}: empty file (expected a rocprofv3 *_stats.csv)")
    if required:
        raise CorruptCapture(f"{Path(path).name}: not a rocprofv3 stats CSV (missing column {', '.join(required)})")
    out = Rows(warnings=rows.warnings)
    for row in rows:
        name = (_pick(row, _STATS_COLUMNS["name"]) or "").strip()
        calls = as_int(_pick(row, _STATS_COLUMNS["calls"]))
        total = as_float(_pick(row, _STATS_COLUMNS["total_ns"]))
        if not name and calls is None:
            continue  # blank line
        average = as_float(_pick(row, _STATS_COLUMNS["average_ns"]))
        if average is None and total is not None and calls:
            average = total / calls
        out.append(
            {
                "name": name,
                "calls": calls,
                "total_ns": total,
                "average_ns": average,
                "percentage": as_float(_pick(row, _STATS_COLUMNS["percentage"])),
                "min_ns": as_float(_pick(row, _STATS_COLUMNS["min_ns"])),
                "max_ns": as_float(_pick(row, _STATS_COLUMNS["max_ns"])),
                "stddev": as_float(_pick(row, _STATS_COLUMNS["stddev"])),
            }
        )
    return out


def read_counter_collection(path: Path) -> Rows:
    """``counter_collection.csv`` in its long form: one row per (dispatch, counter).

    Accepts the 19-column 7.x layout, the older 16/17-column ones (no
    ``Kernel_Id``, ``Accum_VGPR_Count`` or timestamps → None), integer or
    ``"Agent N"`` agent ids, and the ``rocpd convert`` variant with a leading
    ``Pid``/``Guid`` column (ignored: columns are read by name). Each row's
    ``counter_value`` is the value rocprofv3 wrote: already the sum over the
    counter's hardware instances (rocprofv3-interfaces.md §3.5)."""
    rows = read_checked_rows(path, ("Dispatch_Id", "Counter_Name", "Counter_Value"), "rocprofv3 counter_collection.csv")
    out = Rows(warnings=rows.warnings)
    for row in rows:
        kind, agent = parse_agent_id(row.get("Agent_Id"))
        out.append(
            {
                "correlation_id": as_int(row.get("Correlation_Id")),
                "dispatch_id": as_int(row.get("Dispatch_Id")),
                "agent": agent,
                "agent_kind": kind,
                "queue_id": as_int(row.get("Queue_Id")),
                "pid": as_int(row.get("Process_Id")),
                "tid": as_int(row.get("Thread_Id")),
                "grid_size": as_int(row.get("Grid_Size")),
                "kernel_id": as_int(row.get("Kernel_Id")),
                "kernel_name": row.get("Kernel_Name") or "",
                "workgroup_size": as_int(row.get("Workgroup_Size")),
                "lds": as_int(row.get("LDS_Block_Size")),
                "scratch": as_int(row.get("Scratch_Size")),
                "vgpr": as_int(row.get("VGPR_Count")),
                "agpr": as_int(row.get("Accum_VGPR_Count")),
                "sgpr": as_int(row.get("SGPR_Count")),
                "counter_name": (row.get("Counter_Name") or "").strip(),
                "counter_value": as_float(row.get("Counter_Value")),
                "start_ns": as_int(row.get("Start_Timestamp")),
                "end_ns": as_int(row.get("End_Timestamp")),
            }
        )
    return out


_PIVOT_FIELDS = (
    ("kernel_name", "kernel_name"),
    ("kernel_id", "kernel_id"),
    ("grid_size", "grid_size"),
    ("workgroup_size", "workgroup_size"),
    ("lds", "lds"),
    ("scratch", "scratch"),
    ("vgpr", "vgpr"),
    ("agpr", "agpr"),
    ("sgpr", "sgpr"),
    ("pid", "pid"),
    ("start_ns", "start_ns"),
    ("end_ns", "end_ns"),
)


def pivot_counters(rows: list[dict]) -> dict[tuple, dict]:
    """Long counter rows → ``{(agent, dispatch_id): {"kernel_name", "kernel_id",
    "grid_size", "workgroup_size", "lds", "scratch", "vgpr", "agpr", "sgpr",
    "pid", "start_ns", "end_ns", "counters": {name: value}}}``, in first-seen order.

    Nothing is summed: rocprofv3 already wrote one instance-summed value per
    counter per dispatch. If a counter repeats for the same dispatch (files
    concatenated from several processes), the first value is kept and the name
    is listed under ``"repeated"``."""
    out: dict[tuple, dict] = {}
    for r in rows:
        key = (r.get("agent"), r.get("dispatch_id"))
        d = out.get(key)
        if d is None:
            d = {dst: r.get(src) for dst, src in _PIVOT_FIELDS}
            d["counters"] = {}
            d["repeated"] = []
            out[key] = d
        name = r.get("counter_name") or ""
        if name in d["counters"]:
            if name not in d["repeated"]:
                d["repeated"].append(name)
            continue
        d["counters"][name] = r.get("counter_value")
    return out


_TRACE_REQUIRED = ("Kernel_Name", "Start_Timestamp", "End_Timestamp")
_PID_PREFIX = re.compile(r"^(\d+)_")


def read_kernel_trace_checked(path: Path) -> Rows:
    """``read_kernel_trace`` after checking the file exists and has the dispatch
    columns (a one-line CorruptCapture otherwise)."""
    header, rows = read_table(path)
    if not header:
        raise CorruptCapture(f"{Path(path).name}: empty file (expected a rocprofv3 kernel_trace.csv)")
    missing = [c for c in _TRACE_REQUIRED if c not in header]
    if missing:
        raise CorruptCapture(f"{Path(path).name}: not a rocprofv3 kernel_trace.csv (missing column {', '.join(missing)})")
    return _dispatch_rows(rows)


def pid_from_filename(path: Path) -> int | None:
    """The process id of ``<pid>_kernel_trace.csv`` (the default ``-o %hostname%/%pid%``), else None."""
    m = _PID_PREFIX.match(Path(path).name)
    return int(m.group(1)) if m else None
