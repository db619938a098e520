"""The optimization plan: run the rules, rank their findings.

A rule is a function registered with :func:`rule`; it receives a
:class:`PlanContext` (every analysis result) and returns findings. Rules live
one per pattern in :mod:`attlens.analysis.rules`; adding one is adding a
function there, nothing else changes. Priority = cycles at stake × confidence;
severity from the share of all kernel cycles at stake (docs/rules.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

# Severity thresholds on the share of all kernel cycles (idle + latency) at stake.
HIGH_SHARE = 0.10
MED_SHARE = 0.03


@dataclass
class Finding:
    rule: str
    title: str
    kind: str  # "performance" | "capture"
    severity: str  # HIGH | MED | LOW
    confidence: float  # 0..1
    cycles_at_stake: int  # exposed cycles the change could recover (≤ observed)
    share: float  # cycles_at_stake / all kernel cycles
    evidence: dict
    change: str
    falsify: str
    rationale: str  # one line for the priority list

    @property
    def priority(self) -> float:
        return self.cycles_at_stake * self.confidence


@dataclass
class RuleInfo:
    id: str
    title: str
    kind: str
    trigger: str
    evidence: str
    limits: str
    fn: Callable


REGISTRY: dict[str, RuleInfo] = {}


def rule(id: str, title: str, kind: str, trigger: str, evidence: str, limits: str):
    """Register a rule function ``fn(ctx) -> list[Finding]``."""

    def deco(fn):
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id}")
        REGISTRY[id] = RuleInfo(id, title, kind, trigger, evidence, limits, fn)
        return fn

    return deco


class PlanContext:
    """Everything a rule may read, computed once."""

    def __init__(self, result, waves=None):
        self.result = result
        self.d = result.dispatch
        self._waves = waves

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
    def total(self) -> int:
        s = self.result.sums
        return max(int((s.idle + s.latency).sum()), 1)

    def exposed(self, pcs) -> int:
        """Exposed cycles of these pcs (stall + idle when the hidden model is off)."""
        s = self.result.sums
        pcs = list(pcs)
        if not pcs:
            return 0
        if self.result.hidden is not None:
            return int(self.result.hidden.exposed[pcs].sum())
        return int((s.stall[pcs] + s.idle[pcs]).sum())

    def exposed_fraction(self, pc: int) -> float:
        """Share of a pc's stall that is exposed (1 without the hidden model)."""
        h = self.result.hidden
        s = self.result.sums
        if h is None or s.stall[pc] == 0:
            return 1.0
        return float(s.stall[pc] - h.hidden_stall[pc]) / float(s.stall[pc])

    def exposed_stall(self, pcs) -> float:
        """Σ over pcs of their stall that other waves' work did not hide."""
        s = self.result.sums
        return sum(int(s.stall[pc]) * self.exposed_fraction(pc) for pc in pcs)

    def src(self, pc: int) -> str | None:
        loc = self.d.static.own_source[pc]
        return str(loc) if loc else None

    def instr(self, pc: int) -> dict:
        s = self.result.sums
        return {"pc": pc, "isa": self.d.code.isa[pc], "source": self.src(pc), "hit": int(s.hit[pc]), "stall": int(s.stall[pc])}

    def finding(self, rule_id: str, title: str, cycles: int, confidence: float, evidence: dict, change: str, falsify: str, rationale: str) -> Finding:
        info = REGISTRY[rule_id]
        observed = self.total
        cycles = int(max(0, min(cycles, observed)))  # never more than observed
        share = cycles / observed
        if info.kind == "capture":
            sev = "HIGH" if confidence >= 0.8 else "MED"
        else:
            sev = "HIGH" if share >= HIGH_SHARE else ("MED" if share >= MED_SHARE else "LOW")
        return Finding(rule_id, title, info.kind, sev, round(confidence, 2), cycles, share, evidence, change, falsify, rationale)


@dataclass
class Plan:
    findings: list[Finding]  # capture findings first, then performance by priority
    rules_run: list[str]
    rules_disabled: list[str]
    errors: dict[str, str] = field(default_factory=dict)  # rule -> error (a broken rule never breaks the plan)


def load_rules() -> dict[str, RuleInfo]:
    import attlens.analysis.rules  # noqa: F401  (registers every rule)

    return REGISTRY


def make_plan(result, disable: set[str] | None = None, only: set[str] | None = None, waves=None) -> Plan:
    """Run the rules. Pass ``waves`` (an ``analyze_waves`` result) when the
    caller has it, so the wave-level analyses are not computed twice."""
    rules = load_rules()
    disable = set(disable or ())
    unknown = (disable | set(only or ())) - set(rules)
    if unknown:
        from attlens.errors import UsageError

        raise UsageError(f"unknown rule(s): {', '.join(sorted(unknown))} (see `attlens rules`)")
    ctx = PlanContext(result, waves)
    findings, run, errors = [], [], {}
    for rid, info in rules.items():
        if rid in disable or (only and rid not in only):
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
            if f.kind == "performance":
                f.confidence = round(f.confidence * 0.5, 2)
                f.severity = "LOW" if f.severity == "LOW" else "MED"
                f.rationale = "prologue only: " + f.rationale
                f.evidence["caveat"] = "the traced waves never reached the main loop; this describes the prologue only"
    findings.sort(key=lambda f: (f.kind != "capture", -f.priority if f.kind != "capture" else -f.confidence, f.rule))
    skipped = sorted(set(rules) - set(run))
    return Plan(findings, run, skipped, errors)
