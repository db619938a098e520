"""Shader-clock frequency and per-SE clock alignment from ``realtime.json``
(att-format.md §2.6, §4.11).

Each SE counts shader cycles from its own origin (about 750 cycles apart per SE
on MI350X), so times of different SEs are comparable only after adding a
per-SE offset. Rule (the viewer's): k = (1 + ΣΔrt) / (25 + ΣΔsc) over SEs
whose lowest/highest samples span forward in both clocks; origin_SE =
rt_lo − sc_lo·k; offset_SE = trunc((origin_SE − min origin) / k). Alignment is
not done (offsets None) when an SE holding waves has no realtime samples.
"""

from __future__ import annotations

from dataclasses import dataclass

from attlens.results import brief_repr


@brief_repr("frequency_hz", "aligned", ("shader_engines", lambda c: None if c.se_offsets_cycles is None else len(c.se_offsets_cycles)), "note")
@dataclass
class ClockInfo:
    frequency_hz: float | None  # shader clock, from realtime.json
    se_offsets_cycles: dict[int, int] | None  # SE -> cycles to add to align with the anchor SE
    aligned: bool
    note: str

    def cycles_to_us(self, cycles: float) -> float | None:
        return None if not self.frequency_hz else cycles / self.frequency_hz * 1e6


def compute_clock(dispatch) -> ClockInfo:
    rt = dispatch.realtime
    ses = sorted(set(dispatch.waves.se.tolist()))
    if rt is None or not rt.samples:
        return ClockInfo(None, None, False, "no realtime.json: times stay in per-SE shader cycles, SEs not aligned")
    freq = rt.shader_clock_hz()
    d_rt = d_sc = 0
    ends = {}
    for se, pts in rt.samples.items():
        if not pts:
            continue
        lo, hi = min(pts), max(pts)
        ends[se] = (lo, hi)
        if hi[0] > lo[0] > 0 and hi[1] > lo[1]:
            d_rt += hi[1] - lo[1]
            d_sc += hi[0] - lo[0]
    missing = [se for se in ses if se not in ends]
    if missing:
        return ClockInfo(freq, None, False, f"SE {missing} have waves but no realtime samples: SEs not aligned (work per SE)")
    if len(ends) < 2:
        return ClockInfo(freq, {se: 0 for se in ses}, True, "one SE: nothing to align")
    k = (1 + d_rt) / (25 + d_sc)
    origin = {se: lo[1] - lo[0] * k for se, (lo, _hi) in ends.items()}
    anchor = min(origin.values())
    offsets = {se: int((o - anchor) / k) for se, o in origin.items()}
    if max(offsets.values()) >= 1 << 53:  # 52 days at 2 GHz: a damaged file, not a clock offset
        return ClockInfo(freq, None, False, "realtime.json gives SE clock offsets beyond 2**53 cycles: SEs not aligned (work per SE)")
    return ClockInfo(freq, offsets, True, "SE clocks aligned with realtime.json")
