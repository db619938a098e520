"""Small helpers shared by rules."""

from __future__ import annotations

import numpy as np

from attlens.analysis.regs import defs_uses, operand_list, registers  # noqa: F401  (re-exported for rules)

# A vector-memory access of this many bytes per lane is already the widest (128 bit).
WIDEST_BYTES = 16


def pcs_of_class(ctx, *classes) -> list[int]:
    st = ctx.d.static
    return [pc for pc, c in enumerate(st.cls) if c in classes and ctx.result.sums.hit[pc] > 0]


def pair_columns(ctx) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per wait/producer pair (``ctx.att.pairs``): its producer's pc, its
    wait's pc, whether it is the first pair of its wait execution, and that
    execution's number (0, 1, ...): gathered once per plan for the rules that
    group the pairs by wait execution."""
    def compute():
        pairs, pc = ctx.att.pairs, ctx.d.records.pc
        first = np.zeros(len(pairs.prod_rec), dtype=bool)
        first[pairs.first_of_wait] = True
        return pc[pairs.prod_rec], pc[pairs.wait_rec], first, np.cumsum(first) - 1

    return ctx.memo("pair_columns", compute)


def top(items, key, n=5):
    return sorted(items, key=key, reverse=True)[:n]


def rnd(x, n: int = 1):
    """Round for evidence: ints stay ints, floats get ``n`` decimals."""
    if x is None:
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    return round(float(x), n)


def us(ns) -> str:
    """A duration in ns as µs for a sentence (``12.4 µs``; ``unknown`` when None)."""
    if ns is None:
        return "unknown"
    v = ns / 1000
    return f"{v:,.1f} µs" if v >= 10 else f"{v:,.2f} µs"
