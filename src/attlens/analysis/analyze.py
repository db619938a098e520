"""``analyze(dispatch)``: every core analysis, as one result object that all
renderers (terminal, JSON, Markdown, HTML) consume."""

from __future__ import annotations

from dataclasses import dataclass

from attlens.analysis.hidden import HiddenLatency, compute_hidden
from attlens.analysis.hotspots import Hotspots, attach_exposed, compute_hotspots
from attlens.analysis.occupancy import OccupancyResult, compute_occupancy
from attlens.analysis.quality import Quality, compute_quality
from attlens.analysis.stalls import PcSums, StallBreakdown, compute_pc_sums
from attlens.analysis.waitattr import WaitPairs
from attlens.analysis.waitdeps import WaitDeps


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

    @property
    def warnings(self) -> list[str]:
        out = list(self.dispatch.warnings)
        out += self.quality.warnings
        out += self.dispatch.resources.notes
        return out


def analyze(dispatch, exposed: bool = True) -> AnalysisResult:
    sums, breakdown, deps, pairs = compute_pc_sums(dispatch)
    hot = compute_hotspots(dispatch, sums)
    hidden = None
    if exposed:
        hidden = compute_hidden(dispatch, sums)
        attach_exposed(hot, hidden)
    occ = compute_occupancy(dispatch)
    qual = compute_quality(dispatch, sums, hot)
    return AnalysisResult(dispatch, sums, breakdown, deps, hot, occ, qual, pairs, hidden)
