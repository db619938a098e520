"""``code.json``: the static ISA listing with per-pc sums over all traced waves.

Format: ../shared/docs/att-format.md §2.2. Columns are found by header name
where the header names them, by position otherwise; label rows (``"; name"``)
occupy a pc index but are not instructions.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture, EmptyCapture
from attlens.io.jsonfile import expect, int64, json_safe_str, read_json
from attlens.results import brief_repr

# Positional layout of the ATT variant (att-format.md §2.2).
_POSITIONS = {
    "ISA": 0,
    "_": 1,
    "LineNumber": 2,
    "Source": 3,
    "Codeobj": 4,
    "Vaddr": 5,
    "Hit": 6,
    "Latency": 7,
    "Stall": 8,
    "Idle": 9,
}


@brief_repr("size", ("instructions", lambda c: int(c.instruction_mask.sum())), ("labels", lambda c: len(c.labels)), "version")
@dataclass
class CodeListing:
    """code.json as arrays indexed by pc index (``LineNumber``)."""

    isa: list[str]  # disassembly text; "" for pc indices absent from the file
    source: list[str]  # raw Source column ("path:line[ -> path:line ...]")
    is_label: np.ndarray  # bool, label rows ("; <symbol>")
    present: np.ndarray  # bool, the pc index has a row
    codeobj: np.ndarray  # int64
    vaddr: np.ndarray  # int64
    hit: np.ndarray  # int64, Σ over traced waves (writer's own sums)
    latency: np.ndarray
    stall: np.ndarray
    idle: np.ndarray
    labels: list[tuple[int, str]] = field(default_factory=list)  # (pc, symbol)
    version: str | None = None
    extra_columns: dict[str, list] = field(default_factory=dict)  # PC-sampling variant

    @property
    def size(self) -> int:
        return len(self.isa)

    @property
    def instruction_mask(self) -> np.ndarray:
        return self.present & ~self.is_label


def _column_map(header, path: Path) -> dict[str, int]:
    if header is None:
        return dict(_POSITIONS)
    if isinstance(header, str):
        names = [h.strip() for h in header.split(",")]
    elif isinstance(header, list):
        names = [str(h).strip() for h in header]
    else:
        raise CorruptCapture(f"{path.name}: 'header' is neither a string nor a list")
    cols = dict(_POSITIONS)
    for i, name in enumerate(names):
        if name in cols or name in ("PC_Issued", "PC_Stalled", "Stall_Reasons"):
            cols[name] = i
    return cols


_ISA_TEXT = re.compile(r";|[a-z][a-z0-9_.]*(\s|$)")  # a label row, or a mnemonic followed by its operands
_HEADER_SAMPLE = 4096  # rows looked at to check that the header describes them


def _check_header(rows: list, cols: dict[str, int], path: Path) -> None:
    """A header that names the columns in an order the rows do not follow
    (``Source`` first, say) would read source paths as instructions: no
    kernel name, every instruction of class 'other', silently. Refused when
    the column it calls ISA holds (almost) no instruction text."""
    i = cols["ISA"]
    texts = [r[i] for r in rows[:_HEADER_SAMPLE] if isinstance(r, list) and len(r) > i and isinstance(r[i], str) and r[i].strip()]
    looks = sum(1 for t in texts if _ISA_TEXT.match(t))
    if len(texts) < len(rows[:_HEADER_SAMPLE]) // 2 or looks < len(texts) // 2:
        where = next((n for n, c in cols.items() if c == _POSITIONS["ISA"] and n != "ISA"), None)
        raise CorruptCapture(
            f"{path.name}: the header names column {i} 'ISA', but that column holds {looks} instruction(s) in {len(rows[:_HEADER_SAMPLE])} rows"
            + (f" (the instructions are where the header says {where!r})" if where else "")
            + ": the header does not describe the rows")


def _count(v) -> int | None:
    """A per-pc sum: an integer (or an integral float, as some writers emit)
    that fits int64; None for anything else (bool, string, 2**63, 1e300)."""
    if isinstance(v, float) and math.isfinite(v) and -(2.0**63) <= v < 2.0**63:
        return int(v)
    return int64(v)


def read_code_json(path: Path) -> CodeListing:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    rows = doc.get("code")
    expect(isinstance(rows, list), path, "no 'code' list")
    cols = _column_map(doc.get("header"), path)
    if not rows:
        raise EmptyCapture(f"{path.name}: the ISA listing is empty (no instruction was decoded)")

    need = max(cols[k] for k in _POSITIONS)
    if doc.get("header") is not None:
        _check_header(rows, cols, path)
    pcs = []
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) <= need:
            raise CorruptCapture(f"{path.name}: row {i} has {len(row) if isinstance(row, list) else 'no'} columns, expected at least {need + 1}")
        pc = row[cols["LineNumber"]]
        if isinstance(pc, bool) or not isinstance(pc, int) or pc < 0:
            raise CorruptCapture(f"{path.name}: row {i} has an invalid pc index {str(pc)[:40]}")
        pcs.append(pc)
    n = max(pcs) + 1
    if n > 50 * len(rows) + 1024:
        raise CorruptCapture(f"{path.name}: pc index {n - 1} is far beyond the {len(rows)} rows")

    isa = [""] * n
    source = [""] * n
    is_label = np.zeros(n, dtype=bool)
    present = np.zeros(n, dtype=bool)
    ints = {k: np.zeros(n, dtype=np.int64) for k in ("Codeobj", "Vaddr", "Hit", "Latency", "Stall", "Idle")}
    labels: list[tuple[int, str]] = []
    extra_names = [k for k in ("PC_Issued", "PC_Stalled", "Stall_Reasons") if k in cols]
    extra: dict[str, list] = {k: [None] * n for k in extra_names}
    for i, (row, pc) in enumerate(zip(rows, pcs)):
        text = row[cols["ISA"]]
        if not isinstance(text, str):
            raise CorruptCapture(f"{path.name}: row {i} ISA text is not a string")
        if present[pc]:
            raise CorruptCapture(f"{path.name}: pc index {pc} appears twice")
        present[pc] = True
        isa[pc] = text
        src = row[cols["Source"]]
        source[pc] = src if isinstance(src, str) else ""
        if text.startswith(";"):
            is_label[pc] = True
            labels.append((pc, text[1:].strip()))
        for k, arr in ints.items():
            v = _count(row[cols[k]])
            if v is None:
                raise CorruptCapture(f"{path.name}: row {i} column {k} is not a 64-bit integer: {str(row[cols[k]])[:40]}")
            arr[pc] = v
        for k in extra_names:
            if cols[k] < len(row):
                extra[k][pc] = row[cols[k]]

    listing = CodeListing(
        isa=isa,
        source=source,
        is_label=is_label,
        present=present,
        codeobj=ints["Codeobj"],
        vaddr=ints["Vaddr"],
        hit=ints["Hit"],
        latency=ints["Latency"],
        stall=ints["Stall"],
        idle=ints["Idle"],
        labels=labels,
        version=json_safe_str(doc.get("version")),
        extra_columns=extra,
    )
    if not listing.instruction_mask.any():
        raise EmptyCapture(f"{path.name}: the ISA listing holds only label rows, no instruction")
    return listing
