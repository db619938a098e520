"""Facts read off the disassembly text: mnemonics, registers, waitcnt fields."""

from __future__ import annotations

import re
from dataclasses import dataclass

_REG_RANGE = re.compile(r"(?<![\w.])([vsa])\[(\d+):(\d+)\]")
_REG_SINGLE = re.compile(r"(?<![\w.])([vsa])(\d+)(?![\w\[])")
_ACC_SINGLE = re.compile(r"(?<![\w.])acc(\d+)(?!\w)")
# "vmcnt(3)", "lgkmcnt(0x0)", "s_wait_loadcnt 0x2" (gfx12 takes the count as operand)
_COUNTER_CALL = re.compile(r"([a-z]+cnt)\s*\(\s*(0x[0-9a-fA-F]+|\d+)?\s*\)")


def mnemonic(text: str) -> str:
    """First token of an instruction, lowercased ("" for label rows)."""
    text = text.strip() if text else ""
    if not text or text.startswith(";"):
        return ""
    return text.split(None, 1)[0].lower()


def operands(text: str) -> str:
    parts = text.split(None, 1)
    return parts[1] if len(parts) > 1 else ""


@dataclass
class RegisterUse:
    vgprs: int = 0  # highest arch VGPR index + 1
    agprs: int = 0  # highest AGPR index + 1
    sgprs: int = 0  # highest SGPR index + 1 (VCC/FLAT_SCRATCH/XNACK not included)


def scan_registers(lines) -> RegisterUse:
    """Highest register of each file referenced anywhere in the listing.

    Ranges count whole (``v[8:15]`` uses v8..v15), AGPRs too (``a[0:3]``, ``acc3``).
    """
    use = RegisterUse()
    top = {"v": 0, "a": 0, "s": 0}
    for text in lines:
        if not text or text.startswith(";"):
            continue
        ops = operands(text)
        if not ops:
            continue
        for kind, _lo, hi in _REG_RANGE.findall(ops):
            top[kind] = max(top[kind], int(hi) + 1)
        for kind, idx in _REG_SINGLE.findall(ops):
            top[kind] = max(top[kind], int(idx) + 1)
        for idx in _ACC_SINGLE.findall(ops):
            top["a"] = max(top["a"], int(idx) + 1)
    use.vgprs, use.agprs, use.sgprs = top["v"], top["a"], top["s"]
    return use


def parse_counter_value(raw: str | None) -> int:
    """Count named in a waitcnt field; a missing value counts as 0 (att-format §4.3)."""
    if raw is None or raw == "":
        return 0
    raw = raw.strip()
    return int(raw, 16) if raw.lower().startswith("0x") else int(raw)


_GFX12_WAIT = re.compile(r"^s_wait_([a-z]+cnt)$")
# gfx12 combined waits pack two counts in one immediate: the first counter in
# bits 13:8, dscnt in bits 5:0 (LLVM AMDGPU encodeLoadcntDscnt/encodeStorecntDscnt).
_GFX12_PACKED = re.compile(r"^s_wait_(loadcnt|storecnt)_dscnt$")


def waitcnt_fields(text: str) -> dict[str, int]:
    """Counters a wait instruction names, with their counts.

    gfx9: ``s_waitcnt vmcnt(0) lgkmcnt(3)``; gfx10/11: also
    ``s_waitcnt_vscnt null, 0x0``; gfx12: ``s_wait_loadcnt 0x0``,
    ``s_wait_idle`` (every counter to zero, returned as {"*": 0}).
    Returns {} for instructions that are not memory-counter waits.
    """
    m = mnemonic(text)
    if m == "s_waitcnt":
        return {name: parse_counter_value(val) for name, val in _COUNTER_CALL.findall(text)}
    if m in ("s_waitcnt_vscnt", "s_waitcnt_vmcnt", "s_waitcnt_lgkmcnt", "s_waitcnt_expcnt"):
        name = m[len("s_waitcnt_") :]
        last = operands(text).split(",")[-1].strip()
        return {name: parse_counter_value(last or None)}
    if m == "s_wait_idle":
        return {"*": 0}
    p = _GFX12_PACKED.match(m)
    if p:
        ops = operands(text).strip()
        val = parse_counter_value(ops.split(",")[-1].strip() if ops else None)
        return {p.group(1): (val >> 8) & 0x3F, "dscnt": val & 0x3F}
    g = _GFX12_WAIT.match(m)
    if g and m != "s_wait_alu":
        ops = operands(text).strip()
        return {g.group(1): parse_counter_value(ops.split(",")[-1].strip() if ops else None)}
    return {}
