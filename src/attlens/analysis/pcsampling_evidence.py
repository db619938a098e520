"""What the sampled stall reasons say about one finding of the plan
(docs/pcsampling.md, docs/rules.md).

A thread trace measures how long an instruction waited, never why; stochastic
PC sampling records why a sampled wave did not issue. Each rule names the
reasons its story predicts at its pcs (a wait rule: ``WAITCNT``; a barrier
rule: ``BARRIER_WAIT``; dependent MFMAs: ``ALU_DEPENDENCY``; a busy pipe:
``ARBITER_NOT_WIN``). Among the stalled samples at a finding's pcs, the share
of the predicted reasons with its 95 % Wilson interval gives the verdict:

- ``supports``: the interval's lower bound is at least 1/2;
- ``contradicts``: its upper bound is below 1/2 and another single reason's
  lower bound is at least 1/2 — the confidence is multiplied by
  :data:`CONTRADICTION_FACTOR` and the finding says so;
- ``mixed``: neither; ``too few samples``: fewer than :data:`MIN_STALLED`
  stalled samples; ``cited``: the rule predicts no reason (the mix is shown).

A join whose own confidence is below :data:`MIN_JOIN_CONFIDENCE` (another run,
unverified) is cited but never changes a confidence.
"""

from __future__ import annotations

import math

CONTRADICTION_FACTOR = 0.6
MIN_STALLED = 10
MIN_JOIN_CONFIDENCE = 0.9
Z95 = 1.959964

# rule id -> the not-issued reasons its story predicts at its pcs
EXPECTED = {
    "load-use-distance": ("WAITCNT",),
    "drain-to-zero": ("WAITCNT",),
    "lds-to-mfma": ("WAITCNT",),
    "smem-wait": ("WAITCNT",),
    "occupancy-limit": ("WAITCNT",),
    "crosslane-serialized": ("WAITCNT", "ARBITER_WIN_EX_STALL", "ARBITER_NOT_WIN"),
    "barrier-heavy": ("BARRIER_WAIT",),
    "mfma-dependency": ("ALU_DEPENDENCY",),
    "issue-bound": ("ARBITER_NOT_WIN", "ARBITER_WIN_EX_STALL"),
    "vmem-backpressure": ("ARBITER_WIN_EX_STALL", "ARBITER_NOT_WIN"),
    "load-mfma-interleave": ("ARBITER_WIN_EX_STALL", "ARBITER_NOT_WIN"),
    "in-order-wait": ("WAITCNT",),  # its pcs are the waits held by older loads
    "lds-mergeable": ("ARBITER_WIN_EX_STALL", "ARBITER_NOT_WIN"),  # LDS instructions waiting to issue
}
JUDGED_KINDS = ("performance", "dispatch")


def wilson(k: int, n: int) -> tuple[float, float]:
    """95 % Wilson score interval of the share k/n."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    den = 1 + Z95 * Z95 / n
    mid = (p + Z95 * Z95 / (2 * n)) / den
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95 * Z95 / (4 * n * n)) / den
    return max(0.0, mid - half), min(1.0, mid + half)


def sample_evidence(rule: str, kind: str, pcs, join) -> tuple[dict | None, float]:
    """(the ``evidence["pc_sampling"]`` object of a finding whose pcs are
    ``pcs``, the factor its confidence is multiplied by). (None, 1.0) when
    there is nothing to cite: no join, a capture or note finding, no pc."""
    if join is None or join.mode == "none" or kind not in JUDGED_KINDS:
        return None, 1.0
    pcs = sorted(p for p in set(pcs) if 0 <= p < len(join.samples))
    if not pcs:
        return None, 1.0
    row = join.row(pcs)
    expected = EXPECTED.get(rule, ())
    ev = {
        "join": {"mode": join.mode, "scope": join.scope, "confidence": join.confidence},
        "pcs_with_samples": [p for p in pcs if join.samples[p]],
        "samples": row["samples"],
        "issued": row["issued"],
        "stalled": row["stalled"],
        "reasons": row["reasons"],
        "expected": list(expected),
        "expected_share": None,
        "interval95": None,
        "verdict": "cited",
        "confidence_factor": 1.0,
        "note": "",
    }
    stalled = row["stalled"]
    if stalled is None:
        ev["verdict"] = "no issue information"
        ev["note"] = "host-trap samples say where waves were, not whether or why they stalled"
        return ev, 1.0
    mix = ", ".join(f"{k} {v / stalled:.0%}" for k, v in list(row["reasons"].items())[:3]) if stalled else ""
    if not expected:
        ev["note"] = f"sampled stall reasons at its pcs: {mix or 'no stalled sample'} (this rule predicts no particular reason)"
        return ev, 1.0
    known = sum(row["reasons"].values())
    k = sum(row["reasons"].get(r, 0) for r in expected)
    if known < MIN_STALLED:
        ev["verdict"] = "too few samples"
        ev["note"] = f"{known} stalled sample(s) with a reason at its pcs: too few to judge (at least {MIN_STALLED})"
        return ev, 1.0
    lo, hi = wilson(k, known)
    ev["expected_share"] = round(k / known, 6)
    ev["interval95"] = [round(lo, 6), round(hi, 6)]
    want = " or ".join(expected)
    top, top_n = next(((r, n) for r, n in row["reasons"].items() if r not in expected), (None, 0))
    if lo >= 0.5:
        ev["verdict"] = "supports"
        ev["note"] = f"{k / known:.0%} of {known:,} stalled samples at its pcs are {want}, as this finding predicts"
        return ev, 1.0
    if hi < 0.5 and top is not None and wilson(top_n, known)[0] >= 0.5:
        ev["verdict"] = "contradicts"
        trusted = join.confidence >= MIN_JOIN_CONFIDENCE
        factor = CONTRADICTION_FACTOR if trusted else 1.0
        ev["confidence_factor"] = factor
        ev["note"] = (f"the sampled stall reasons at its pcs are mostly {top} ({top_n / known:.0%} of {known:,}), not {want} "
                      f"({k / known:.0%}): the trace's story may be wrong"
                      + (f"; confidence × {factor}" if trusted else " (join not verified: confidence unchanged)"))
        return ev, factor
    ev["verdict"] = "mixed"
    ev["note"] = f"{k / known:.0%} of {known:,} stalled samples at its pcs are {want}; the rest: {mix}"
    return ev, 1.0
