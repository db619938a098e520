"""PMC counter tables, read by header name.

* :func:`read_pmc_perf` — rocprofiler-compute's ``pmc_perf.csv``: the wide
  form (one row per dispatch, one column per counter, passes already merged by
  RCP) or the long form of the rocpd path (ROCm 7: one ``Counter_Name`` /
  ``Counter_Value`` row per dispatch and counter), told apart by the header.
* :func:`read_workload` — a rocprofiler-compute workload folder: its
  ``pmc_perf.csv``, or, when that merged file is absent, the per-pass
  ``pmc_perf_N.csv`` files merged by dispatch id (one collection: the passes
  replay the same program), plus its ``sysinfo.csv``.
* :func:`pivot_counter_rows` — rocprofv3's long ``counter_collection.csv``
  rows (one row per dispatch and counter, §3.5) into the same shape.

Timestamps written in scientific notation (``1.62068E+14``, as a spreadsheet
re-save leaves them) keep a few significant digits: when the rounding step is
not far below the duration, the record's ``timing_unusable`` says so and no
bandwidth is computed from it.

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


_SCI = re.compile(r"^\s*[-+]?(\d+)(?:\.(\d*))?[eE]([-+]?\d+)\s*$")


def _rounding_ns(cell) -> float | None:
    """The rounding step of a timestamp written in scientific notation
    (``1.62068E+14`` → 1e9 ns), None for a plain integer or decimal."""
    m = _SCI.match(str(cell or ""))
    if not m:
        return None
    digits = len(m.group(1).lstrip("0") or "0") + len(m.group(2) or "")
    return 10.0 ** (int(m.group(3)) - (digits - 1))


def _timing_unusable(start_cell, end_cell, start, end) -> str | None:
    """Why End - Start cannot be the dispatch's duration, or None."""
    step = max((_rounding_ns(c) or 0.0) for c in (start_cell, end_cell))
    if step and (start is None or end is None or end - start < 100 * step):
        return (f"Start/End_Timestamp written as {str(start_cell).strip()} / {str(end_cell).strip()}: rounded to "
                f"{step:,.0f} ns in the CSV, too coarse for the kernel's duration")
    return None


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
    if "Counter_Name" in col and "Counter_Value" in col:
        return _pivot_long(p.name, header, rows)
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
        sc, ec = cell(row, "Start_Timestamp"), cell(row, "End_Timestamp")
        start, end = _float(sc), _float(ec)
        out[did] = {
            "kernel_name": (cell(row, "Kernel_Name") or None),
            "gpu": _int(cell(row, "GPU_ID")),
            "counters": counters,
            "start_ns": start,
            "end_ns": end,
            "notes": short + _duration_note(start, end),
            "timing_unusable": _timing_unusable(sc, ec, start, end),
        }
    return dict(sorted(out.items()))


def _pivot_long(name: str, header: list[str], rows: list[list[str]]) -> dict[int, dict]:
    """The long form of pmc_perf.csv (rocprofiler-compute's rocpd path, ROCm 7):
    one row per dispatch and counter, the dispatch's fields repeated. Each
    counter row carries the Start/End of the pass that collected it; like
    rocprofiler-compute's merge of per-pass files, Start/End are the means
    over the passes (the distinct Start/End pairs of the dispatch)."""
    dicts = [dict(zip(header, r)) for r in rows]
    out = pivot_counter_rows(({**d, "Dispatch_Id": d.get("Dispatch_ID"), "Agent_Id": d.get("GPU_ID")} for d in dicts), source=name)
    spans: dict[int, set] = {}
    for d in dicts:
        did = _int(d.get("Dispatch_ID"))
        if did is not None:
            spans.setdefault(did, set()).add((d.get("Start_Timestamp"), d.get("End_Timestamp")))
    for did, rec in out.items():
        pairs = sorted(spans.get(did, ()), key=str)
        starts = [_float(s) for s, _ in pairs]
        ends = [_float(e) for _, e in pairs]
        bad = next((u for u in (_timing_unusable(s, e, _float(s), _float(e)) for s, e in pairs) if u), None)
        if len(pairs) > 1 and None not in starts and None not in ends:
            rec["start_ns"], rec["end_ns"] = _mean_span(starts, ends)
            rec["notes"] = _duration_note(rec["start_ns"], rec["end_ns"]) + [
                f"Start/End are the means over the {len(pairs)} passes' timestamps"]
        rec["timing_unusable"] = bad
    return out


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
            "start_cell": row.get("Start_Timestamp"), "end_cell": row.get("End_Timestamp"),
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
        rec["timing_unusable"] = _timing_unusable(rec.pop("start_cell"), rec.pop("end_cell"), rec["start_ns"], rec["end_ns"])
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


def _mean_span(starts: list[float], ends: list[float]) -> tuple[float, float]:
    """(mean Start, mean Start + mean duration): the mean of the durations is
    exact where a mean of 10^16-ns timestamps in floats would lose nanoseconds."""
    n = len(starts)
    return sum(starts) / n, sum(starts) / n + sum(e - s for s, e in zip(starts, ends)) / n


_PASS_FILE = re.compile(r"pmc_perf_(\d+)\.csv")


def pass_files(folder: Path) -> list[Path]:
    """The per-pass ``pmc_perf_N.csv`` files of a workload folder, by N."""
    found = []
    for p in folder.iterdir():
        m = _PASS_FILE.fullmatch(p.name)
        if m and p.is_file():
            found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def merge_pass_files(files: list[Path]) -> dict[int, dict]:
    """rocprofiler-compute's per-pass files merged by dispatch id, as its own
    merge does: each counter from the pass that collected it, Start/End the
    mean over the passes (so End - Start is the mean duration). The passes
    replay one program, so a dispatch id names the same launch in each; a
    kernel name that differs between passes is refused."""
    from attlens.analysis.pmc import merge_passes  # pure merge of pivots (no import circle: pmc imports no io)

    passes = [read_pmc_perf(f) for f in files]
    merged = merge_passes(passes, run_ids=["workload"] * len(passes))
    for did, rec in merged.items():
        spans = [(p[did]["start_ns"], p[did]["end_ns"]) for p in passes if did in p]
        spans = [(a, b) for a, b in spans if a is not None and b is not None]
        if spans:
            rec["start_ns"], rec["end_ns"] = _mean_span([a for a, _ in spans], [b for _, b in spans])
        bad = [p[did].get("timing_unusable") for p in passes if did in p and p[did].get("timing_unusable")]
        rec["timing_unusable"] = bad[0] if bad else None
        rec["notes"] = _duration_note(rec["start_ns"], rec["end_ns"]) + [
            f"merged from {len(rec['passes'])} per-pass pmc_perf_N.csv files (no merged pmc_perf.csv); "
            "Start/End are the means over the passes"]
    return merged


def read_workload(folder: str | Path) -> tuple[dict[int, dict], str, dict | None]:
    """(pivot, source, sysinfo) of a rocprofiler-compute workload folder:
    ``pmc_perf.csv`` (wide or long), else the per-pass files merged; sysinfo
    is :func:`attlens.io.sysinfo_csv.read_sysinfo` or None when absent."""
    from attlens.errors import EmptyCapture
    from attlens.io.sysinfo_csv import read_sysinfo

    d = Path(folder)
    sysinfo = read_sysinfo(d / "sysinfo.csv") if (d / "sysinfo.csv").is_file() else None
    if (d / "pmc_perf.csv").is_file():
        return read_pmc_perf(d / "pmc_perf.csv"), str(d / "pmc_perf.csv"), sysinfo
    files = pass_files(d)
    if not files:
        raise InputNotFound(f"{d}: no pmc_perf.csv or pmc_perf_N.csv (not a rocprofiler-compute workload)")
    pivot = merge_pass_files(files)
    if not pivot:
        raise EmptyCapture(f"{d}: the {len(files)} per-pass pmc_perf_N.csv files hold no dispatch (header only): "
                           "the run's kernel or dispatch filter selected none (see its log.txt)")
    return pivot, f"{len(files)} per-pass pmc_perf_N.csv files under {d}", sysinfo
