"""LDS accesses the ISA splits into pieces one wider access could move.

``ds_write2_b32 v93, v80, v81 offset0:2 offset1:3`` next to
``ds_write2_b32 v93, v78, v79 offset1:1`` write bytes 0–15 at one base from
v[78:81]: one ``ds_write_b128 v93, v[78:81]``. Compilers split accesses this
way when they cannot prove the address 16-byte aligned; the split costs LDS
instructions (and LDS issue cycles) for the same bytes.
"""

from __future__ import annotations

import re

from attlens.analysis.registry import rule
from attlens.analysis.rules._util import defs_uses, operand_list, registers, rnd

MIN_SHARE = 0.005  # of all traced wave-cycles at the instructions a merge removes (fewer instructions for the same bytes: small but certain)
WINDOW = 8  # instructions between two pieces of one merge
_OFF = re.compile(r"\boffset(0|1)?:(\d+)")
_DS = re.compile(r"^ds_(read|write|load|store)(2)?(st64)?_b(32|64|128)$")


def _pieces(text: str, m: str):
    """(kind, base register, [(byte offset, bytes, [data registers])]) of an LDS read or write, or None."""
    mm = _DS.match(m)
    if not mm or mm.group(3):
        return None
    kind = "read" if mm.group(1) in ("read", "load") else "write"
    two, width = bool(mm.group(2)), int(mm.group(4)) // 8
    ops = operand_list(text)
    offs = {k or "": int(v) for k, v in _OFF.findall(text)}
    if kind == "write":
        if len(ops) < (3 if two else 2):
            return None
        base, data = ops[0], ops[1:3] if two else ops[1:2]
    else:
        if len(ops) < 2:
            return None
        base, data = ops[1], [ops[0]]
    base_regs = registers(base)
    if len(base_regs) != 1:
        return None
    regs = [sorted(i for k, i in registers(d) if k == "v") for d in data]
    if any(not r for r in regs):
        return None
    if two:
        if kind == "read":  # ds_read2_b32 v[d:d+1]: one half each
            flat = regs[0]
            half = len(flat) // 2
            regs = [flat[:half], flat[half:]]
        return kind, next(iter(base_regs)), [(offs.get("0", 0) * width, width, regs[0]), (offs.get("1", 0) * width, width, regs[1])]
    return kind, next(iter(base_regs)), [(offs.get("", 0), width, regs[0])]


def _runs(pieces):
    """Contiguous byte runs whose registers are consecutive in the same order: [(start, bytes, first reg, [pcs])]."""
    pieces = sorted(pieces)
    runs = []
    for off, n, regs, pc in pieces:
        if runs:
            s, b, r0, pcs, last = runs[-1]
            if off == s + b and regs[0] == last + 1 and len(regs) == n // 4:
                runs[-1] = (s, b + n, r0, pcs + [pc], regs[-1])
                continue
        if len(regs) == n // 4 and regs == list(range(regs[0], regs[0] + len(regs))):
            runs.append((off, n, regs[0], [pc], regs[-1]))
    return [(s, b, r0, pcs) for s, b, r0, pcs, _ in runs]


def _merges(run):
    """Aligned 16- and 8-byte pieces of a run that replace ≥ 2 instructions (or one ds_*2 op): [(offset, bytes, first reg, pcs)]."""
    start, n, r0, pcs = run
    out = []
    off = start
    while off < start + n:
        for size in (16, 8):
            if off % size == 0 and off + size <= start + n and (r0 + (off - start) // 4) % 2 == 0:
                out.append((off, size, r0 + (off - start) // 4))
                off += size
                break
        else:
            off += 4
    return out


def mergeable_groups(ctx):
    """Groups of LDS instructions at one base that one wider access could replace."""
    isa, st, s = ctx.d.code.isa, ctx.d.static, ctx.result.sums
    groups = []
    pcs = [pc for pc in range(ctx.d.code.size) if isa[pc] and s.hit[pc] > 0]
    i = 0
    while i < len(pcs):
        pc = pcs[i]
        p = _pieces(isa[pc], st.mnemonic[pc])
        if p is None:
            i += 1
            continue
        kind, base, pieces = p
        members = [(pc, pieces)]
        last = i
        data = {("v", r) for _, _, regs in pieces for r in regs}
        j = i + 1
        while j < len(pcs) and pcs[j] - pcs[last] <= WINDOW:
            q = pcs[j]
            m = st.mnemonic[q]
            if m.startswith(("s_cbranch", "s_branch", "s_endpgm", "s_barrier", "s_setpc")):
                break
            pq = _pieces(isa[q], m)
            w = set(defs_uses(isa[q])[0])
            if pq is not None and pq[0] == kind and pq[1] == base and s.hit[q] == s.hit[pc] and not (kind == "write" and w & data):
                members.append((q, pq[2]))
                data |= {("v", r) for _, _, regs in pq[2] for r in regs}
                last = j
            elif m.startswith("ds_") or base in w or (kind == "write" and w & data):
                break  # another LDS op between them, the base moved, or a merged write would read a rewritten register
            j += 1
        flat = [(o, n, r, q) for q, ps in members for o, n, r in ps]
        for run in _runs(flat):
            for off, size, reg in _merges(run):
                covered = sorted({q for o, n, r, q in flat if off <= o < off + size})
                if len(covered) < 2:
                    continue  # one instruction already: nothing to save
                width = {16: "b128", 8: "b64"}[size]
                data = f"v[{reg}:{reg + size // 4 - 1}]"
                b = f"v{base[1]}"
                merged = f"ds_{'write' if kind == 'write' else 'read'}_{width} " + (f"{b}, {data}" if kind == "write" else f"{data}, {b}")
                groups.append({"pcs": covered, "kind": kind, "base": b, "bytes": [off, off + size], "registers": data,
                               "instructions": [isa[q] for q in covered], "as": merged + (f" offset:{off}" if off else ""),
                               "saves_instructions": len(covered) - 1, "executions": int(s.hit[covered[0]]),
                               "issue_stall": int(sum(int(s.stall[q]) for q in covered))})
        i = last + 1
    return groups


@rule(
    "lds-mergeable",
    "LDS accesses split into pieces one wider access could move",
    "performance",
    trigger="ds_read/ds_write instructions (ds_*2_b32/b64 pairs included) at one base register covering 8 or 16 contiguous, aligned bytes from consecutive registers, whose exposed issue stall + idle the merge removes is ≥ 0.5 % of traced wave-cycles (LDS instructions stall ≥ 0.5 % in all)",
    evidence="per group: the pcs and their instructions, the base register, the bytes and registers they cover, the one instruction that could replace them, the instructions saved, their issue stall",
    limits="the address's 16-byte (or 8-byte) alignment is not visible in the ISA: the compiler split the access because it could not prove it; pieces separated by a branch, a barrier, another LDS op or a write to the base are not merged",
    preconditions=[("contiguous", "the pieces share one base register, cover contiguous bytes at an offset aligned to the merged width, and their data registers are consecutive (and even-aligned) in the same order")],
    directions=["lds"],
)
def lds_mergeable(ctx):
    rid = "lds-mergeable"
    groups = mergeable_groups(ctx)
    lds_pcs = [pc for pc, c in enumerate(ctx.d.static.cls) if c == "lds" and ctx.result.sums.hit[pc] > 0]
    if not lds_pcs or ctx.stall_of(lds_pcs) / ctx.total < MIN_SHARE:
        return []
    if not ctx.require(rid, "contiguous", bool(groups), f"{len(groups)} mergeable group(s) among {len(lds_pcs)} executed LDS instructions"):
        return []
    claims = []
    for g in groups:
        # one instruction does the work of len(pcs): the others' exposed cycles are what the merge removes
        share = g["saves_instructions"] / len(g["pcs"])
        claims += [(pc, ctx.exposed_at(pc) * share) for pc in g["pcs"]]
    total = sum(c for _, c in claims)
    if total / ctx.total < MIN_SHARE:
        return []
    groups.sort(key=lambda g: -g["issue_stall"])
    g0 = groups[0]
    saved = sum(g["saves_instructions"] * g["executions"] for g in groups)
    return [
        ctx.finding(
            rid,
            f"{len(groups)} group(s) of LDS {'/'.join(sorted({g['kind'] + 's' for g in groups}))} could each be one wider access "
            f"({saved:,} instructions fewer in the traced waves, {total / ctx.total:.1%} of traced wave-cycles)",
            0,
            0.5,
            {"groups": groups[:8], "instructions_saved_traced": saved, "claimed_cycles": rnd(total)},
            f"pcs {g0['pcs']} ({', '.join('`' + x + '`' for x in g0['instructions'])}) move bytes {g0['bytes'][0]}–{g0['bytes'][1] - 1} at base "
            f"{g0['base']} from {g0['registers']}: one `{g0['as']}` does it. The compiler splits such accesses when it cannot prove the address "
            f"aligned to the wider width: align the LDS buffer and its per-lane offsets to {g0['bytes'][1] - g0['bytes'][0]} B and access it through "
            "vector types so it can emit the wide form.",
            "After the change the listing should show the wide instruction in place of the pieces and the LDS issue stall at them should fall; "
            "if the wide instruction stalls as long, LDS bank conflicts, not the instruction count, are the cost.",
            f"pcs {g0['pcs']} could be one `{g0['as'].split()[0]}`",
            claims=claims,
            explains=[],
        )
    ]
