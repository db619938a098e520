"""The stall taxonomy: which class every instruction's cycles belong to.

Static classes come from the mnemonic text by ordered prefix rules (first match
wins), never by substring, so ``ds_load*`` is LDS and ``s_buffer_load*`` is
scalar memory. Wait instructions (``s_waitcnt*``, ``s_wait_*cnt``) get their
class per execution from the producers the wait resolved (see
:mod:`attlens.analysis.waitdeps`): the wait's cycles are split over
global-memory, LDS and scalar-memory producers. The full table with reasons is
in docs/taxonomy.md; tests check every family.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Class ids are part of the JSON schema: never rename or reuse one.
CLASSES: dict[str, str] = {
    "vmem_load": "VMEM load issue",
    "vmem_store": "VMEM store issue",
    "vmem_atomic": "VMEM/FLAT atomic issue",
    "wait_global": "global-memory wait (vmcnt/vscnt/loadcnt/storecnt)",
    "wait_lds": "LDS wait (lgkmcnt/dscnt on ds_* producers)",
    "wait_smem": "scalar-memory wait (lgkmcnt/kmcnt on s_load*/s_buffer_load*/s_sendmsg producers)",
    "wait_unresolved": "wait that resolved no producer (counter already satisfied or out-of-order)",
    "barrier": "workgroup barrier",
    "lds": "LDS access issue",
    "lds_crosslane": "cross-lane LDS op (ds_swizzle/ds_bpermute/ds_permute)",
    "mfma": "MFMA/WMMA matrix issue",
    "valu": "VALU (vector ALU, incl. v_fma*/v_fmac*/v_div_fmas*)",
    "salu": "SALU (scalar ALU)",
    "smem": "SMEM issue (s_load*/s_buffer_load*/s_store*)",
    "branch": "branch / jump",
    "hazard": "hazard bubble (s_nop/s_sleep/s_setprio/s_wait_alu/dependency waits)",
    "message": "message / trace marker (s_sendmsg*, s_ttracedata)",
    "kernel_end": "kernel end (s_endpgm)",
    "other": "other",
}

# The class a wait instruction has before its producers are known.
WAIT = "wait"

WAIT_CLASSES = ("wait_global", "wait_lds", "wait_smem", "wait_unresolved")

# Ordered (prefix, class). First match wins; more specific prefixes first.
_PREFIX_RULES: tuple[tuple[str, str], ...] = (
    # waits on memory counters (split per execution later)
    ("s_waitcnt_depctr", "hazard"),
    ("s_waitcnt", WAIT),
    ("s_wait_alu", "hazard"),
    ("s_wait_idle", WAIT),
    ("s_wait_event", "other"),
    ("s_wait_", WAIT),  # gfx12 s_wait_loadcnt / storecnt / dscnt / kmcnt / ...
    ("s_barrier", "barrier"),  # s_barrier, gfx12 s_barrier_signal / s_barrier_wait
    ("s_endpgm", "kernel_end"),
    ("s_nop", "hazard"),
    ("s_sleep", "hazard"),
    ("s_setprio", "hazard"),
    ("s_sendmsg", "message"),
    ("s_ttracedata", "message"),
    # scalar memory: s_buffer_* before any buffer_* rule can see it
    ("s_buffer_load", "smem"),
    ("s_buffer_store", "smem"),
    ("s_buffer_atomic", "smem"),
    ("s_load", "smem"),
    ("s_store", "smem"),
    ("s_scratch_", "smem"),
    ("s_atomic", "smem"),
    ("s_dcache", "smem"),
    ("s_memtime", "smem"),
    ("s_memrealtime", "smem"),
    ("s_atc_probe", "smem"),
    ("s_prefetch", "smem"),
    # branches
    ("s_branch", "branch"),
    ("s_cbranch", "branch"),
    ("s_setpc", "branch"),
    ("s_swappc", "branch"),
    ("s_call", "branch"),
    ("s_", "salu"),
    # LDS
    ("ds_swizzle", "lds_crosslane"),
    ("ds_bpermute", "lds_crosslane"),
    ("ds_permute", "lds_crosslane"),
    ("ds_", "lds"),
    # vector memory (buffer / tbuffer / global / flat / scratch)
    ("buffer_load", "vmem_load"),
    ("tbuffer_load", "vmem_load"),
    ("global_load", "vmem_load"),
    ("flat_load", "vmem_load"),
    ("scratch_load", "vmem_load"),
    ("buffer_store", "vmem_store"),
    ("tbuffer_store", "vmem_store"),
    ("global_store", "vmem_store"),
    ("flat_store", "vmem_store"),
    ("scratch_store", "vmem_store"),
    ("buffer_atomic", "vmem_atomic"),
    ("global_atomic", "vmem_atomic"),
    ("flat_atomic", "vmem_atomic"),
    ("buffer_", "vmem_load"),  # buffer_wbl2 / buffer_inv: cache ops, issued on VMEM
    ("global_", "vmem_load"),
    # matrix cores before generic VALU
    ("v_mfma", "mfma"),
    ("v_smfmac", "mfma"),
    ("v_wmma", "mfma"),
    ("v_swmmac", "mfma"),
    ("v_", "valu"),
)

_CACHE: dict[str, str] = {}


def classify_mnemonic(mnem: str) -> str:
    """Static class of a mnemonic (lowercase first token)."""
    cls = _CACHE.get(mnem)
    if cls is None:
        cls = "other"
        for prefix, c in _PREFIX_RULES:
            if mnem.startswith(prefix):
                cls = c
                break
        _CACHE[mnem] = cls
    return cls


# Producer kinds for wait splitting, from the producer's own mnemonic.
_PRODUCER_KIND = {
    "vmem_load": "wait_global",
    "vmem_store": "wait_global",
    "vmem_atomic": "wait_global",
    "lds": "wait_lds",
    "lds_crosslane": "wait_lds",
    "smem": "wait_smem",
    "message": "wait_smem",  # s_sendmsg returns through the scalar (lgkm) counter
}


def producer_wait_class(mnem: str) -> str:
    """Which wait class a memory op charges when a wait resolves it."""
    return _PRODUCER_KIND.get(classify_mnemonic(mnem), "wait_unresolved")


_DPP = re.compile(r"\b(dpp|row_|quad_perm|wave_shr|wave_ror|row_bcast)")


@dataclass(frozen=True)
class InstructionKind:
    mnemonic: str
    cls: str
    is_wait: bool
    is_dpp: bool


def kind_of(text: str, mnem: str) -> InstructionKind:
    cls = classify_mnemonic(mnem)
    return InstructionKind(mnem, cls, cls == WAIT, bool(_DPP.search(text)) if mnem.startswith("v_") else False)
