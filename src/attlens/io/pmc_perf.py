"""PMC counter tables, read by header name.

* :func:`read_pmc_perf` — rocprofiler-compute's wide ``pmc_perf.csv`` (one row
  per dispatch, one column per counter, passes already merged by RCP).
* :func:`pivot_counter_rows` — rocprofv3's long ``counter_collection.csv``
  rows (one row per dispatch and counter, §3.5) into the same shape.

Both return ``{dispatch_id: {"kernel_name", "gpu", "counters": {name: value},
"start_ns", "end_ns", "notes"}}``, ready for
:func:`attlens.analysis.pmc.analyze_dispatches`. Counter values are floats; an
empty or non-numeric cell leaves the counter out (unavailable), never 0.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from attlens.errors import CorruptCapture, InputNotFound

# rocprofiler-compute metadata columns (also repeated with a _N suffix per pass:
# Kernel_ID_3, Wave_Size_7, XCC_Index_5). Everything else named BLOCK_... is a counter.
_META = {
    "Dispatch_ID", "GPU_ID", "Grid_Size", "Workgroup_Size", "LDS_Per_Workgroup", "Scratch_Per_Workitem",
    "Arch_VGPR", "Accum_VGPR", "SGPR", "Wave_Size", "Kernel_Name", "Correlation_ID", "Kernel_ID", "XCC_Index",
    "Start_Timestamp", "End_Timestamp", "Node", "PID", "Process_ID", "Queue_ID", "Thread_ID", "Agent_ID", "GPU_Node",
}
_SUFFIX = re.compile(r"_\d+$")
_COUNTER = re.compile(r"^[A-Z][A-Z0-9]*_[A-Za-z0-9_]*(\[\d+\])?$")
_AGENT = re.compile(r"^\s*(?:(?:Agent|GPU|CPU)\s+)?(\d+)\s*$")


def _float(v) -> float | None:
    if v is None:
        return None
    s = str(v).strip()
    if not s:
        return None
    try:
        x = float(s)
    except ValueError:
        return None
    return x if math.isfinite(x) else None


def _int(v) -> int | None:
    x = _float(v)
    return None if x is None or x != int(x) or not -(2.0**63) <= x < 2.0**63 else int(x)


def _is_meta(col: str) -> bool:
    return col in _META or _SUFFIX.sub("", col) in _META


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    import io

    from attlens.io.rocprof_csv import read_text  # confined, regular files only, BOM removed

    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    text = read_text(path)
    try:
        rd = csv.reader(io.StringIO(text, newline=""))
        header = next(rd, None)
        if header is None:
            raise CorruptCapture(f"{path.name}: empty file")
        return [h.strip() for h in header], [row for row in rd if row]
    except csv.Error as exc:
        raise CorruptCapture(f"{path.name}: unreadable CSV ({exc})") from None


def _duration_note(start, end) -> list[str]:
    if start is not None and end is not None and end <= start:
        return [f"Start_Timestamp {start!r} >= End_Timestamp {end!r} (rounded in the CSV?): duration unavailable"]
    return []


def read_pmc_perf(path: str | Path, *, keep_instances: bool = False) -> dict[int, dict]:
    """Read rocprofiler-compute's wide ``pmc_perf.csv`` (a file, or a folder holding one).

    Columns are found by header name; the first of duplicated names wins.
    Per-instance columns (``TCC_HIT[12]``) are dropped unless ``keep_instances``.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "pmc_perf.csv"
    if not p.is_file():
        raise InputNotFound(f"{p}: no such pmc_perf.csv")
    header, rows = _rows(p)
    col: dict[str, int] = {}
    for i, h in enumerate(header):
        col.setdefault(h, i)
    if "Dispatch_ID" not in col:
        raise CorruptCapture(f"{p.name}: no Dispatch_ID column (not a rocprofiler-compute pmc_perf.csv)")
    counter_cols = [(h, i) for h, i in col.items() if not _is_meta(h) and _COUNTER.match(h) and (keep_instances or "[" not in h)]

    def cell(row, name):
        i = col.get(name)
        return row[i] if i is not None and i < len(row) else None

    out: dict[int, dict] = {}
    for n, row in enumerate(rows, start=2):
        short = [f"{p.name}: line {n} has {len(row)} fields where the header has {len(header)} (a line cut short?); "
                 "counters past them are unavailable"] if len(row) != len(header) else []
        did = _int(cell(row, "Dispatch_ID"))
        if did is None:
            raise CorruptCapture(f"{p.name}: line {n}: Dispatch_ID {cell(row, 'Dispatch_ID')!r} is not an integer")
        if did in out:
            raise CorruptCapture(f"{p.name}: line {n}: Dispatch_ID {did} appears twice")
        counters = {}
        for h, i in counter_cols:
            v = _float(row[i]) if i < len(row) else None
            if v is not None:
                counters[h] = v
        start, end = _float(cell(row, "Start_Timestamp")), _float(cell(row, "End_Timestamp"))
        out[did] = {
            "kernel_name": (cell(row, "Kernel_Name") or None),
            "gpu": _int(cell(row, "GPU_ID")),
            "counters": counters,
            "start_ns": start,
            "end_ns": end,
            "notes": short + _duration_note(start, end),
        }
    return dict(sorted(out.items()))


def pivot_counter_rows(rows: Iterable[Mapping[str, str]], *, source: str = "counter_collection.csv") -> dict[int, dict]:
    """rocprofv3 ``counter_collection.csv`` rows (csv.DictReader dicts) -> the same pivot.

    Key: ``Dispatch_Id``. Rows of several processes (``Process_Id``) are
    refused: dispatch ids restart in every process. A counter repeated for a
    dispatch with a different value is refused too (the CSV already sums
    instances, §3.5).
    """
    out: dict[int, dict] = {}
    pids: set[str] = set()
    for n, row in enumerate(rows, start=2):
        row = {(k or "").strip(): v for k, v in row.items()}
        did = _int(row.get("Dispatch_Id"))
        name = (row.get("Counter_Name") or "").strip()
        if did is None or not name:
            raise CorruptCapture(f"{source}: line {n}: no Dispatch_Id or Counter_Name")
        pid = (row.get("Process_Id") or "").strip()
        if pid:
            pids.add(pid)
            if len(pids) > 1:
                raise CorruptCapture(f"{source}: rows of several processes ({', '.join(sorted(pids))}); dispatch ids "
                                     "restart per process, pivot one process at a time")
        m = _AGENT.match(str(row.get("Agent_Id") or ""))
        rec = out.setdefault(did, {
            "kernel_name": (row.get("Kernel_Name") or None), "gpu": int(m.group(1)) if m else None,
            "counters": {}, "start_ns": _float(row.get("Start_Timestamp")), "end_ns": _float(row.get("End_Timestamp")),
            "notes": [], "pid": _int(pid) if pid else None,
        })
        v = _float(row.get("Counter_Value"))
        if v is None:
            continue
        old = rec["counters"].get(name)
        if old is not None and old != v:
            raise CorruptCapture(f"{source}: dispatch {did}: counter {name} twice ({old:g} and {v:g})")
        rec["counters"][name] = v
    for rec in out.values():
        rec["notes"] = _duration_note(rec["start_ns"], rec["end_ns"])
    return dict(sorted(out.items()))


def read_counter_collection(path: str | Path) -> dict[int, dict]:
    """Read one ``*_counter_collection.csv`` and pivot it (:func:`pivot_counter_rows`)."""
    p = Path(path)
    if not p.is_file():
        raise InputNotFound(f"{p}: no such counter_collection.csv")
    from attlens.io.rocprof_csv import read_rows  # the one CSV reader for rocprofv3 files

    rows = read_rows(p)
    out = pivot_counter_rows(rows, source=p.name)
    for rec in out.values():  # a skipped row (a line cut short) may be any dispatch's counter: each says so
        rec["notes"] = [*(f"{w}; a counter of this dispatch may be missing" for w in rows.warnings), *rec["notes"]]
    return out
