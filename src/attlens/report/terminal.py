"""Terminal rendering of an analysis with rich tables."""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from attlens.analysis.taxonomy import CLASSES
from attlens.report.console import Col, FitTable
from attlens.report.console import make_console  # noqa: F401  (re-exported: the CLI's console)


def _n(x) -> str:
    return "n/a" if x is None else f"{x:,}"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _short_source(src: str | None) -> str:
    if not src:
        return "-"
    f, _, ln = src.rpartition(":")
    return f"{os.path.basename(f)}:{ln}" if f else src


def render_analysis(result, console: Console, topk: int = 10, mode: str = "both", detail: bool = False, context: int = 2, findings=None, detail_k: int | None = None, sort: str = "stall") -> None:
    d = result.dispatch
    q = result.quality
    f = q.facts
    b = result.breakdown
    h = result.hotspots
    arch = d.arch

    console.print(f"[bold]attlens[/bold] — [bold cyan]{escape(f.kernel or '(unnamed kernel)')}[/bold cyan]")
    console.print(f"  capture  {escape(f.path)}  (dispatch {_n(f.dispatch_id)}, agent handle {_n(f.agent_handle)})")
    if arch.target:
        fam = f" ({arch.facts['family']}{', ' + arch.product if arch.product else ''})" if arch.facts else ""
        console.print(f"  target   {arch.target}{escape(fam)} — from {arch.source}: {escape(arch.reason)}")
    else:
        console.print(f"  target   [yellow]unknown[/yellow] — {escape(arch.reason)}")
    ses = ",".join(map(str, f.shader_engines))
    clock = f"; shader clock {f.shader_clock_mhz:,.0f} MHz (realtime.json)" if f.shader_clock_mhz else ""
    console.print(
        f"  traced   {f.waves:,} waves on CU {','.join(map(str, f.cus))} of SE {ses}, SIMD {','.join(map(str, f.simds))}; "
        f"{f.records:,} instruction records{clock}"
    )
    mapped = f"{_pct(q.mapped_latency_share)} of cycles on instructions with a source line" if q.has_source_lines else "no source lines"
    console.print(
        f"  code     {h.listed:,} instructions listed, {h.executed:,} executed, {h.never_executed:,} never executed; {mapped}"
    )
    consistent = "equal" if q.code_json.consistent else "[yellow]DIFFER[/yellow]"
    console.print(f"  check    code.json sums vs wave files: {consistent}")
    hid = ""
    if result.hidden is not None:
        hid = f" · hidden by other waves {_pct(result.hidden.hidden_share)} of idle+latency"
    console.print(
        f"\n[bold]Totals[/bold]  latency {_n(b.total_latency)} cyc · stall {_n(b.total_stall)} "
        f"({_pct(b.total_stall / b.total_latency if b.total_latency else None)}) · issue {_n(b.total_issue)} · idle {_n(b.total_idle)}{hid}"
    )

    t = FitTable("Stall by class", [Col("class", "text", min_width=11), Col("stall cyc"), Col("stall %"), Col("latency cyc"), Col("records"),
                                    Col("meaning", "wrap", min_width=16)])
    for c in sorted(CLASSES, key=lambda c: -b.by_class_stall[c]):
        if not (b.by_class_latency[c] or b.by_class_records[c]):
            continue
        t.add_row(c, _n(b.by_class_stall[c]), _pct(b.by_class_stall[c] / b.total_stall if b.total_stall else None),
                  _n(b.by_class_latency[c]), _n(b.by_class_records[c]), CLASSES[c])
    console.print(t)

    if mode in ("asm", "both"):
        order = {"stall": h.by_stall, "latency": h.by_latency, "exposed": h.by_exposed}[sort]
        show_exp = result.hidden is not None
        cols = [Col(c) for c in ("#", "pc", "vaddr", "hit", "latency", "stall", "idle", "stall %") + (("exposed",) if show_exp else ())]
        t = FitTable(f"Top {topk} instructions by {sort}", cols + [Col("class", "wrap", min_width=11), Col("instruction", "wrap", min_width=16), Col("source", "path")])
        for rank, i in enumerate(order[:topk], 1):
            x = h.instructions[i]
            cls = x.cls
            if len(x.class_stall) > 1:
                cls += " (" + ", ".join(f"{k[5:] if k.startswith('wait_') else k} {v / max(x.stall, 1):.0%}" for k, v in sorted(x.class_stall.items(), key=lambda kv: -kv[1])[:3]) + ")"
            cells = [str(rank), str(x.pc), hex(x.vaddr), _n(x.hit), _n(x.latency), _n(x.stall), _n(x.idle), _pct(x.stall_share)]
            if show_exp:
                cells.append(_n(x.exposed))
            t.add_row(*cells, escape(cls), escape(x.isa), escape(_short_source(x.source)))
        console.print(t)

    if mode in ("src", "both"):
        if not q.has_source_lines:
            console.print("[yellow]No source lines in this capture: per-line ranking unavailable (built without line info).[/yellow]")
        else:
            line_order = {"stall": h.lines_by_stall, "latency": h.lines_by_latency, "exposed": h.lines_by_exposed}[sort]
            show_exp = result.hidden is not None
            nums = ("instr", "exec", "hit", "latency", "stall", "stall %") + (("exposed",) if show_exp else ())
            t = FitTable(f"Top {topk} source lines by {sort}", [Col("#"), Col("source", "path"), *map(Col, nums),
                                                                 Col("dominant class", "text", min_width=11), Col("inlined from", "path", min_width=10)])
            for rank, i in enumerate(line_order[:topk], 1):
                ln = h.lines[i]
                chain = _short_source(ln.inline_chains[0].split(" -> ")[0]) if ln.inline_chains else ""
                cells = [str(rank), escape(_short_source(ln.source) if ln.file else ln.source), str(ln.instructions), str(ln.executed),
                         _n(ln.hit), _n(ln.latency), _n(ln.stall), _pct(ln.stall_share)]
                if show_exp:
                    cells.append(_n(ln.exposed))
                t.add_row(*cells, ln.dominant_class, escape(chain))
            console.print(t)
            if detail:
                _render_detail(result, console, detail_k or topk, context, line_order)

    o = result.occupancy
    console.print("[bold]Occupancy[/bold]")
    if not o.available:
        console.print(f"  theoretical: unavailable — {escape(o.reason or '')}")
    else:
        lim = ", ".join(o.limiters) if o.limiters else "-"
        console.print(f"  theoretical {o.theoretical_waves_per_simd} waves/SIMD (limited by {lim})")
        for l in o.limits:
            console.print(f"    {l.name:<9} {('-' if l.waves_per_simd is None else l.waves_per_simd)!s:>3}  {escape(l.detail)}")
        if o.to_next_wave:
            parts = []
            for k, v in o.to_next_wave["free"].items():
                unit = "bytes" if k == "lds" else "registers"
                amount = v.get("free_bytes", v.get("free_registers"))
                parts.append(f"free {amount} {k.upper()} {unit} ({v['allocated']} → {v['allowed_for_next_wave']})")
            console.print(f"    for {o.to_next_wave['waves_per_simd']} waves/SIMD: " + "; ".join(parts))
    console.print(
        f"  observed    max {_n(o.observed_max_per_simd_traced)} waves/SIMD on the traced CU"
        + (f", max {o.observed_max_per_simd_all_cus} on any CU of the traced SEs (occupancy.json)" if o.observed_max_per_simd_all_cus is not None else "")
    )
    if o.workgroups is not None:
        console.print(f"  grid        {o.workgroups:,} workgroups" + (f"; {o.resident_workgroup_capacity:,} fit at once" if o.resident_workgroup_capacity else ""))
    for e in o.explanation:
        console.print(f"  [cyan]→[/cyan] {escape(e)}")

    if findings:
        console.print("[bold]Top findings[/bold]")
        for fnd in findings:
            console.print(f"  {escape(fnd)}")
    if result.warnings:
        console.print("[bold yellow]Warnings[/bold yellow]")
        for w in result.warnings:
            console.print(f"  [yellow]![/yellow] {escape(w)}")


def _render_detail(result, console: Console, topk: int, context: int, order) -> None:
    d = result.dispatch
    h = result.hotspots
    console.print("[bold]Detail of the top source lines[/bold]")
    for rank, i in enumerate(order[:topk], 1):
        ln = h.lines[i]
        if ln.file is None:
            continue
        console.print(f"\n[bold]{rank}. {escape(ln.source)}[/bold]  stall {ln.stall:,} ({_pct(ln.stall_share)}), {ln.executed}/{ln.instructions} instructions executed")
        if ln.inline_chains:
            console.print(f"   inlined at: {escape(ln.inline_chains[0])}")
        from attlens.model.dispatch import SourceLoc

        text = d.source_text(SourceLoc(ln.file, ln.line)) if ln.line else None
        if text is None:
            console.print("   [dim](source file not in the capture)[/dim]")
        else:
            lo, hi = max(ln.line - context, 1), min(ln.line + context, len(text))
            for k in range(lo, hi + 1):
                mark = ">" if k == ln.line else " "
                console.print(f"   {mark}{k:5d} | {escape(text[k - 1])}")
        rows = sorted(ln.pcs, key=lambda p: -int(result.sums.stall[p]))[:8]
        for p in rows:
            if result.sums.hit[p] == 0:
                continue
            console.print(
                f"     pc {p:>5} stall {int(result.sums.stall[p]):>12,} hit {int(result.sums.hit[p]):>8,}  {escape(d.code.isa[p][:70])}"
            )
