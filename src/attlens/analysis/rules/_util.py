"""Small helpers shared by rules."""

from __future__ import annotations

import re

import numpy as np

_REG = re.compile(r"([vas])\[(\d+):(\d+)\]|([vas])(\d+)\b|acc(\d+)")


def loop_pcs(ctx) -> set[int]:
    """pcs executed more than once in some wave (the loops)."""
    ph = ctx.waves.phases
    return set(np.unique(ctx.d.records.pc[ph.exec_index > 0]).tolist())


def pcs_of_class(ctx, *classes) -> list[int]:
    st = ctx.d.static
    return [pc for pc, c in enumerate(st.cls) if c in classes and ctx.result.sums.hit[pc] > 0]


def registers(operand: str) -> set[tuple[str, int]]:
    """Registers named in one operand: v[0:3] → {(v,0)..(v,3)}; acc7 → (a,7)."""
    out = set()
    for m in _REG.finditer(operand):
        if m.group(1):
            out.update((m.group(1), i) for i in range(int(m.group(2)), int(m.group(3)) + 1))
        elif m.group(4):
            out.add((m.group(4), int(m.group(5))))
        else:
            out.add(("a", int(m.group(6))))
    return out


def operand_list(text: str) -> list[str]:
    parts = text.split(None, 1)
    if len(parts) < 2:
        return []
    return [p.strip() for p in parts[1].split(",")]


def top(items, key, n=5):
    return sorted(items, key=key, reverse=True)[:n]
