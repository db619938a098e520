"""Interval helpers against plain loops."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attlens.analysis.intervals import overlap_with_blocks, serial_blocks, union_blocks

iv = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 30)), max_size=40)


def _serial_reference(pairs):
    blocks, cur = [], None
    for a, ln in sorted(((a, ln) for a, ln in pairs if ln > 0), key=lambda x: x[0]):
        if cur is None or a > cur[1]:
            if cur:
                blocks.append(tuple(cur))
            cur = [a, a + ln]
        else:
            cur[1] += ln
    if cur:
        blocks.append(tuple(cur))
    return blocks


@given(iv)
@settings(max_examples=300, deadline=None)
def test_serial_blocks_equals_the_walk(pairs):
    s = np.array([a for a, _ in pairs], dtype=np.int64)
    ln = np.array([b for _, b in pairs], dtype=np.int64)
    bs, be = serial_blocks(s, ln)
    assert list(zip(bs.tolist(), be.tolist())) == _serial_reference(pairs)


@given(iv, iv)
@settings(max_examples=300, deadline=None)
def test_overlap_equals_pointwise_count(blocks_src, queries):
    s = np.array([a for a, _ in blocks_src], dtype=np.int64)
    e = s + np.array([b for _, b in blocks_src], dtype=np.int64)
    blocks = union_blocks(s, e)
    covered = set()
    for a, b in zip(s.tolist(), e.tolist()):
        covered.update(range(a, b))
    qa = np.array([a for a, _ in queries], dtype=np.int64)
    qb = qa + np.array([b for _, b in queries], dtype=np.int64)
    got = overlap_with_blocks(qa, qb, blocks).tolist()
    assert got == [sum(1 for x in range(a, b) if x in covered) for a, b in zip(qa.tolist(), qb.tolist())]
