"""Everything wave-level, bundled for the ``waves`` and ``deps`` commands."""

from __future__ import annotations

from dataclasses import dataclass

from attlens.analysis.clock import ClockInfo, compute_clock
from attlens.analysis.phases import Phases, compute_phases
from attlens.analysis.pipes import PipeUtilization, compute_pipes
from attlens.analysis.waitattr import WaitAttribution, attribute_waits
from attlens.analysis.wavestates import WaveStates, compute_wave_states


@dataclass
class WaveAnalysis:
    states: WaveStates
    clock: ClockInfo
    pipes: PipeUtilization
    phases: Phases
    attribution: WaitAttribution


def analyze_waves(result, top: int = 20) -> WaveAnalysis:
    d = result.dispatch
    return WaveAnalysis(
        states=compute_wave_states(d),
        clock=compute_clock(d),
        pipes=compute_pipes(d),
        phases=compute_phases(d, result.hotspots, top=top),
        attribution=attribute_waits(d, result.deps, result.pairs),
    )
