"""How many lanes of a wave share one memory address, read off the ISA.

A vector-memory instruction moves ``width`` bytes for every lane, but lanes
whose address is the same move the same bytes: a lane-invariant address (one
computed from SGPRs and constants only) is one access per wave, and an address
computed from ``lane >> 3`` is shared by 8 lanes. The bytes a wave moves are
``width x (wave size / lanes sharing an address)``.

The analysis tracks, per register, the size ``g`` of the aligned lane groups
whose lanes always hold the same value (the value depends on the lane only
through ``lane // g``): SGPRs and constants are wave-uniform (``g`` = wave
size); the work-item id ``v0`` of a workgroup whose x size is a multiple of the
wave size is the lane plus a multiple of the wave size (``g`` = 1, *exact*);
a right shift by ``n`` of an exact value multiplies ``g`` by ``2**n``
(``v_lshrrev_b32``, ``v_bfe_u32``); any other operation keeps the smallest
``g`` of its inputs and is no longer exact; loaded data, cross-lane ops
(DPP, permlane, LDS permutes) and lane masks of unknown origin count as
per-lane (``g`` = 1). The pass is a forward dataflow over the listing's control flow
(fall-through and SOPP branch targets), states met at joins and iterated to a
fixed point, so a value reaching a use along two paths gets the smaller ``g``. It never
counts fewer bytes than a lane-by-lane reading unless the ISA proves lanes
share the address.
"""

from __future__ import annotations

import re

from attlens.analysis.regs import address_registers, defs_uses, mnemonic_of, operand_list

_CROSS_LANE = ("v_permlane", "v_readlane", "v_writelane", "ds_", "v_mov_b32_dpp", "v_mov_b64_dpp")
_DPP = re.compile(r"\b(row_|quad_perm|wave_|bank_mask|row_mask|dpp)")
_LOADS = ("buffer_load", "global_load", "flat_load", "scratch_load", "tbuffer_load", "buffer_atomic", "global_atomic", "flat_atomic")


def _int(text: str) -> int | None:
    try:
        return int(text, 0)
    except ValueError:
        return None


def _meet(a, b):
    """(g, exact) lattice meet; None is 'no definition seen yet'."""
    if a is None:
        return b
    if b is None:
        return a
    return (min(a[0], b[0]), a[0] == b[0] and a[1] and b[1])


def _result(text: str, m: str, reads, state, wave: int):
    """(g, exact) of what ``text`` writes, from its inputs' states."""
    if m.startswith(("s_load", "s_buffer_load")):
        return (wave, False)  # scalar data: the same in every lane
    if m.startswith(_LOADS) or m.startswith(_CROSS_LANE) or _DPP.search(text) or m.startswith("v_mbcnt"):
        return (1, m.startswith("v_mbcnt"))
    # an SGPR nothing lane-dependent wrote is wave-uniform; a VGPR never written on this path is unknown (per-lane)
    ins = [state.get(r, (wave, False) if r[0] == "s" else (1, False)) for r in reads if r[0] in ("v", "s", "a", "vcc")]
    g = min((x[0] for x in ins), default=wave)
    ops = operand_list(text)
    vins = [x for r, x in zip(reads, ins) if r[0] == "v"]
    if m.startswith("v_mov_b32") and len(vins) == 1:
        return vins[0]
    if m.startswith("v_lshrrev_b32") and len(ops) == 3 and len(vins) == 1 and vins[0][1] and _int(ops[1]) is not None:
        return (min(wave, vins[0][0] << min(_int(ops[1]), 7)), True)
    if m.startswith("v_bfe_u32") and len(ops) == 4 and len(vins) == 1 and vins[0][1] and _int(ops[2]) is not None:
        return (min(wave, vins[0][0] << min(_int(ops[2]), 7)), False)
    return (g, False)


def _successors(code) -> tuple[list[int], dict[int, list[int]]]:
    """Instruction pcs in listing order and each one's successors (fall-through
    and SOPP branch target; none after s_endpgm, s_setpc or an unconditional branch)."""
    listed = code.instruction_mask.tolist()  # a property: computed once, not per pc
    pcs = [pc for pc in range(code.size) if listed[pc]]
    vaddr_to_pc = {int(code.vaddr[pc]): pc for pc in pcs}
    succ: dict[int, list[int]] = {}
    for i, pc in enumerate(pcs):
        m = mnemonic_of(code.isa[pc])
        out = []
        if not m.startswith(("s_endpgm", "s_setpc", "s_branch")) and i + 1 < len(pcs):
            out.append(pcs[i + 1])
        if m.startswith(("s_cbranch", "s_branch")):
            ops = operand_list(code.isa[pc])
            simm = _int(ops[0]) if ops else None
            if simm is not None:
                simm = simm - 65536 if simm >= 32768 else simm
                t = vaddr_to_pc.get(int(code.vaddr[pc]) + 4 + 4 * simm)
                if t is not None:
                    out.append(t)
        succ[pc] = out
    return pcs, succ


def _entry_state(wave_size: int, workgroup) -> dict:
    x, y, z = workgroup or (0, 0, 0)
    one_d = bool(x) and y == 1 and z == 1
    # v0 = work-item id x = lane + a multiple of the wave size only when whole waves fit along x
    state = {("v", 0): (1, one_d and x % wave_size == 0)}
    if not one_d:  # y and z ids (or packed ids) arrive in v1, v2 only for 2-D / 3-D workgroups (or when unknown)
        state[("v", 1)] = state[("v", 2)] = (1, False)
    return state


def _meet_states(a: dict | None, b: dict) -> dict:
    if a is None:
        return dict(b)
    out = dict(a)
    for r, v in b.items():
        out[r] = _meet(out.get(r), v)
    return out


def lane_groups(code, wave_size: int = 64, workgroup: tuple[int, int, int] | None = None) -> dict[int, int]:
    """Per vector-memory pc of the listing (``code``: a CodeListing): how many
    lanes of a wave share each address (1 = every lane its own address; the
    wave size = one address per wave). A forward dataflow over the listing's
    control flow (branch targets from the SOPP offsets), met at joins."""
    pcs, succ = _successors(code)
    if not pcs:
        return {}
    insns = {pc: (code.isa[pc], mnemonic_of(code.isa[pc]), *defs_uses(code.isa[pc])) for pc in pcs}
    state_in: dict[int, dict] = {pcs[0]: _entry_state(wave_size, workgroup)}
    work = list(pcs)
    queued = set(work)
    rounds = 0
    while work and rounds < 64 * len(pcs):
        rounds += 1
        pc = work.pop(0)
        queued.discard(pc)
        st = state_in.get(pc)
        if st is None:
            continue
        text, m, writes, reads = insns[pc]
        out = st
        if m and writes:
            res = _result(text, m, reads, st, wave_size)
            out = dict(st)
            for w in writes:
                out[w] = res if res is not None else (1, False)
        for nxt in succ[pc]:
            new = _meet_states(state_in.get(nxt), out)
            if new != state_in.get(nxt):
                state_in[nxt] = new
                if nxt not in queued:
                    work.append(nxt)
                    queued.add(nxt)
    result: dict[int, int] = {}
    for pc in pcs:
        text, m = insns[pc][0], insns[pc][1]
        if not m.startswith(("buffer_", "tbuffer_", "global_", "flat_", "scratch_")):
            continue
        st = state_in.get(pc) or {}
        regs = [r for r in address_registers(text) if r[0] in ("v", "a")]
        g = min((st.get(r, (1, False))[0] for r in regs), default=wave_size)
        result[pc] = max(1, min(g, wave_size))
    return result
