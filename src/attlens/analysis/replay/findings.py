"""Which edits express a finding, and the prediction every plan finding carries
(docs/whatif.md). A finding whose change the replay cannot express says why
instead of guessing."""

from __future__ import annotations

from attlens.analysis.replay.edits import Edit, wave_slots_per_simd

# rules whose change is not an edit of the traced streams, and why
NOT_EXPRESSIBLE = {
    "bandwidth-ceiling": "a bound, not a change: only fewer bytes make the dispatch faster, and the replay keeps the bytes",
    "issue-bound": "a bound, not a change: the replay keeps every instruction's issue, so it cannot shorten the busy pipe",
    "grid-starvation": "the change is a larger grid: the replay only re-runs the traced waves",
    "load-imbalance": "the change splits the long workgroups' work: the replay keeps each wave's instructions",
    "lds-mergeable": "fewer, wider LDS instructions change issue and LDS bandwidth, which the replay keeps as traced",
    "load-mfma-interleave": "the change reorders issue between pipes, which the replay keeps as traced",
    "vmem-backpressure": "wider memory instructions change the issue queue, which the replay keeps as traced",
    "lds-to-mfma": "the change reorders LDS reads and MFMA issue, which the replay keeps as traced",
    "crosslane-serialized": "the change replaces the LDS cross-lane ops with DPP/permute instructions the trace does not have",
    "mfma-dependency": "dependent-MFMA stalls are issue stalls the replay keeps as traced",
    "hazard-nops": "hazard bubbles are issue gaps the replay keeps as traced",
    "drain-to-zero": "the change lowers the wait's count so younger ops stay in flight, which the replay's wait sets (as traced) cannot say",
    "in-order-wait": "the change reorders two load streams; the replay keeps each wait's traced set of ops",
}
CAPTURE_KINDS = ("capture", "note")


def _next_instruction(d, pc: int) -> int | None:
    isa = d.code.isa
    for q in range(pc + 1, d.code.size):
        if isa[q]:
            return q
    return None


def edits_for_finding(f, result) -> tuple[list[Edit], str | None]:
    """(edits, None) or ([], why not)."""
    rid, ev, d = f.rule, f.evidence or {}, result.dispatch
    src = f"rule:{rid}"
    if rid == "load-use-distance":
        out: list[Edit] = []
        for row in ev.get("loads", []):
            lever = row.get("lever")
            if lever == "earlier-in-iteration":
                after = row.get("issue_after_pc")
                target = _next_instruction(d, after) if after is not None else (row.get("loop_pcs") or [None])[0]
                if target is None:
                    continue
                out += [Edit("move", pc=int(p), before_pc=int(target), source=src) for p in row.get("burst") or [row["pc"]]]
            elif lever == "next-iteration":
                out.append(Edit("prefetch", pc=int(row["pc"]), source=src))
            elif lever in ("earlier-in-wave", "earlier-with-registers"):
                at = row.get("address_ready_at_pc")
                target = _next_instruction(d, at) if at is not None else _first_instruction(d)
                if target is not None and target != row["pc"]:
                    out.append(Edit("move", pc=int(row["pc"]), before_pc=int(target), source=src))
        return (out, None) if out else ([], "no load of the finding has a place to move to")
    if rid == "smem-wait":
        # hoisting: the later s_loads issue with the first batch, before the first wait (the replay then
        # finds how much of their latency the first wait covers); preloading: the first wait is gone
        first = ev.get("first_wait_pc")
        out = [Edit("move", pc=int(h["pc"]), before_pc=int(first), source=src) for h in ev.get("hoistable") or [] if first is not None]
        if first is not None and any(c["pc"] == first for c in f.claims):
            out.append(Edit("hide-wait", pc=int(first), source=src))
        return (out, None) if out else ([], "nothing to hoist or preload: the first wait is launch latency")
    if rid == "barrier-heavy":
        pcs = [int(b["pc"]) for b in ev.get("barriers", [])] or [c["pc"] for c in f.claims]
        return [Edit("barrier-skew", pc=p, source=src) for p in pcs], None
    if rid == "occupancy-limit":
        cur = result.occupancy.theoretical_waves_per_simd
        if not cur:
            return [], "theoretical waves per SIMD unknown"
        if int(cur) + 1 > wave_slots_per_simd(d):
            return [], f"{cur} waves per SIMD is the target's maximum already"
        return [Edit("waves-per-simd", waves_per_simd=int(cur) + 1, source=src)], None
    if rid == "early-exit-waves":
        return [Edit("early-exit", source=src)], None
    if rid in NOT_EXPRESSIBLE:
        return [], NOT_EXPRESSIBLE[rid]
    return [], f"the replay has no edit for rule {rid}"


def _first_instruction(d) -> int | None:
    return next((q for q in range(d.code.size) if d.code.isa[q]), None)


def predicted_of(f, result, plan=None) -> dict | None:
    """The ``predicted`` object of one finding (None for notes and capture
    findings other than early-exit waves: no change of the kernel to predict)."""
    from attlens.analysis.replay.predict import whatif

    from attlens.analysis.replay.calibrate import unreplayable

    if f.kind in CAPTURE_KINDS and f.rule != "early-exit-waves":
        return None
    edits, why = edits_for_finding(f, result)
    if not edits:
        return {"expressible": False, "reason": why}
    why = unreplayable(result.dispatch)
    if why:
        return {"expressible": False, "reason": f"the capture cannot be replayed: {why}"}
    w = whatif(result, edits, plan, cap=stake_cap([f]))
    g, cal = w.gain, w.calibration
    return {"expressible": True, "edits": [e.to_dict() for e in edits], "dispatch_ns_before": w.before["dispatch_ns"],
            "dispatch_ns_after": w.after["dispatch_ns"], "gain": g["share"], "low": g["low"], "high": g["high"],
            "bound": w.bound["kind"] if w.bound["binding"] else None,
            "calibration": {"span_residual": round(cal.span_residual, 4), "within": bool(cal.within)}}


def stake_cap(findings) -> float | None:
    """The largest gain a set of findings' changes may predict: the share of
    traced wave-cycles their performance findings claim (the ledger never
    grants a cycle twice, so the shares add); None when one of them is not a
    performance finding (its change is bounded otherwise)."""
    if not findings or any(f.kind != "performance" for f in findings):
        return None
    return round(sum(f.share_of_cycles for f in findings), 4)


class _DictCodec:
    """A JSON-able dict as a digest record (no arrays)."""

    def encode(self, value):
        return {}, value

    def decode(self, arrays, meta):
        return meta


def cached_predicted(f, result, plan=None) -> dict | None:
    """:func:`predicted_of`, kept in the capture's digest (keyed by the
    finding's edits and its cap), so a second plan of the capture replays nothing."""
    import hashlib
    import json

    from attlens.cache import memo

    if f.kind in CAPTURE_KINDS and f.rule != "early-exit-waves":
        return None
    edits, why = edits_for_finding(f, result)
    if not edits:
        return {"expressible": False, "reason": why}
    from attlens.analysis.bandwidth import hbm_floor_ns

    dur = plan.dispatch_facts.duration.ns if plan is not None and plan.dispatch_facts is not None else None
    floor = hbm_floor_ns(plan.bandwidth) if plan is not None else None
    key = json.dumps([[e.key() for e in edits], f.kind, round(f.share_of_cycles, 6), dur, floor], default=str)
    name = f"whatif-{REPLAY_VERSION}-" + hashlib.sha1(key.encode()).hexdigest()[:16]
    return memo(result.dispatch, name, lambda: predicted_of(f, result, plan), _DictCodec())


REPLAY_VERSION = "v6"  # bump when the model changes: digests keep predictions under this name


def edits_for_rules(plan, rules: list[str]) -> tuple[list[Edit], list[dict]]:
    """The edits that express the named findings of ``plan``; the second item
    lists the rules the model cannot express or that did not fire."""
    from attlens.analysis.registry import load_rules
    from attlens.errors import UsageError

    known = load_rules()
    bad = [r for r in rules if r not in known]
    if bad:
        raise UsageError(f"unknown rule {', '.join(bad)}", hint="attlens rules lists them; attlens plan shows which fired")
    edits: list[Edit] = []
    skipped: list[dict] = []
    by_rule = {f.rule: f for f in plan.findings}
    for r in rules:
        f = by_rule.get(r)
        if f is None:
            skipped.append({"rule": r, "reason": "the rule did not fire on this capture"})
            continue
        es, why = edits_for_finding(f, plan.result)
        if not es:
            skipped.append({"rule": r, "reason": why})
        for e in es:
            if all(e.key() != x.key() for x in edits):
                edits.append(e)
    return edits, skipped
