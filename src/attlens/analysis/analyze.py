"""``analyze(dispatch)``: every core analysis, as one result object that all
renderers (terminal, Markdown, HTML) consume and whose ``to_dict()`` is the
``attlens.analyze`` object of ``--json``."""

from __future__ import annotations

from dataclasses import dataclass

from attlens.analysis.hidden import HiddenLatency, compute_hidden
from attlens.analysis.hotspots import Hotspots, attach_exposed, compute_hotspots
from attlens.analysis.occupancy import OccupancyResult, compute_occupancy
from attlens.analysis.quality import Quality, compute_quality
from attlens.analysis.stalls import PcSums, StallBreakdown, compute_pc_sums, rounded_share
from attlens.analysis.waitattr import WaitPairs
from attlens.analysis.waitdeps import WaitDeps
from attlens.jsondoc import capture_ref
from attlens.results import brief_repr

ANALYZE_SCHEMA = "attlens.analyze"
ANALYZE_SCHEMA_VERSION = 1


def _top_pc(r) -> int | None:
    h = r.hotspots
    return h.instructions[h.by_stall[0]].pc if h.by_stall else None


@brief_repr(("kernel", lambda r: r.dispatch.kernel_name), ("target", lambda r: r.dispatch.arch.target),
            ("waves", lambda r: r.dispatch.waves.count), ("latency", lambda r: r.breakdown.total_latency),
            ("stall", lambda r: r.breakdown.total_stall), ("idle", lambda r: r.breakdown.total_idle), ("top_pc", _top_pc))
@dataclass
class AnalysisResult:
    dispatch: object  # attlens.model.dispatch.Dispatch
    sums: PcSums
    breakdown: StallBreakdown
    deps: WaitDeps
    hotspots: Hotspots
    occupancy: OccupancyResult
    quality: Quality
    pairs: WaitPairs
    hidden: HiddenLatency | None = None  # exposed vs hidden latency (None: not computed)
    pc_sampling: object | None = None  # analysis.pcsampling.PcSamplingJoin: PC samples joined (None: none found)

    @property
    def warnings(self) -> list[str]:
        """What the reader should act on: input skipped, sums that disagree,
        no source lines, a location collapse, a grid or kernel that could not
        be told, metadata that does not describe the code."""
        out = list(self.dispatch.warnings)
        out += self.quality.warnings
        out += self.dispatch.resources.warnings
        if self.pc_sampling is not None:
            out += [f"PC sampling: {w}" for w in self.pc_sampling.warnings]
        return out

    @property
    def notes(self) -> list[str]:
        """Expected facts of the target or of the capture layout that qualify
        a number (gfx950's reported VGPR count is half the allocation; the grid
        comes from the discovery run's kernel trace): said once, no action."""
        return list(self.dispatch.resources.notes) + list(self.quality.notes)

    TABLES = ("instructions", "lines", "classes")

    def to_pandas(self, table: str = "instructions"):
        """A DataFrame of the analysis, one row per item and one column per key
        of its JSON rows: ``instructions`` (every executed instruction, largest
        stall first: the rows of ``instructions_by_stall``), ``lines`` (every
        source line with an executed instruction: ``lines_by_stall``) or
        ``classes`` (``stall_by_class``)."""
        from attlens.errors import UsageError
        from attlens.results import dataframe, flat, spread_zero

        h = self.hotspots
        if table == "instructions":
            # the stall per class becomes columns class_stall.<class> (0 where a class holds none), the samples pc_samples.*
            return spread_zero(dataframe([flat(_flat_samples(h.instructions[i].to_dict()), "class_stall") for i in h.by_stall]), "class_stall")
        if table == "lines":
            return dataframe([_flat_samples(h.lines[i].to_dict()) for i in h.lines_by_stall])
        if table == "classes":
            return dataframe(self.breakdown.class_rows(self.dispatch.stall_recorded))
        raise UsageError(f"table={table!r}: expected one of {', '.join(self.TABLES)}")

    def to_dict(self, top: int | None = None) -> dict:
        """The ``attlens.analyze`` object (``attlens analyze --json --top TOP``;
        every row when ``top`` is None or 0)."""
        from attlens.jsondoc import header, rows, top_or_none

        d = self.dispatch
        b = self.breakdown
        h = self.hotspots
        q = self.quality
        f = q.facts
        arch = d.arch
        res = d.resources
        k = top_or_none(top)

        def ranked(order, items):
            return [items[i].to_dict() for i in rows(order, k)]

        return {
            **header(ANALYZE_SCHEMA, ANALYZE_SCHEMA_VERSION),
            "capture": {
                "path": f.path,
                "kernel": f.kernel,
                "dispatch_id": f.dispatch_id,
                "agent_handle": f.agent_handle,
                "waves": f.waves,
                "waves_listed": f.waves_listed,
                "records": f.records,
                "shader_engines": f.shader_engines,
                "cus": f.cus,
                "simds": f.simds,
                "window_cycles_per_se": {str(se): v for se, v in f.window_cycles_per_se.items()},
                "shader_clock_mhz": f.shader_clock_mhz,
                "gfxip": f.gfxip,
                "decoder_version": f.decoder_version,
                "partial": d.partial,
                "rocprof_files": d.rocprof_files,
                "layout": d.layout,
                "stall_recorded": d.stall_recorded,
            },
            "target": {
                "name": arch.target,
                "family": arch.facts["family"] if arch.facts else None,
                "product": arch.product,
                "source": arch.source,
                "reason": arch.reason,
                "evidence": arch.evidence,
                "claims": arch.claims,
                "waitcnt_model": arch.waitcnt_model,
            },
            "resources": {
                "arch_vgprs": res.arch_vgprs,
                "agprs": res.agprs,
                "sgprs": res.sgprs,
                "lds_bytes": res.lds_bytes,
                "scratch_bytes": res.scratch_bytes,
                "workgroup": list(res.workgroup) if res.workgroup else None,
                "grid": list(res.grid) if res.grid else None,
                "workgroups": res.workgroups,
                "isa_scan": {"vgprs": res.isa_vgprs, "agprs": res.isa_agprs, "sgprs": res.isa_sgprs},
                "metadata": {"vgprs": res.metadata_vgprs, "agprs": res.metadata_agprs, "sgprs": res.metadata_sgprs},
                "sources": res.sources,
            },
            "totals": {
                "latency": b.total_latency,
                # unavailable (null), not 0, when the records carry no stall cycles (rocprofv2)
                "stall": b.total_stall if d.stall_recorded else None,
                "idle": b.total_idle,
                "issue": b.total_issue if d.stall_recorded else None,
                "stall_share_of_latency": rounded_share(b.total_stall, b.total_latency) if d.stall_recorded else None,
                "waits_resolved": b.waits_resolved,
                "waits_unresolved_with_stall": b.waits_unresolved_with_stall,
            },
            "stall_by_class": b.class_rows(d.stall_recorded),
            "instructions": {
                "listed": h.listed,
                "executed": h.executed,
                "never_executed": h.never_executed,
                "mix": h.mix,
            },
            "hotspots": {
                "topk": k,
                # no stall recorded (rocprofv2): no ranking by stall (null), the by-latency ones stand
                "instructions_by_stall": ranked(h.by_stall, h.instructions) if h.stall_recorded else None,
                "instructions_by_latency": ranked(h.by_latency, h.instructions),
                "lines_by_stall": ranked(h.lines_by_stall, h.lines) if h.stall_recorded else None,
                "lines_by_latency": ranked(h.lines_by_latency, h.lines),
                "instructions_by_exposed": ranked(h.by_exposed, h.instructions) if self.hidden is not None else None,
                "lines_by_exposed": ranked(h.lines_by_exposed, h.lines) if self.hidden is not None else None,
            },
            "latency_hiding": None
            if self.hidden is None
            else {
                "total": int(self.hidden.total.sum()),
                "hidden": int((self.hidden.total - self.hidden.exposed).sum()),
                "exposed": int(self.hidden.exposed.sum()),
                "hidden_share": round(self.hidden.hidden_share, 6),
            },
            "occupancy": self.occupancy.to_dict()["occupancy"],
            "quality": {
                "code_json_consistent": q.code_json.consistent,
                "code_json_mismatching_pcs": q.code_json.mismatching,
                "mapped_latency_share": round(q.mapped_latency_share, 6),
                "has_source_lines": q.has_source_lines,
                "location_collapse": q.location_collapse,
            },
            "pc_sampling": None if self.pc_sampling is None else self.pc_sampling.to_dict(),
            "warnings": self.warnings,
            "notes": self.notes,
        }


def _flat_samples(row: dict) -> dict:
    """A row with its ``pc_samples`` object spread into ``pc_samples.*``
    columns, one ``pc_samples.reason.<REASON>`` column per stall reason."""
    ps = row.pop("pc_samples", None)
    if ps is None:
        return row
    from attlens.io.pcsampling import REASONS

    for k, v in ps.items():
        if k != "reasons":
            row[f"pc_samples.{k}"] = v
    for r in REASONS:
        row[f"pc_samples.reason.{r}"] = ps["reasons"].get(r, 0) if ps["stalled"] is not None else None
    return row


def analyze(dispatch, exposed: bool = True, pc_sampling=None, pc_sampling_scope: str = "traced") -> AnalysisResult:
    """Every core analysis of a loaded dispatch. ``pc_sampling``: None finds
    PC samples beside the capture (docs/pcsampling.md), False uses none, a
    path or a :class:`~attlens.io.pcsampling.PcSampleTable` names them;
    ``pc_sampling_scope``: ``traced`` (the traced dispatch's samples on the
    traced CUs) or ``kernel`` (every sample of the kernel's code)."""
    sums, breakdown, deps, pairs = compute_pc_sums(dispatch)
    # the per-pc executions later analyses ask for (loops, wait attribution) are the sums' own: no second pass over the records
    getattr(dispatch, "prepared", {}).setdefault("pc_executions", sums.hit)
    hot = compute_hotspots(dispatch, sums)
    hidden = None
    if exposed:
        hidden = compute_hidden(dispatch, sums)
        attach_exposed(hot, hidden)
    occ = compute_occupancy(dispatch)
    occ.capture = capture_ref(dispatch)
    qual = compute_quality(dispatch, sums, hot)
    join = join_pc_samples(dispatch, sums, hot, pc_sampling, pc_sampling_scope)
    result = AnalysisResult(dispatch, sums, breakdown, deps, hot, occ, qual, pairs, hidden, join)
    occ.warnings = result.warnings  # attlens.occupancy carries them as every one-capture object does
    return result


def join_pc_samples(dispatch, sums, hot, source, scope: str = "traced"):
    """The PC samples of ``source`` (see :func:`analyze`) joined to the dispatch
    and put on the hotspot rows; None without samples."""
    if source is False:
        return None
    from attlens.analysis.pcsampling import attach_pc_samples, join_samples

    if scope not in ("traced", "kernel"):
        from attlens.errors import UsageError

        raise UsageError(f"pc_sampling_scope={scope!r}: expected traced or kernel")
    notes: list[str] = []
    if source is None:
        from attlens.model.pcsampling import find_samples

        table, notes = find_samples(dispatch)
        if table is None:
            return None
    elif hasattr(source, "columns") and hasattr(source, "format"):
        table = source
    else:
        from attlens.model.pcsampling import read_samples

        table = read_samples(source)
    join = join_samples(dispatch, table, scope)
    join.notes[:0] = notes
    join.counts["at_unexecuted_pcs"] = int(join.samples[sums.hit[: len(join.samples)] == 0].sum())
    attach_pc_samples(hot, join)
    return join
