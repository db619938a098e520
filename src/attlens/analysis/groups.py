"""Rows grouped or ordered by several columns with NumPy: tuple ids,
rows packed into int64 sort keys, pcs sorted by radix.

Not ``np.unique(..., axis=0)``: its first call imports ``numpy.ma`` (10 ms),
which a first ``analyze`` otherwise never does.
"""

from __future__ import annotations

import numpy as np


# Possible keys up to which a grouping counts them in one table (a bincount over
# the keys themselves) instead of sorting them; read at call time (tests set it)
DIRECT_KEYS = 1 << 22


def key_table(key: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(present, counts, first)`` of non-negative int keys below ``n_keys``
    (at most :data:`DIRECT_KEYS`): the keys present, ascending, how many rows
    hold each and the first row holding each, from one table of every
    possible key (no sort)."""
    counts = np.bincount(key, minlength=n_keys)
    present = np.flatnonzero(counts)
    first = np.full(n_keys, len(key), dtype=np.int64)
    np.minimum.at(first, key, np.arange(len(key)))
    return present, counts[present], first[present]


def tuple_groups(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, first)``: per row the index of its tuple of ``columns`` among
    the distinct tuples in ascending (lexicographic) order, and per tuple
    the first row holding it (as ``np.unique(np.stack(columns, axis=1),
    axis=0, return_inverse=True)`` numbers them)."""
    order = np.lexsort(columns[::-1])
    new = np.zeros(len(order), dtype=bool)
    new[:1] = True
    for c in columns:
        sc = c[order]
        new[1:] |= sc[1:] != sc[:-1]
    ids = np.empty(len(order), dtype=np.int64)
    ids[order] = np.cumsum(new) - 1
    return ids, order[new]


def packed_key(cols: list[np.ndarray]) -> tuple[np.ndarray, list[int]] | None:
    """One int64 per row ordered as the rows of ``cols`` (the first the most
    significant), with each column's multiplier: one sort key instead of one
    sort per column. None when their ranges do not fit in 62 bits."""
    key, room, mult = np.zeros(len(cols[0]), dtype=np.int64), 1, []
    for col in reversed(cols):
        lo = int(col.min())
        span = int(col.max()) - lo + 1
        if room * span >= 1 << 62:
            return None
        part = col - lo
        part *= room
        key += part
        mult.append(room)
        room *= span
    return key, mult[::-1]


def packed_rows(grid) -> list[np.ndarray]:
    """The rows of a grid of non-negative ints as a few int64 words each, in
    the same lexicographic order: as many columns per word as their bits fit
    (a sort over a few words instead of one pass per column). ``grid``: a 2-D
    array, or its columns (equal-length 1-D arrays: no grid made)."""
    cols = list(grid.T) if isinstance(grid, np.ndarray) else list(grid)
    bits = max(max(int(c.max()) for c in cols).bit_length(), 1)
    per = max(62 // bits, 1)
    words = []
    for a in range(0, len(cols), per):
        w = np.zeros(len(cols[0]), dtype=np.int64)
        for c in cols[a:a + per]:
            w <<= bits
            w |= c
        words.append(w)
    return words


def stable_pc_order(pc: np.ndarray, n_pc: int) -> np.ndarray:
    """``np.argsort(pc, kind="stable")``: as 16-bit values when the pcs fit,
    which NumPy sorts by radix (one pass per byte, not a merge sort)."""
    if n_pc <= np.iinfo(np.int16).max + 1:
        return np.argsort(pc.astype(np.int16), kind="stable")
    return np.argsort(pc, kind="stable")
