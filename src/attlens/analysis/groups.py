"""Rows grouped by a tuple of columns (waves by (SE, CU, SIMD)), with NumPy.

Not ``np.unique(..., axis=0)``: its first call imports ``numpy.ma`` (10 ms),
which a first ``analyze`` otherwise never does.
"""

from __future__ import annotations

import numpy as np


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
