"""Property tests: the fast NumPy paths equal plain reference code."""

from __future__ import annotations

import json

import numpy as np
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from attlens.io.filenames_json import WaveEntry
from attlens.io.wave_files import parse_wave_bytes
from attlens.model.loader import _segmented_idle

record = st.tuples(st.integers(0, 64), st.integers(1, 11), st.integers(0, 40), st.integers(0, 60), st.integers(1, 30))


@st.composite
def waves(draw):
    out = []
    for _ in range(draw(st.integers(1, 5))):
        begin = draw(st.integers(0, 10_000))
        t = begin + draw(st.integers(0, 50))
        recs = []
        for gap, cat, stall, extra, pc in draw(st.lists(record, max_size=40)):
            t += gap
            recs.append([t, cat, stall, stall + extra, pc])  # time non-decreasing, duration >= stall
        out.append((begin, recs))
    return out


@given(waves())
@settings(max_examples=200, deadline=None)
def test_segmented_idle_equals_writer_rule(ws):
    ref = []
    for begin, recs in ws:
        cursor = begin
        for time, _c, _s, dur, _pc in recs:
            ref.append(max(time - cursor, 0))
            cursor = max(cursor, time + dur)
    counts = np.array([len(r) for _, r in ws])
    stop = np.cumsum(counts)
    allr = np.array([r for _, rs in ws for r in rs], dtype=np.int64).reshape(-1, 5)
    wave_of = np.repeat(np.arange(len(ws)), counts).astype(np.int32)
    idle = _segmented_idle(allr[:, 0], allr[:, 3], wave_of, np.array([b for b, _ in ws], dtype=np.int64), stop - counts)
    assert idle.tolist() == ref


@given(waves(), st.booleans(), st.lists(st.tuples(st.integers(1, 30), st.lists(st.integers(1, 30), min_size=1, max_size=3)), max_size=5))
@settings(max_examples=150, deadline=None)
def test_fast_wave_parser_equals_full_parse(ws, pretty, edges):
    begin, recs = ws[0]
    doc = {
        "name": "SE0",
        "duration": 10,
        "num_insts": len(recs),
        "num_stitched": len(recs),
        "wave": {
            "cu": 1, "id": 0, "simd": 2, "slot": 3, "begin": begin, "end": begin + 10,
            "instructions": recs,
            "timeline": [[1, 32], [2, 8]] if recs else [],
            "waitcnt": [[w, [[p, 0] for p in ps]] for w, ps in edges],
        },
    }
    data = json.dumps(doc, indent=2).encode() if pretty else orjson.dumps(doc)
    entry = WaveEntry(0, 2, 3, 0, "se0_sm2_sl3_wv0.json", begin, begin + 10)
    w = parse_wave_bytes(data, entry)
    assert w.instructions.reshape(-1, 5).tolist() == recs
    assert w.timeline.reshape(-1, 2).tolist() == doc["wave"]["timeline"]
    assert w.waitcnt == doc["wave"]["waitcnt"]
    sc = w.scalars
    assert (sc["begin"], sc["end"], sc["cu"], sc["simd"], sc["slot"]) == (begin, begin + 10, 1, 2, 3)
