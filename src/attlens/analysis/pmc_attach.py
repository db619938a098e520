"""Which hardware counters belong to a capture (``attlens report --pmc``).

Counters come from a separate rocprofv3 run, so nothing guarantees they
describe the traced kernel. Before the L2/HBM block is attached to a report,
three facts are compared: the **kernel** (base names: ``vecCopy(double*, ...)``,
``_Z7vecCopyPdS_S_ii``, ``vecCopy(...) [clone .kd]`` and ``vecCopy`` are the same
kernel, model/kernelname.py), the **target**
(``gfx942`` vs ``gfx950``, through the architecture table's aliases) and the
**dispatch id** (the same program run twice numbers its dispatches the same
way). A fact that one side does not record is ``None`` (unknown), not a
mismatch. A mismatch refuses the attachment unless forced; a forced one
carries its mismatches so the report can say what was attached.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from attlens.analysis.pmc import PmcCounters
from attlens.errors import Incomparable
from attlens.model.archdata import resolve_target
from attlens.model.kernelname import kernel_base_name, same_kernel  # noqa: F401  (kernel_base_name re-exported)
from attlens.results import brief_repr

def _same_kernel(a: str | None, b: str | None) -> bool | None:
    return same_kernel(a, b)


def _same_target(a: str | None, b: str | None) -> bool | None:
    if not a or not b:
        return None
    ra, rb = resolve_target(a), resolve_target(b)
    return (ra or a.strip().lower()) == (rb or b.strip().lower())


def _same(a, b) -> bool | None:
    return None if a is None or b is None else a == b


@brief_repr("source", ("dispatch_id", lambda a: a.result.dispatch_id), ("kernel", lambda a: a.result.kernel), "forced",
            ("mismatches", lambda a: len(a.mismatches)))
@dataclass
class PmcAttachment:
    """The dispatch of counters attached to one capture, and why."""

    result: object  # PmcResult
    source: str
    checks: list[dict] = field(default_factory=list)  # [{field, capture, counters, match: bool|None}]
    forced: bool = False

    @property
    def mismatches(self) -> list[dict]:
        return [c for c in self.checks if c["match"] is False]

    def label(self) -> dict:
        """The ``attached`` object of the report's PMC block."""
        return {"source": self.source, "dispatch_id": self.result.dispatch_id, "kernel": self.result.kernel,
                "target": self.result.target, "checks": self.checks, "forced": self.forced}


def _checks(r, kernel: str | None, target: str | None, dispatch_id: int | None) -> list[dict]:
    return [
        {"field": "kernel", "capture": kernel, "counters": r.kernel, "match": _same_kernel(kernel, r.kernel)},
        {"field": "target", "capture": target, "counters": r.target, "match": _same_target(target, r.target)},
        {"field": "dispatch", "capture": dispatch_id, "counters": r.dispatch_id, "match": _same(dispatch_id, r.dispatch_id)},
    ]


def attach_pmc(counters: PmcCounters, kernel: str | None, target: str | None, dispatch_id: int | None,
               force: bool = False) -> PmcAttachment:
    """Pick the counter dispatch of a capture (its kernel, target and
    dispatch id). Raises :class:`~attlens.errors.Incomparable` (exit 21)
    when none matches, unless ``force``: then the closest one (kernel, then
    dispatch, then the first) is attached with its mismatches recorded."""
    if not counters.results:
        raise Incomparable(f"{counters.source}: no dispatch with counters")

    def score(r):
        ch = {c["field"]: c["match"] for c in _checks(r, kernel, target, dispatch_id)}
        return (ch["kernel"] is not False, ch["dispatch"] is not False, ch["target"] is not False)

    best = max(counters.results, key=score)  # max keeps the first of equals
    att = PmcAttachment(best, counters.source, _checks(best, kernel, target, dispatch_id), forced=force)
    if att.mismatches and not force:
        what = "; ".join(f"{c['field']} {c['capture']} (capture) vs {c['counters']} (counters)" for c in att.mismatches)
        ids = sorted({r.dispatch_id for r in counters.results if r.dispatch_id is not None})
        raise Incomparable(f"the counters of {counters.source} do not belong to this capture: {what}"
                           + (f"; counter dispatches: {', '.join(map(str, ids[:10]))}{' …' if len(ids) > 10 else ''}" if ids else ""),
                           hint="force them to be attached (--force; force=True in Python): the report then says so")
    return att
