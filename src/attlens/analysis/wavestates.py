"""Wave states from each wave's ``timeline`` (att-format.md §2.3, §2.4).

States are the decoder's enum: 1 IDLE, 2 EXEC, 3 WAIT, 4 STALL (0 EMPTY never
occurs in practice). The timeline is contiguous from the wave's ``begin``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attlens.analysis.groups import tuple_groups
from attlens.model.dispatch import STATE_NAMES
from attlens.results import brief_repr

STATES = (1, 2, 3, 4)


@brief_repr(("waves", lambda s: len(s.lifetime)), "cycles")
@dataclass
class WaveStates:
    per_wave: np.ndarray  # (n_waves, 5) cycles in state 0..4
    lifetime: np.ndarray  # end - begin per wave
    cycles: dict[str, int]  # state name -> cycles over all waves
    share: dict[str, float]  # weighted by wave lifetime (Σ state / Σ timeline)
    per_simd: list[dict]  # [{se, cu, simd, waves, STATE: cycles...}]
    overhang: np.ndarray  # Σ timeline - lifetime per wave (0 or 4 on gfx9)


def compute_wave_states(dispatch, store: bool = True) -> WaveStates:
    """Kept in the capture's digest when there is one (``store``: False in a
    second process that computes it beside the one that stores it)."""
    from attlens.cache import memo
    from attlens.cache.store import DataclassCodec

    return memo(dispatch, "wavestates-v2", lambda: _compute_wave_states(dispatch), DataclassCodec(WaveStates), store=store)


def _compute_wave_states(dispatch) -> WaveStates:
    w = dispatch.waves
    per_wave = _cycles_per_wave_state(dispatch.timeline, w.count)
    lifetime = w.end - w.begin
    total = per_wave.sum(axis=0)
    denom = max(int(total.sum()), 1)
    kernel = {STATE_NAMES[s]: int(total[s]) for s in STATES}
    share = {STATE_NAMES[s]: int(total[s]) / denom for s in STATES}
    return WaveStates(per_wave, lifetime, kernel, share, _per_simd_rows(w, per_wave), per_wave.sum(axis=1) - lifetime)


TIMELINE_CHUNK = 1 << 20  # timeline segments summed together (bounds the temporaries)


def _cycles_per_wave_state(tl, n: int) -> np.ndarray:
    """(n, 5) cycles per wave and state, one bincount per chunk of segments:
    its float sums are exact (integer cycles far below 2^53), the chunks are
    added as int64."""
    out = np.zeros(n * 5, dtype=np.int64)
    for a in range(0, len(tl.state), TIMELINE_CHUNK):
        b = a + TIMELINE_CHUNK
        key = tl.wave[a:b].astype(np.int64)
        key *= 5
        key += np.clip(tl.state[a:b], 0, 4)
        out += np.bincount(key, weights=tl.duration[a:b], minlength=n * 5).round().astype(np.int64)
    return out.reshape(n, 5)


def _per_simd_rows(w, per_wave: np.ndarray) -> list[dict]:
    """One row per (se, cu, simd), ascending: its waves and cycles per state
    (one grouping of the waves, not a mask of all waves per SIMD)."""
    inv, first = tuple_groups(w.se, w.cu, w.simd)
    keys = np.stack([w.se[first], w.cu[first], w.simd[first]], axis=1)
    agg = np.zeros((len(keys), per_wave.shape[1]), dtype=np.int64)
    np.add.at(agg, inv, per_wave)
    waves = np.bincount(inv, minlength=len(keys)).tolist()
    return [{"se": se, "cu": cu, "simd": simd, "waves": waves[i], **{STATE_NAMES[s]: int(agg[i, s]) for s in STATES}}
            for i, (se, cu, simd) in enumerate(keys.tolist())]


def state_counts_over_time(dispatch, state: int, aligned_offsets: dict[int, int] | None = None):
    """Number of waves in ``state`` as an event-driven step function: each
    timeline segment adds +1 at its start and -1 at its end; one point per
    distinct time holding the value after all events at that time. Without
    offsets this mixes the SEs' unaligned clocks exactly like the decoder's
    ``wstates<N>.json``; with ``aligned_offsets`` (SE -> cycles) it does not.
    Returns (times, counts)."""
    tl = dispatch.timeline
    w = dispatch.waves
    # segment start = wave begin + cumulative duration before it within the wave
    csum = np.cumsum(tl.duration)
    first = w.tl_start
    starts_in_wave = csum - tl.duration
    wave_offset = np.where(first < len(csum), np.r_[0, csum][first], 0)
    base = w.begin[tl.wave] - wave_offset[tl.wave]
    seg_start = base + starts_in_wave
    if aligned_offsets:
        shift = np.array([aligned_offsets.get(int(se), 0) for se in w.se.tolist()], dtype=np.int64)
        seg_start = seg_start + shift[tl.wave]
    m = tl.state == state
    s, d = seg_start[m], tl.duration[m]
    times = np.concatenate([s, s + d])
    delta = np.concatenate([np.ones(len(s), dtype=np.int64), -np.ones(len(s), dtype=np.int64)])
    order = np.argsort(times, kind="stable")
    times, delta = times[order], delta[order]
    running = np.cumsum(delta)
    last_of_time = np.r_[times[1:] != times[:-1], True]
    return times[last_of_time], running[last_of_time]
