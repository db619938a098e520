"""Predictions: the dispatch time after a set of edits, with its interval and
bounds (docs/whatif.md).

after = measured dispatch time x (replayed span with the edits / replayed span
without them) of the slowest traced CU; the interval runs from the CU with the
smallest gain to the one with the largest, among the CUs whose unedited span
is at least half the longest (those could set the dispatch time; the traced
CUs are the sample the grid is extrapolated from), widened on both sides by
the calibration residual (the model's noise floor). No
prediction beats a SIMD's issue time (the busiest pipe's issue cycles of its
waves) or the bandwidth floor (bytes / peak HBM bandwidth).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.bandwidth import hbm_floor_ns
from attlens.analysis.replay.calibrate import Calibration, Engine, engine_of
from attlens.analysis.replay.edits import Edit, compile_edits
from attlens.analysis.replay.model import replay_with
from attlens.results import brief_repr

SETS_TIME_SHARE = 0.5  # a traced CU whose unedited span is at least half the longest could set the dispatch time
WHATIF_SCHEMA = "attlens.whatif"
WHATIF_SCHEMA_VERSION = 1


@brief_repr("kernel", ("edits", lambda w: len(w.edits)), ("gain", lambda w: w.gain.get("share")), ("low", lambda w: w.gain.get("low")),
            ("high", lambda w: w.gain.get("high")))
@dataclass
class WhatIf:
    capture: str
    kernel: str | None
    edits: list[Edit]
    unexpressible: list[dict]
    calibration: Calibration
    before: dict
    after: dict
    gain: dict
    bound: dict
    changed: dict
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        from attlens.jsondoc import header

        return {**header(WHATIF_SCHEMA, WHATIF_SCHEMA_VERSION), "capture": self.capture, "kernel": self.kernel,
                "edits": [e.to_dict() for e in self.edits], "unexpressible": self.unexpressible, "calibration": self.calibration.to_dict(),
                "before": self.before, "after": self.after, "gain": self.gain, "bound": self.bound, "changed": self.changed,
                "notes": list(self.notes)}


def _facts(result, plan):
    """(dispatch facts, bandwidth) from the plan, or computed as the plan would."""
    if plan is not None and getattr(plan, "dispatch_facts", None) is not None:
        return plan.dispatch_facts, plan.bandwidth
    cached = getattr(result, "_whatif_facts", None)
    if cached is None:
        from attlens.analysis.plan import PlanContext

        f = PlanContext(result).facts
        cached = (f, f.bandwidth)
        result._whatif_facts = cached
    return cached


def whatif(result, edits: list[Edit], plan=None, unexpressible: list[dict] | None = None, cap: float | None = None) -> WhatIf:
    """Replay the traced dispatch with ``edits`` applied and predict its time.
    ``cap``: the largest gain the edits' findings allow (their share of traced
    wave-cycles at stake); the gain and its interval never exceed it."""
    eng = engine_of(result)
    facts, bw = _facts(result, plan)
    d = result.dispatch
    before_ns = facts.duration.ns if facts is not None else None
    early = facts.populations.early_mask if facts is not None and facts.populations is not None else None
    spec, notes = compile_edits(eng.s, result, edits, early)
    rp = replay_with(eng.s, eng.lat, spec, eng.base)
    notes += rp.notes
    removed = spec.removed if spec.removed is not None and spec.removed.any() else None
    issue_u = eng.issue_floor if removed is None else eng.issue_floor_for(removed)
    base_u, edit_u = eng.unit_spans(eng.base), eng.unit_spans(rp, spec.removed)
    clamped = np.maximum(edit_u, issue_u)
    issue_binding = bool((clamped > edit_u + 0.5).any())
    # the slowest traced CU sets the time (as the calibration measures it); the CUs that could set it give the spread
    central = float(clamped.max() / max(base_u.max(), 1.0)) if len(base_u) else 1.0
    could_set = base_u >= SETS_TIME_SHARE * (base_u.max() if len(base_u) else 0.0)
    ratios = np.r_[clamped[could_set] / np.maximum(base_u[could_set], 1.0), central]
    res = abs(eng.calibration.span_residual)
    g = 1.0 - central
    lo, hi = 1.0 - float(ratios.max()) - res, 1.0 - float(ratios.min()) + res
    share = traced_share(facts, before_ns)
    if share is not None:
        # the dispatch time outside the traced XCC's span (launch, ramp, the other XCCs' tails) is held fixed
        # in the prediction; the interval reaches the span's own gain (that time shrinking alike)
        g, lo, hi = g * share, min(lo, lo * share), max(hi, hi * share)
        if share < 0.9:
            notes.append(f"the traced waves span {share:.0%} of the measured dispatch time: the gain applies to that part "
                         "(the rest, launch and the untraced XCCs' tails, is held fixed; the interval's high end lets it shrink alike)")
    elif edits:
        notes.append("the traced span's share of the dispatch time is unknown (no measured duration or clock): "
                     "the gain is the traced waves' span's")
    floor = hbm_floor_ns(bw)
    after_ns = before_ns * (1.0 - g) if before_ns else None
    bw_binding = False
    if floor is not None and before_ns and floor <= before_ns:
        bw_cap = 1.0 - floor / before_ns  # no gain beyond reaching the bandwidth floor
        if g > bw_cap:
            g, bw_binding = bw_cap, True
            after_ns = floor
        hi = min(hi, bw_cap)
        lo = min(lo, bw_cap)
    stake_binding = stake_clips = False
    if cap is not None:  # never more than the wave-cycles the findings claim
        stake_binding, stake_clips = cap < g - 1e-9, cap < hi - 1e-9
        g, lo, hi = min(g, cap), min(lo, cap), min(hi, cap)
        if after_ns is not None and before_ns:
            after_ns = max(after_ns, before_ns * (1.0 - cap))
    bound = _bound(bw_binding, issue_binding, stake_binding, stake_clips, floor, before_ns, cap, issue_u, clamped, base_u)
    return WhatIf(
        capture=str(d.path), kernel=d.kernel_name, edits=list(edits), unexpressible=list(unexpressible or []), calibration=eng.calibration,
        before={"dispatch_ns": _r(before_ns), "source": (facts.duration.source if facts is not None and facts.duration.ns else "unavailable"),
                "replayed_span_cycles": int(round(float(base_u.max()))) if len(base_u) else 0,
                "traced_share": None if share is None else round(share, 4)},
        after={"dispatch_ns": _r(after_ns), "replayed_span_cycles": int(round(float(clamped.max()))) if len(clamped) else 0},
        gain={"share": round(g, 4), "low": round(min(lo, g), 4), "high": round(max(hi, g), 4)},
        bound=bound, changed=eng.changed(rp), notes=notes,
    )


def traced_share(facts, before_ns) -> float | None:
    """The share of the measured dispatch time the traced waves span: the
    capture's span (occupancy.json, the traced SEs, SE clocks aligned, at the
    known clock) over the dispatch time, at most 1; None when either is
    unknown or the dispatch time is the capture's span itself."""
    if facts is None or not before_ns or facts.duration.source != "kernel trace":
        return None
    span = facts.duration.capture_span or {}
    if not span.get("ns"):
        return None
    return min(1.0, float(span["ns"]) / float(before_ns))


def _bound(bw_binding: bool, issue_binding: bool, stake_binding: bool, stake_clips: bool, floor, before_ns, cap, issue_u, clamped,
           base_u) -> dict:
    """The ceiling that held the prediction (``binding``); else a known one
    that did not (the findings' stake when it cut the interval's high end,
    the bandwidth floor); else none. ``issue``: the slowest replayed CU's
    busiest SIMD pipe; ``stake``: the findings' share of traced wave-cycles
    at stake; ``bandwidth``: the bytes at peak HBM bandwidth."""
    def at(ns):
        return {"dispatch_ns": _r(ns) if ns is not None else None}

    stake_ns = before_ns * (1.0 - cap) if before_ns and cap is not None else None
    if bw_binding:
        return {"kind": "bandwidth", **at(floor), "binding": True}
    if issue_binding and len(clamped):
        j = int(np.argmax(clamped))
        return {"kind": "issue", **at(before_ns * float(issue_u[j] / max(base_u.max(), 1.0)) if before_ns else None), "binding": True}
    if stake_binding or stake_clips:
        return {"kind": "stake", **at(stake_ns), "binding": stake_binding}
    if floor is not None:
        return {"kind": "bandwidth", **at(floor), "binding": False}
    return {"kind": None, "dispatch_ns": None, "binding": False}


def _r(x):
    return None if x is None else round(float(x), 1)


def edits_key(edits: list[Edit]) -> str:
    return hashlib.sha1(json.dumps([e.key() for e in edits]).encode()).hexdigest()[:16]
