"""Vectorized interval arithmetic on [start, end) cycle intervals."""

from __future__ import annotations

import numpy as np


def union_blocks(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted blocks covering the union of the intervals."""
    keep = ends > starts
    s, e = (starts, ends) if keep.all() else (starts[keep], ends[keep])  # no copies when none is empty
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    np.greater(s[1:], run_end[:-1], out=new[1:])
    idx = np.flatnonzero(new)
    # A block's end is the running maximum at its last interval: every earlier
    # interval ended before the block's start, which is below each of its ends
    # (a gather per block instead of a reduction over every interval).
    last = np.append(idx[1:], len(s)) - 1
    return s[idx], run_end[last]


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    bs, be = union_blocks(starts, ends)
    return int((be - bs).sum())


def serial_blocks(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The viewer's "serialized packing" (att-format.md §4.5): intervals sorted by
    start; one that starts after the current block's end opens a new block,
    otherwise its length is added to the current block (a serial queue)."""
    # The walk is the queue recurrence end_i = max(end_{i-1}, start_i) + len_i,
    # i.e. end_i = L_i + max_{j<=i}(start_j - L_{j-1}) with L the running sum of
    # lengths: one cumulative maximum instead of a Python loop.
    keep = lengths > 0
    order = np.argsort(starts[keep], kind="stable")
    s = starts[keep][order].astype(np.int64)
    ln = lengths[keep][order].astype(np.int64)
    if len(s) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    csum = np.cumsum(ln)
    end = csum + np.maximum.accumulate(s - (csum - ln))
    new = np.r_[True, s[1:] > end[:-1]]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return s[first], end[last]


def merge_blocks(*lists) -> tuple[np.ndarray, np.ndarray]:
    s = np.concatenate([b[0] for b in lists]) if lists else np.zeros(0, dtype=np.int64)
    e = np.concatenate([b[1] for b in lists]) if lists else np.zeros(0, dtype=np.int64)
    return union_blocks(s, e)


_FAR = np.iinfo(np.int64).max  # the sentinel block's place: before every x (but int64's minimum)


class Coverage:
    """Disjoint sorted blocks prepared for "covered up to x" lookups
    (:meth:`upto`): one search and two gathers per x. With ``j`` the number of
    blocks starting at or before ``x``, the covered length below ``x`` is
    ``min(x, end[j-1]) - start[j-1] + covered before block j-1``, kept per
    block as ``ends[j]`` and ``offsets[j]``; a sentinel at ``j = 0``
    (end -far, offset +far) gives 0 before every block."""

    def __init__(self, blocks):
        bs, be = blocks
        self.starts = np.asarray(bs)
        lens = np.asarray(be) - self.starts
        self.ends = np.r_[-_FAR, be].astype(np.int64, copy=False)
        self.offsets = np.r_[_FAR, (np.cumsum(lens) - lens) - self.starts].astype(np.int64, copy=False)

    def upto(self, x: np.ndarray) -> np.ndarray:
        """Length of (-inf, x) ∩ the blocks for each x."""
        j = np.searchsorted(self.starts, x, side="right")
        out = np.minimum(x, self.ends[j])
        out += self.offsets[j]
        return out


def covered_upto(x: np.ndarray, blocks) -> np.ndarray:
    """Length of (-inf, x) ∩ union(blocks) for each x (blocks disjoint, sorted)."""
    return Coverage(blocks).upto(np.asarray(x, dtype=np.int64))


def overlap_with_blocks(a: np.ndarray, b: np.ndarray, blocks) -> np.ndarray:
    """Length of [a, b) ∩ union(blocks) for each interval (blocks disjoint, sorted)."""
    return np.maximum(covered_upto(b, blocks) - covered_upto(a, blocks), 0)
