"""JSON objects and terminal tables of the query verbs: ``analyze --by``,
``asm``, ``waits``, ``captures``, ``occupancy``.

Schemas: docs/json-schema.md and ``attlens/schemas/<name>.schema.json``. The
MCP server returns exactly these objects (docs/agents.md).
"""

from __future__ import annotations

from rich.markup import escape

from attlens import __version__
from attlens.report.console import Col, FitTable
from attlens.report.json_out import _instr, _line, occupancy_to_dict
from attlens.report.terminal import _n, _pct, _short_source
from attlens.report.waves_out import _capture


def _head(schema: str) -> dict:
    return {"schema": schema, "schema_version": 1, "attlens_version": __version__}


def _cut(rows: list, top: int | None) -> list:
    return rows if not top or top <= 0 else rows[:top]


# ---------------------------------------------------------------- hotspots


def _opcode(o) -> dict:
    return {
        "opcode": o.opcode,
        "class": o.cls,
        "instructions": o.instructions,
        "hit": o.hit,
        "latency": o.latency,
        "stall": o.stall,
        "idle": o.idle,
        "stall_share": round(o.stall_share, 6),
        "latency_share": round(o.latency_share, 6),
        "class_stall": o.class_stall,
        "exposed": o.exposed,
        "hidden": o.hidden,
        "pcs": o.pcs,
    }


_ROW = {"instruction": _instr, "line": _line, "opcode": _opcode}


def hotspots_to_dict(table, top: int | None = None) -> dict:
    r = table.result
    b = r.breakdown
    rows = _cut(table.rows, top)
    return {
        **_head("attlens.hotspots"),
        "capture": _capture(r),
        "by": table.by,
        "sort": table.sort,
        "topk": top if top and top > 0 else None,
        "rows_total": len(table.rows),
        "totals": {
            "latency": b.total_latency,
            "stall": b.total_stall,
            "idle": b.total_idle,
            "exposed": None if r.hidden is None else int(r.hidden.exposed.sum()),
        },
        "rows": [_ROW[table.by](x) for x in rows],
    }


def render_hotspots(table, console, top: int = 10) -> None:
    r = table.result
    d = r.dispatch
    console.print(f"[bold]attlens analyze[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    title = f"Top {top} {table.by}s by {table.sort}" if table.by != "opcode" else f"Top {top} opcodes by {table.sort}"
    first = {"instruction": "pc", "line": "source", "opcode": "opcode"}[table.by]
    kinds = {"source": "path", "opcode": "text", "class": "text", "instruction": "wrap", "pcs": "wrap", "pc": "num"}
    cols = [first, "hit", "latency", "stall", "idle", "exposed", "stall share", "class"]
    if table.by == "instruction":
        cols += ["instruction", "source"]
    elif table.by == "opcode":
        cols += ["pcs"]
    t = FitTable(title, [Col(c, kinds.get(c, "num")) for c in cols])
    for x in table.rows[:top]:
        if table.by == "instruction":
            key, cls, extra = str(x.pc), x.cls, [escape(x.isa), escape(_short_source(x.source))]
        elif table.by == "line":
            key, cls, extra = escape(_short_source(x.source) if x.file else x.source), x.dominant_class, []
        else:
            more = f" +{len(x.pcs) - 6}" if len(x.pcs) > 6 else ""
            key, cls, extra = escape(x.opcode), x.cls, [", ".join(map(str, x.pcs[:6])) + more]
        t.add_row(key, _n(x.hit), _n(x.latency), _n(x.stall), _n(x.idle), _n(x.exposed), _pct(x.stall_share), cls, *extra)
    console.print(t)


# ---------------------------------------------------------------- asm


def asm_to_dict(win) -> dict:
    r = win.result
    code = r.dispatch.code
    rows = []
    for a in win.rows:
        h = a.hotspot
        row = {
            "pc": a.pc,
            "center": a.pc == win.pc,
            "label": a.label,
            "vaddr": a.vaddr,
            "isa": a.isa,
            "mnemonic": a.mnemonic or None,
            "class": a.cls or None,
            "executed": a.executed,
            "source": a.source,
        }
        if a.label is not None:
            figures = dict.fromkeys(("hit", "latency", "stall", "idle", "issue", "stall_share", "latency_share", "exposed", "hidden", "waited_on"))
        elif h is None:  # listed, never executed: real zeros
            hidden_known = r.hidden is not None
            figures = {"hit": 0, "latency": 0, "stall": 0, "idle": 0, "issue": 0, "stall_share": 0.0, "latency_share": 0.0,
                       "exposed": 0 if hidden_known else None, "hidden": 0 if hidden_known else None, "waited_on": 0}
        else:
            figures = {"hit": h.hit, "latency": h.latency, "stall": h.stall, "idle": h.idle, "issue": h.issue,
                       "stall_share": round(h.stall_share, 6), "latency_share": round(h.latency_share, 6),
                       "exposed": h.exposed, "hidden": h.hidden, "waited_on": h.waited_on}
        row.update(figures)
        row["stall_class"] = h.cls if h is not None else None
        row["waits_on"] = [{"pc": p, "isa": code.isa[p], "cycles": c} for p, c in a.waits_on]
        rows.append(row)
    return {
        **_head("attlens.asm"),
        "capture": _capture(r),
        "pc": win.pc,
        "around": win.around,
        "first_pc": win.first_pc,
        "last_pc": win.last_pc,
        "rows": rows,
        "sources": [{"source": s.source, "text": s.text} for s in win.sources],
    }


def render_asm(win, console) -> None:
    r = win.result
    d = r.dispatch
    console.print(f"[bold]attlens asm[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  pc {win.pc} ± {win.around} instructions  ({escape(str(d.path))})")
    t = FitTable(None, [Col("", "text", min_width=1), *map(Col, ("pc", "hit", "latency", "stall", "idle", "exposed", "share")), Col("class", "text"),
                        Col("instruction", "wrap", min_width=16), Col("source", "path"), Col("waits on (pc: cycles)", "wrap")])
    for a in win.rows:
        if a.label is not None:
            t.add_row("", str(a.pc), "", "", "", "", "", "", "", f"[dim]{escape(a.isa)}[/dim]", "", "")
            continue
        h = a.hotspot
        mark = ">" if a.pc == win.pc else ""
        waits = ", ".join(f"{p}: {c:,}" for p, c in a.waits_on[:3]) + (f", +{len(a.waits_on) - 3}" if len(a.waits_on) > 3 else "")
        if h is None:
            t.add_row(mark, str(a.pc), "0", "-", "-", "-", "-", "-", a.cls, escape(a.isa), escape(_short_source(a.source)), waits)
        else:
            t.add_row(mark, str(a.pc), _n(h.hit), _n(h.latency), _n(h.stall), _n(h.idle), _n(h.exposed), _pct(h.stall_share), h.cls,
                      escape(a.isa), escape(_short_source(a.source)), waits)
    console.print(t)
    if win.sources:
        console.print("[bold]Source lines[/bold]")
        for s in win.sources:
            console.print(f"  {escape(s.source)}" + (f"\n      {escape(s.text.strip())}" if s.text else "  (no snapshot of the file in the capture)"))


# ---------------------------------------------------------------- waits


def _site(s, code) -> dict:
    return {
        "pc": s.pc,
        "isa": s.isa,
        "source": s.source,
        "wait_class": s.wait_class,
        "executions": s.executions,
        "zero_wait_executions": s.zero_wait_executions,
        "total": s.total,
        "mean": round(s.mean, 3),
        "stddev": round(s.stddev, 3),
        "p50": s.p50,
        "p90": s.p90,
        "p95": s.p95,
        "max": s.max,
        "share_of_wait": round(s.share_of_wait, 6),
        "share_of_stall": round(s.share_of_stall, 6),
        "producers": [{"pc": p, "isa": code.isa[p], "cycles": c} for p, c in s.producers],
    }


def waits_to_dict(ws, top: int | None = None) -> dict:
    r = ws.result
    code = r.dispatch.code
    return {
        **_head("attlens.waits"),
        "capture": _capture(r),
        "steady": ws.steady,
        "executions": ws.executions,
        "total_wait": ws.total,
        "kernel_stall": ws.kernel_stall,
        "share_of_stall": round(ws.total / ws.kernel_stall, 6) if ws.kernel_stall else None,
        "sites_total": len(ws.sites),
        "topk": top if top and top > 0 else None,
        "sites": [_site(s, code) for s in _cut(ws.sites, top)],
        "notes": ws.notes,
    }


def render_waits(ws, console, top: int = 10) -> None:
    d = ws.result.dispatch
    scope = "steady-state loop iterations (after the first)" if ws.steady else "every execution"
    console.print(f"[bold]attlens waits[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    console.print(f"  {len(ws.sites)} wait sites, {_n(ws.executions)} executions ({scope}), {_n(ws.total)} wait cycles"
                  f" = {_pct(ws.total / ws.kernel_stall if ws.kernel_stall else None)} of all stall")
    t = FitTable(f"Wait per execution, top {top} sites by total wait",
                 [*map(Col, ("pc", "total", "share", "execs", "no wait", "mean", "stddev", "p50", "p90", "p95", "max")), Col("class", "text"),
                  Col("instruction", "wrap", min_width=16), Col("source", "path"), Col("waits on", "wrap")])
    for s in ws.sites[:top]:
        prods = ", ".join(str(p) for p, _ in s.producers[:3]) + (f" +{len(s.producers) - 3}" if len(s.producers) > 3 else "")
        t.add_row(str(s.pc), _n(s.total), _pct(s.share_of_stall), _n(s.executions), _n(s.zero_wait_executions), f"{s.mean:,.0f}", f"{s.stddev:,.0f}",
                  f"{s.p50:,.0f}", f"{s.p90:,.0f}", f"{s.p95:,.0f}", _n(s.max), s.wait_class, escape(s.isa), escape(_short_source(s.source)), prods)
    console.print(t)
    for n in ws.notes:
        console.print(f"  [yellow]![/yellow] {escape(n)}")


# ---------------------------------------------------------------- captures


def captures_to_dict(cl) -> dict:
    return {
        **_head("attlens.captures"),
        "path": str(cl.path),
        "captures": [
            {"path": str(c.path), "status": c.status, "kernel": c.kernel, "target": c.target, "target_source": c.target_source,
             "waves": c.waves, "instructions": c.instructions, "agent_handle": c.agent_handle, "dispatch_id": c.dispatch_id, "error": c.error}
            for c in cl.captures
        ],
    }


def render_captures(cl, console) -> None:
    t = FitTable(f"Captures under {escape(str(cl.path))}", [Col("status", "wrap"), Col("kernel", "text"), Col("target", "text"),
                                                              Col("waves"), Col("instructions"), Col("dispatch"), Col("path", "path")])
    for c in cl.captures:
        status = c.status if c.error is None else f"{c.status}: {c.error}"
        t.add_row(escape(status), escape(c.kernel or "-"), c.target or "-", _n(c.waves), _n(c.instructions), _n(c.dispatch_id), escape(str(c.path)))
    console.print(t)
    if not cl.captures:
        console.print("  no capture (no filenames.json) at or up to four levels below this folder")


# ---------------------------------------------------------------- occupancy


def occupancy_doc(result) -> dict:
    """The ``attlens.occupancy`` object (``attlens occupancy --json``)."""
    return {**_head("attlens.occupancy"), "capture": _capture(result), "occupancy": occupancy_to_dict(result.occupancy)}


def render_occupancy(result, console) -> None:
    o = result.occupancy
    d = result.dispatch
    console.print(f"[bold]attlens occupancy[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    if not o.available:
        console.print(f"  theoretical occupancy unavailable: {escape(o.reason or '')}")
    else:
        console.print(f"  theoretical {o.theoretical_waves_per_simd} waves/SIMD, limited by {', '.join(o.limiters)}")
        t = FitTable(None, [Col("limit", "text"), Col("waves/SIMD"), Col("detail", "wrap")])
        for lim in o.limits:
            t.add_row(lim.name, _n(lim.waves_per_simd), escape(lim.detail))
        console.print(t)
    console.print(f"  observed: max {_n(o.observed_max_per_simd_traced)} waves/SIMD on the traced CU, "
                  f"max {_n(o.observed_max_per_simd_all_cus)} over all CUs (occupancy.json)")
    if o.grid_limited:
        console.print(f"  [yellow]![/yellow] grid-limited: {_n(o.workgroups)} workgroups for a resident capacity of {_n(o.resident_workgroup_capacity)}")
    for line in o.explanation:
        console.print(f"  {escape(line)}")
