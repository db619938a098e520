"""The decoder's per-instruction stats table: ``att_output.csv`` inside an early
rocprofv3 capture, ``stats_ui_output_agent_*.csv`` beside a later one
(att-format.md §2.8, rocprofv3-interfaces.md §3.9).

Columns, by header name: ``CodeObj``, ``Vaddr``, ``Instruction``,
``Hitcount``, ``Latency`` and, in later versions, ``Stall`` and ``Idle``, then
``Source``. attlens uses it only as a cross-check of ``code.json``: the same
rows, the same sums (:func:`compare_stats`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture
from attlens.io.rocprof_csv import as_int, read_table

_SUMS = {"Hitcount": "hit", "Latency": "latency", "Stall": "stall", "Idle": "idle"}


@dataclass
class StatsTable:
    codeobj: np.ndarray  # int64
    vaddr: np.ndarray
    label: np.ndarray  # bool: a "; name" row
    sums: dict[str, np.ndarray]  # hit / latency [/ stall / idle] -> int64 per row
    warnings: list[str]


def read_stats_csv(path: Path) -> StatsTable:
    header, rows = read_table(path)
    need = ("CodeObj", "Vaddr", "Instruction", "Hitcount", "Latency")
    missing = [c for c in need if c not in header]
    if missing:
        raise CorruptCapture(f"{path.name}: not a stats table (no {', '.join(missing)} column)")
    cols = [k for k in _SUMS if k in header]
    out = {_SUMS[k]: np.zeros(len(rows), dtype=np.int64) for k in cols}
    co = np.zeros(len(rows), dtype=np.int64)
    va = np.zeros(len(rows), dtype=np.int64)
    label = np.zeros(len(rows), dtype=bool)
    for i, r in enumerate(rows):
        vals = [as_int(r.get(k)) for k in ("CodeObj", "Vaddr", *cols)]
        if any(v is None for v in vals):
            raise CorruptCapture(f"{path.name}: row {i + 2} holds a value that is not an integer")
        co[i], va[i] = vals[0], vals[1]
        for k, v in zip(cols, vals[2:]):
            out[_SUMS[k]][i] = v
        label[i] = (r.get("Instruction") or "").lstrip().startswith(";")
    return StatsTable(co, va, label, out, list(rows.warnings))


def compare_stats(stats: StatsTable, code) -> dict[str, int]:
    """Per column held by both files, how many instruction rows differ (a row
    of the table with no code.json instruction at its code object and address
    counts as differing in every column)."""
    mask = code.instruction_mask
    pcs = np.flatnonzero(mask)
    index = {(int(c), int(v)): int(p) for p, c, v in zip(pcs, code.codeobj[pcs], code.vaddr[pcs])}
    rows = np.flatnonzero(~stats.label)
    where = np.array([index.get((int(stats.codeobj[i]), int(stats.vaddr[i])), -1) for i in rows], dtype=np.int64)
    found = where >= 0
    out = {}
    for name, col in stats.sums.items():
        if not code.has_sum(name):
            continue
        theirs = getattr(code, name)
        out[name] = int(np.count_nonzero(~found) + np.count_nonzero(col[rows[found]] != theirs[where[found]]))
    return out
