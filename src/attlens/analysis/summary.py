"""The one-screen summary of a capture (``attlens analyze --summary``, the MCP
``summary`` tool): the plan's verdict and its top findings first, then the
numbers that back them — totals, stall by class, one ranking of
instructions and one of source lines (each row carrying latency and exposed
cycles beside its stall, so nothing is ranked twice), occupancy, capture
quality — then warnings (act on these) and notes (expected facts).

Sized for an agent's context: a few thousand tokens on the largest shared
capture, where ``attlens analyze --json`` is ~20k (docs/agents.md has the
measurements). ``detail="full"`` adds the whole ``attlens.analyze`` object.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.results import brief_repr

SUMMARY_SCHEMA = "attlens.summary"
DEFAULT_TOP = 10
DETAILS = ("brief", "full")


def _verdict(plan) -> dict:
    from attlens.report.text import verdict_sentence

    v = getattr(plan, "verdict", None)
    if v is not None and hasattr(v, "to_dict"):
        d = v.to_dict()
        return {"sentence": d.get("sentence"), "kind": d.get("kind"), "numbers": d.get("numbers") or {}}
    return {"sentence": verdict_sentence(plan), "kind": None, "numbers": {}}


def _short(src: str | None) -> str | None:
    from attlens.report.text import short_source

    return None if not src else short_source(src)


_PREDICTED_KEYS = ("expressible", "gain", "low", "high", "dispatch_ns_before", "dispatch_ns_after", "bound", "calibration")


def compact_prediction(p: dict | None) -> dict | None:
    """A finding's ``predicted`` without its edits (the plan has them): what an
    agent needs beside the cycles at stake, in few tokens."""
    if not p:
        return None
    if not p.get("expressible"):
        return {"expressible": False, "reason": p.get("reason") or ""}
    return {k: p.get(k) for k in _PREDICTED_KEYS}


@brief_repr(("kernel", lambda s: s.result.dispatch.kernel_name), "top", "detail", ("verdict", lambda s: _verdict(s.plan)["sentence"]))
@dataclass
class Summary:
    result: object = field(repr=False)  # the AnalysisResult
    plan: object = field(repr=False)  # the Plan made from it
    top: int = DEFAULT_TOP
    detail: str = "brief"

    def to_dict(self) -> dict:
        """The ``attlens.summary`` object (``attlens analyze --summary --json``)."""
        from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING
        from attlens.analysis.stalls import rounded_share
        from attlens.jsondoc import header

        r, plan = self.result, self.plan
        d, b, h, o, q = r.dispatch, r.breakdown, r.hotspots, r.occupancy, r.quality
        k = max(int(self.top), 1)
        recorded = getattr(d, "stall_recorded", True)
        doc = {
            **header(SUMMARY_SCHEMA),
            "capture": {"path": str(d.path), "kernel": d.kernel_name, "dispatch_id": d.resources.dispatch_id, "target": d.arch.target,
                        "waves": d.waves.count, "records": d.records.count, "partial": d.partial},
            "verdict": _verdict(plan),
            "findings": [{"rank": i, "severity": f.severity, "rule": f.rule, "kind": f.kind, "title": f.title,
                          "cycles_at_stake": f.cycles_at_stake, "share_of_cycles": round(f.share_of_cycles, 4),
                          "confidence": f.confidence, "change": f.change, "predicted": compact_prediction(getattr(f, "predicted", None))}
                         for i, f in enumerate(plan.findings[:k], 1)],
            "findings_total": len(plan.findings),
            # a profiler that records no stall (rocprofv2): unavailable, not 0
            "totals": {"latency": b.total_latency, "stall": b.total_stall if recorded else None, "idle": b.total_idle,
                       "issue": b.total_issue if recorded else None,
                       "stall_share_of_latency": rounded_share(b.total_stall, b.total_latency) if recorded else None,
                       "hidden_share": None if r.hidden is None else round(r.hidden.hidden_share, 4)},
            # no stall recorded (rocprofv2): unavailable (null); instructions and lines are then ranked by latency (notes say so)
            "stall_by_class": [{"class": c["class"], "stall": c["stall"], "stall_share": round(c["stall_share"], 4)}
                               for c in b.class_rows() if c["stall"] > 0] if recorded else None,
            "instructions": [self._instruction(h.instructions[i], self._samples_of) for i in h.by_stall[:k]],
            "lines": [self._line(h.lines[i]) for i in h.lines_by_stall[:k]],
            "occupancy": {"theoretical_waves_per_simd": o.theoretical_waves_per_simd, "limiters": list(o.limiters or []),
                          "observed_max_waves_per_simd_traced_cu": o.observed_max_waves_per_simd_traced_cu,
                          "workgroups": o.workgroups, "resident_workgroup_capacity": o.resident_workgroup_capacity},
            "quality": {"code_json_consistent": q.code_json.consistent, "has_source_lines": q.has_source_lines,
                        "mapped_latency_share": round(q.mapped_latency_share, 4)},
            "pc_sampling": self._sampling(),
            "warnings": r.warnings,
            "notes": r.notes + ([] if recorded else [STALL_UNRECORDED_RANKING]),
            "detail": self.detail,
            "analysis": r.to_dict(k) if self.detail == "full" else None,
        }
        return doc

    def _joined(self):
        join = getattr(self.result, "pc_sampling", None)
        return join if join is not None and join.mode != "none" else None

    def _samples_of(self, pc: int):
        join = self._joined()
        return None if join is None else join.row([pc])

    def _sampling(self) -> dict | None:
        """Why waves stalled, from the PC samples joined to the capture (null: none)."""
        join = getattr(self.result, "pc_sampling", None)
        if join is None:
            return None
        d = join.to_dict()
        return {"mode": d["join"]["mode"], "reason": d["join"]["reason"], "joined": d["samples"]["joined"], "issued": d["issued"],
                "stalled": d["stalled"], "reason_shares": d["reason_shares"]}

    @staticmethod
    def _instruction(x, samples) -> dict:
        from attlens.analysis.hotspots import without_stall

        return without_stall(x, {"pc": x.pc, "vaddr": x.vaddr, "isa": x.isa, "class": x.class_, "hit": x.hit, "latency": x.latency, "stall": x.stall,
                                 "stall_share": round(x.stall_share, 4), "exposed": x.exposed, "source": _short(x.source), "pc_samples": samples(x.pc)})

    @staticmethod
    def _line(ln) -> dict:
        from attlens.analysis.hotspots import without_stall

        return without_stall(ln, {"source": _short(ln.source) if ln.file else ln.source, "instructions": ln.instructions, "latency": ln.latency,
                                  "stall": ln.stall, "stall_share": round(ln.stall_share, 4), "exposed": ln.exposed, "dominant_class": ln.dominant_class})


def make_summary(result, plan=None, top: int = DEFAULT_TOP, detail: str = "brief") -> Summary:
    from attlens.errors import UsageError

    if detail not in DETAILS:
        raise UsageError(f"detail {detail!r}: expected one of {', '.join(DETAILS)}")
    if plan is None:
        from attlens.analysis.plan import make_plan

        plan = make_plan(result)
    return Summary(result, plan, top, detail)
