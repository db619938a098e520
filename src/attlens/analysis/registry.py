"""The rule registry: what a rule is, what it returns, and the table of
every registered rule.

Rules (analysis/rules/*) import this module, never the plan: the plan
(analysis/plan.py) imports the rules through :func:`load_rules` and runs them.
A rule is a function registered with :func:`rule`; it receives a
``PlanContext`` (analysis/plan.py) and returns :class:`Finding` objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from attlens.results import brief_repr

# Severity thresholds on the share of all kernel cycles (idle + latency) at stake.
HIGH_SHARE = 0.10
MED_SHARE = 0.03
# A stall class at or above this share of the kernel's stall is never left unmentioned.
COVER_SHARE = 0.10

SEVERITIES = ("HIGH", "MED", "LOW", "INFO")
KINDS = ("capture", "dispatch", "performance", "note")

# What a finding's advice assumes about the dispatch. Each rule declares its
# directions; two findings of one plan never carry an OPPOSITE pair (the rules'
# preconditions keep them apart; tests/test_plan_real.py enumerates the pairs).
DIRECTIONS = {
    "bandwidth-bound": "the dispatch moves bytes at the HBM ceiling: only fewer bytes make it faster",
    "issue-bound": "one compute pipe's issue sets the dispatch time: memory tuning does not make it faster",
    "grid-bound": "too few waves in flight for the GPU: more parallel work makes it faster",
    "imbalance-bound": "a few long workgroups set the dispatch time: splitting their work makes it faster",
    "hide-memory-latency": "waits on global memory are exposed: issuing loads earlier or hiding them makes it faster",
    "fewer-memory-requests": "the vector-memory queue is full: the same bytes in fewer requests make it faster",
    "more-waves": "more resident waves per SIMD hide latency and make it faster",
    "adds-bytes": "the change moves more bytes (e.g. recomputing data a second buffer or a wider type reads)",
    "lds": "LDS access or its waits are the cost to cut",
    "compute-schedule": "instruction scheduling inside the wave (dependencies, hazards) is the cost to cut",
    "sync": "workgroup barriers are the cost to cut",
    "scalar-latency": "scalar-memory waits (kernel arguments, descriptors) are the cost to cut",
    "capture": "the capture itself limits what can be concluded",
}
OPPOSITE = frozenset(frozenset(p) for p in (
    ("bandwidth-bound", "issue-bound"),  # two different limiters of one dispatch
    ("bandwidth-bound", "hide-memory-latency"),  # at the ceiling the bytes cannot arrive sooner
    ("bandwidth-bound", "fewer-memory-requests"),  # widening does not add bandwidth
    ("bandwidth-bound", "adds-bytes"),
    ("bandwidth-bound", "grid-bound"),  # the grid already saturates HBM: more waves cannot move bytes faster
    ("bandwidth-bound", "imbalance-bound"),
    ("bandwidth-bound", "more-waves"),
    ("issue-bound", "hide-memory-latency"),  # "memory tuning will not help"
    ("issue-bound", "fewer-memory-requests"),
    ("imbalance-bound", "more-waves"),  # a span set by a few long workgroups is not shortened by residency
    ("grid-bound", "more-waves"),  # more waves per SIMD of a grid that cannot fill the GPU run nothing more
))


def opposite(a, b) -> bool:
    """Do two findings (or two sets of directions) recommend opposite things?"""
    da = set(getattr(a, "directions", a))
    db = set(getattr(b, "directions", b))
    return any(frozenset((x, y)) in OPPOSITE for x in da for y in db if x != y)


@brief_repr("rule", "severity", "kind", "cycles_at_stake", "share_of_cycles", "confidence", "title")
@dataclass
class Finding:
    rule: str
    title: str
    kind: str  # capture | dispatch | performance | note
    severity: str  # HIGH | MED | LOW | INFO
    confidence: float  # 0..1
    cycles_at_stake: int  # granted claims: exposed cycles the change could recover
    share_of_cycles: float  # cycles_at_stake / all kernel cycles
    evidence: dict
    change: str
    falsify: str
    rationale: str  # one line for the priority list
    claims: list[dict] = field(default_factory=list)  # granted [{pc, cycles}]
    requested: list[dict] = field(default_factory=list)  # asked for, before the ledger
    shared: list[dict] = field(default_factory=list)  # [{pc, cycles_not_granted, held_by: [rule]}]
    preconditions: list[dict] = field(default_factory=list)  # checked, all holding
    explains: list[str] = field(default_factory=list)  # stall classes it accounts for
    loops: list[dict] = field(default_factory=list)  # its pcs' loop and trip count
    lead: bool = False  # sorts first within its severity (grid starvation)
    fixed_severity: bool = False  # set by the rule, not from the share at stake
    directions: list[str] = field(default_factory=list)  # what its advice assumes (DIRECTIONS), from the rule
    # whole-dispatch findings: the dispatch time they bound {measured_ns, bound_ns, meaning}
    dispatch_time: dict | None = None
    # the replay's prediction of the change (analysis/replay, docs/whatif.md): dispatch time before/after,
    # the gain as a share with its interval; {"expressible": false, "reason"} when no edit says the change;
    # None for notes and capture findings (and plans made without predictions)
    predicted: dict | None = None

    @property
    def priority(self) -> float:
        return self.cycles_at_stake * self.confidence

    @property
    def requested_cycles(self) -> int:
        return sum(c["cycles"] for c in self.requested)

    def to_dict(self) -> dict:
        return {
            "rule": self.rule,
            "title": self.title,
            "kind": self.kind,
            "severity": self.severity,
            "confidence": self.confidence,
            "cycles_at_stake": self.cycles_at_stake,
            "share_of_cycles": round(self.share_of_cycles, 6),
            "priority": round(self.priority, 3),
            "claims": self.claims,
            "ledger": {"requested_cycles": self.requested_cycles, "granted_cycles": self.cycles_at_stake, "shared": self.shared},
            "loops": self.loops,
            "preconditions": self.preconditions,
            "explains": self.explains,
            "evidence": self.evidence,
            "change": self.change,
            "falsify": self.falsify,
            "rationale": self.rationale,
            "directions": self.directions,
            "dispatch_time": self.dispatch_time,
            "predicted": self.predicted,
        }


@brief_repr("id", "kind", "title")
@dataclass
class RuleInfo:
    id: str
    title: str
    kind: str
    trigger: str
    evidence: str
    limits: str
    fn: Callable
    preconditions: list[tuple[str, str]] = field(default_factory=list)  # (id, the fact the advice assumes)
    semantics: str = ""
    post: bool = False  # runs after the ledger, sees the other findings
    directions: list[str] = field(default_factory=list)  # what its advice assumes (DIRECTIONS)

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "kind": self.kind, "trigger": self.trigger, "semantics": self.semantics,
                "preconditions": [{"id": p, "text": t} for p, t in self.preconditions], "evidence": self.evidence, "limits": self.limits,
                "directions": self.directions}


REGISTRY: dict[str, RuleInfo] = {}

PERFORMANCE_SEMANTICS = (
    "triggers on the stall cycles of its pattern (as in the stall summary); claims the part of the stall + idle "
    "at its pcs that other waves did not hide (hidden-latency model), settled in the cycle ledger"
)
# Rules whose pattern is a wait that other waves can cover: the threshold is on
# what stays exposed, so a pattern the other waves already hide gives no finding.
EXPOSED_TRIGGER_SEMANTICS = (
    "triggers on the cycles it claims: the part of its pattern's stall + idle that other waves did not hide "
    "(hidden-latency model), not the raw stall; the same claims are settled in the cycle ledger"
)


def rule(id: str, title: str, kind: str, trigger: str, evidence: str, limits: str, preconditions=(), semantics: str | None = None, post: bool = False,
         directions=()):
    """Register a rule function ``fn(ctx) -> list[Finding]`` (``post``: ``fn(ctx, findings)``);
    ``directions``: what its advice assumes (keys of DIRECTIONS)."""

    def deco(fn):
        if id in REGISTRY:
            raise ValueError(f"duplicate rule id {id}")
        unknown = set(directions) - set(DIRECTIONS)
        if unknown:
            raise ValueError(f"rule {id}: unknown direction(s) {sorted(unknown)}")
        sem = semantics if semantics is not None else (PERFORMANCE_SEMANTICS if kind == "performance" else "")
        REGISTRY[id] = RuleInfo(id, title, kind, trigger, evidence, limits, fn, list(preconditions), sem, post, list(directions))
        return fn

    return deco


def load_rules() -> dict[str, RuleInfo]:
    """Every registered rule, by id, in registration order."""
    import attlens.analysis.rules  # noqa: F401  (registers every rule)

    return REGISTRY
