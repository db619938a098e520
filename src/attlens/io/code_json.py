"""``code.json``: the static ISA listing with per-pc sums over all traced waves.

Format: ../shared/docs/att-format.md §2.2; the generations attlens reads are in
docs/formats.md. The layout is recognised by what the file holds, never by its
``version`` (the 8-column form says "3.0.0" too):

* ``rocprofv3`` — a ``header`` naming the columns, 10 positional columns
  ``[ISA, _, index, source, codeobj, vaddr, Hit, Latency, Stall, Idle]``
  (att-tool 3.x); the PC-sampling variant adds named columns.
* ``rocprofv3-8col`` — early rocprofv3 (before 2025): no ``header``, 8 columns
  ``[ISA, _, index, source, codeobj, vaddr, Hit, Latency]``. Stall and Idle are
  not in the file: attlens recomputes them from the wave files and the
  code.json side of the cross-check is *unavailable* for them.
* ``rocprofv2`` — the rocprofv2 ATT plugin: no ``header``, 8 columns
  ``[ISA, category, index, source, line_index, line_number, Hit, Latency]``;
  columns 4 and 5 are the plugin's running line counters, not a code object
  and an address (unavailable); a ``; Begin ATT ASM`` marker row shares
  index 0 with the kernel's label row.

Label rows (``"; name"``) occupy a pc index but are not instructions. A label
row whose index another row already holds (rocprofv2 numbers a label with the
index of the row before it) is kept as a label of that position without a pc
of its own.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture, EmptyCapture, UnsupportedLayout
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
_SUMS = ("hit", "latency", "stall", "idle")
# The rocprofv2 plugin's marker row before the kernel's label (plugin/att/att.py).
V2_MARKER = "; Begin ATT ASM"
# code.json layouts (docs/formats.md)
LAYOUT_V3 = "rocprofv3"
LAYOUT_V3_8COL = "rocprofv3-8col"
LAYOUT_V2 = "rocprofv2"

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
    layout: str = LAYOUT_V3  # rocprofv3 | rocprofv3-8col | rocprofv2 (module doc)
    # the per-pc sums the file holds (the others are zero-filled and unavailable)
    sums: tuple[str, ...] = _SUMS
    has_addresses: bool = True  # codeobj / vaddr are a code object and an ELF address

    @property
    def size(self) -> int:
        return len(self.isa)

    @property
    def instruction_mask(self) -> np.ndarray:
        return self.present & ~self.is_label

    def address(self, pc: int) -> tuple[int | None, int | None]:
        """(code object id, ELF vaddr) of a pc; (None, None) when the layout
        has no addresses (rocprofv2: unavailable, not 0)."""
        if not self.has_addresses:
            return None, None
        return int(self.codeobj[pc]), int(self.vaddr[pc])

    def has_sum(self, name: str) -> bool:
        """Does the file hold the per-pc sum ``name`` (hit, latency, stall, idle)?"""
        return name in self.sums


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


def _headerless_layout(doc: dict, rows: list, path: Path) -> tuple[str, int]:
    """(layout, columns) of a code.json without a ``header``, from its rows."""
    widths = {len(r) for r in rows if isinstance(r, list)}
    width = min(widths) if widths else 0
    if width >= 10:
        return LAYOUT_V3, width
    if width != 8:
        raise UnsupportedLayout(
            f"{path.name}: rows of {width} columns and no header: not a code.json layout attlens reads "
            "(rocprofv3: 10 columns with a header; early rocprofv3 and rocprofv2: 8 columns "
            "[ISA, _, index, source, codeobj|line, vaddr|line, Hit, Latency])"
        )
    plugin = "top_n" in doc or any(
        isinstance(r, list) and r and isinstance(r[0], str)
        and (r[0].strip() == V2_MARKER or (not r[0].startswith(";") and r[1] not in (0, None)))
        for r in rows
    )
    return (LAYOUT_V2 if plugin else LAYOUT_V3_8COL), width


def _slots(rows: list, cols: dict, path: Path) -> tuple[list[int], list[bool]]:
    """The pc index of each row, and whether the row takes that pc's slot.

    Two rows may share an index only when all but one are label rows: the
    other row (the instruction, or the last label) takes the slot, the other
    labels stay labels of that position (rocprofv2 numbers its marker row and
    any later symbol label with the index of the row before)."""
    pcs = []
    for i, row in enumerate(rows):
        pc = row[cols["LineNumber"]]
        if isinstance(pc, bool) or not isinstance(pc, int) or pc < 0:
            raise CorruptCapture(f"{path.name}: row {i} has an invalid pc index {str(pc)[:40]}")
        pcs.append(pc)
    owner: dict[int, int] = {}
    for i, (row, pc) in enumerate(zip(rows, pcs)):
        text = row[cols["ISA"]]
        label = isinstance(text, str) and text.startswith(";")
        j = owner.get(pc)
        if j is None:
            owner[pc] = i
            continue
        prev = rows[j][cols["ISA"]]
        prev_label = isinstance(prev, str) and prev.startswith(";")
        if not label and not prev_label:
            raise CorruptCapture(f"{path.name}: pc index {pc} appears twice")
        if not label or prev_label:  # the instruction wins; of two labels the later one
            owner[pc] = i
    takes = [owner[pc] == i for i, pc in enumerate(pcs)]
    return pcs, takes


def read_code_json(path: Path) -> CodeListing:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    rows = doc.get("code")
    expect(isinstance(rows, list), path, "no 'code' list")
    if not rows:
        raise EmptyCapture(f"{path.name}: the ISA listing is empty (no instruction was decoded)")
    header = doc.get("header")
    if header is not None:
        layout, cols = LAYOUT_V3, _column_map(header, path)
        sums = _SUMS
        _check_header(rows, cols, path)
    else:
        bad = next((i for i, r in enumerate(rows) if not isinstance(r, list)), None)
        expect(bad is None, path, f"row {bad} is not a list")
        layout, _width = _headerless_layout(doc, rows, path)
        cols = dict(_POSITIONS)
        sums = _SUMS if layout == LAYOUT_V3 else ("hit", "latency")
    sum_cols = {"Hit": "hit", "Latency": "latency", "Stall": "stall", "Idle": "idle"}
    int_names = ["Codeobj", "Vaddr"] + [k for k, v in sum_cols.items() if v in sums]
    need = max(cols[k] for k in ("ISA", "LineNumber", "Source", *int_names))
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) <= need:
            raise CorruptCapture(f"{path.name}: row {i} has {len(row) if isinstance(row, list) else 'no'} columns, expected at least {need + 1}")
    pcs, takes = _slots(rows, cols, path)
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
    for i, (row, pc, take) in enumerate(zip(rows, pcs, takes)):
        text = row[cols["ISA"]]
        if not isinstance(text, str):
            raise CorruptCapture(f"{path.name}: row {i} ISA text is not a string")
        if text.startswith(";"):
            name = text[1:].strip()
            if text.strip() != V2_MARKER and name:
                labels.append((pc, name))
            if not take:
                continue
            is_label[pc] = True
        elif not take:
            continue
        present[pc] = True
        isa[pc] = text
        src = row[cols["Source"]]
        source[pc] = src if isinstance(src, str) else ""
        for k in int_names:
            v = _count(row[cols[k]])
            if v is None:
                raise CorruptCapture(f"{path.name}: row {i} column {k} is not a 64-bit integer: {str(row[cols[k]])[:40]}")
            ints[k][pc] = v
        for k in extra_names:
            if cols[k] < len(row):
                extra[k][pc] = row[cols[k]]
    addresses = layout != LAYOUT_V2
    if not addresses:  # the plugin's line counters, not a code object and an address
        ints["Codeobj"][:] = 0
        ints["Vaddr"][:] = 0

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
        layout=layout,
        sums=tuple(sums),
        has_addresses=addresses,
    )
    if not listing.instruction_mask.any():
        raise EmptyCapture(f"{path.name}: the ISA listing holds only label rows, no instruction")
    return listing
