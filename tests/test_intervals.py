"""Interval helpers against plain loops."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from attlens.analysis.intervals import Coverage, covered_upto, overlap_with_blocks, serial_blocks, union_blocks

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


def _union_reference(pairs):
    blocks = []
    for a, b in sorted((a, a + ln) for a, ln in pairs if ln > 0):
        if blocks and a <= blocks[-1][1]:  # touching or overlapping: one block
            blocks[-1][1] = max(blocks[-1][1], b)
        else:
            blocks.append([a, b])
    return [tuple(b) for b in blocks]


@given(iv)
@settings(max_examples=300, deadline=None)
def test_union_blocks_equals_the_walk(pairs):
    """Each block's end (the running maximum at its last interval) and start
    as a walk over the intervals sorted by start merges them."""
    s = np.array([a for a, _ in pairs], dtype=np.int64)
    e = s + np.array([b for _, b in pairs], dtype=np.int64)
    bs, be = union_blocks(s, e)
    assert list(zip(bs.tolist(), be.tolist())) == _union_reference(pairs)


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


far = st.integers(-(2**63) + 1, 2**63 - 1)


@given(iv, st.lists(st.one_of(st.integers(-50, 260), far), max_size=40), st.integers(0, 2**61))
@settings(max_examples=300, deadline=None)
def test_covered_upto_is_the_sum_over_blocks(blocks_src, xs, shift):
    """The prepared lookup (one search, two gathers) against the plain sum
    over blocks, for points before, inside, between and after the blocks,
    the blocks shifted far up the int64 range (the hidden-latency model
    shifts each scope's times apart) and points at int64's ends."""
    s = np.array([a for a, _ in blocks_src], dtype=np.int64) + shift
    e = s + np.array([b for _, b in blocks_src], dtype=np.int64)
    bs, be = union_blocks(s, e)
    x = np.array([v + shift if -50 <= v <= 260 else v for v in xs], dtype=np.int64)
    want = [sum(max(0, min(v, b) - a) for a, b in zip(bs.tolist(), be.tolist()) if v > a) for v in x.tolist()]
    assert covered_upto(x, (bs, be)).tolist() == want
    assert Coverage((bs, be)).upto(x).tolist() == want


def test_two_threads_keep_the_jobs_order_and_raise_the_helpers_error():
    """attlens.twothreads: results in the jobs' order whichever thread ran
    them; an error in either thread is raised to the caller, no thread left."""
    import threading

    from attlens import twothreads

    jobs = [lambda i=i: (i, threading.get_ident()) for i in range(6)]
    out = twothreads.run(jobs, [5, 1, 4, 1, 3, 2], min_bytes=0)
    assert [i for i, _ in out] == list(range(6)) and len({t for _, t in out}) == 2
    assert {t for _, t in twothreads.run(jobs, [5, 1, 4, 1, 3, 2], min_bytes=1 << 40)} == {threading.get_ident()}
    assert twothreads.split([5, 1, 4, 1, 3, 2]) == ([0, 5, 1], [2, 4, 3])  # heaviest first, each to the lighter

    def fail():
        raise MemoryError("no page")

    for bad in range(2):  # the heavier job runs here, the other in the helper: the failing one in each
        jobs2 = [lambda: 1, lambda: 2]
        jobs2[bad] = fail
        weights = [2, 1]
        try:
            twothreads.run(jobs2, weights, min_bytes=0)
        except MemoryError:
            pass
        else:
            raise AssertionError("the error was lost")
        assert threading.active_count() == 1
