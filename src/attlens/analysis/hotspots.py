"""Stall and latency hotspots per instruction and per source line."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.stalls import CLASS_IDS, PcSums
from attlens.analysis.taxonomy import WAIT
from attlens.results import brief_repr


@brief_repr("pc", "isa", "class_", "hit", "stall", "latency", "source")
@dataclass
class InstructionHotspot:
    pc: int
    vaddr: int | None  # None: the layout records no addresses (rocprofv2)
    codeobj: int | None
    isa: str
    mnemonic: str
    class_: str  # static class, or for waits the class holding most of its stall (JSON: "class")
    hit: int
    latency: int
    stall: int
    idle: int
    issue: int
    stall_share: float  # of the kernel's total stall
    latency_share: float
    source: str | None
    inline_chain: list[str]
    class_stall: dict[str, int]  # non-zero classes only (waits: split by producers)
    waited_on: int  # wait cycles other instructions spent waiting for this one (memory ops)
    exposed: int | None = None  # idle + latency not hidden by other waves' work (None: not computed)
    hidden: int | None = None
    pc_samples: dict | None = None  # sampled stall reasons (analysis/pcsampling.py); None: no PC samples joined
    stall_recorded: bool = True  # False: the records carry no stall cycles (rocprofv2): stall, issue and their shares are null

    def to_dict(self) -> dict:
        """One row of ``instructions_by_*`` (``attlens.analyze``) and of ``attlens.hotspots --by instruction``."""
        return with_samples(self, without_stall(self, {
            "pc": self.pc,
            "vaddr": self.vaddr,
            "codeobj": self.codeobj,
            "isa": self.isa,
            "mnemonic": self.mnemonic,
            "class": self.class_,
            "hit": self.hit,
            "latency": self.latency,
            "stall": self.stall,
            "idle": self.idle,
            "issue": self.issue,
            "stall_share": round(self.stall_share, 6),
            "latency_share": round(self.latency_share, 6),
            "class_stall": self.class_stall,
            "waited_on": self.waited_on,
            "exposed": self.exposed,
            "hidden": self.hidden,
            "source": self.source,
            "inline_chain": self.inline_chain,
        }))


@brief_repr("source", "instructions", "hit", "stall", "latency", "dominant_class")
@dataclass
class LineHotspot:
    source: str  # "file:line" or "(no source)"
    file: str | None
    line: int | None
    instructions: int  # listed instructions on this line
    executed: int  # of them, executed at least once
    hit: int
    latency: int
    stall: int
    idle: int
    stall_share: float
    latency_share: float
    dominant_class: str
    class_stall: dict[str, int]
    inline_chains: list[str]  # distinct call-site chains of its instructions
    pcs: list[int] = field(default_factory=list)
    exposed: int | None = None
    hidden: int | None = None
    pc_samples: dict | None = None  # sampled stall reasons of its instructions; None: no PC samples joined
    stall_recorded: bool = True  # False: no stall cycles recorded (rocprofv2): stall and its share are null

    def to_dict(self) -> dict:
        """One row of ``lines_by_*`` (``attlens.analyze``) and of ``attlens.hotspots --by line``."""
        return with_samples(self, without_stall(self, {
            "source": self.source,
            "file": self.file,
            "line": self.line,
            "instructions": self.instructions,
            "executed": self.executed,
            "hit": self.hit,
            "latency": self.latency,
            "stall": self.stall,
            "idle": self.idle,
            "stall_share": round(self.stall_share, 6),
            "latency_share": round(self.latency_share, 6),
            "dominant_class": self.dominant_class,
            "class_stall": self.class_stall,
            "inline_chains": self.inline_chains,
            "exposed": self.exposed,
            "hidden": self.hidden,
            "pcs": self.pcs,
        }))


STALL_KEYS = ("stall", "issue", "stall_share", "class_stall")


def without_stall(row, d: dict) -> dict:
    """``d`` with its stall figures null when the records carry none (rocprofv2):
    unavailable, never 0; the keys keep their meaning."""
    if not getattr(row, "stall_recorded", True):
        for k in STALL_KEYS:
            if k in d:
                d[k] = None
    return d


def with_samples(row, d: dict) -> dict:
    """``d`` plus ``pc_samples`` when PC samples were joined (the key is absent otherwise)."""
    if row.pc_samples is not None:
        d["pc_samples"] = row.pc_samples
    return d


@brief_repr("listed", "executed", "never_executed", ("lines", lambda h: len(h.lines)),
            ("top_pc", lambda h: h.instructions[h.by_stall[0]].pc if h.by_stall else None))
@dataclass
class Hotspots:
    instructions: list[InstructionHotspot]  # every executed instruction, by pc
    lines: list[LineHotspot]  # every source line with an executed instruction
    by_stall: list[int]  # indices into instructions, ranked
    by_latency: list[int]
    lines_by_stall: list[int]
    lines_by_latency: list[int]
    listed: int  # instructions in the listing
    executed: int  # distinct instructions executed
    never_executed: int
    mix: dict[str, dict[str, int]]  # class -> {"listed", "executed", "records"}
    by_exposed: list[int] = field(default_factory=list)  # filled when hidden latency is computed
    lines_by_exposed: list[int] = field(default_factory=list)
    # False: the records carry no stall cycles (rocprofv2); by_stall and lines_by_stall then rank by latency
    # (the tables say so; attlens.analyze's *_by_stall keys are null)
    stall_recorded: bool = True


def attach_exposed(hot: "Hotspots", hidden) -> None:
    """Add exposed/hidden cycles to every hotspot row and rank by exposed."""
    for h in hot.instructions:
        h.exposed = int(hidden.exposed[h.pc])
        h.hidden = int(hidden.total[h.pc] - hidden.exposed[h.pc])
    for ln in hot.lines:
        ln.exposed = int(hidden.exposed[ln.pcs].sum())
        ln.hidden = int((hidden.total[ln.pcs] - hidden.exposed[ln.pcs]).sum())
    hot.by_exposed = sorted(range(len(hot.instructions)), key=lambda i: (-hot.instructions[i].exposed, i))
    hot.lines_by_exposed = sorted(range(len(hot.lines)), key=lambda i: (-hot.lines[i].exposed, i))


def _dominant(class_cycles: np.ndarray) -> str:
    if class_cycles.sum() <= 0:
        return "other"
    return CLASS_IDS[int(np.argmax(class_cycles))]


class _HotspotsCodec:
    """Hotspots to and from a digest (JSON)."""

    def encode(self, h: Hotspots):
        # the dataclass itself: the store serializes it with orjson, which
        # writes dataclasses natively (the same bytes as dataclasses.asdict,
        # without its deep copy: 0.3 s on flash_attn_func, 1 ms this way)
        return {}, h

    def decode(self, arrays, meta):
        meta = dict(meta)
        meta["instructions"] = [InstructionHotspot(**x) for x in meta["instructions"]]
        meta["lines"] = [LineHotspot(**x) for x in meta["lines"]]
        return Hotspots(**meta)


def compute_hotspots(dispatch, sums: PcSums) -> Hotspots:
    """Kept in the capture's digest when there is one (``sums`` must be the
    dispatch's own; exposed cycles are attached afterwards by attach_exposed)."""
    from attlens.cache import memo

    return memo(dispatch, f"hotspots-v3-{dispatch.arch.waitcnt_model}", lambda: _compute_hotspots(dispatch, sums), _HotspotsCodec())


def _compute_hotspots(dispatch, sums: PcSums) -> Hotspots:
    code, st = dispatch.code, dispatch.static
    recorded = bool(getattr(dispatch, "stall_recorded", True))
    total_stall = max(int(sums.stall.sum()), 1)
    total_lat = max(int(sums.latency.sum()), 1)
    instr_mask = code.instruction_mask
    executed_mask = instr_mask & (sums.hit > 0)

    instrs: list[InstructionHotspot] = []
    executed_pcs = np.flatnonzero(executed_mask)
    # per-pc values as Python ints once (indexing NumPy arrays per pc and field costs more than the rest)
    hit, lat, stall, idle, waited = (a[executed_pcs].tolist() for a in (sums.hit, sums.latency, sums.stall, sums.idle, sums.producer_wait))
    class_rows = sums.class_stall[executed_pcs].tolist()
    for k, pc in enumerate(executed_pcs.tolist()):
        cls = st.cls[pc]
        if cls == WAIT:
            cls = _dominant(sums.class_latency[pc])
        own = st.own_source[pc]
        codeobj, vaddr = code.address(pc)
        instrs.append(
            InstructionHotspot(
                pc=pc,
                vaddr=vaddr,
                codeobj=codeobj,
                isa=code.isa[pc],
                mnemonic=st.mnemonic[pc],
                class_=cls,
                hit=hit[k],
                latency=lat[k],
                stall=stall[k],
                idle=idle[k],
                issue=lat[k] - stall[k],
                stall_share=stall[k] / total_stall,
                latency_share=lat[k] / total_lat,
                source=str(own) if own else None,
                inline_chain=[str(s) for s in st.inline_chain[pc]],
                class_stall={CLASS_IDS[i]: v for i, v in enumerate(class_rows[k]) if v},
                waited_on=waited[k],
                stall_recorded=recorded,
            )
        )

    # Lines: group every listed instruction by its own location.
    groups: dict[str, list[int]] = {}
    for pc in np.flatnonzero(instr_mask).tolist():
        own = st.own_source[pc]
        key = str(own) if own else "(no source)"
        groups.setdefault(key, []).append(pc)
    lines: list[LineHotspot] = []
    for key, pcs in groups.items():
        arr = np.array(pcs)
        hit = int(sums.hit[arr].sum())
        if hit == 0:
            continue
        cs = sums.class_stall[arr].sum(axis=0)
        cl = sums.class_latency[arr].sum(axis=0)
        own = st.own_source[pcs[0]]
        chains = Counter(" -> ".join(str(s) for s in st.inline_chain[p]) for p in pcs if st.inline_chain[p])
        stall = int(sums.stall[arr].sum())
        lat = int(sums.latency[arr].sum())
        lines.append(
            LineHotspot(
                source=key,
                file=own.file if own else None,
                line=own.line if own else None,
                instructions=len(pcs),
                executed=int(np.count_nonzero(sums.hit[arr])),
                hit=hit,
                latency=lat,
                stall=stall,
                idle=int(sums.idle[arr].sum()),
                stall_share=stall / total_stall,
                latency_share=lat / total_lat,
                dominant_class=_dominant(cs) if cs.sum() > 0 else _dominant(cl),
                class_stall={CLASS_IDS[i]: int(v) for i, v in enumerate(cs) if v},
                inline_chains=[c for c, _ in chains.most_common()],
                pcs=pcs,
                stall_recorded=recorded,
            )
        )

    def rank(items, key):
        return sorted(range(len(items)), key=lambda i: (-key(items[i]), i))

    # Mix: listed / executed / dynamic records per class (waits under "wait").
    mix: dict[str, dict[str, int]] = {}
    for pc in np.flatnonzero(instr_mask).tolist():
        c = st.cls[pc]
        m = mix.setdefault(c, {"listed": 0, "executed": 0, "records": 0})
        m["listed"] += 1
        if sums.hit[pc]:
            m["executed"] += 1
            m["records"] += int(sums.hit[pc])

    listed = int(instr_mask.sum())
    executed = int(executed_mask.sum())
    # no stall recorded: every stall is 0, so "by stall" would be pc order; rank by latency (said where shown)
    stall_key = (lambda h: h.stall) if recorded else (lambda h: h.latency)
    return Hotspots(
        instructions=instrs,
        lines=lines,
        by_stall=rank(instrs, stall_key),
        by_latency=rank(instrs, lambda h: h.latency),
        lines_by_stall=rank(lines, stall_key),
        lines_by_latency=rank(lines, lambda h: h.latency),
        listed=listed,
        executed=executed,
        never_executed=listed - executed,
        mix=dict(sorted(mix.items(), key=lambda kv: -kv[1]["records"])),
        stall_recorded=recorded,
    )


@brief_repr("opcode", "class_", "instructions", "hit", "stall", "latency")
@dataclass
class OpcodeHotspot:
    """Every executed instruction with one mnemonic, summed (``analyze --by opcode``)."""

    opcode: str  # mnemonic
    class_: str  # static taxonomy class (waits: "wait"; JSON: "class")
    instructions: int  # distinct executed pcs with this mnemonic
    hit: int
    latency: int
    stall: int
    idle: int
    stall_share: float
    latency_share: float
    class_stall: dict[str, int]
    pcs: list[int]  # its pcs, largest stall first
    exposed: int | None = None
    hidden: int | None = None
    stall_recorded: bool = True  # False: no stall cycles recorded (rocprofv2): stall and its share are null

    def to_dict(self) -> dict:
        """One row of ``attlens.hotspots --by opcode``."""
        return without_stall(self, {
            "opcode": self.opcode,
            "class": self.class_,
            "instructions": self.instructions,
            "hit": self.hit,
            "latency": self.latency,
            "stall": self.stall,
            "idle": self.idle,
            "stall_share": round(self.stall_share, 6),
            "latency_share": round(self.latency_share, 6),
            "class_stall": self.class_stall,
            "exposed": self.exposed,
            "hidden": self.hidden,
            "pcs": self.pcs,
        })


def compute_opcode_hotspots(dispatch, hot: Hotspots) -> list[OpcodeHotspot]:
    """Group the instruction hotspots by mnemonic (by pc order of first appearance)."""
    groups: dict[str, list[InstructionHotspot]] = {}
    for h in hot.instructions:
        groups.setdefault(h.mnemonic, []).append(h)
    with_exposed = bool(hot.instructions) and hot.instructions[0].exposed is not None
    total_stall = sum(h.stall for h in hot.instructions)
    total_lat = sum(h.latency for h in hot.instructions)
    out = []
    for m, hs in groups.items():
        stall, lat = sum(h.stall for h in hs), sum(h.latency for h in hs)
        cs: Counter = Counter()
        for h in hs:
            cs.update(h.class_stall)
        out.append(
            OpcodeHotspot(
                opcode=m,
                class_=dispatch.static.cls[hs[0].pc],
                instructions=len(hs),
                hit=sum(h.hit for h in hs),
                latency=lat,
                stall=stall,
                idle=sum(h.idle for h in hs),
                stall_share=stall / total_stall if total_stall else 0.0,
                latency_share=lat / total_lat if total_lat else 0.0,
                class_stall=dict(cs.most_common()),
                pcs=[h.pc for h in sorted(hs, key=lambda h: (-h.stall, h.pc))],
                exposed=sum(h.exposed for h in hs) if with_exposed else None,
                hidden=sum(h.hidden for h in hs) if with_exposed else None,
                stall_recorded=hot.stall_recorded,
            )
        )
    return out


def rank_by(items: list, key: str) -> list[int]:
    """Indices of ``items`` ranked by attribute ``key`` (largest first, ties by position)."""
    return sorted(range(len(items)), key=lambda i: (-getattr(items[i], key), i))


HOTSPOT_GROUPINGS = ("instruction", "line", "opcode")
HOTSPOT_SORTS = ("stall", "latency", "exposed", "idle")


@brief_repr("by", "sort", ("rows", lambda t: len(t.rows)), ("first", lambda t: _key(t.rows[0]) if t.rows else None),
            ("first_stall", lambda t: t.rows[0].stall if t.rows else None))
@dataclass
class HotspotTable:
    """One ranking: instructions, source lines or opcodes by one measure."""

    by: str  # instruction | line | opcode
    sort: str  # stall | latency | exposed | idle
    rows: list  # every row of that grouping, ranked
    result: object = field(default=None, repr=False)  # the AnalysisResult it came from
    note: str | None = None  # why the ranking is not the one asked for (stall not recorded: ranked by latency)

    def to_pandas(self):
        """The whole ranking as a DataFrame: one row per instruction, line or
        opcode in rank order, one column per key of ``rows`` in ``to_dict()``."""
        from attlens.results import dataframe

        return dataframe([x.to_dict() for x in self.rows])

    @property
    def warnings(self) -> list[str]:
        """The analysis' warnings about the capture, and why the ranking is not
        the one asked for (the ``warnings`` key)."""
        return self.result.warnings + ([self.note] if self.note else [])

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.hotspots`` object (``attlens analyze --by BY --sort SORT --top TOP --json``;
        every row when ``top`` is None or 0)."""
        from attlens.jsondoc import capture_ref, header, rows, top_or_none

        r = self.result
        b = r.breakdown
        return {
            **header("attlens.hotspots"),
            "capture": capture_ref(r.dispatch),
            "by": self.by,
            "sort": self.sort,
            "topk": top_or_none(top),
            "rows_total": len(self.rows),
            "totals": {
                "latency": b.total_latency,
                "stall": b.total_stall if r.hotspots.stall_recorded else None,
                "idle": b.total_idle,
                "exposed": None if r.hidden is None else int(r.hidden.exposed.sum()),
            },
            "rows": [x.to_dict() for x in rows(self.rows, top)],
            "warnings": self.warnings,
        }


def _key(row) -> object:
    """What names a hotspot row: its pc, source line or opcode."""
    return next(getattr(row, a) for a in ("pc", "opcode", "source") if hasattr(row, a))


def hotspot_table(result, by: str = "instruction", sort: str = "stall") -> HotspotTable:
    from attlens.errors import UsageError

    if by not in HOTSPOT_GROUPINGS:
        raise UsageError(f"by={by!r}: expected one of {', '.join(HOTSPOT_GROUPINGS)}")
    if sort not in HOTSPOT_SORTS:
        raise UsageError(f"sort={sort!r}: expected one of {', '.join(HOTSPOT_SORTS)}")
    if sort == "exposed" and result.hidden is None:
        raise UsageError("sorting by exposed cycles needs the hidden-latency model, which this analysis skipped (analyze with it)")
    hot = result.hotspots
    note = None
    if sort == "stall" and not hot.stall_recorded:
        sort, note = "latency", STALL_UNRECORDED_RANKING
    items = {"instruction": hot.instructions, "line": hot.lines}.get(by)
    if items is None:
        items = compute_opcode_hotspots(result.dispatch, hot)
    return HotspotTable(by, sort, [items[i] for i in rank_by(items, sort)], result, note)


# one line wherever a ranking by stall is asked for on a capture without stall cycles
STALL_UNRECORDED_RANKING = "stall is not recorded by this profiler (rocprofv2): ranked by latency instead of stall"
