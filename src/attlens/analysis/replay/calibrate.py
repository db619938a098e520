"""Calibration: the replay with no edit against the trace (docs/whatif.md).

The unedited replay re-derives every wait and barrier stall from drawn
latencies and arrivals, and deals each SIMD's waves to the slot that frees
first; it reproduces the trace only as well as the model holds. The span
residual (replayed / traced span of the slowest traced CU, less one) is the
model's noise floor and widens every predicted interval; the wave residual is
|replayed - traced duration| / traced duration per wave.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.replay.latency import draw_latency, wave_position
from attlens.analysis.replay.model import Replay, replay
from attlens.analysis.replay.streams import Streams, build_streams

TOLERANCE = 0.03  # span residual the model aims for (share of the traced span)


@dataclass
class Calibration:
    span_traced_cycles: int
    span_replayed_cycles: int
    span_residual: float  # signed share
    wave_residual: dict  # median, p95, max of |dur' - dur| / dur
    tolerance: float = TOLERANCE

    @property
    def within(self) -> bool:
        return abs(self.span_residual) <= self.tolerance

    def to_dict(self) -> dict:
        return {"span_traced_cycles": self.span_traced_cycles, "span_replayed_cycles": self.span_replayed_cycles,
                "span_residual": round(self.span_residual, 4), "wave_residual": {k: round(v, 4) for k, v in self.wave_residual.items()},
                "tolerance": self.tolerance, "within": self.within}


class Engine:
    """The streams, drawn latencies and unedited replay of one analysis result."""

    def __init__(self, result):
        d = result.dispatch
        why = unreplayable(d)
        if why:
            from attlens.errors import UsageError

            raise UsageError(f"cannot replay this capture: {why}")
        self.result = result
        self.s: Streams = build_streams(result)
        self.wave_of_rec = d.records.wave
        _, kind_of_pc = np.unique(np.array(d.static.mnemonic, dtype=object).astype(str), return_inverse=True)
        self.lat = draw_latency(self.s, self.wave_of_rec, per_occurrence=True, generation=wave_position(self.s), kind_of_pc=kind_of_pc)
        self.base: Replay = replay(self.s, self.lat)
        s = self.s
        self.unit = s.simd_key // 64  # (se, cu): one traced CU
        self.units, self.unit_of_wave = np.unique(self.unit, return_inverse=True)
        self.issue_floor = self.issue_floor_for()
        self.calibration = self._calibrate()

    def issue_floor_for(self, removed=None) -> np.ndarray:
        """Per traced CU: its busiest SIMD's busiest pipe, in issue cycles (no
        replay of its waves can be shorter); ``removed``: waves an edit takes
        out, whose instructions then issue nowhere."""
        s = self.s
        simds, simd_of_wave = np.unique(s.simd_key, return_inverse=True)
        per_wave = self._busy_per_wave()
        if removed is not None and removed.any():
            per_wave = np.where(removed[:, None], 0, per_wave)
        busy = np.zeros((len(simds), 3), dtype=np.int64)
        np.add.at(busy, simd_of_wave, per_wave)
        busy = busy.astype(np.float64).max(axis=1)  # whole cycles: the sums are exact in any order
        unit_of_simd = np.searchsorted(self.units, simds // 64)
        out = np.zeros(len(self.units))
        np.maximum.at(out, unit_of_simd, busy)
        return out

    def _busy_per_wave(self) -> np.ndarray:
        """Per wave and issue pipe group (0..2): its instructions' issue cycles (one pass over the records)."""
        got = self.__dict__.get("_busy_wave")
        if got is None:
            s = self.s
            cell = self.wave_of_rec.astype(np.int64) * 4 + s.pipe  # pipe group 3 (other) is dropped below
            got = np.bincount(cell, weights=s.busy, minlength=s.n_waves * 4).reshape(s.n_waves, 4)[:, :3].astype(np.int64)
            self._busy_wave = got
        return got

    def unit_spans(self, rp: Replay, removed=None) -> np.ndarray:
        """Per traced CU: the replayed span (first start to last end of its waves)."""
        alive = np.isfinite(rp.end) & np.isfinite(rp.start)
        if removed is not None:
            alive &= ~removed
        n = len(self.units)
        hi = np.full(n, -np.inf)
        lo = np.full(n, np.inf)
        np.maximum.at(hi, self.unit_of_wave[alive], rp.end[alive])
        np.minimum.at(lo, self.unit_of_wave[alive], rp.start[alive])
        return np.where(np.isfinite(hi - lo), hi - lo, 0.0)

    def traced_spans(self) -> np.ndarray:
        s, n = self.s, len(self.units)
        hi = np.full(n, np.iinfo(np.int64).min)
        lo = np.full(n, np.iinfo(np.int64).max)
        np.maximum.at(hi, self.unit_of_wave, s.end)
        np.minimum.at(lo, self.unit_of_wave, s.begin)
        return (hi - lo).astype(np.float64)

    def _calibrate(self) -> Calibration:
        s = self.s
        traced, replayed = self.traced_spans(), self.unit_spans(self.base)
        dur = (s.end - s.begin).astype(np.float64)
        ok = dur > 0
        res = np.abs(self.base.duration[ok] - dur[ok]) / dur[ok]
        t, r = float(traced.max()) if len(traced) else 0.0, float(replayed.max()) if len(replayed) else 0.0
        wave = {"median": float(np.median(res)), "p95": float(np.percentile(res, 95)), "max": float(res.max())} if len(res) else {"median": 0.0, "p95": 0.0, "max": 0.0}
        return Calibration(int(round(t)), int(round(r)), (r / t - 1.0) if t else 0.0, wave)

    def changed(self, rp: Replay) -> dict:
        """Waves whose replayed duration the edits changed, and the wait and
        barrier pcs whose replayed stall changed (largest change first)."""
        b, s = self.base, self.s
        db, de = b.duration, rp.duration
        both = np.isfinite(db) & np.isfinite(de)
        gone = np.isfinite(db) & ~np.isfinite(de)
        waves = int((np.abs(de[both] - db[both]) > np.maximum(1.0, 1e-3 * np.abs(db[both]))).sum() + gone.sum())
        d = self.result.dispatch
        rows = []
        for recs, before, after in ((s.wait_rec, b.wait_stall, rp.wait_stall), (s.bar_rec, b.bar_stall, rp.bar_stall)):
            if not len(recs):
                continue
            alive = np.isfinite(rp.end[self.wave_of_rec[recs]])
            pcs = s.pc[recs]
            up, inv = np.unique(pcs, return_inverse=True)
            sb = np.bincount(inv, weights=before, minlength=len(up))
            sa = np.bincount(inv, weights=np.where(alive, after, 0.0), minlength=len(up))
            for pc, x, y in zip(up.tolist(), sb.tolist(), sa.tolist()):
                if abs(y - x) >= max(1.0, 1e-3 * x):
                    rows.append({"pc": int(pc), "instruction": d.code.isa[pc], "stall_before": int(round(x)), "stall_after": int(round(y))})
        rows.sort(key=lambda r: -abs(r["stall_after"] - r["stall_before"]))
        return {"waves": waves, "pcs": rows[:20]}


def unreplayable(d) -> str | None:
    """Why the replay cannot run on a dispatch, or None."""
    if not d.stall_recorded:
        return "its records carry no stall cycles (rocprofv2), and the replay re-derives stalls"
    if d.records.count == 0 or d.waves.count == 0:
        return "no traced instructions"
    return None


def engine_of(result) -> Engine:
    """The replay engine of an analysis result, built once."""
    eng = result.__dict__.get("_replay_engine")
    if eng is None:
        eng = Engine(result)
        result.__dict__["_replay_engine"] = eng
    return eng


def calibrate(result) -> Calibration:
    """The unedited replay against the trace."""
    return engine_of(result).calibration
