"""One verdict per dispatch: the sentence a plan leads with, and its numbers.

It is read off the plan's whole-dispatch findings, in this order: a dispatch
at the HBM ceiling is bandwidth-bound whatever else holds (only fewer bytes
help); else a few long workgroups setting the span; else a grid that leaves
the GPU idle or underfilled; else an issue-bound compute pipe; else no
dispatch-wide limit holds and the largest recoverable stall leads. The
rules' preconditions keep the findings consistent with it (registry.OPPOSITE),
so the sentence never contradicts a finding below it. A capture that shows
only the prologue, or whose grid does not match the kernel trace, says so in
the same sentence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.results import brief_repr

KINDS = ("bandwidth-bound", "load-imbalance", "grid-starved", "grid-underfilled", "issue-bound", "stall-bound", "no-finding")


@brief_repr("kind", "sentence")
@dataclass
class Verdict:
    sentence: str
    kind: str  # one of KINDS
    numbers: dict = field(default_factory=dict)
    rule: str | None = None  # the finding it comes from

    def to_dict(self) -> dict:
        return {"sentence": self.sentence, "kind": self.kind, "numbers": self.numbers, "rule": self.rule}


def _us(ns) -> str:
    if ns is None:
        return "unknown-duration"
    v = ns / 1000
    return f"{v:,.1f} µs" if v >= 10 else f"{v:,.2f} µs"


def _first(findings, rule):
    return next((f for f in findings if f.rule == rule), None)


def make_verdict(findings, facts, total_cycles: int, busiest: tuple[str | None, float] = (None, 0.0),
                 gaps: list[str] | None = None, stall_recorded: bool = True) -> Verdict:
    """The verdict of a plan's ranked findings and its dispatch facts
    (``busiest``: the busiest compute pipe and its busy share; ``gaps``: what
    the capture lacks for any verdict, said when no finding gives one;
    ``stall_recorded`` False: a verdict without a finding says no stall
    pattern could be measured)."""
    du = facts.duration if facts is not None else None
    nums = {"duration_ns": du.ns if du else None, "duration_source": du.source if du else None}
    v = (_dispatch_verdict(findings, nums) or _unsupported_verdict(findings, nums, gaps or [])
         or _stall_verdict(findings, nums, total_cycles, _limits_checked(facts, busiest)))
    caveats = []
    if not stall_recorded and v.kind == "no-finding" and not gaps:
        caveats.append("the profiler recorded no stall cycles, so no stall pattern could be measured")
    if any(f.rule == "prologue-only" for f in findings):
        caveats.append("the traced waves never ran the main loop: this describes the prologue only")
    if facts is not None and facts.coverage.grid_matches is False:
        caveats.append("the kernel trace's grid does not match this capture")
    if facts is not None and du is not None and du.agreement == "disagree":
        caveats.append(f"duration from the capture's own span ({_us(du.ns)}), not the kernel trace")
    if caveats:
        v.sentence = v.sentence.rstrip(".") + " (" + "; ".join(caveats) + ")."
        v.numbers["caveats"] = caveats
    return v


def _dispatch_verdict(findings, nums) -> Verdict | None:
    f = _first(findings, "bandwidth-ceiling")
    if f is not None:
        e = f.evidence
        n = {**nums, "achieved_gbps": e["achieved_gbps"], "fraction_of_peak": e["fraction_of_peak"], "peak_gbps": e["peak_gbps"],
             "bytes_moved": e["bytes_moved"], "floor_ns": f.dispatch_time["bound_ns"], "fraction_at_capture_span": e.get("fraction_of_peak_at_capture_span")}
        at_span = f" ({e['fraction_of_peak_at_capture_span']:.0%} at the capture's own span)" if e.get("fraction_of_peak_at_capture_span") else ""
        return Verdict(f"Bandwidth-bound: {e['bytes_moved'] / 1e6:,.1f} MB in {_us(e['duration_ns'])} = {e['achieved_gbps']:,.0f} GB/s, "
                       f"{e['fraction_of_peak']:.0%} of the {e['peak_gbps']:,.0f} GB/s HBM peak{at_span}; the bytes alone need "
                       f"{_us(f.dispatch_time['bound_ns'])}, so only moving fewer bytes makes it faster.", "bandwidth-bound", n, f.rule)
    f = _first(findings, "load-imbalance")
    if f is not None:
        e = f.evidence
        n = {**nums, "long_workgroups": e["long_workgroups"], "long_waves": e["long_waves"], "waves": e["waves_on_traced_ses"],
             "span_over_median": e["span_over_median"], "span_cycles": e["span_cycles"], "span_without_long_cycles": e["span_without_long_waves_cycles"],
             "bound_ns": f.dispatch_time["bound_ns"]}
        return Verdict(f"Load imbalance: {e['long_workgroups']} long workgroup(s) set the {_us(nums['duration_ns'])} dispatch — {e['long_waves']} of "
                       f"{e['waves_on_traced_ses']} waves on the traced SEs run {e['span_over_median']:.1f}x the median wave; the others finish in "
                       f"{e['span_without_long_waves_cycles']:,} of {e['span_cycles']:,} cycles, so splitting the long workgroups' work, not more "
                       "occupancy, makes it faster.", "load-imbalance", n, f.rule)
    f = _first(findings, "grid-starvation")
    if f is not None:
        e = f.evidence
        n = {**nums, "workgroups": e["workgroups"], "working_workgroups": e["working_workgroups"], "cus": e["cus"], "idle_cu_share": e["idle_cu_share"],
             "wave_slot_fill": e["wave_slot_fill"], "bound_ns": f.dispatch_time["bound_ns"]}
        if e["idle_cus"]:
            return Verdict(f"Grid-starved: {e['working_workgroups']:,} working workgroups for {e['cus']} CUs leave {e['idle_cu_share']:.0%} of the CUs idle "
                           f"during the {_us(nums['duration_ns'])} dispatch; more workgroups per problem, not in-kernel tuning, make it faster"
                           + (f" (toward {_us(f.dispatch_time['bound_ns'])})." if f.dispatch_time.get("bound_ns") else "."), "grid-starved", n, f.rule)
        return Verdict(f"Grid-underfilled: every CU has work but the grid fills {e['wave_slot_fill']:.0%} of the wave slots "
                       f"({e['waves_per_cu']} waves per CU of {e['resident_waves_per_cu_possible']}) for the {_us(nums['duration_ns'])} dispatch; more waves in flight "
                       "overlap more latency" + (f", down to the {_us(f.dispatch_time['bound_ns'])} HBM floor." if f.dispatch_time.get("bound_ns") else "."),
                       "grid-underfilled", n, f.rule)
    f = _first(findings, "issue-bound")
    if f is not None:
        e = f.evidence
        n = {**nums, "pipe": e["pipe"], "busy_share": e["busy_share"], "bound_ns": f.dispatch_time["bound_ns"]}
        need = (f" (≥ {_us(f.dispatch_time['bound_ns'])} of the {_us(nums['duration_ns'])} dispatch)" if f.dispatch_time.get("bound_ns") is not None else "")
        return Verdict(f"{e['pipe']}-issue-bound: the {e['pipe']} pipe is busy {e['busy_share']:.0%} of the traced window{need}; "
                       f"fewer {e['pipe']} instructions, not memory tuning, make it faster.", "issue-bound", n, f.rule)
    return None


def _limits_checked(facts, busiest) -> str:
    """What the dispatch-wide checks measured, for a verdict none of them holds."""
    parts = []
    bw = getattr(facts, "bandwidth", None)
    if bw is not None and bw.available and bw.at_ceiling is False and bw.fraction_of_peak is not None:
        parts.append(f"HBM at {bw.fraction_of_peak:.0%} of peak at most")
    elif bw is not None and bw.available and bw.fraction_of_peak_low is not None:
        parts.append(f"HBM at ≥ {bw.fraction_of_peak_low:.0%} of peak, the rest unknown without PMC")
    else:
        parts.append("HBM share unknown" + (" (the requested bytes are re-read from L2; PMC counters would tell)" if bw is not None and bw.bounds else ""))
    pipe, share = busiest
    if pipe:
        parts.append(f"busiest compute pipe {pipe} {share:.0%} busy")
    return ", ".join(parts)


def _unsupported_verdict(findings, nums, gaps: list[str]) -> Verdict | None:
    """No whole-dispatch or performance finding, and the capture lacks what a
    verdict needs: say so and why, rather than "no limit found" (capture
    findings, such as missing source lines, are never the verdict)."""
    if not gaps or any(f.kind == "performance" and f.cycles_at_stake > 0 for f in findings):
        return None
    return Verdict(f"This capture cannot support a verdict: {'; '.join(gaps)}.", "no-finding", {**nums, "unsupported_because": list(gaps)})


def _stall_verdict(findings, nums, total_cycles, checked: str = "") -> Verdict:
    perf = sorted((f for f in findings if f.kind == "performance" and f.cycles_at_stake > 0), key=lambda f: -f.priority)
    if not perf:
        return Verdict(f"No dispatch-wide limit ({checked}) and no recoverable stall pattern found in this {_us(nums['duration_ns'])} dispatch "
                       "(see the stall summary and the silenced rules).", "no-finding", nums)
    f = perf[0]
    n = {**nums, "cycles_at_stake": f.cycles_at_stake, "share_of_traced_wave_cycles": round(f.share_of_cycles, 4), "traced_wave_cycles": total_cycles}
    return Verdict(f"No dispatch-wide limit found ({checked}): the largest "
                   f"recoverable stall is {f.title[0].lower() + f.title[1:]} — {f.cycles_at_stake:,} traced wave-cycles ({f.share_of_cycles:.1%}) "
                   f"of the {_us(nums['duration_ns'])} dispatch.", "stall-bound", n, f.rule)
