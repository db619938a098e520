"""Capture facts and capture-quality checks (is this capture trustworthy?)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.results import brief_repr

# Location-collapse rule (docs/analysis.md): one source line holding at least
# this share of all latency, from at least COLLAPSE_MIN_INSTRUCTIONS distinct
# executed instructions that are at least COLLAPSE_MIN_INSTR_SHARE of all
# executed instructions. Calibrated on the shared flash_attn_func pair: 81 %
# of cycles / 91 % of instructions before the compiler fix, 52 % / 65 % after.
COLLAPSE_MIN_LATENCY_SHARE = 2 / 3
COLLAPSE_MIN_INSTRUCTIONS = 32
COLLAPSE_MIN_INSTR_SHARE = 0.5


@brief_repr("kernel", "waves", "records", "shader_engines", "cus", "path")
@dataclass
class CaptureFacts:
    path: str
    kernel: str
    dispatch_id: int | None
    agent_handle: int | None
    waves: int
    waves_listed: int
    records: int
    shader_engines: list[int]
    cus: list[int]
    simds: list[int]
    window_cycles_per_se: dict[int, int]  # last wave end - first wave begin, per SE
    shader_clock_mhz: float | None  # from realtime.json
    gfxip: int | None
    decoder_version: str | None


@dataclass
class CodeJsonCheck:
    """Do the writer's code.json sums equal the sums recomputed from the wave files?"""

    checked: bool
    # column -> number of pcs that differ; None: the column is not in code.json
    # (the 8-column layouts hold Hit and Latency only) or not in the records (stall, rocprofv2)
    mismatching: dict[str, int | None]

    @property
    def consistent(self) -> bool:
        return self.checked and not any(v for v in self.mismatching.values() if v is not None)


@brief_repr(("code_json_consistent", lambda q: q.code_json.consistent), "has_source_lines", "mapped_latency_share",
            ("warnings", lambda q: len(q.warnings)))
@dataclass
class Quality:
    facts: CaptureFacts
    code_json: CodeJsonCheck
    mapped_latency_share: float  # share of latency on instructions with a source line
    has_source_lines: bool
    location_collapse: dict | None
    warnings: list[str] = field(default_factory=list)
    # the listing's last instruction is a branch that leaves it (listing_exit); None: the listing may be whole
    listing_exit: dict | None = None
    notes: list[str] = field(default_factory=list)  # expected facts of the capture: said once, no action


def listing_exit(dispatch) -> dict | None:
    """Does the code.json listing stop inside the kernel? When its last
    instruction is a conditional branch (its fall-through lies past the
    listing, wherever it jumps) or an unconditional one whose target is not a
    listed instruction, waves that end there went on into code the decoder
    did not list: they are not truncated, the listing is. ``target_pc`` is the
    listed pc it jumps to (None: outside the listing, or no addresses to
    place it: the rocprofv2 layout records none)."""
    code, st = dispatch.code, dispatch.static
    listed = np.flatnonzero(code.instruction_mask)
    if not listed.size:
        return None
    pc = int(listed[-1])
    mnemonic = st.mnemonic[pc]
    if not mnemonic.startswith(("s_cbranch", "s_branch")):
        return None
    offset = _sopp_offset(code.isa[pc])
    target_vaddr = target_pc = None
    if code.has_addresses and offset is not None:
        target_vaddr = int(code.vaddr[pc]) + 4 + 4 * offset
        hits = np.flatnonzero(code.instruction_mask & (code.vaddr == target_vaddr))
        target_pc = int(hits[0]) if hits.size else None
    conditional = mnemonic.startswith("s_cbranch")
    if not conditional and target_pc is not None:
        return None  # a jump back into the listing: the kernel may still end in it
    return {"pc": pc, "isa": code.isa[pc], "conditional": conditional, "offset_dwords": offset,
            "target_vaddr": target_vaddr, "target_pc": target_pc}


def _sopp_offset(isa: str) -> int | None:
    """The signed SOPP branch offset in dwords (``s_cbranch_vccnz 38``); None when not a number."""
    from attlens.model.isa import operands

    op = operands(isa).split(",")[0].strip()
    if not op.lstrip("-").isdigit():
        return None
    v = int(op)
    return v - 65536 if v >= 32768 else v


def listing_exit_note(ex: dict) -> str:
    """One line: where the listing stops and why the waves that end there are not truncated."""
    if ex["target_vaddr"] is not None:
        where = f"address 0x{ex['target_vaddr']:x}" + (f" (pc {ex['target_pc']})" if ex["target_pc"] is not None else ", outside it")
    elif ex["offset_dwords"] is not None:
        where = f"{ex['offset_dwords']:+d} dwords from the next instruction (this layout records no addresses to place it)"
    else:
        where = "a target it does not name"
    fall = "; its fall-through lies past the listing too" if ex["conditional"] else ""
    return (f"the code.json listing ends at pc {ex['pc']} (`{ex['isa']}`), a branch to {where}{fall}: the decoder listed only part "
            "of the kernel, so waves whose last record is this branch ran on into unlisted code (not a truncated trace)")


def compute_quality(dispatch, sums, hotspots) -> Quality:
    w = dispatch.waves
    window = {}
    for se in sorted(set(w.se.tolist())):
        m = w.se == se
        window[int(se)] = int(w.end[m].max() - w.begin[m].min())
    clock = dispatch.realtime.shader_clock_hz() if dispatch.realtime else None
    facts = CaptureFacts(
        path=str(dispatch.path),
        kernel=dispatch.kernel_name,
        dispatch_id=dispatch.resources.dispatch_id,
        agent_handle=dispatch.resources.agent_handle,
        waves=w.count,
        waves_listed=len(dispatch.index.waves),
        records=dispatch.records.count,
        shader_engines=sorted(set(w.se.tolist())),
        cus=sorted(set(w.cu.tolist())),
        simds=sorted(set(w.simd.tolist())),
        window_cycles_per_se=window,
        shader_clock_mhz=round(clock / 1e6, 1) if clock else None,
        gfxip=dispatch.index.gfxip,
        decoder_version=dispatch.index.version,
    )
    code = dispatch.code
    mask = code.instruction_mask
    mism = {}
    for name, mine, theirs in (
        ("hit", sums.hit, code.hit),
        ("latency", sums.latency, code.latency),
        ("stall", sums.stall, code.stall),
        ("idle", sums.idle, code.idle),
    ):
        if not code.has_sum(name) or (name == "stall" and not dispatch.stall_recorded):
            mism[name] = None  # unavailable on one side: nothing to compare, never "equal"
            continue
        mism[name] = int(np.count_nonzero(mine[mask] != theirs[mask]))
    check = CodeJsonCheck(checked=True, mismatching=mism)

    total = max(int(sums.latency.sum()), 1)
    mapped = sum(h.latency for h in hotspots.instructions if h.source)
    has_src = any(h.source for h in hotspots.instructions)
    warnings = []
    if not check.consistent:
        bad = ", ".join(f"{k}: {v} pcs" for k, v in mism.items() if v is not None and v)
        warnings.append(
            f"code.json sums differ from the wave files ({bad})"
            + ("; expected, some waves were skipped" if dispatch.partial else "")
            + "; attlens reports the wave-file sums"
        )
    executed = [c for c, h, m in zip(dispatch.static.cls, sums.hit.tolist(), mask.tolist()) if m and h]
    if executed and all(c == "other" for c in executed):
        warnings.append(
            f"no executed instruction has a known mnemonic (all {len(executed)} are class 'other'): code.json's ISA column "
            "does not look like AMD GPU disassembly, so the stall classes mean nothing"
        )
    if not has_src:
        warnings.append(
            "no source lines: the kernel was built without line info (see docs/capture.md for FlyDSL, Triton and HIP)"
        )
    collapse = None
    if hotspots.lines and hotspots.executed:
        top = hotspots.lines[hotspots.lines_by_latency[0]]
        share = top.latency / total
        if (
            top.file is not None
            and share >= COLLAPSE_MIN_LATENCY_SHARE
            and top.executed >= COLLAPSE_MIN_INSTRUCTIONS
            and top.executed / hotspots.executed >= COLLAPSE_MIN_INSTR_SHARE
        ):
            collapse = {
                "line": top.source,
                "latency_share": share,
                "executed_instructions": top.executed,
                "executed_share": top.executed / hotspots.executed,
                "classes": len(top.class_stall),
            }
            warnings.append(
                f"location collapse: {top.source} holds {share:.0%} of all cycles from {top.executed} distinct instructions "
                f"({top.executed / hotspots.executed:.0%} of those executed) across {len(top.class_stall)} classes; "
                "the compiler attributed most code to one line (often the kernel decorator): rank by instruction, not by line"
            )
    exit_ = listing_exit(dispatch)
    return Quality(
        facts=facts,
        code_json=check,
        mapped_latency_share=mapped / total,
        has_source_lines=has_src,
        location_collapse=collapse,
        warnings=warnings,
        listing_exit=exit_,
        notes=[listing_exit_note(exit_)] if exit_ else [],
    )
