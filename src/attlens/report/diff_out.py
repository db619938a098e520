"""Renderers of ``attlens diff`` and ``attlens check``."""

from __future__ import annotations

import os
from xml.sax.saxutils import quoteattr

from rich.markup import escape

from attlens import __version__
from attlens.report.console import Col, FitTable


def _r(x, nd=3):
    return None if x is None else round(float(x), nd)


def _site(s):
    return None if s is None else {"pc": s.pc, "mnemonic": s.mnemonic, "isa": s.isa, "latency": s.latency, "stall": s.stall, "hit": s.hit}


def diff_to_dict(res, top: int | None = 20) -> dict:
    k = None if not top else top
    changed = [s for s in res.sites if s.kind in ("added", "removed")]
    return {
        "schema": "attlens.diff",
        "schema_version": 1,
        "attlens_version": __version__,
        "before": {"label": res.before.label, "kernel": res.before.kernel, "target": res.before.target, "waves": res.before.waves},
        "after": {"label": res.after.label, "kernel": res.after.kernel, "target": res.after.target, "waves": res.after.waves},
        "comparability": res.comparability,
        "forced": res.forced,
        "normalization": res.normalization,
        "verdict": {**res.verdict, "latency_per_wave_before": _r(res.verdict["latency_per_wave_before"]),
                    "latency_per_wave_after": _r(res.verdict["latency_per_wave_after"]), "relative_change": _r(res.verdict["relative_change"], 6),
                    **{k: [{"line": x["line"], "delta_per_wave": _r(x["delta_per_wave"]), "relative": _r(x["relative"], 6)} for x in res.verdict[k]]
                       for k in ("top_improvements", "top_regressions")}},
        "classes": [{k2: (_r(v) if isinstance(v, float) else v) for k2, v in c.items()} for c in res.classes],
        "lines": [
            {"line": l.line, "before_line": l.before_line, "latency_before": _r(l.latency_before), "latency_after": _r(l.latency_after),
             "delta": _r(l.delta), "relative": _r(l.relative, 6), "stall_before": _r(l.stall_before), "stall_after": _r(l.stall_after),
             "dominant_before": l.dominant_before, "dominant_after": l.dominant_after}
            for l in (res.lines if k is None else res.lines[:k])
        ],
        "sites": {
            **res.site_totals,
            "changed": [{"line": s.line, "kind": s.kind, "before": _site(s.before), "after": _site(s.after)} for s in (changed if k is None else changed[:k])],
            "moved_lines": _moved_lines(res),
        },
        "noise_source": res.noise_source,
    }


def _moved_lines(res) -> list[dict]:
    """Sites whose source line changed, aggregated per (before line, after line)."""
    agg: dict[tuple, list] = {}
    for s in res.sites:
        if s.kind == "moved":
            a = agg.setdefault((s.moved_from, s.line), [0, 0])
            a[0] += 1
            a[1] += s.after.latency
    rows = [{"from": f, "to": t, "sites": n, "latency_after": lat} for (f, t), (n, lat) in agg.items()]
    return sorted(rows, key=lambda r: -r["latency_after"])


def render_diff(res, console, top: int = 10) -> None:
    v = res.verdict
    console.print(f"[bold]attlens diff[/bold] — {escape(res.before.kernel)}: {escape(res.before.label)} → {escape(res.after.label)}")
    for c in res.comparability:
        console.print(f"  [yellow]![/yellow] {c['field']} differs: {escape(str(c['before']))} → {escape(str(c['after']))}" + (" (forced)" if c["blocking"] else ""))
    console.print(f"  normalization: {res.normalization}")
    console.print(f"[bold]Verdict:[/bold] {escape(v['summary'])} — {v['latency_per_wave_before']:,.0f} → {v['latency_per_wave_after']:,.0f} latency cycles per wave")
    if v["noise_floor"] is None:
        console.print("  noise floor unknown: give --noise-floor PCT or --noise A B (two captures of the same dispatch)")
    for m in v["class_moves"][:5]:
        console.print(f"  {escape(m)}")
    t = FitTable("Per class (stall cycles per wave)", [Col("class", "text", min_width=11), *map(Col, ("before", "after", "delta", "relative"))])
    for c in res.classes[:top]:
        rel = "-" if c["stall_relative"] is None else f"{c['stall_relative']:+.1%}"
        t.add_row(c["class"], f"{c['stall_before']:,.0f}", f"{c['stall_after']:,.0f}", f"{c['stall_delta']:+,.0f}", rel)
    console.print(t)
    t = FitTable("Per source line (latency cycles per wave), largest changes",
                 [Col("line", "path"), *map(Col, ("before", "after", "delta")), Col("dominant class", "wrap", min_width=11)])
    for l in res.lines[:top]:
        dom = l.dominant_after or l.dominant_before or "-"
        if l.dominant_before and l.dominant_after and l.dominant_before != l.dominant_after:
            dom = f"{l.dominant_before} → {l.dominant_after}"
        t.add_row(escape(os.path.basename(l.line) if l.line != "(no source)" else l.line), f"{l.latency_before:,.0f}", f"{l.latency_after:,.0f}", f"{l.delta:+,.0f}", dom)
    console.print(t)
    st = res.site_totals
    console.print(f"[bold]Instruction sites[/bold]: {st['matched']:,} matched on their line, {st['moved']:,} matched after their source line changed, "
                  f"{st['added']:,} added, {st['removed']:,} removed")
    for m in _moved_lines(res)[:5]:
        console.print(f"  moved    {m['sites']:>5} sites {escape(os.path.basename(m['from']))} → {escape(os.path.basename(m['to']))}")
    for s in [s for s in res.sites if s.kind in ("added", "removed")][:top]:
        site = s.after or s.before
        console.print(f"  {s.kind:<8} {escape(os.path.basename(s.line))}  {escape(site.isa[:60])}  latency {site.latency:,}")


def diff_to_markdown(res, top: int = 15) -> str:
    """The diff as Markdown. Trace strings (kernel names, paths, source
    lines, class names) go through the escapes of the Markdown report
    (:mod:`attlens.report.markdown`): code spans longer than any backtick run
    inside, plain text with ``< > &`` and Markdown punctuation escaped, ``|``
    escaped in tables."""
    from attlens.report.markdown import _code, _table, _text

    v = res.verdict

    def label(x) -> str:
        return "-" if not x else _code(x, True)

    out = [f"# Diff — {_code(res.before.kernel)}", "",
           f"Before: {_code(res.before.label)} · After: {_code(res.after.label)} · {_text(res.normalization)}", "",
           f"**Verdict:** {_text(v['summary'])} ({v['latency_per_wave_before']:,.0f} → {v['latency_per_wave_after']:,.0f} latency cycles per wave)", ""]
    if res.comparability:
        out += ["Differences:", ""] + [f"- {_text(c['field'])}: {_code(str(c['before']))} → {_code(str(c['after']))}" for c in res.comparability] + [""]
    out += ["## Per class (stall per wave)", ""]
    out += _table(["class", "before", "after", "delta", "relative"],
                  [[label(c["class"]), f"{c['stall_before']:,.0f}", f"{c['stall_after']:,.0f}", f"{c['stall_delta']:+,.0f}",
                    "-" if c["stall_relative"] is None else f"{c['stall_relative']:+.1%}"] for c in res.classes[:top]], "lrrrr")
    out += ["", "## Per source line (latency per wave)", ""]
    out += _table(["line", "before", "after", "delta", "dominant class"],
                  [[label(l.line), f"{l.latency_before:,.0f}", f"{l.latency_after:,.0f}", f"{l.delta:+,.0f}",
                    f"{label(l.dominant_before)} → {label(l.dominant_after)}"] for l in res.lines[:top]], "lrrrl")
    st = res.site_totals
    out += ["", f"Instruction sites: {st['matched']:,} matched on their line, {st['moved']:,} matched after their line changed, "
                f"{st['added']:,} added, {st['removed']:,} removed.", ""]
    return "\n".join(out)


def junit_xml(name: str, metric: str, before: float, after: float, change: float | None, limit: float, passed: bool, message: str) -> str:
    case = f'<testcase classname="attlens.check" name={quoteattr(f"{name} {metric}")} time="0">'
    if not passed:
        case += f"<failure message={quoteattr(message)} type=\"regression\"></failure>"
    case += f"<system-out>{quoteattr(f'before={before:.3f} after={after:.3f} change={change} limit={limit}')[1:-1]}</system-out></testcase>"
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuite name="attlens" tests="1" failures="{0 if passed else 1}" errors="0">{case}</testsuite>\n')


def diff_to_html(res, top: int = 30) -> str:
    """A self-contained HTML page of a diff (no script; every trace string escaped)."""
    from html import escape as h

    d = diff_to_dict(res, top=top)
    v = d["verdict"]

    def table(head, rows):
        out = ["<table><thead><tr>" + "".join(f"<th>{h(x)}</th>" for x in head) + "</tr></thead><tbody>"]
        for r in rows:
            out.append("<tr>" + "".join(f"<td>{h('' if x is None else str(x))}</td>" for x in r) + "</tr>")
        return "".join(out) + "</tbody></table>"

    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>attlens diff</title><style>",
        "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child,th:first-child{text-align:left}"
        ".bad{color:#b00}.good{color:#070}",
        "</style></head><body>",
        f"<h1>attlens diff — {h(d['before']['kernel'])}</h1>",
        f"<p>{h(d['before']['label'])} → {h(d['after']['label'])}<br>{h(d['normalization'])}</p>",
        f"<p><b>Verdict:</b> {h(v['summary'])} ({h(str(v['latency_per_wave_before']))} → {h(str(v['latency_per_wave_after']))} latency cycles per wave)</p>",
    ]
    if d["comparability"]:
        parts.append("<ul>" + "".join(f"<li>{h(c['field'])}: {h(str(c['before']))} → {h(str(c['after']))}</li>" for c in d["comparability"]) + "</ul>")
    parts.append("<h2>Per class (stall cycles per wave)</h2>")
    parts.append(table(["class", "before", "after", "delta", "relative"], [[c["class"], c["stall_before"], c["stall_after"], c["stall_delta"], c["stall_relative"]] for c in d["classes"]]))
    parts.append("<h2>Per source line (latency cycles per wave)</h2>")
    parts.append(table(["line", "before", "after", "delta", "dominant before", "dominant after"],
                       [[l["line"], l["latency_before"], l["latency_after"], l["delta"], l["dominant_before"], l["dominant_after"]] for l in d["lines"]]))
    st = d["sites"]
    parts.append(f"<h2>Instruction sites</h2><p>{st['matched']} matched on their line, {st['moved']} moved, {st['added']} added, {st['removed']} removed.</p>")
    parts.append(table(["from", "to", "sites", "latency after"], [[m["from"], m["to"], m["sites"], m["latency_after"]] for m in st["moved_lines"][:top]]))
    parts.append(table(["line", "kind", "instruction", "latency"], [[c["line"], c["kind"], (c["after"] or c["before"])["isa"], (c["after"] or c["before"])["latency"]] for c in st["changed"]]))
    parts.append("</body></html>")
    return "".join(parts)
