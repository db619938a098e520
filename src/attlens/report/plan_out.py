"""Renderers of the optimization plan: terminal, Markdown, JSON."""

from __future__ import annotations

import json

from rich.markup import escape

from attlens import __version__
from attlens.analysis.taxonomy import CLASSES

PLAN_SCHEMA = "attlens.plan"
RULES_SCHEMA = "attlens.rules"


def finding_to_dict(f) -> dict:
    return {
        "rule": f.rule,
        "title": f.title,
        "kind": f.kind,
        "severity": f.severity,
        "confidence": f.confidence,
        "cycles_at_stake": f.cycles_at_stake,
        "share_of_cycles": round(f.share, 6),
        "priority": round(f.priority, 3),
        "evidence": f.evidence,
        "change": f.change,
        "falsify": f.falsify,
        "rationale": f.rationale,
    }


def _stall_summary(result) -> list[tuple[str, int, float]]:
    b = result.breakdown
    rows = [(c, b.by_class_stall[c], b.by_class_stall[c] / b.total_stall if b.total_stall else 0.0) for c in CLASSES if b.by_class_stall[c]]
    return sorted(rows, key=lambda r: -r[1])


def plan_to_dict(result, plan) -> dict:
    d = result.dispatch
    b = result.breakdown
    return {
        "schema": PLAN_SCHEMA,
        "schema_version": 1,
        "attlens_version": __version__,
        "capture": {"path": str(d.path), "kernel": d.kernel_name, "dispatch_id": d.resources.dispatch_id, "target": d.arch.target},
        "totals": {"latency": b.total_latency, "stall": b.total_stall, "idle": b.total_idle,
                   "cycles": int((result.sums.idle + result.sums.latency).sum())},
        "stall_summary": [{"class": c, "stall": s, "stall_share": round(sh, 6)} for c, s, sh in _stall_summary(result)],
        "findings": [finding_to_dict(f) for f in plan.findings],
        "priorities": [{"severity": f.severity, "rule": f.rule, "rationale": f.rationale} for f in plan.findings],
        "rules_run": plan.rules_run,
        "rules_disabled": plan.rules_disabled,
        "rule_errors": plan.errors,
    }


def _evidence_lines(ev: dict, limit: int = 6) -> list[str]:
    out = []
    for k, v in ev.items():
        if isinstance(v, list):
            out.append(f"{k}:")
            for item in v[:limit]:
                out.append("  - " + (json.dumps(item, ensure_ascii=False) if not isinstance(item, str) else item))
            if len(v) > limit:
                out.append(f"  - … {len(v) - limit} more")
        else:
            out.append(f"{k}: {json.dumps(v, ensure_ascii=False) if isinstance(v, dict) else v}")
    return out


def render_plan(result, plan, console, max_findings: int | None = None) -> None:
    d = result.dispatch
    console.print(f"[bold]attlens plan[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    console.print("[bold]Stall summary[/bold]")
    for c, s, sh in _stall_summary(result)[:6]:
        console.print(f"  {c:<16} {s:>14,} cycles  {sh:6.1%}")
    fs = plan.findings if max_findings is None else plan.findings[:max_findings]
    if not fs:
        console.print("\nNo rule fired: no pattern above its threshold (see `attlens rules`).")
    for i, f in enumerate(fs, 1):
        color = {"HIGH": "red", "MED": "yellow", "LOW": "green"}[f.severity]
        at_stake = f"{f.cycles_at_stake:,} cycles at stake ({f.share:.1%})" if f.kind == "performance" else "capture quality"
        tag = escape("[" + f.rule + "]")
        console.print(f"\n[bold]{i}. [{color}]{f.severity}[/{color}] {escape(f.title)}[/bold]  {tag} · {at_stake} · confidence {f.confidence:.2f}")
        for line in _evidence_lines(f.evidence):
            console.print(f"     {escape(line)}")
        console.print(f"   [bold]change:[/bold] {escape(f.change)}")
        console.print(f"   [bold]would prove it wrong:[/bold] {escape(f.falsify)}")
    if fs:
        console.print("\n[bold]Priorities[/bold]")
        for f in fs:
            console.print(f"  {f.severity:<4} {f.rule:<22} {escape(f.rationale)}")
    for rid, err in plan.errors.items():
        console.print(f"[yellow]! rule {rid} failed: {escape(err)}[/yellow]")


def top_findings_lines(plan, n: int = 3) -> list[str]:
    return [f"{f.severity:<4} {f.title} [{f.rule}]" + (f" — {f.share:.1%} of cycles at stake" if f.kind == "performance" else "") for f in plan.findings[:n]]


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def plan_to_markdown(result, plan) -> str:
    d = result.dispatch
    b = result.breakdown
    lines = [f"# Optimization plan — `{_md_escape(d.kernel_name)}`", "",
             f"Capture: `{_md_escape(d.path)}` · target {d.arch.target or 'unknown'} · {d.waves.count:,} waves · attlens {__version__}", "",
             "## Stall summary", "", "| class | stall cycles | share |", "|---|---:|---:|"]
    for c, s, sh in _stall_summary(result):
        lines.append(f"| {c} | {s:,} | {sh:.1%} |")
    lines += ["", f"Total latency {b.total_latency:,} cycles, stall {b.total_stall:,}, idle {b.total_idle:,}.", "", "## Findings", ""]
    if not plan.findings:
        lines.append("No rule fired.")
    for i, f in enumerate(plan.findings, 1):
        stake = f"{f.cycles_at_stake:,} cycles at stake ({f.share:.1%})" if f.kind == "performance" else "capture quality"
        lines += [f"### {i}. {f.severity} — {_md_escape(f.title)}", "", f"Rule `{f.rule}` · {stake} · confidence {f.confidence:.2f}", "", "Evidence:", "", "```"]
        lines += _evidence_lines(f.evidence)
        lines += ["```", "", f"**Change:** {_md_escape(f.change)}", "", f"**Would prove it wrong:** {_md_escape(f.falsify)}", ""]
    lines += ["## Priorities", "", "| severity | rule | rationale |", "|---|---|---|"]
    for f in plan.findings:
        lines.append(f"| {f.severity} | {f.rule} | {_md_escape(f.rationale)} |")
    lines += ["", f"Reproduce: `attlens plan {_md_escape(d.path)}`", ""]
    return "\n".join(lines)


def rules_to_dict(rules) -> dict:
    return {"schema": RULES_SCHEMA, "schema_version": 1, "attlens_version": __version__,
            "rules": [{"id": r.id, "title": r.title, "kind": r.kind, "trigger": r.trigger, "evidence": r.evidence, "limits": r.limits} for r in rules.values()]}
