"""The optimization plan: run the rules, settle their cycles, rank their findings.

A rule is a function registered with :func:`~attlens.analysis.registry.rule`
(the registry module, which rules import instead of this one); it receives a
:class:`PlanContext` (every analysis result) and returns findings. Rules live
one per pattern in :mod:`attlens.analysis.rules`; adding one is adding a
function there, nothing else changes.

Every rule declares the facts its advice assumes (``preconditions``), checks
them with :meth:`PlanContext.require` and stays silent when one does not hold;
the plan lists which rule a failed precondition silenced and why.

One semantics for every performance rule unless its ``semantics`` says
otherwise (the wait rules trigger on their exposed claims,
``EXPOSED_TRIGGER_SEMANTICS``): it *triggers* on the stall cycles
of its pattern (the numbers of the stall summary), and the cycles it
*claims* are the part of those cycles (stall + idle at the claimed pcs) that
other waves' work did not hide (the hidden-latency model). One cycle ledger:
every finding lists ``claims`` ``[{pc, cycles}]``; the ledger grants them in
priority order and never grants a pc more than its stall + idle, so two
findings never count the same cycles and the plan's total at stake never
exceeds the kernel's cycles. A finding that asked for cycles another finding
already holds gets the rest and says whom it shares with; one left with
nothing yields and is listed under ``yielded``.

After the rules, a stall class holding ≥ 10 % of the kernel's stall that no
finding claims or explains gets a ``stall-class`` note: where those cycles
are, and which precondition kept the rules that address it silent.

Order: severity (HIGH, MED, LOW, INFO), then the finding the verdict comes
from, grid starvation and load imbalance, capture findings, whole-dispatch
limits, performance findings by priority (cycles at stake x confidence),
notes. Severity of performance findings comes from the share of all traced
wave-cycles at stake (docs/rules.md).

The plan stands on the dispatch facts (analysis/dispatch_facts.py: measured
duration, the grid checked against the capture, working waves, bytes) and
leads with one verdict (analysis/verdict.py) that its findings never
contradict: rules whose advice points the opposite way (registry.OPPOSITE)
check the dispatch-level facts as preconditions.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from attlens.analysis.registry import (  # noqa: F401  (re-exported: the plan's public names)
    COVER_SHARE,
    EXPOSED_TRIGGER_SEMANTICS,
    HIGH_SHARE,
    KINDS,
    MED_SHARE,
    PERFORMANCE_SEMANTICS,
    REGISTRY,
    SEVERITIES,
    Finding,
    RuleInfo,
    load_rules,
    rule,
)
from attlens.results import brief_repr

# Whole-dispatch findings measured from the traced waves (a prologue-only capture qualifies them too).
TRACE_DISPATCH_RULES = ("issue-bound", "bandwidth-ceiling")
_GROUP = {"capture": 1, "dispatch": 2, "performance": 3, "note": 4}
PLAN_SCHEMA = "attlens.plan"
PLAN_SCHEMA_VERSION = 3
FINDING_COLUMNS = ["rule", "title", "kind", "severity", "confidence", "cycles_at_stake", "share_of_cycles", "priority", "claims",
                   "ledger.requested_cycles", "ledger.granted_cycles", "ledger.shared",
                   "loops", "preconditions", "explains", "evidence", "change", "falsify", "rationale", "directions", "dispatch_time", "predicted"]
# What the plan's cycles are: every traced wave's idle + latency, summed (not the dispatch's time).
CYCLES_UNIT = "traced wave-cycles"


class PlanContext:
    """Everything a rule may read, computed once."""

    def __init__(self, result, waves=None, pmc=None):
        self.result = result
        self.d = result.dispatch
        self._waves = waves
        self.pmc = pmc
        self.checks: dict[str, list[dict]] = {}  # rule -> preconditions checked, in order
        self.ran: set[str] | None = None  # the rules this plan runs (--disable / --only), set by make_plan
        self._memo: dict = {}

    def memo(self, key: str, compute):
        """``compute()`` once per plan (facts several rules share)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @cached_property
    def waves(self):
        if self._waves is None:
            from attlens.analysis.waves import analyze_waves

            self._waves = analyze_waves(self.result)
        return self._waves

    @property
    def att(self):
        return self.waves.attribution

    @cached_property
    def loops(self):
        from attlens.analysis.loops import compute_loops

        return compute_loops(self.d, self.waves.phases.exec_index)

    @cached_property
    def facts(self):
        """The dispatch facts (analysis/dispatch_facts.py) with the bytes at their duration."""
        from attlens.analysis.bandwidth import compute_bandwidth
        from attlens.analysis.dispatch_facts import compute_dispatch_facts

        f = compute_dispatch_facts(self.result)
        du = f.duration
        weights, note = f.wave_weights(self.result.dispatch)
        f.bandwidth = compute_bandwidth(self.result, self.pmc, self.loops, du.ns, f"{du.source}: {du.detail}" if du.ns else None,
                                        grid_mismatch=f.coverage.detail if f.coverage.grid_matches is False else None,
                                        wave_weights=weights, weights_note=note)
        return f

    @property
    def bandwidth(self):
        return self.facts.bandwidth

    @cached_property
    def total(self) -> int:
        s = self.result.sums
        return max(int((s.idle + s.latency).sum()), 1)

    @cached_property
    def budget(self):
        """Per pc: the cycles findings may claim there (stall + idle)."""
        s = self.result.sums
        return s.stall + s.idle

    def exposed_fraction(self, pc: int) -> float:
        """Share of a pc's stall that is exposed (1 without the hidden model)."""
        h = self.result.hidden
        s = self.result.sums
        if h is None or s.stall[pc] == 0:
            return 1.0
        return float(s.stall[pc] - h.hidden_stall[pc]) / float(s.stall[pc])

    def exposed_at(self, pc: int) -> int:
        """Stall + idle at a pc that other waves' work did not hide."""
        s = self.result.sums
        h = self.result.hidden
        if h is None:
            return int(s.stall[pc] + s.idle[pc])
        return int(max(s.stall[pc] - h.hidden_stall[pc], 0) + max(s.idle[pc] - h.hidden_idle[pc], 0))

    def exposed_stall(self, pcs) -> float:
        """Σ over pcs of their stall that other waves' work did not hide."""
        s = self.result.sums
        return sum(int(s.stall[pc]) * self.exposed_fraction(pc) for pc in pcs)

    def stall_of(self, pcs) -> int:
        s = self.result.sums
        return int(sum(int(s.stall[pc]) for pc in pcs))

    def src(self, pc: int) -> str | None:
        loc = self.d.static.own_source[pc]
        return str(loc) if loc else None

    def instr(self, pc: int) -> dict:
        s = self.result.sums
        return {"pc": pc, "isa": self.d.code.isa[pc], "source": self.src(pc), "hit": int(s.hit[pc]), "stall": int(s.stall[pc])}

    def require(self, rule_id: str, pid: str, holds: bool, detail: str) -> bool:
        """Record one precondition check of a rule; returns ``holds``."""
        text = dict(REGISTRY[rule_id].preconditions).get(pid)
        if text is None:
            raise KeyError(f"rule {rule_id} declares no precondition {pid!r}")
        self.checks.setdefault(rule_id, []).append({"id": pid, "text": text, "holds": bool(holds), "detail": detail})
        return bool(holds)

    def finding(self, rule_id: str, title: str, cycles: int, confidence: float, evidence: dict, change: str, falsify: str,
                rationale: str, claims=None, explains=None, severity: str | None = None, lead: bool = False,
                dispatch_time: dict | None = None) -> Finding:
        """``claims``: [(pc, cycles)] for performance findings (``cycles`` is then their sum);
        ``dispatch_time``: for whole-dispatch findings, the dispatch time they bound."""
        info = REGISTRY[rule_id]
        merged: dict[int, float] = {}
        for pc, c in claims or []:  # one entry per pc, never beyond its stall + idle
            merged[int(pc)] = merged.get(int(pc), 0.0) + float(c)
        req = []
        for pc in sorted(merged):
            c = int(max(0, min(int(round(merged[pc])), int(self.budget[pc]))))
            if c > 0:
                req.append({"pc": pc, "cycles": c})
        if claims is not None:
            cycles = sum(c["cycles"] for c in req)
        cycles = int(max(0, min(cycles, self.total)))
        share = cycles / self.total
        fixed = severity is not None
        if severity is None:
            if info.kind == "capture":
                severity = "HIGH" if confidence >= 0.8 else "MED"
            elif info.kind == "note":
                severity = "INFO"
            else:
                severity = "HIGH" if share >= HIGH_SHARE else ("MED" if share >= MED_SHARE else "LOW")
        held = [c for c in self.checks.get(rule_id, []) if c["holds"]]
        return Finding(rule_id, title, info.kind, severity, round(confidence, 2), cycles, share, evidence, change, falsify, rationale,
                       claims=[dict(c) for c in req], requested=req, preconditions=held, explains=list(explains or []), lead=lead,
                       fixed_severity=fixed, directions=list(info.directions), dispatch_time=dispatch_time)


@brief_repr(("findings", lambda p: len(p.findings)), ("top", lambda p: p.findings[0].rule if p.findings else None),
            ("top_severity", lambda p: p.findings[0].severity if p.findings else None), "cycles_at_stake", "total_cycles",
            ("rules_run", lambda p: len(p.rules_run)), ("rules_silenced", lambda p: len(p.rules_silenced)))
@dataclass
class Plan:
    findings: list[Finding]  # ranked (see the module docstring)
    rules_run: list[str]
    rules_disabled: list[str]
    rule_errors: dict[str, str] = field(default_factory=dict)  # rule -> error (a broken rule never breaks the plan)
    rules_silenced: dict[str, list[dict]] = field(default_factory=dict)  # rule -> failed preconditions
    yielded: list[dict] = field(default_factory=list)  # findings left with no cycles by the ledger
    total_cycles: int = 0
    loops: object = None  # analysis.loops.LoopStructure
    bandwidth: object = None  # analysis.bandwidth.Bandwidth
    dispatch: dict = field(default_factory=dict)  # grid, occupancy inputs, duration: the plan's header
    result: object = field(default=None, repr=False)  # the AnalysisResult it was made from
    dispatch_facts: object = None  # analysis.dispatch_facts.DispatchFacts: duration, coverage, working waves, bytes
    verdict: object = None  # analysis.verdict.Verdict: the one sentence the plan leads with

    @property
    def cycles_at_stake(self) -> int:
        return sum(f.cycles_at_stake for f in self.findings)

    def to_pandas(self):
        """The findings as a DataFrame, one row each in the plan's order, one
        column per key of ``findings`` in ``to_dict()`` (evidence, claims,
        ledger, ... stay objects)."""
        from attlens.results import dataframe, flat

        return dataframe([flat(f.to_dict(), "ledger") for f in self.findings], FINDING_COLUMNS)

    @property
    def warnings(self) -> list[str]:
        """The analysis' warnings about the capture (the ``warnings`` key)."""
        return self.result.warnings

    def to_dict(self) -> dict:
        """The ``attlens.plan`` object (``attlens plan --json``)."""
        from attlens.jsondoc import capture_ref, header

        result = self.result
        b = result.breakdown
        return {
            **header(PLAN_SCHEMA, PLAN_SCHEMA_VERSION),
            "capture": capture_ref(result.dispatch),
            "verdict": self.verdict.to_dict() if self.verdict is not None else None,
            # no stall cycles recorded (rocprofv2): stall and the stall summary are unavailable (null), never 0
            "totals": {"latency": b.total_latency, "stall": b.total_stall if result.dispatch.stall_recorded else None, "idle": b.total_idle,
                       "cycles": self.total_cycles,
                       "cycles_at_stake": self.cycles_at_stake, "cycles_unit": CYCLES_UNIT},
            "stall_summary": [{"class": c, "stall": s, "stall_share": round(sh, 6)} for c, s, sh in stall_summary(result)]
            if result.dispatch.stall_recorded else None,
            "dispatch": self.dispatch,
            "dispatch_facts": self.dispatch_facts.to_dict() if self.dispatch_facts is not None else None,
            "bandwidth": self.bandwidth.to_dict() if self.bandwidth is not None else None,
            "loops": self.loops.to_dict() if self.loops is not None else None,
            "findings": [f.to_dict() for f in self.findings],
            "priorities": [{"severity": f.severity, "rule": f.rule, "rationale": f.rationale} for f in self.findings],
            "yielded": self.yielded,
            "rules_run": self.rules_run,
            "rules_disabled": self.rules_disabled,
            "rules_silenced": self.rules_silenced,
            "rule_errors": self.rule_errors,
            "warnings": self.warnings,
        }


def stall_summary(result) -> list[tuple[str, int, float]]:
    """(class, stall cycles, share of all stall), largest first."""
    from attlens.analysis.taxonomy import CLASSES

    b = result.breakdown
    rows = [(c, b.by_class_stall[c], b.by_class_stall[c] / b.total_stall if b.total_stall else 0.0) for c in CLASSES if b.by_class_stall[c]]
    return sorted(rows, key=lambda r: -r[1])


def rules_to_dict(rules: dict[str, RuleInfo] | None = None) -> dict:
    """The ``attlens.rules`` object (``attlens rules --json``) of ``rules`` (default: every registered rule)."""
    from attlens.jsondoc import header

    rules = load_rules() if rules is None else rules
    return {**header("attlens.rules"), "rules": [r.to_dict() for r in rules.values()]}


def settle_ledger(findings: list[Finding], budget, total: int) -> list[dict]:
    """Grant claims in priority order; no pc beyond its budget. Returns the
    findings left with nothing (they are removed from ``findings``)."""
    remaining = {}
    holders: dict[int, list[str]] = {}
    order = sorted((f for f in findings if f.requested), key=lambda f: (-f.requested_cycles * f.confidence, f.rule))
    for f in order:
        granted, shared = [], []
        for c in f.requested:
            pc = c["pc"]
            left = remaining.get(pc, int(budget[pc]))
            g = min(c["cycles"], left)
            if g < c["cycles"]:
                shared.append({"pc": pc, "cycles_not_granted": c["cycles"] - g, "held_by": list(holders.get(pc, []))})
            if g > 0:
                granted.append({"pc": pc, "cycles": g})
                remaining[pc] = left - g
                holders.setdefault(pc, []).append(f.rule)
        f.claims, f.shared = granted, shared
        f.cycles_at_stake = sum(c["cycles"] for c in granted)
        f.share_of_cycles = f.cycles_at_stake / total
    # tell the holders who else asked for their cycles
    by_rule = {f.rule: f for f in order}
    for f in order:
        for s in [x for x in f.shared if "held_by" in x]:
            for r in s["held_by"]:
                by_rule[r].shared.append({"pc": s["pc"], "also_claimed_by": f.rule, "cycles": s["cycles_not_granted"]})
    yielded = []
    for f in list(findings):
        if f.requested and f.cycles_at_stake == 0:
            findings.remove(f)
            yielded.append({"rule": f.rule, "title": f.title, "requested_cycles": f.requested_cycles,
                            "held_by": sorted({r for s in f.shared for r in s.get("held_by", [])})})
    return yielded


def _severity_from_share(f: Finding) -> None:
    if f.kind == "performance" and not f.fixed_severity:
        f.severity = "HIGH" if f.share_of_cycles >= HIGH_SHARE else ("MED" if f.share_of_cycles >= MED_SHARE else "LOW")


def _pcs_named(ev) -> set[int]:
    """pcs a finding's evidence names (keys ``pc`` or ``*_pc``)."""
    out: set[int] = set()
    if isinstance(ev, dict):
        for k, v in ev.items():
            if (k == "pc" or k.endswith("_pc")) and isinstance(v, int):
                out.add(v)
            else:
                out |= _pcs_named(v)
    elif isinstance(ev, list):
        for x in ev:
            out |= _pcs_named(x)
    return out


def make_plan(result, disable: set[str] | None = None, only: set[str] | None = None, waves=None, pmc=None, predict: bool = True) -> Plan:
    """Run the rules. Pass ``waves`` (an ``analyze_waves`` result) when the
    caller has it, so the wave-level analyses are not computed twice; ``pmc``
    (a PmcResult or a list) to measure bandwidth with counters; ``predict``:
    attach the replay's predicted gain to every finding (analysis/replay)."""
    with cycle_collector_paused():
        return _make_plan(result, disable, only, waves, pmc, predict)


@contextmanager
def cycle_collector_paused():
    """The plan makes and drops a few hundred thousand small containers (the
    replay's event lists, per-execution tuples of the rules), all freed by
    reference counting; meanwhile the cyclic collector's passes over the whole
    heap find nothing and cost about a tenth of the plan. It runs again after."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _make_plan(result, disable, only, waves, pmc, predict) -> Plan:
    rules = load_rules()
    disable = set(disable or ())
    unknown = (disable | set(only or ())) - set(rules)
    if unknown:
        from attlens.errors import UsageError

        raise UsageError(f"unknown rule(s): {', '.join(sorted(unknown))} (see `attlens rules`)")
    ctx = PlanContext(result, waves, pmc)
    findings, run, errors = [], [], {}
    selected = [(rid, info) for rid, info in rules.items() if rid not in disable and not (only and rid not in only)]
    ctx.ran = {rid for rid, _ in selected}
    for rid, info in selected:
        if info.post:
            continue
        run.append(rid)
        try:
            findings.extend(info.fn(ctx) or [])
        except Exception as exc:  # one faulty rule must not hide the others
            errors[rid] = f"{type(exc).__name__}: {exc}"
    if any(f.rule == "prologue-only" for f in findings):
        # The published mistake this guards against: an "LDS → MFMA" story
        # told from a capture whose waves never left the prologue.
        for f in findings:
            if f.kind == "performance" or f.rule in TRACE_DISPATCH_RULES:
                f.confidence = round(f.confidence * 0.5, 2)
                f.rationale = "prologue only: " + f.rationale
                f.evidence["caveat"] = "the traced waves never reached the main loop; this describes the prologue only"
    join = getattr(result, "pc_sampling", None)
    if join is not None:  # sampled stall reasons as evidence (docs/pcsampling.md); no samples: nothing changes
        from attlens.analysis.pcsampling_evidence import sample_evidence

        for f in findings:
            # the pcs whose cycles it claims (where its story says waves stall), else the ones its evidence names
            ev, factor = sample_evidence(f.rule, f.kind, {c["pc"] for c in f.requested} or _pcs_named(f.evidence), join)
            if ev is not None:
                f.evidence["pc_sampling"] = ev
            if factor != 1.0:
                f.confidence = round(f.confidence * factor, 2)
                f.rationale += f" (PC sampling: {ev['note']})"
    yielded = settle_ledger(findings, ctx.budget, ctx.total)
    for f in findings:
        _severity_from_share(f)
        if f.evidence.get("caveat") and f.severity == "HIGH":
            f.severity = "MED"
    for rid, info in selected:
        if not info.post:
            continue
        run.append(rid)
        try:
            findings.extend(info.fn(ctx, findings) or [])
        except Exception as exc:
            errors[rid] = f"{type(exc).__name__}: {exc}"
    for f in findings:
        pcs = sorted({c["pc"] for c in f.claims} | _pcs_named(f.evidence))
        f.loops = [w for w in (ctx.loops.where(pc) for pc in pcs if 0 <= pc < ctx.d.code.size) if w["loop"] is not None or w.get("note")]
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    verdict = make_verdict_of(ctx, findings)
    # the finding the verdict comes from leads its severity; then grid/imbalance leads, groups, priority
    findings.sort(key=lambda f: (rank[f.severity], 0 if f.rule == verdict.rule else (1 if f.lead else 1 + _GROUP[f.kind]), -f.priority, -f.confidence, f.rule))
    silenced = {rid: [c for c in checks if not c["holds"]] for rid, checks in ctx.checks.items()}
    fired = {f.rule for f in findings}
    silenced = {rid: v for rid, v in silenced.items() if v and rid not in fired}
    skipped = sorted(set(rules) - set(run))
    plan = Plan(findings, run, skipped, errors, silenced, yielded, ctx.total, result=result)
    plan.loops = ctx.loops
    plan.dispatch_facts = ctx.facts
    plan.bandwidth = ctx.bandwidth
    plan.dispatch = dispatch_summary(ctx)
    plan.verdict = verdict
    if predict:
        attach_predictions(plan)
    return plan


def attach_predictions(plan: Plan) -> None:
    """``predicted`` on every finding (docs/whatif.md). A replay that fails
    never breaks the plan: the finding then says why it has no prediction."""
    for f, p in zip(plan.findings, predictions(plan)):
        f.predicted = p


def predictions(plan) -> list:
    """The ``predicted`` object of each of ``plan.findings``, in order (what
    :func:`attach_predictions` attaches). ``plan`` needs only ``result``,
    ``findings``, ``dispatch_facts`` and ``bandwidth``: a forked child gets
    those (report/html.render_captures)."""
    from attlens.analysis.replay.findings import CAPTURE_KINDS, cached_predicted
    from attlens.limits import MAX_REPLAY_RECORDS_IN_PLAN

    n = plan.result.dispatch.records.count
    out = []
    if n > MAX_REPLAY_RECORDS_IN_PLAN:  # memory and time: the replay is asked for by name on such captures
        for f in plan.findings:
            if f.kind not in CAPTURE_KINDS or f.rule == "early-exit-waves":
                out.append({"expressible": False, "reason": f"not replayed with the plan: {n:,} records (over {MAX_REPLAY_RECORDS_IN_PLAN:,}); "
                                                            f"`attlens whatif CAPTURE --apply {f.rule}` replays it"})
            else:
                out.append(f.predicted)
        return out
    for f in plan.findings:
        try:
            out.append(cached_predicted(f, plan.result, plan))
        except Exception as exc:  # the replay is an estimate on top of the plan, never a reason to lose it
            if os.environ.get("ATTLENS_DEBUG"):
                raise
            out.append({"expressible": False, "reason": f"the replay failed on this capture ({type(exc).__name__}; ATTLENS_DEBUG=1 shows where)"})
    return out


def replays_with_plan(result) -> bool:
    """The plan's predictions replay this capture (not too many records, stalls recorded)."""
    from attlens.analysis.replay.calibrate import unreplayable
    from attlens.limits import MAX_REPLAY_RECORDS_IN_PLAN

    d = result.dispatch
    return d.records.count <= MAX_REPLAY_RECORDS_IN_PLAN and unreplayable(d) is None


def make_verdict_of(ctx, findings):
    """The plan's one verdict (analysis/verdict.py) from its ranked findings."""
    from attlens.analysis.rules._preconditions import busiest_compute
    from attlens.analysis.verdict import make_verdict

    return make_verdict(findings, ctx.facts, ctx.total, busiest_compute(ctx), verdict_gaps(ctx), ctx.d.stall_recorded)


def verdict_gaps(ctx) -> list[str]:
    """Why this capture can support no verdict: no stall cycles recorded (the
    stall rules read nothing) and no dispatch-wide figures (the limits cannot
    be judged), plus a partial listing. Empty when either part can be judged
    (stall cycles recorded, or the bandwidth figures known)."""
    bw = ctx.bandwidth
    if ctx.d.stall_recorded or bw.available:
        return []
    gaps = ["the profiler recorded no stall cycles (rocprofv2 ATT plugin), so no stall pattern can be measured",
            f"no dispatch-wide limit can be judged ({bw.reason})"]
    exit_ = ctx.result.quality.listing_exit
    if exit_ is not None:
        gaps.append(f"the code.json listing covers only part of the kernel (it ends at pc {exit_['pc']}, a branch out of it)")
    return gaps


def dispatch_summary(ctx) -> dict:
    """The facts every finding stands on: grid, occupancy inputs, duration, waves."""
    d, o = ctx.d, ctx.result.occupancy
    from attlens.analysis.occupancy import grid_waves

    res = d.resources
    f = d.arch.facts or {}
    wpw, gw = grid_waves(d)
    return {
        "target": d.arch.target,
        "product": d.arch.product,
        "cus": f.get("cu_count"),
        "workgroups": res.workgroups,
        "workgroup_size": res.threads_per_workgroup,
        "waves_per_workgroup": wpw,
        "grid_waves": gw,
        "grid_source": res.sources.get("grid"),
        "duration_ns": ctx.facts.duration.ns,
        "duration_source": f"{ctx.facts.duration.source}: {ctx.facts.duration.detail}" if ctx.facts.duration.ns else None,
        "traced_waves": d.waves.count,
        "traced": ctx.facts.coverage.xcc_text(),
        "occupancy": {
            "theoretical_waves_per_simd": o.theoretical_waves_per_simd,
            "limiters": o.limiters,
            "observed_max_waves_per_simd": o.observed_max_waves_per_simd_traced_cu,
            "vgpr_inputs": o.vgpr_inputs,
            "lds_bytes": res.lds_bytes,
            "lds_source": res.sources.get("lds_bytes"),
            "sgprs": res.sgprs,
        },
        "kernel_candidates": res.candidates,
        "notes": list(res.warnings) + list(res.notes) + ctx.facts.warnings,
    }
