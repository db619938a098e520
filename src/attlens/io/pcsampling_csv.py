"""``<name>_pc_sampling_stochastic.csv`` and ``<name>_pc_sampling_host_trap.csv``
(rocprofv3-interfaces.md §9; real samples in ../shared/rocprofv3-samples/pc-sampling/).

Host-trap columns: ``Sample_Timestamp, Exec_Mask, Dispatch_Id, Instruction,
Instruction_Comment, Correlation_Id``; stochastic adds
``Wave_Issued_Instruction, Instruction_Type, Stall_Reason, Wave_Count``, the
enums written as full names (``ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_VALU``).
The CSV has no code object id or offset: its samples are located by the
instruction text only. ``Stall_Reason`` is kept only where the wave did not
issue and ``Instruction_Type`` only where it did (rocprofv3 fills both in
every row; the other one means nothing). A pc in a code object the profiler
did not know has the comment "Unrecognized code object id, ...": its
``code_object`` is -2.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture, EmptyCapture
from attlens.io.pcsampling import (
    INST_TYPE_PREFIX,
    INST_TYPES,
    REASON_PREFIX,
    REASONS,
    PcSampleTable,
    empty_columns,
    enum_index,
    popcount64,
)
from attlens.io.rocprof_csv import as_int, read_table

HOST_TRAP_COLUMNS = ("Sample_Timestamp", "Exec_Mask", "Dispatch_Id", "Instruction", "Instruction_Comment", "Correlation_Id")
STOCHASTIC_COLUMNS = HOST_TRAP_COLUMNS + ("Wave_Issued_Instruction", "Instruction_Type", "Stall_Reason", "Wave_Count")
UNRECOGNIZED = "Unrecognized code object id"


def _uint64(text: str) -> int | None:
    t = (text or "").strip()
    if not t.isdigit():
        return None
    v = int(t)
    return v if v < (1 << 64) else None


class _Interner:
    def __init__(self):
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        i = self._index.get(text)
        if i is None:
            i = self._index[text] = len(self.items)
            self.items.append(text)
        return i


def read_pc_sampling_csv(path: Path) -> PcSampleTable:
    path = Path(path)
    header, rows = read_table(path)
    if not header:
        raise EmptyCapture(f"{path.name}: empty file (no PC sample)")
    missing = [c for c in HOST_TRAP_COLUMNS if c not in header]
    if missing:
        raise CorruptCapture(f"{path.name}: not a rocprofv3 PC-sampling CSV (no column {', '.join(missing)})")
    stochastic = "Wave_Issued_Instruction" in header
    if stochastic and any(c not in header for c in STOCHASTIC_COLUMNS):
        raise CorruptCapture(f"{path.name}: stochastic PC-sampling CSV without "
                             f"{', '.join(c for c in STOCHASTIC_COLUMNS if c not in header)}")
    n = len(rows)
    cols = empty_columns(n)
    cols["method"][:] = 1 if stochastic else 0
    insts, comments = _Interner(), _Interner()
    masks = np.zeros(n, dtype=np.uint64)
    has_mask = np.zeros(n, dtype=bool)
    bad_enum = bad_number = unrecognized = 0
    for i, r in enumerate(rows):
        for col, key in (("timestamp", "Sample_Timestamp"), ("dispatch", "Dispatch_Id"), ("correlation", "Correlation_Id")):
            v = as_int(r[key])
            if v is None or v < 0:
                bad_number += 1
            else:
                cols[col][i] = v
        m = _uint64(r["Exec_Mask"])
        if m is None:
            bad_number += 1
        else:
            masks[i], has_mask[i] = m, True
        cols["inst"][i] = insts(r["Instruction"])
        comment = r["Instruction_Comment"]
        cols["comment"][i] = comments(comment)
        if comment.startswith(UNRECOGNIZED):
            cols["code_object"][i] = -2
            unrecognized += 1
        if not stochastic:
            continue
        issued = r["Wave_Issued_Instruction"].strip()
        wc = as_int(r["Wave_Count"])
        if wc is not None and 0 <= wc < (1 << 15):
            cols["wave_count"][i] = wc
        if issued not in ("0", "1"):
            bad_number += 1
            continue
        cols["issued"][i] = int(issued)
        if issued == "0":
            k = enum_index(r["Stall_Reason"], REASONS, REASON_PREFIX)
            bad_enum += k < 0
            cols["reason"][i] = k
        else:
            k = enum_index(r["Instruction_Type"], INST_TYPES, INST_TYPE_PREFIX)
            bad_enum += k < 0
            cols["inst_type"][i] = k
    cols["lanes"][has_mask] = popcount64(masks[has_mask])
    warnings = list(rows.warnings)
    if bad_number:
        warnings.append(f"{path.name}: {bad_number} field(s) that are not valid numbers; taken as unknown")
    if bad_enum:
        warnings.append(f"{path.name}: {bad_enum} sample(s) with a stall reason or instruction type attlens does not know; "
                        "counted as unknown")
    notes = []
    if unrecognized:
        notes.append(f"{unrecognized} sample(s) at a pc in a code object the profiler did not know (comment '{UNRECOGNIZED}')")
    return PcSampleTable("rocprofv3-csv", str(path), cols, insts.items, comments.items, warnings=warnings, notes=notes)
