"""The ``deps`` question: which memory ops the waits waited on, for the whole
kernel or for the producers and waits one pc or one source line selects.

The wait attribution (:mod:`attlens.analysis.waitattr`) charges every wait
cycle to the memory ops it resolved; :func:`select_deps` keeps the producers
and waits touching the selection (a producer of the selection with all its
waits, a wait of the selection with all its producers) and returns a
:class:`DepsResult` that carries what it was selected from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.results import brief_repr

DEPS_SCHEMA = "attlens.deps"
_PRODUCER_COLUMNS = ["pc", "isa", "source", "wait_class", "waited_cycles", "share_of_wait", "pairs", "executions",
                     "distance_instructions_median", "distance_instructions_min", "distance_cycles_median", "outstanding_mean", "waits"]
_WAIT_COLUMNS = ["wait_pc", "isa", "source", "stall", "charged_cycles", "producers"]


@brief_repr("pc", "line", ("producers", lambda d: len(d.producers)), ("waits", lambda d: len(d.waits)),
            ("total_charged", lambda d: d.attribution.total_charged), ("top_producer_pc", lambda d: d.producers[0].pc if d.producers else None))
@dataclass
class DepsResult:
    attribution: object  # attlens.analysis.waitattr.WaitAttribution of the whole kernel
    producers: list  # ProducerStats selected, most waited on first
    waits: dict[int, dict[int, int]]  # wait pc -> producer pc -> cycles charged, selected
    pc: int | None = None  # the selection (None: every producer and wait)
    line: str | None = None
    result: object = field(default=None, repr=False)  # the AnalysisResult it came from

    def wait_rows(self) -> list[tuple[int, dict[int, int]]]:
        """The selected waits, most cycles charged first."""
        return sorted(self.waits.items(), key=lambda kv: -sum(kv[1].values()))

    def to_pandas(self, table: str = "producers"):
        """Every selected row as a DataFrame, one column per JSON key: ``producers``
        (the memory ops waited on, most cycles first) or ``waits`` (the waits,
        each with the producers it waited on)."""
        from attlens.errors import UsageError
        from attlens.results import dataframe

        if table == "producers":
            return dataframe([_producer_dict(p, self.stall_recorded) for p in self.producers], _PRODUCER_COLUMNS)
        if table == "waits":
            return dataframe(self._wait_dicts(), _WAIT_COLUMNS)
        raise UsageError(f"table={table!r}: expected producers or waits")

    def _wait_dicts(self) -> list[dict]:
        r = self.result
        d = r.dispatch
        isa = d.code.isa
        out = []
        rec = self.stall_recorded
        for wpc, prods in self.wait_rows():
            loc = d.static.own_source[wpc]
            out.append({
                "wait_pc": wpc,
                "isa": isa[wpc],
                "source": str(loc) if loc else None,
                "stall": int(r.sums.stall[wpc]) if rec else None,
                "charged_cycles": int(sum(prods.values())) if rec else None,
                "producers": [{"pc": p, "isa": isa[p], "cycles": c if rec else None} for p, c in sorted(prods.items(), key=lambda kv: -kv[1])],
            })
        return out

    @property
    def stall_recorded(self) -> bool:
        """False: the records carry no stall cycles (rocprofv2), so no wait cycle can be charged:
        every cycle figure is unavailable (null), never 0."""
        return bool(getattr(self.result.dispatch, "stall_recorded", True))

    @property
    def warnings(self) -> list[str]:
        """The analysis' warnings about the capture (the ``warnings`` key)."""
        return self.result.warnings

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.deps`` object (``attlens deps [--pc N | --line L] --top TOP --json``; every row when ``top`` is None or 0)."""
        from attlens.jsondoc import capture_ref, header, rows

        from attlens.analysis.waitstats import WAIT_UNRECORDED

        r = self.result
        d = r.dispatch
        att = self.attribution
        rec = self.stall_recorded
        return {
            **header(DEPS_SCHEMA),
            "capture": capture_ref(d),
            "waitcnt_model": r.deps.model,
            "total_charged_cycles": att.total_charged if rec else None,
            "wait_executions_resolved": int(len(att.pairs.first_of_wait)),
            "producers": [_producer_dict(p, rec) for p in rows(self.producers, top)],
            "producer_lines": rows([
                {"source": src, "waited_cycles": cyc if rec else None,
                 "share_of_wait": round(cyc / att.total_charged, 6) if rec and att.total_charged else None, "producers": n}
                for src, cyc, n in att.by_producer_line()
            ], top),
            "waits": rows(self._wait_dicts(), top),
            "warnings": self.warnings if rec else [*self.warnings, WAIT_UNRECORDED],
        }


def _producer_dict(p, stall_recorded: bool = True) -> dict:
    """One row of ``producers`` (``attlens.deps``); its wait cycles null when no stall was recorded (rocprofv2)."""
    return {
        "pc": p.pc,
        "isa": p.isa,
        "source": p.source,
        "wait_class": p.wait_class,
        "waited_cycles": p.waited_cycles if stall_recorded else None,
        "share_of_wait": round(p.share_of_wait, 6) if stall_recorded else None,
        "pairs": p.pairs,
        "executions": p.executions,
        "distance_instructions_median": p.distance_instructions_median,
        "distance_instructions_min": p.distance_instructions_min,
        "distance_cycles_median": p.distance_cycles_median,
        "outstanding_mean": round(p.outstanding_mean, 3),
        "waits": [{"wait_pc": k, "cycles": v if stall_recorded else None} for k, v in p.waits.items()],
    }


def line_matches(loc: str, query: str) -> bool:
    """Path-suffix match: ``kernels/x.py:42`` matches ``/abs/path/kernels/x.py:42``."""
    return loc == query or loc.endswith("/" + query.lstrip("/"))


def select_deps(result, pc: int | None = None, line: str | None = None, attribution=None) -> DepsResult:
    """The producers and waits that ``pc`` / ``line`` select (all when
    neither); a pc that is not an instruction or a line with neither a memory
    op nor a wait is a usage error. ``attribution``: the wait attribution
    when the caller already has it (computed otherwise)."""
    from attlens.analysis.waitattr import attribute_waits
    from attlens.errors import UsageError

    d = result.dispatch
    if pc is not None and line is not None:
        raise UsageError("give a pc or a line, not both")
    if pc is not None:
        from attlens.analysis.asm import resolve_pc

        pc = resolve_pc(d, pc)
    att = attribution if attribution is not None else attribute_waits(d, result.deps, result.pairs)
    if pc is not None:
        pcs = {pc}
    elif line is not None:
        pcs = {p for p, loc in enumerate(d.static.own_source) if loc is not None and line_matches(str(loc), line)}
    else:
        return DepsResult(att, att.producers, att.by_wait_pc, result=result)
    producers = [p for p in att.producers if p.pc in pcs or any(w in pcs for w in p.waits)]
    waits = {w: v for w, v in att.by_wait_pc.items() if w in pcs or any(pp in pcs for pp in v)}
    if line is not None and not producers and not waits:
        raise UsageError(f"line {line}: no memory op or wait on that line (try a longer or shorter path suffix)")
    return DepsResult(att, producers, waits, pc, line, result)
