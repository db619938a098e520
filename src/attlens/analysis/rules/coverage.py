"""No large stall class goes unmentioned.

Runs after the ledger: a stall class holding ≥ 10 % of the kernel's stall
that no finding claims (its claimed pcs carry < 25 % of the class) or
explains gets a note saying where those cycles are and why no rule gave
advice: the precondition that silenced each rule addressing that class, or
that it stayed below its threshold.
"""

from __future__ import annotations

import numpy as np

from attlens.analysis.registry import COVER_SHARE, rule
from attlens.analysis.rules._util import rnd
from attlens.analysis.stalls import CLASS_IDS

# Rules whose advice addresses a stall class.
ADDRESSED_BY = {
    "wait_global": ["load-use-distance", "in-order-wait", "drain-to-zero", "occupancy-limit", "bandwidth-ceiling"],
    "wait_lds": ["lds-to-mfma", "drain-to-zero", "crosslane-serialized"],
    "wait_smem": ["smem-wait"],
    "vmem_load": ["vmem-backpressure", "load-mfma-interleave", "bandwidth-ceiling"],
    "vmem_store": ["vmem-backpressure", "bandwidth-ceiling"],
    "vmem_atomic": ["vmem-backpressure"],
    "barrier": ["barrier-heavy"],
    "lds": ["lds-mergeable"],
    "hazard": ["hazard-nops"],
    "mfma": ["mfma-dependency", "issue-bound"],
    "valu": ["issue-bound", "mfma-dependency"],
    "salu": ["issue-bound"],
    "lds_crosslane": ["crosslane-serialized"],
}

MEANING = {
    "wait_global": "waves waited on global-memory loads or stores to complete",
    "wait_lds": "waves waited on LDS operations to complete",
    "wait_smem": "waves waited on scalar loads (kernel arguments, descriptors)",
    "wait_unresolved": "waits whose counters were already satisfied or out of order: the counter simulation resolved no producer",
    "vmem_load": "loads waited to issue: the vector-memory queue was full",
    "vmem_store": "stores waited to issue: the vector-memory queue was full",
    "vmem_atomic": "atomics waited to issue",
    "barrier": "waves waited at workgroup barriers for the other waves",
    "hazard": "s_nop and other hazard spacing",
    "lds": "LDS instructions waited to issue: the LDS pipe was busy or bank conflicts serialized them (SQ_LDS_BANK_CONFLICT measures it)",
    "lds_crosslane": "cross-lane LDS ops waited to issue",
    "mfma": "MFMAs waited to issue: the matrix pipe was still busy with earlier MFMAs, or a dependency",
    "valu": "VALU instructions waited to issue: the VALU pipe was busy or a dependency (a transcendental result, a permlane, a lane mask) was not ready",
    "salu": "scalar ALU instructions waited to issue",
    "smem": "scalar loads waited to issue",
    "branch": "branches waited to issue",
    "message": "messages waited to issue",
    "kernel_end": "s_endpgm waited for outstanding work",
    "other": "other instructions waited to issue",
}


@rule(
    "stall-class",
    "A large stall class no finding addresses",
    "note",
    trigger="a stall class holds ≥ 10 % of the kernel's stall and no finding explains it or addresses ≥ 25 % of it (its stall at the pcs findings claim, weighted by the share of each pc's exposed cycles claimed)",
    evidence="the class, its stall and share, its top pcs with lines and loops, and for each rule addressing it the precondition that kept it silent (or that it stayed below its threshold)",
    limits="an explanation, not advice: claims no cycles",
    semantics="runs after the ledger; never claims cycles",
    post=True,
    directions=[],
)
def stall_class(ctx, findings):
    b = ctx.result.breakdown
    s = ctx.result.sums
    if not b.total_stall:
        return []
    explained = {c for f in findings for c in f.explains}
    claimed: dict[int, int] = {}
    for f in findings:
        for c in f.claims:
            claimed[c["pc"]] = claimed.get(c["pc"], 0) + c["cycles"]
    # the share of each claimed pc's exposed cycles the findings address
    addressed = {pc: min(1.0, c / max(ctx.exposed_at(pc), 1)) for pc, c in claimed.items()}
    fired = {f.rule for f in findings}
    out = []
    for ci, cls in enumerate(CLASS_IDS):
        stall = b.by_class_stall.get(cls, 0)
        if stall / b.total_stall < COVER_SHARE or cls in explained:
            continue
        col = s.class_stall[:, ci]
        # the class's stall at pcs the findings address (weighted by how much of each pc they claim)
        held = int(sum(col[pc] * a for pc, a in addressed.items()))
        if held >= 0.25 * stall:
            continue
        pcs = np.argsort(-col, kind="stable")[:3]
        rows = [{**ctx.instr(int(pc)), "class_stall": int(col[pc]), **{k: v for k, v in ctx.loops.where(int(pc)).items() if k != "pc"}} for pc in pcs if col[pc] > 0]
        why = []
        for r in ADDRESSED_BY.get(cls, []):
            if r in fired:
                why.append({"rule": r, "status": "fired on other pcs of this class"})
                continue
            if ctx.ran is not None and r not in ctx.ran:
                why.append({"rule": r, "status": "not run (--disable / --only)"})
                continue
            failed = [c for c in ctx.checks.get(r, []) if not c["holds"]]
            if failed:
                why.append({"rule": r, "status": "silenced", "precondition": failed[0]["text"], "detail": failed[0]["detail"]})
            else:
                why.append({"rule": r, "status": "below its threshold or pattern absent"})
        reasons = "; ".join(f"{w['rule']}: {w.get('detail') or w['status']}" for w in why) or "no rule addresses this class"
        partly = sorted({w["rule"] for w in why if w["status"].startswith("fired")}) if held else []
        title = (f"{cls}: {stall / b.total_stall:.0%} of stall; {', '.join(partly)} address{'es' if len(partly) == 1 else ''} "
                 f"{held / stall:.0%} of it, no advice the trace supports for the rest" if partly
                 else f"{cls}: {stall / b.total_stall:.0%} of stall, no advice supported by the trace")
        out.append(
            ctx.finding(
                "stall-class",
                title,
                0,
                0.5,
                {"class": cls, "meaning": MEANING.get(cls, cls), "stall": int(stall), "share_of_stall": rnd(stall / b.total_stall, 4),
                 "stall_addressed_by_findings": held, "top_pcs": rows, "rules": why},
                f"No action from this capture: {MEANING.get(cls, cls)}. Why no rule advises a change: {reasons}.",
                "A recapture after any change should move this class; if it grows with no code change, the capture differs (dispatch, CU, clocks).",
                f"{cls} holds {stall / b.total_stall:.0%} of stall; {reasons}",
            )
        )
    return out
