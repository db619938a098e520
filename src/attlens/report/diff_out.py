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


# --------------------------------------------------------------------------- HTML


def _fmt(x, signed: bool = False) -> str:
    """Cycles per wave: whole cycles, one decimal below 10 (so a small change
    is not shown as ``-0``)."""
    if x is None:
        return "n/a"
    nd = 1 if 0 < abs(x) < 9.95 else 0
    return f"{x:+,.{nd}f}" if signed else f"{x:,.{nd}f}"


def _fmt_pct(x, signed: bool = True) -> str:
    return "n/a" if x is None else (f"{100 * x:+.1f}%" if signed else f"{100 * x:.1f}%")


def _delta_class(x) -> str:
    return "" if not x else ("delta-worse" if x > 0 else "delta-better")


def _bars_svg(rows: list[tuple[str, float, str]], title: str, width: int = 900) -> str:
    """A diverging horizontal bar chart (inline SVG, no script): one row per
    ``(label, delta, value text)``; slower (more cycles) to the right in red,
    faster to the left in green, scaled to the largest change; labels on the
    left, values in a column on the right."""
    from html import escape as h

    if not rows:
        return ""
    row_h, label_w, value_w, pad = 22, 300, 190, 6
    half = (width - label_w - value_w) // 2 - 4
    mid = label_w + half + 4
    top = max(abs(d) for _, d, _ in rows) or 1.0
    height = row_h * len(rows) + 2 * pad
    out = [f'<svg class="chart" role="img" aria-label="{h(title, quote=True)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
           f"<title>{h(title)}</title>",
           f'<line class="axis" x1="{mid}" y1="0" x2="{mid}" y2="{height}"/>']
    for i, (label, delta, text) in enumerate(rows):
        y = pad + i * row_h
        w = max(round(half * abs(delta) / top), 1 if delta else 0)
        short = label if len(label) <= 40 else "…" + label[-39:]
        out.append(f'<g><title>{h(label)}: {h(text)}</title>'
                   f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{h(short)}</text>'
                   f'<rect class="{"worse" if delta > 0 else "better"}" x="{mid if delta >= 0 else mid - w}" y="{y + 3}" width="{w}" height="{row_h - 6}" rx="2"/>'
                   f'<text x="{width - 4}" y="{y + 15}" text-anchor="end">{h(text)}</text></g>')
    out.append("</svg>")
    return "".join(out)


def _html_table(head: list[tuple[str, bool]], rows: list[list[str]], table_id: str) -> str:
    """``head``: (label, numeric); cells are already-escaped HTML."""
    from html import escape as h

    ths = "".join(f'<th class="num">{h(x)}</th>' if num else f"<th>{h(x)}</th>" for x, num in head)
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if num else f"<td>{c}</td>" for c, (_, num) in zip(r, head)) + "</tr>" for r in rows)
    return f'<table class="data" id="{table_id}"><thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table>'


def diff_to_html(res, top: int = 30) -> str:
    """A self-contained HTML page of a diff, in the look of the HTML report
    (its stylesheet and navigation): verdict cards, charts of the per-class
    and per-line change (inline SVG), tables with percentages, the
    instruction sites matched / moved / added / removed. No script: the
    Content-Security-Policy allows none; every trace string is escaped."""
    from html import escape as h

    import shlex

    from attlens.report.html import _csp, _fill, _template

    v = res.verdict
    st = res.site_totals
    b, a = res.before, res.after
    code = lambda s: f"<code>{h(str(s))}</code>"  # noqa: E731
    parts = ['<section id="header">', f'<h1>Diff — <span id="kernel-name">{h(b.kernel)}</span></h1>', '<dl class="facts">']
    for label, side in (("before", b), ("after", a)):
        parts.append(f"<dt>{label}</dt><dd>{code(side.label)} — {h(side.target or 'unknown target')}, {side.waves:,} traced waves</dd>")
    parts.append(f"<dt>normalization</dt><dd>{h(res.normalization)}</dd></dl>")
    if res.comparability:
        parts.append('<ul class="warnings" id="comparability">' + "".join(
            f"<li>{h(c['field'])} differs: {code(c['before'])} → {code(c['after'])}" + (" (compared with --force)" if c["blocking"] else "") + "</li>"
            for c in res.comparability) + "</ul>")
    parts.append("</section>")

    rel = v["relative_change"]
    floor = v["noise_floor"]
    sig = "noise floor unknown (give --noise-floor PCT or --noise A B)" if v["significant"] is None else (
        f"beyond the noise floor of {_fmt_pct(floor, False)}" if v["significant"] else f"within the noise floor of {_fmt_pct(floor, False)}")
    parts += ['<section id="verdict"><h2>Verdict</h2>', f'<p id="verdict-summary"><b>{h(v["summary"])}</b> — {h(sig)}.</p>', '<div class="cards">',
              f'<div class="card"><div class="v" id="lat-before">{_fmt(v["latency_per_wave_before"])}</div><div class="l">latency cycles per wave, before</div></div>',
              f'<div class="card"><div class="v" id="lat-after">{_fmt(v["latency_per_wave_after"])}</div><div class="l">latency cycles per wave, after</div></div>',
              f'<div class="card"><div class="v {_delta_class(rel)}" id="lat-change">{_fmt_pct(rel)}</div><div class="l">change</div></div>',
              f'<div class="card"><div class="v">{_fmt(b.total_stall / max(b.waves, 1))} → {_fmt(a.total_stall / max(a.waves, 1))}</div><div class="l">stall cycles per wave</div></div>',
              "</div>"]
    if v["class_moves"]:
        parts.append("<ul>" + "".join(f"<li>{h(m)}</li>" for m in v["class_moves"][:5]) + "</ul>")
    parts.append("</section>")

    classes = [c for c in res.classes if c["stall_before"] or c["stall_after"]][:top]
    parts += ['<section id="classes"><h2>Per class (stall cycles per wave)</h2>',
              _bars_svg([(c["class"], c["stall_delta"], f"{_fmt(c['stall_delta'], True)} ({_fmt_pct(c['stall_relative'])})") for c in classes], "stall change per class"),
              _html_table([("class", False), ("before", True), ("after", True), ("delta", True), ("change", True), ("share before", True), ("share after", True)],
                          [[code(c["class"]), _fmt(c["stall_before"]), _fmt(c["stall_after"]), f'<span class="{_delta_class(c["stall_delta"])}">{_fmt(c["stall_delta"], True)}</span>',
                            _fmt_pct(c["stall_relative"]), _fmt_pct(c["stall_before"] / (b.total_stall / max(b.waves, 1)) if b.total_stall else None, False),
                            _fmt_pct(c["stall_after"] / (a.total_stall / max(a.waves, 1)) if a.total_stall else None, False)] for c in classes], "classes-table"),
              "</section>"]

    lines = [ln for ln in res.lines if ln.delta][:top]
    parts += ['<section id="lines"><h2>Per source line (latency cycles per wave), largest changes</h2>',
              _bars_svg([(os.path.basename(ln.line) if ln.line != "(no source)" else ln.line, ln.delta,
                          _fmt(ln.delta, True) + (f" ({_fmt_pct(ln.relative)})" if ln.relative is not None else " (new)")) for ln in lines],
                        "latency change per source line"),
              _html_table([("line", False), ("before", True), ("after", True), ("delta", True), ("change", True), ("dominant class", False)],
                          [[code(ln.line) + (f'<div class="muted">was {code(ln.before_line)}</div>' if ln.before_line and ln.before_line != ln.line else ""),
                            _fmt(ln.latency_before), _fmt(ln.latency_after), f'<span class="{_delta_class(ln.delta)}">{_fmt(ln.delta, True)}</span>',
                            _fmt_pct(ln.relative), h(f"{ln.dominant_before or '-'} → {ln.dominant_after or '-'}")] for ln in lines], "lines-table"),
              "</section>"]

    total_sites = sum(st[k] for k in ("matched", "moved", "added", "removed")) or 1
    segs = "".join(f'<div class="seg-{k}" style="width:{100 * st[k] / total_sites:.3f}%" title="{k} {st[k]:,}"></div>' for k in ("matched", "moved", "added", "removed") if st[k])
    legend = "".join(f'<span><span class="swatch seg-{k}"></span>{k} <b id="sites-{k}">{st[k]:,}</b> ({100 * st[k] / total_sites:.1f}%)</span>'
                     for k in ("matched", "moved", "added", "removed"))
    moved = _moved_lines(res)
    changed = [s for s in res.sites if s.kind in ("added", "removed")]
    parts += ['<section id="sites"><h2>Instruction sites</h2>',
              "<p>Each executed instruction of one side is matched to the other by aligning mnemonics on its source line; "
              "a second pass pairs the rest across the kernel (<i>moved</i>: the same instruction now on another line).</p>",
              f'<div class="hbar">{segs}</div><div class="legend">{legend}</div>']
    if moved:
        parts += ["<h3>Moved between lines</h3>", _html_table(
            [("from", False), ("to", False), ("sites", True), ("latency after", True)],
            [[code(m["from"]), code(m["to"]), f"{m['sites']:,}", f"{m['latency_after']:,}"] for m in moved[:top]], "moved-table")]
    if changed:
        parts += ["<h3>Added and removed</h3>", _html_table(
            [("line", False), ("kind", False), ("instruction", False), ("latency", True), ("stall", True)],
            [[code(s.line), h(s.kind), code((s.after or s.before).isa), f"{(s.after or s.before).latency:,}", f"{(s.after or s.before).stall:,}"]
             for s in changed[:top]], "changed-table")]
    parts.append("</section>")
    base = f"attlens diff {shlex.quote(b.label)} {shlex.quote(a.label)}"
    cmds = [base, base + " --json > diff.json", base + " --format md -o DIFF.md"]
    parts += ['<section id="reproduce"><h2>Reproduce</h2>', f'<pre class="cmds">{h(chr(10).join(cmds))}</pre>',
              f'<p class="muted">Generated by attlens {h(__version__)}; `attlens diff --json` (schema attlens.diff) has every number of this page.</p></section>']
    return _fill(_template("diff.html"), {"CSP": h(_csp(None), quote=True), "TITLE": h(f"attlens diff — {b.kernel}", quote=True),
                                          "STYLE": _template("report.css"), "BODY": "\n".join(parts)})


def check_to_dict(res) -> dict:
    """The ``attlens.check`` object of a :class:`attlens.analysis.diff.CheckResult`."""
    from attlens.report.json_out import header

    return {**header("attlens.check"), "metric": res.metric, "baseline": res.baseline, "current": res.current,
            "change_percent": res.change_percent, "max_regression_percent": res.max_regression_percent, "passed": res.passed}
