"""The ISA window around one instruction, with its figures and source lines.

The view a person (or an agent) needs to reason about a hotspot: ``around``
instructions before and after the pc in listing order (label rows in between
are kept, they mark branch targets and loop heads), each with its measured
cycles, its class, its own source line, and for waits the memory ops they
waited on (for memory ops, the wait cycles they caused). Then the distinct
source lines of the window, with their text when the capture carries a
snapshot of the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.errors import UsageError
from attlens.results import brief_repr


@brief_repr("pc", "isa", "class_", "executed", ("stall", lambda a: None if a.hotspot is None else a.hotspot.stall), "source")
@dataclass
class AsmRow:
    pc: int
    label: str | None  # label rows: the symbol; instructions: None
    vaddr: int | None  # None: the layout records no addresses (rocprofv2)
    isa: str
    mnemonic: str
    class_: str  # static taxonomy class (JSON: "class")
    executed: bool
    hotspot: object | None  # attlens.analysis.hotspots.InstructionHotspot when executed
    waits_on: list[tuple[int, int]]  # waits: [(producer pc, cycles charged)]
    source: str | None


@dataclass
class SourceLine:
    source: str
    text: str | None  # None: the capture has no snapshot of the file


@brief_repr("pc", "around", "first_pc", "last_pc", ("rows", lambda w: len(w.rows)), ("sources", lambda w: len(w.sources)))
@dataclass
class AsmWindow:
    pc: int
    around: int
    rows: list[AsmRow]
    sources: list[SourceLine]  # distinct own source lines of the window, first appearance order
    first_pc: int
    last_pc: int
    result: object = field(default=None, repr=False)  # the AnalysisResult it came from

    @property
    def warnings(self) -> list[str]:
        """The analysis' warnings about the capture (the ``warnings`` key)."""
        return self.result.warnings

    def to_dict(self) -> dict:
        """The ``attlens.asm`` object (``attlens asm --json``)."""
        from attlens.jsondoc import capture_ref, header

        return {
            **header("attlens.asm"),
            "capture": capture_ref(self.result.dispatch),
            "pc": self.pc,
            "around": self.around,
            "first_pc": self.first_pc,
            "last_pc": self.last_pc,
            "rows": [self._row(a) for a in self.rows],
            "sources": [{"source": s.source, "text": s.text} for s in self.sources],
            "pc_sampling": _join_ref(self.result),
            "warnings": self.warnings,
        }

    def to_pandas(self):
        """The window as a DataFrame: one row per listed instruction or label in
        listing order, one column per key of ``rows`` in ``to_dict()``; the
        memory ops a wait waited on as two aligned columns, ``waits_on_pcs`` and
        ``waits_on_cycles`` (empty lists for other rows)."""
        from attlens.results import dataframe

        out = []
        for a in self.rows:
            row = self._row(a)
            ws = row.pop("waits_on")
            row["waits_on_pcs"] = [w["pc"] for w in ws]
            row["waits_on_cycles"] = [w["cycles"] for w in ws]
            out.append(row)
        return dataframe(out)

    def _row(self, a: AsmRow) -> dict:
        h = a.hotspot
        row = {
            "pc": a.pc,
            "center": a.pc == self.pc,
            "label": a.label,
            "vaddr": a.vaddr,
            "isa": a.isa,
            "mnemonic": a.mnemonic or None,
            "class": a.class_ or None,
            "executed": a.executed,
            "source": a.source,
        }
        if a.label is not None:
            figures = dict.fromkeys(("hit", "latency", "stall", "idle", "issue", "stall_share", "latency_share", "exposed", "hidden", "waited_on"))
        elif h is None:  # listed, never executed: real zeros
            hidden_known = self.result.hidden is not None
            figures = {"hit": 0, "latency": 0, "stall": 0, "idle": 0, "issue": 0, "stall_share": 0.0, "latency_share": 0.0,
                       "exposed": 0 if hidden_known else None, "hidden": 0 if hidden_known else None, "waited_on": 0}
        else:
            figures = {"hit": h.hit, "latency": h.latency, "stall": h.stall, "idle": h.idle, "issue": h.issue,
                       "stall_share": round(h.stall_share, 6), "latency_share": round(h.latency_share, 6),
                       "exposed": h.exposed, "hidden": h.hidden, "waited_on": h.waited_on}
        recorded = self.result.dispatch.stall_recorded
        if not recorded and a.label is None:  # rocprofv2: no stall cycles in the records: unavailable, never 0
            figures.update(stall=None, issue=None, stall_share=None, waited_on=None)
        row.update(figures)
        row["stall_class"] = h.class_ if h is not None else None
        isa = self.result.dispatch.code.isa
        row["waits_on"] = [{"pc": p, "isa": isa[p], "cycles": c if recorded else None} for p, c in a.waits_on]
        join = getattr(self.result, "pc_sampling", None)
        if join is not None and join.mode != "none" and a.label is None:
            row["pc_samples"] = join.row([a.pc])  # sampled even where the traced waves never executed it
        return row


def _join_ref(result) -> dict | None:
    """Where the window's ``pc_samples`` come from (None: no PC samples)."""
    join = getattr(result, "pc_sampling", None)
    if join is None:
        return None
    return {"source": join.source["path"], "mode": join.mode, "scope": join.scope, "confidence": join.confidence, "reason": join.reason}


def resolve_pc(dispatch, pc) -> int:
    """An instruction's pc index from ``pc``: an index (an integer, or its
    decimal text ``"973"``) or an address, ``"0x…"`` text (the ``Vaddr`` of
    code.json, as the disassembly and rocprof-compute-viewer show it).
    Anything else, or a value naming no instruction, is a UsageError."""
    import numpy as np

    code = dispatch.code
    text = str(pc).strip() if isinstance(pc, str) else None
    if text is not None and text.lower().startswith("0x"):
        try:
            addr = int(text, 16)
        except ValueError:
            raise UsageError(f"pc {pc!r}: not a hexadecimal address") from None
        hits = np.flatnonzero((code.vaddr == addr) & code.instruction_mask)
        if len(hits):
            return int(hits[0])
        listed = np.flatnonzero(code.instruction_mask)
        near = int(listed[np.argmin(np.abs(code.vaddr[listed].astype(np.int64) - addr))]) if len(listed) else None
        hint = f"the nearest instruction is pc {near} at {hex(int(code.vaddr[near]))}" if near is not None else None
        raise UsageError(f"pc {text}: no instruction starts at that address", hint=hint)
    if text is not None:
        if not text.isdigit():
            raise UsageError(f"pc {pc!r}: expected an instruction index (973) or an address (0x1738)")
        pc = int(text)
    if isinstance(pc, bool) or not isinstance(pc, (int, np.integer)):
        raise UsageError(f"pc {pc!r}: expected an instruction index (973) or an address (0x1738)")
    pc = int(pc)
    if not (0 <= pc < code.size and code.instruction_mask[pc]):
        raise UsageError(f"pc {pc}: no instruction with that index (0..{code.size - 1}; an address is written 0x…)")
    return pc


def asm_window(result, pc, around: int = 10, attribution=None) -> AsmWindow:
    """``around`` instructions either side of ``pc`` (an instruction's pc
    index, or its address as ``"0x…"`` text: :func:`resolve_pc`)."""
    from attlens.analysis.waitattr import attribute_waits

    d = result.dispatch
    code, st = d.code, d.static
    mask = code.instruction_mask
    pc = resolve_pc(d, pc)
    if around < 0:
        raise UsageError(f"around {around}: must be 0 or more")
    lo = pc
    for _ in range(around):
        p = lo - 1
        while p >= 0 and not mask[p]:
            p -= 1
        if p < 0:
            break
        lo = p
    hi = pc
    for _ in range(around):
        p = hi + 1
        while p < code.size and not mask[p]:
            p += 1
        if p >= code.size:
            break
        hi = p
    # Label rows just before the first instruction belong to it (a loop head).
    while lo > 0 and code.present[lo - 1] and code.is_label[lo - 1]:
        lo -= 1
    att = attribution if attribution is not None else attribute_waits(d, result.deps, result.pairs)
    hot = {h.pc: h for h in result.hotspots.instructions}
    rows, sources, seen = [], [], set()
    for p in range(lo, hi + 1):
        if not code.present[p]:
            continue
        if code.is_label[p]:
            rows.append(AsmRow(p, code.isa[p].lstrip("; ").strip(), code.address(p)[1], code.isa[p], "", "", False, None, [], None))
            continue
        own = st.own_source[p]
        src = str(own) if own else None
        h = hot.get(p)
        waits_on = sorted(att.by_wait_pc.get(p, {}).items(), key=lambda kv: (-kv[1], kv[0]))
        rows.append(AsmRow(p, None, code.address(p)[1], code.isa[p], st.mnemonic[p], st.cls[p], h is not None, h, waits_on, src))
        if own is not None and src not in seen:
            seen.add(src)
            text = None
            if own.line is not None:
                lines = d.source_text(own)
                if lines is not None and 1 <= own.line <= len(lines):
                    text = lines[own.line - 1]
            sources.append(SourceLine(src, text))
    return AsmWindow(pc, around, rows, sources, lo, hi, result)
