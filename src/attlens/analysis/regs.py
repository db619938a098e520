"""Registers an instruction reads and writes, from its disassembly text.

Enough for the plan's preconditions (where a load's address became ready,
which instruction set a branch condition, which MFMA result an instruction
reads, whether an address depends on the workgroup id): the first operand is
the destination except for instructions that have none (stores, compares
into SCC, branches, waits, LDS ops without return, atomics without a return
modifier); carry-out compares and ``*_co_*`` adds also write their second
operand; ``v_cmpx`` and ``*_saveexec`` write EXEC. Special registers are
``("vcc", 0)``, ``("exec", 0)``, ``("scc", 0)``, ``("m0", 0)``.
"""

from __future__ import annotations

import re
from functools import lru_cache

_REG = re.compile(r"(?<![\w.])([vas])\[(\d+):(\d+)\]|(?<![\w.])([vas])(\d+)\b|(?<![\w.])acc(\d+)\b|(?<![\w.])(vcc|exec|scc|m0)(?:_lo|_hi)?\b")

_NO_DEST = (
    "buffer_store", "tbuffer_store", "global_store", "flat_store", "scratch_store", "ds_write", "ds_store",
    "s_store", "s_buffer_store", "s_cmp", "s_bitcmp", "s_cbranch", "s_branch", "s_waitcnt", "s_wait_", "s_nop",
    "s_barrier", "s_endpgm", "s_setprio", "s_sendmsg", "s_sleep", "s_dcache", "s_ttracedata", "s_setreg",
    "s_set_gpr_idx", "s_trap", "s_icache", "s_setpc", "s_prefetch", "buffer_wbl2", "buffer_inv",
)
_LDS_RETURNS = ("ds_read", "ds_load", "ds_swizzle", "ds_bpermute", "ds_permute", "ds_consume", "ds_append")
_CARRY_OUT = re.compile(r"^v_(add|sub|subrev)_co_|^v_(addc|subb|subbrev)_co_|^v_div_scale_|^v_mad_(u|i)64_")


def is_lds_dma(text: str) -> bool:
    """A vector-memory load that writes LDS (``lds`` modifier, ``global_load_lds_*``)."""
    m = mnemonic_of(text)
    return m.startswith("global_load_lds") or (m.startswith(("buffer_load", "global_load")) and " lds" in text.split("//")[0] + " ")


def registers(operand: str) -> set[tuple[str, int]]:
    """Registers named in one operand: v[0:3] → {(v,0)..(v,3)}; acc7 → (a,7); vcc → (vcc,0)."""
    out = set()
    for m in _REG.finditer(operand):
        if m.group(1):
            out.update((m.group(1), i) for i in range(int(m.group(2)), int(m.group(3)) + 1))
        elif m.group(4):
            out.add((m.group(4), int(m.group(5))))
        elif m.group(6):
            out.add(("a", int(m.group(6))))
        else:
            out.add((m.group(7), 0))
    return out


def operand_list(text: str) -> list[str]:
    parts = text.split(None, 1)
    if len(parts) < 2:
        return []
    return [p.strip() for p in parts[1].split(",")]


def mnemonic_of(text: str) -> str:
    t = text.strip() if text else ""
    return t.split(None, 1)[0].lower() if t and not t.startswith(";") else ""


@lru_cache(maxsize=65536)
def defs_uses(text: str) -> tuple[frozenset, frozenset]:
    """(registers written, registers read) by one instruction."""
    m = mnemonic_of(text)
    ops = operand_list(text)
    if not m:
        return frozenset(), frozenset()
    regs = [registers(o) for o in ops]
    writes: set = set()
    reads: set = set()
    has_dest = bool(ops) and not m.startswith(_NO_DEST)
    if m.startswith("ds_"):
        has_dest = m.startswith(_LDS_RETURNS) or "_rtn" in m
    elif "_atomic" in m:
        words = set(text.replace(",", " ").split())
        has_dest = bool(words & {"glc", "sc0"})
    elif m.startswith(("buffer_load", "global_load")) and (m.startswith("global_load_lds") or " lds" in text):
        has_dest = False  # LDS DMA: the data goes to LDS at M0; the first operand is the address
    if is_lds_dma(text):
        reads.add(("m0", 0))
    if has_dest:
        writes |= regs[0]
        for r in regs[1:]:
            reads |= r
        if _CARRY_OUT.match(m) and len(regs) > 1 and any(k in ("s", "vcc") for k, _ in regs[1]):
            writes |= regs[1]
            reads -= regs[1]
    else:
        for r in regs:
            reads |= r
    if m.startswith("v_cmpx") or "_saveexec" in m:
        writes.add(("exec", 0))
    if m.startswith(("s_cmp", "s_bitcmp")):
        writes.add(("scc", 0))
    elif m.startswith("s_") and has_dest and not m.startswith(("s_mov", "s_cmov", "s_load", "s_buffer_load", "s_getreg", "s_movk", "s_cselect", "s_memtime", "s_memrealtime", "s_getpc")):
        writes.add(("scc", 0))  # most SALU ops set SCC
    if m.startswith(("s_cbranch_scc", "s_cselect", "s_cmov", "s_addc", "s_subb")):
        reads.add(("scc", 0))
    if m.startswith("s_cbranch_vcc"):
        reads.add(("vcc", 0))
    if m.startswith("s_cbranch_exec"):
        reads.add(("exec", 0))
    return frozenset(writes), frozenset(reads)


_VMEM = ("buffer_", "tbuffer_", "global_", "flat_", "scratch_")


def address_registers(text: str) -> frozenset:
    """Registers a vector-memory instruction computes its address from (not its data)."""
    m = mnemonic_of(text)
    ops = operand_list(text)
    if not m.startswith(_VMEM) or not ops:
        return frozenset()
    if "_atomic" in m or is_lds_dma(text):
        return defs_uses(text)[1] - {("m0", 0)}
    if m.startswith(("global_store", "flat_store", "scratch_store")):
        picked = [ops[0], *ops[2:]]
    else:
        picked = ops[1:]
    out: set = set()
    for o in picked:
        out |= registers(o)
    return frozenset(out)
