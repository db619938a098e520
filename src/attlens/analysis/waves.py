"""Everything wave-level, bundled for the ``waves`` and ``deps`` commands."""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.analysis.clock import ClockInfo, compute_clock
from attlens.analysis.phases import Phases, compute_phases
from attlens.analysis.pipes import PipeUtilization, compute_pipes
from attlens.analysis.waitattr import WaitAttribution, attribute_waits
from attlens.analysis.wavestates import WaveStates, compute_wave_states
from attlens.results import brief_repr

WAVES_SCHEMA = "attlens.waves"


@brief_repr(("waves", lambda w: len(w.states.lifetime)), ("cycles", lambda w: w.states.cycles), ("clock_aligned", lambda w: w.clock.aligned),
            ("flags", lambda w: len(w.phases.flags)))
@dataclass
class WaveAnalysis:
    states: WaveStates
    clock: ClockInfo
    pipes: PipeUtilization
    phases: Phases
    attribution: WaitAttribution
    result: object = field(default=None, repr=False)  # the AnalysisResult it came from

    @property
    def stall_recorded(self) -> bool:
        """False: the records carry no stall cycles (rocprofv2): the phases' and the instructions'
        stall figures are unavailable (null in ``to_dict()``), never 0; the wave states (from each
        wave's timeline) are measured."""
        return bool(getattr(self.result.dispatch, "stall_recorded", True))

    def to_pandas(self):
        """One row per traced wave (the ``waves`` list of ``to_dict()``): file,
        SE, CU, SIMD, slot, instance, begin, end, records, and the cycles in each
        state as ``states.IDLE`` ... ``states.STALL``."""
        from attlens.results import dataframe, flat

        return dataframe([flat(w, "states") for w in self._wave_rows()])

    def _wave_rows(self) -> list[dict]:
        from attlens.model.dispatch import STATE_NAMES

        w = self.result.dispatch.waves
        per_wave = self.states.per_wave
        return [
            {
                "file": w.filenames[i],
                "se": int(w.se[i]),
                "cu": int(w.cu[i]),
                "simd": int(w.simd[i]),
                "slot": int(w.slot[i]),
                "instance": int(w.instance[i]),
                "begin": int(w.begin[i]),
                "end": int(w.end[i]),
                "records": int(w.n_records[i]),
                "states": {STATE_NAMES[s]: int(per_wave[i, s]) for s in (1, 2, 3, 4)},
            }
            for i in range(w.count)
        ]

    def to_dict(self, per_wave: bool = True) -> dict:
        """The ``attlens.waves`` object (``attlens waves --json``; ``per_wave=False``: ``--no-per-wave``)."""
        from attlens.jsondoc import capture_ref, header

        from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

        r = self.result
        d = r.dispatch
        st = self.states
        clk = self.clock
        rec = self.stall_recorded

        def stall(v):  # a figure of the records' stall: null when they carry none (rocprofv2)
            return v if rec else None

        out = {
            **header(WAVES_SCHEMA),
            "capture": capture_ref(d),
            "clock": {
                "shader_clock_mhz": None if clk.frequency_hz is None else round(clk.frequency_hz / 1e6, 3),
                "aligned": clk.aligned,
                "se_offsets_cycles": None if clk.se_offsets_cycles is None else {str(k): v for k, v in clk.se_offsets_cycles.items()},
                "note": clk.note,
            },
            "states": {
                "cycles": st.cycles,
                "share": {k: round(v, 6) for k, v in st.share.items()},
                "total_lifetime": int(st.lifetime.sum()),
                "per_simd": st.per_simd,
                "overhang_cycles_max": int(st.overhang.max()) if len(st.overhang) else 0,
            },
            "pipes": {
                "total_window_cycles": self.pipes.total_window_cycles,
                "kernel": {p: {**v, "busy_share": None if v["busy_share"] is None else round(v["busy_share"], 6)}
                           for p, v in self.pipes.kernel.items()},
                "per_simd": self.pipes.per_simd,
            },
            "phases": {
                "kernel": {p: {**v, "stall": stall(v["stall"])} for p, v in self.phases.kernel.items()},
                "instructions": [
                    {
                        "pc": x.pc,
                        "isa": d.code.isa[x.pc],
                        "executions": x.executions,
                        "stall_p50": stall(x.stall_p50),
                        "stall_p90": stall(x.stall_p90),
                        "stall_max": stall(x.stall_max),
                        "first_execution_stall_mean": stall(round(x.first_execution_stall_mean, 3)),
                        "later_execution_stall_mean": None if x.later_execution_stall_mean is None else stall(round(x.later_execution_stall_mean, 3)),
                        "stall_by_phase": stall(x.stall_by_phase),
                    }
                    for x in self.phases.instructions
                ],
                "static_loops": [{"branch_pc": lp.branch_pc, "first_pc": lp.first_pc, "last_pc": lp.last_pc, "executed": lp.executed}
                                 for lp in self.phases.static_loops],
                "short_waves": self.phases.short_waves,
                "short_wave_threshold": self.phases.short_wave_threshold,
                "traced_cu_share_of_median": {str(k): v for k, v in self.phases.traced_cu_share_of_median.items()},
            },
            "flags": self.phases.flags,
            # no stall recorded: the instructions above are the top ones by latency (hotspots rank so), said in one line
            "warnings": r.warnings if rec else [*r.warnings, STALL_UNRECORDED_RANKING],
        }
        if per_wave:
            out["waves"] = self._wave_rows()
        return out


def analyze_waves(result, top: int = 20) -> WaveAnalysis:
    d = result.dispatch
    return WaveAnalysis(
        states=compute_wave_states(d),
        clock=compute_clock(d),
        pipes=compute_pipes(d),
        phases=compute_phases(d, result.hotspots, top=top),
        attribution=attribute_waits(d, result.deps, result.pairs),
        result=result,
    )
