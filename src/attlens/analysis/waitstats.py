"""How long each wait site waits, per execution.

A wait site is an instruction the taxonomy classes as a wait (``s_waitcnt``,
gfx12 ``s_wait_*``, ...). One execution of it is one record; what it waited is
that record's stall (cycles before it issued, att-format.md §2.2). Per site:
count, mean, population standard deviation, p50/p90/p95 (NumPy's linear
interpolation between order statistics) and max, plus how many executions did
not wait at all. Totals say where the time went; the distribution says whether
a wait is always long (latency not covered) or only sometimes (bursts,
contention, the cold first iteration).

``steady=True`` keeps only steady-state executions: records in phase
``loop_steady`` of :mod:`attlens.analysis.phases` (the loop iterations after
the first, per wave), so the cold first iteration and the code before and after
the loop do not blur the figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.taxonomy import WAIT
from attlens.results import brief_repr


SITE_COLUMNS = ["pc", "isa", "source", "wait_class", "executions", "zero_wait_executions", "total", "mean", "stddev", "p50", "p90", "p95",
                "max", "share_of_wait", "share_of_stall", "producers"]


@brief_repr("pc", "isa", "wait_class", "executions", "total", "mean", "p90", "max")
@dataclass
class WaitSite:
    pc: int
    isa: str
    source: str | None
    wait_class: str  # class holding most of its stall (wait_global, wait_lds, ...)
    executions: int
    # the figures below are of the records' stall: None when the records carry no stall cycles (rocprofv2), never 0
    zero_wait_executions: int | None  # executions that issued without stalling
    total: int | None  # Σ stall over the counted executions
    mean: float | None
    stddev: float | None  # population (ddof=0)
    p50: float | None
    p90: float | None
    p95: float | None
    max: int | None
    share_of_wait: float | None  # of Σ total over all sites
    share_of_stall: float | None  # of the kernel's total stall (all records)
    producers: list[tuple[int, int | None]]  # [(producer pc, cycles charged)], largest first (cycles None: no stall recorded, pc order)


@brief_repr("steady", ("sites", lambda w: len(w.sites)), "executions", "total_wait", "kernel_stall",
            ("top_pc", lambda w: w.sites[0].pc if w.sites else None))
@dataclass
class WaitStats:
    steady: bool  # only loop iterations after the first
    sites: list[WaitSite]  # by total wait, largest first
    executions: int
    total_wait: int | None  # Σ wait over the counted executions of every site (None: no stall recorded, rocprofv2)
    kernel_stall: int | None
    notes: list[str] = field(default_factory=list)
    result: object = field(default=None, repr=False)  # the AnalysisResult it came from

    def to_pandas(self):
        """Every wait site as a DataFrame (largest total wait first), one column per key of ``sites`` in ``to_dict()``."""
        from attlens.results import dataframe

        isa = self.result.dispatch.code.isa
        return dataframe([_site_dict(s, isa) for s in self.sites], SITE_COLUMNS)

    @property
    def warnings(self) -> list[str]:
        """The analysis' warnings about the capture (the ``warnings`` key)."""
        return self.result.warnings

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.waits`` object (``attlens waits --top TOP --json``; every site when ``top`` is None or 0)."""
        from attlens.jsondoc import capture_ref, header, rows, top_or_none

        isa = self.result.dispatch.code.isa
        return {
            **header("attlens.waits"),
            "capture": capture_ref(self.result.dispatch),
            "steady": self.steady,
            "executions": self.executions,
            "total_wait": self.total_wait,
            "kernel_stall": self.kernel_stall,
            "share_of_stall": _round(self.total_wait / self.kernel_stall if self.kernel_stall else None, 6),
            "sites_total": len(self.sites),
            "topk": top_or_none(top),
            "sites": [_site_dict(s, isa) for s in rows(self.sites, top)],
            "notes": self.notes,
            "warnings": self.warnings,
        }


def _site_dict(s: WaitSite, isa: list[str]) -> dict:
    """One row of ``sites``; ``isa``: the listing's text per pc (for the producers)."""
    return {
        "pc": s.pc,
        "isa": s.isa,
        "source": s.source,
        "wait_class": s.wait_class,
        "executions": s.executions,
        "zero_wait_executions": s.zero_wait_executions,
        "total": s.total,
        "mean": _round(s.mean, 3),
        "stddev": _round(s.stddev, 3),
        "p50": s.p50,
        "p90": s.p90,
        "p95": s.p95,
        "max": s.max,
        "share_of_wait": _round(s.share_of_wait, 6),
        "share_of_stall": _round(s.share_of_stall, 6),
        "producers": [{"pc": p, "isa": isa[p], "cycles": c} for p, c in s.producers],
    }


def _round(x, nd: int):
    return None if x is None else round(x, nd)


# one line where wait figures are asked of a capture without stall cycles (deps and waits say it)
WAIT_UNRECORDED = ("stall is not recorded by this profiler (rocprofv2): the cycles each wait waited are unavailable "
                   "(null, '-'), not 0; executions, pairs, distances and outstanding ops are measured")


def _unrecorded_site(site: WaitSite) -> WaitSite:
    """``site`` with its stall figures unavailable (None), its producers in pc order."""
    for k in ("zero_wait_executions", "total", "mean", "stddev", "p50", "p90", "p95", "max", "share_of_wait", "share_of_stall"):
        setattr(site, k, None)
    site.producers = sorted((p, None) for p, _ in site.producers)
    return site


def compute_wait_stats(result, steady: bool = False, attribution=None) -> WaitStats:
    """Per wait site distribution of the wait per execution.

    ``attribution`` (an :func:`attlens.analysis.waitattr.attribute_waits`
    result) adds each site's top producers; it is computed when not given.
    """
    from attlens.analysis.waitattr import attribute_waits

    d = result.dispatch
    recs, st, code = d.records, d.static, d.code
    is_wait = np.array([c == WAIT for c in st.cls], dtype=bool)
    mask = is_wait[recs.pc]
    notes: list[str] = []
    if steady:
        from attlens.analysis.phases import PHASES, compute_phases

        ph = compute_phases(d)
        mask &= ph.phase == PHASES.index("loop_steady")
        if not mask.any():
            notes.append("no wait ran in a steady-state loop iteration (no loop, or every loop ran once): no site to report")
    rows = np.flatnonzero(mask)
    pcs = recs.pc[rows].astype(np.int64)
    stalls = recs.stall[rows]
    order = np.lexsort((stalls, pcs))
    pcs, stalls = pcs[order], stalls[order]
    bounds = np.flatnonzero(np.r_[True, pcs[1:] != pcs[:-1], True]) if len(pcs) else np.zeros(1, dtype=np.int64)
    total_all = int(stalls.sum())
    kernel_stall = int(recs.stall.sum())
    att = attribution if attribution is not None else attribute_waits(d, result.deps, result.pairs)
    cls_of = {h.pc: h.class_ for h in result.hotspots.instructions}
    sites = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        pc = int(pcs[a])
        s = stalls[a:b]  # sorted ascending
        tot = int(s.sum())
        own = st.own_source[pc]
        prods = att.by_wait_pc.get(pc, {})
        sites.append(
            WaitSite(
                pc=pc,
                isa=code.isa[pc],
                source=str(own) if own else None,
                wait_class=cls_of.get(pc, "wait_unresolved"),
                executions=b - a,
                zero_wait_executions=int(np.count_nonzero(s == 0)),
                total=tot,
                mean=float(s.mean()),
                stddev=float(s.std()),
                p50=float(np.percentile(s, 50)),
                p90=float(np.percentile(s, 90)),
                p95=float(np.percentile(s, 95)),
                max=int(s[-1]),
                share_of_wait=tot / total_all if total_all else 0.0,
                share_of_stall=tot / kernel_stall if kernel_stall else 0.0,
                producers=sorted(prods.items(), key=lambda kv: (-kv[1], kv[0])),
            )
        )
    if not d.stall_recorded:  # the record's stall is the wait: every figure of it is unavailable, sites in pc order
        notes.append(WAIT_UNRECORDED)
        return WaitStats(steady, [_unrecorded_site(s) for s in sites], len(rows), None, None, notes, result)
    sites.sort(key=lambda x: (-x.total, x.pc))
    return WaitStats(steady, sites, len(rows), total_all, kernel_stall, notes, result)
