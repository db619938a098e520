"""Every terminal rendering: rich tables (:class:`attlens.report.console.FitTable`)
and lines on the console of :func:`attlens.report.console.make_console`.

One function per result object, each consuming the object the analysis
returned (``render_plan(plan, console)``, ``render_deps(deps, console)``, ...);
the numbers are the ones ``to_dict()`` (``--json``) carries.
"""

from __future__ import annotations

import os

from rich.console import Console
from rich.markup import escape

from attlens.analysis.taxonomy import CLASSES
from attlens.report.console import Col, FitTable
from attlens.report.text import finding_detail, header_lines, n as _n, pc_sampling_summary, pct as _pct, predicted_text, reason_mix, short_source as _short_source, stake_and_prediction

# --------------------------------------------------------------------------- columns
#
# The columns every table shares, and the order in which their text gives way
# when a table is wider than the terminal (docs/commands.md, "Terminal
# output"): numbers never give way; among text, the lowest rank first — the
# call site a line was inlined from, descriptions, source locations, lists of
# partner pcs, class labels, names — and the instruction text last. An
# instruction is never cut: it wraps between operands and its column is never
# narrower than its longest word, so a mnemonic is never split. Every table
# that lists instructions shows both the pc index and the address (code.json
# ``Vaddr``); ``--pc`` takes either.

GIVE_WAY = {"inlined": 1, "meaning": 2, "source": 3, "list": 4, "class": 5, "name": 6, "status": 7, "instruction": 9}


def pc_columns(pc_header: str = "pc") -> list[Col]:
    """The pc index and the address of an instruction (fill with :func:`pc_cells`)."""
    return [Col(pc_header), Col("vaddr")]


def pc_cells(dispatch, pc: int) -> list[str]:
    return [str(pc), _addr(dispatch, pc)]


def _addr(dispatch, pc: int) -> str:
    """The ELF address of a pc; "-" when the layout records none (rocprofv2: that column counts lines)."""
    return hex(int(dispatch.code.vaddr[pc])) if dispatch.code.has_addresses else "-"


def _hex(v) -> str:
    return "-" if v is None else hex(int(v))


def _sn(v, recorded: bool = True) -> str:
    """A stall figure: "-" when the records carry no stall cycles (rocprofv2), never 0."""
    return "-" if v is None or not recorded else _n(v)


def _sp(v, recorded: bool = True) -> str:
    """A stall share: "-" when no stall cycles were recorded."""
    return "-" if v is None or not recorded else _pct(v)


def _recorded(x) -> bool:
    return getattr(x, "stall_recorded", True)


def isa_column(header: str = "instruction") -> Col:
    return Col(header, "isa", give_way=GIVE_WAY["instruction"])


def source_column(header: str = "source") -> Col:
    # file.py:line is rarely longer than 24: kept whole before the instruction wraps further
    return Col(header, "path", min_width=24, give_way=GIVE_WAY["source"])


def class_column(header: str = "class") -> Col:
    return Col(header, "wrap", min_width=11, give_way=GIVE_WAY["class"])


def list_column(header: str, min_width: int | None = None) -> Col:
    """Partner pcs with their cycles: numbers, wrapped between entries."""
    return Col(header, "wrap", min_width=min_width, give_way=GIVE_WAY["list"])

# --------------------------------------------------------------------------- analyze

def render_analysis(result, console: Console, topk: int = 10, mode: str = "both", detail: bool = False, context: int = 2, findings=None, detail_k: int | None = None, sort: str = "stall", verdict: str | None = None) -> None:
    """The story first: the plan's verdict and top findings (when given), the
    warnings to act on, the numbers, then the capture's metadata and the
    notes (expected facts, said once)."""
    d = result.dispatch
    q = result.quality
    f = q.facts
    b = result.breakdown
    h = result.hotspots

    console.print(f"[bold]attlens[/bold] — [bold cyan]{escape(f.kernel or '(unnamed kernel)')}[/bold cyan]  ({escape(f.path)})")
    if verdict:
        console.print(f"[bold]Verdict[/bold]  {escape(verdict)}")
    if findings:
        console.print("[bold]Top findings[/bold]")
        for fnd in findings:
            console.print(f"  {escape(fnd)}")
    if result.warnings:
        console.print("[bold yellow]Warnings[/bold yellow] (act on these)")
        for w in result.warnings:
            console.print(f"  [yellow]![/yellow] {escape(w)}")
    hid = ""
    if result.hidden is not None:
        hid = f" · hidden by other waves {_pct(result.hidden.hidden_share)} of idle+latency"
    join = getattr(result, "pc_sampling", None)
    if join is not None:
        for line in pc_sampling_lines(join):
            console.print(f"  {line}")
    sampled = join is not None and join.mode != "none"
    if result.dispatch.stall_recorded:
        stall = (f"instruction stall {_n(b.total_stall)} ({_pct(b.total_stall / b.total_latency if b.total_latency else None)} of latency)"
                 f" · issue {_n(b.total_issue)}")
    else:  # rocprofv2: no stall cycles in the records (unavailable, not 0)
        stall = "stall unavailable (not recorded by this profiler)"
    console.print(f"\n[bold]Totals[/bold]  latency {_n(b.total_latency)} cyc · {stall} · idle {_n(b.total_idle)}{hid}")

    rec = d.stall_recorded
    t = FitTable("Instruction stall by class", [Col("class", "text", min_width=11, give_way=GIVE_WAY["class"]), Col("stall cyc"), Col("stall %"), Col("latency cyc"), Col("records"),
                  Col("meaning", "wrap", min_width=16, give_way=GIVE_WAY["meaning"])])
    for c in sorted(CLASSES, key=lambda c: (-(b.by_class_stall[c] if rec else 0), -b.by_class_latency[c])):
        if not (b.by_class_latency[c] or b.by_class_records[c]):
            continue
        t.add_row(c, _sn(b.by_class_stall[c], rec), _sp(b.by_class_stall[c] / b.total_stall if b.total_stall else None, rec),
                  _n(b.by_class_latency[c]), _n(b.by_class_records[c]), CLASSES[c])
    console.print(t)
    if not rec and sort == "stall":
        from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

        sort = "latency"
        console.print(f"[yellow]{STALL_UNRECORDED_RANKING}[/yellow]")

    if mode in ("asm", "both"):
        order = {"stall": h.by_stall, "latency": h.by_latency, "exposed": h.by_exposed}[sort]
        show_exp = result.hidden is not None
        cols = [Col(c) for c in ("#", "pc", "vaddr", "hit", "latency", "stall", "idle", "stall %") + (("exposed",) if show_exp else ())]
        cols += _sample_cols(sampled)
        t = FitTable(f"Top {topk} instructions by {sort}", cols + [class_column(), isa_column(), source_column()])
        for rank, i in enumerate(order[:topk], 1):
            x = h.instructions[i]
            cls = x.class_
            if len(x.class_stall) > 1:
                cls += " (" + ", ".join(f"{k[5:] if k.startswith('wait_') else k} {v / max(x.stall, 1):.0%}" for k, v in sorted(x.class_stall.items(), key=lambda kv: -kv[1])[:3]) + ")"
            cells = [str(rank), str(x.pc), _hex(x.vaddr), _n(x.hit), _n(x.latency), _sn(x.stall, rec), _n(x.idle), _sp(x.stall_share, rec)]
            if show_exp:
                cells.append(_n(x.exposed))
            cells += _sample_cells(x.pc_samples, sampled)
            t.add_row(*cells, escape(cls), escape(x.isa), escape(_short_source(x.source)))
        console.print(t)

    if mode in ("src", "both"):
        if not q.has_source_lines:
            console.print("[yellow]No source lines in this capture: per-line ranking unavailable (built without line info).[/yellow]")
        else:
            line_order = {"stall": h.lines_by_stall, "latency": h.lines_by_latency, "exposed": h.lines_by_exposed}[sort]
            show_exp = result.hidden is not None
            nums = ("instr", "exec", "hit", "latency", "stall", "stall %") + (("exposed",) if show_exp else ())
            t = FitTable(f"Top {topk} source lines by {sort}", [Col("#"), source_column(), *map(Col, nums), *_sample_cols(sampled),
                                                                 Col("dominant class", "text", min_width=11, give_way=GIVE_WAY["class"]),
                                                                 Col("inlined from", "path", min_width=10, give_way=GIVE_WAY["inlined"])])
            for rank, i in enumerate(line_order[:topk], 1):
                ln = h.lines[i]
                chain = _short_source(ln.inline_chains[0].split(" -> ")[0]) if ln.inline_chains else ""
                cells = [str(rank), escape(_short_source(ln.source) if ln.file else ln.source), str(ln.instructions), str(ln.executed),
                         _n(ln.hit), _n(ln.latency), _sn(ln.stall, rec), _sp(ln.stall_share, rec)]
                if show_exp:
                    cells.append(_n(ln.exposed))
                cells += _sample_cells(ln.pc_samples, sampled)
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
        f"  observed    max {_n(o.observed_max_waves_per_simd_traced_cu)} waves/SIMD on the traced CU"
        + (f", max {o.observed_max_waves_per_simd_all_cus} on any CU of the traced SEs (occupancy.json)" if o.observed_max_waves_per_simd_all_cus is not None else "")
    )
    if o.workgroups is not None:
        console.print(f"  grid        {o.workgroups:,} workgroups" + (f"; {o.resident_workgroup_capacity:,} fit at once" if o.resident_workgroup_capacity else ""))
    for e in o.explanation:
        console.print(f"  [cyan]→[/cyan] {escape(e)}")
    _render_capture_facts(result, console)


def _render_capture_facts(result, console: Console) -> None:
    """The capture's metadata, after the story; then the notes, once."""
    d, q, h = result.dispatch, result.quality, result.hotspots
    f = q.facts
    arch = d.arch
    console.print("[bold]Capture[/bold]")
    ids = f"dispatch {'n/a' if f.dispatch_id is None else f.dispatch_id}, agent handle {'n/a' if f.agent_handle is None else f.agent_handle}"
    console.print(f"  capture  {escape(f.path)}  ({ids})")
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
    absent = [k for k, v in q.code_json.mismatching.items() if v is None]
    if absent:  # "unavailable" is not "equal": say which columns were compared
        held = [k for k in q.code_json.mismatching if k not in absent]
        consistent += f" on {', '.join(held)} ({', '.join(absent)} unavailable: not in code.json or not recorded)"
    console.print(f"  check    code.json sums vs wave files: {consistent}")
    if result.notes:
        console.print("[bold]Notes[/bold] (expected facts of this target and capture layout; nothing to act on)")
        for n_ in result.notes:
            console.print(f"  · {escape(n_)}")


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
        text, why = d.source_file(ln.file) if ln.line else (None, "no line number")
        if text is not None and ln.line > len(text):
            text, why = None, f"line {ln.line} is past the end of the capture's copy ({len(text):,} lines)"
        if text is None:
            # the reason (not listed, not copied, refused path, over the size cap) tells the reader what to fix
            console.print(f"   [dim](source not shown: {escape(why or 'unknown')})[/dim]")
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


# --------------------------------------------------------------------------- analyze --summary


def render_summary(sm, console) -> None:
    """``attlens analyze --summary``: an :class:`~attlens.analysis.summary.Summary`, one screen."""
    doc = sm.to_dict()
    r = sm.result
    c, t = doc["capture"], doc["totals"]
    console.print(f"[bold]attlens[/bold] — [bold cyan]{escape(c['kernel'])}[/bold cyan]  ({escape(c['path'])})")
    console.print(f"[bold]Verdict[/bold]  {escape(doc['verdict']['sentence'])}")
    for f in doc["findings"]:
        stake = f" — {f['share_of_cycles']:.1%} of cycles at stake" if f["kind"] == "performance" else ""
        pred = predicted_text(f.get("predicted"))
        stake += f"; {pred}" if pred else ""
        console.print(f"  {f['rank']:>2}. {f['severity']:<4} {escape(f['title'])} {escape('[' + f['rule'] + ']')}{escape(stake)}")
    if doc["findings_total"] > len(doc["findings"]):
        console.print(f"      … {doc['findings_total'] - len(doc['findings'])} more: attlens plan {escape(c['path'])}")
    for w in doc["warnings"]:
        console.print(f"  [yellow]![/yellow] {escape(w)}")
    hid = "" if t["hidden_share"] is None else f" · hidden by other waves {_pct(t['hidden_share'])}"
    rec = doc["stall_by_class"] is not None  # null: the records carry no stall cycles (rocprofv2)
    if rec:
        stall = f"instruction stall {_n(t['stall'])} ({_pct(t['stall_share_of_latency'])} of latency)"
    else:
        stall = "instruction stall unavailable (not recorded by this profiler)"
    console.print(f"[bold]Totals[/bold]  latency {_n(t['latency'])} · {stall} · idle {_n(t['idle'])}{hid}")
    if rec:
        console.print("  stall by class: " + " · ".join(f"{x['class']} {_pct(x['stall_share'])}" for x in doc["stall_by_class"][:6]))
    by = "stall" if rec else "latency"
    t1 = FitTable(f"Top {len(doc['instructions'])} instructions by {by}", [*pc_columns(), Col("latency"), Col("stall"), Col("share"), Col("exposed"), class_column(),
                                                                          isa_column(), source_column()])
    for x in doc["instructions"]:
        t1.add_row(str(x["pc"]), _hex(x["vaddr"]), _n(x["latency"]), _sn(x["stall"]), _sp(x["stall_share"]), _n(x["exposed"]), x["class"], escape(x["isa"]),
                   escape(x["source"] or "-"))
    console.print(t1)
    if doc["lines"] and r.quality.has_source_lines:
        t2 = FitTable(f"Top {len(doc['lines'])} source lines by {by}", [source_column(), Col("latency"), Col("stall"), Col("share"), Col("exposed"),
                                                                        class_column("dominant class")])
        for x in doc["lines"]:
            t2.add_row(escape(x["source"]), _n(x["latency"]), _sn(x["stall"]), _sp(x["stall_share"]), _n(x["exposed"]), x["dominant_class"] or "-")
        console.print(t2)
    o = doc["occupancy"]
    if o["theoretical_waves_per_simd"] is not None:
        console.print(f"[bold]Occupancy[/bold]  {o['theoretical_waves_per_simd']} waves/SIMD theoretical (limited by {', '.join(o['limiters']) or '-'}), "
                      f"{_n(o['observed_max_waves_per_simd_traced_cu'])} observed on the traced CU")
    for n_ in doc["notes"]:
        console.print(f"  [dim]· {escape(n_)}[/dim]")


# --------------------------------------------------------------------------- analyze --by


def render_hotspots(table, console, top: int = 10) -> None:
    r = table.result
    d = r.dispatch
    console.print(f"[bold]attlens analyze[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    title = f"Top {top} {table.by}s by {table.sort}" if table.by != "opcode" else f"Top {top} opcodes by {table.sort}"
    first = {"instruction": pc_columns(), "line": [source_column()], "opcode": [Col("opcode", "text", give_way=GIVE_WAY["name"])]}[table.by]
    cols = first + [*map(Col, ("hit", "latency", "stall", "idle", "exposed", "stall share")), class_column()]
    if table.by == "instruction":
        cols += [isa_column(), source_column()]
    elif table.by == "opcode":
        cols += [list_column("pcs")]
    join = getattr(r, "pc_sampling", None)
    sampled = join is not None and join.mode != "none" and table.by != "opcode"
    t = FitTable(title, cols + _sample_cols(sampled))
    if table.note:
        console.print(f"[yellow]{escape(table.note)}[/yellow]")
    for x in table.rows[:top]:
        if table.by == "instruction":
            key, cls, extra = [str(x.pc), _hex(x.vaddr)], x.class_, [escape(x.isa), escape(_short_source(x.source))]
        elif table.by == "line":
            key, cls, extra = [escape(_short_source(x.source) if x.file else x.source)], x.dominant_class, []
        else:
            more = f" +{len(x.pcs) - 6}" if len(x.pcs) > 6 else ""
            key, cls, extra = [escape(x.opcode)], x.class_, [", ".join(map(str, x.pcs[:6])) + more]
        t.add_row(*key, _n(x.hit), _n(x.latency), _sn(x.stall, _recorded(x)), _n(x.idle), _n(x.exposed), _sp(x.stall_share, _recorded(x)), cls, *extra,
                  *_sample_cells(getattr(x, "pc_samples", None), sampled))
    console.print(t)



# --------------------------------------------------------------------------- asm


def render_asm(win, console) -> None:
    r = win.result
    d = r.dispatch
    console.print(f"[bold]attlens asm[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  pc {win.pc} ({_addr(d, win.pc)}) ± {win.around} instructions  ({escape(str(d.path))})")
    join = getattr(r, "pc_sampling", None)
    sampled = join is not None and join.mode != "none"
    if join is not None:
        for line in pc_sampling_lines(join):
            console.print(f"  {line}")
    t = FitTable(None, [Col("", "text", min_width=1, give_way=GIVE_WAY["instruction"]), *pc_columns(), *map(Col, ("hit", "latency", "stall", "idle", "exposed", "share")),
                        *_sample_cols(sampled), class_column(), isa_column(), source_column(), list_column("waits on (pc: cycles)")])
    blank = [""] * len(_sample_cols(sampled))
    for a in win.rows:
        if a.label is not None:
            t.add_row("", str(a.pc), _hex(a.vaddr), "", "", "", "", "", "", *blank, "", f"[dim]{escape(a.isa)}[/dim]", "", "")
            continue
        h = a.hotspot
        mark = ">" if a.pc == win.pc else ""
        if d.stall_recorded:
            waits = ", ".join(f"{p}: {c:,}" for p, c in a.waits_on[:3]) + (f", +{len(a.waits_on) - 3}" if len(a.waits_on) > 3 else "")
        else:  # no stall cycles recorded: the producers, not their (unavailable) cycles
            waits = ", ".join(f"{p}: -" for p, _c in a.waits_on[:3]) + (f", +{len(a.waits_on) - 3}" if len(a.waits_on) > 3 else "")
        ps = _sample_cells(join.row([a.pc]), sampled) if sampled else []
        if h is None:
            t.add_row(mark, str(a.pc), _hex(a.vaddr), "0", "-", "-", "-", "-", "-", *ps, a.class_, escape(a.isa), escape(_short_source(a.source)), waits)
        else:
            t.add_row(mark, str(a.pc), _hex(a.vaddr), _n(h.hit), _n(h.latency), _sn(h.stall, _recorded(h)), _n(h.idle), _n(h.exposed), _sp(h.stall_share, _recorded(h)),
                      *ps, h.class_,
                      escape(a.isa), escape(_short_source(a.source)), waits)
    console.print(t)
    if win.sources:
        console.print("[bold]Source lines[/bold]")
        for s in win.sources:
            console.print(f"  {escape(s.source)}" + (f"\n      {escape(s.text.strip())}" if s.text else "  (no snapshot of the file in the capture)"))



# --------------------------------------------------------------------------- PC sampling


def _sample_cols(sampled: bool) -> list:
    # the reason mix is a short list: it gives way like the partner-pc lists, before class and instruction
    return [Col("samples"), Col("sampled stall reasons", "wrap", min_width=14, give_way=GIVE_WAY["list"])] if sampled else []


def _sample_cells(ps: dict | None, sampled: bool) -> list[str]:
    if not sampled:
        return []
    if ps is None:
        return ["-", ""]
    return [_n(ps["samples"]), escape(reason_mix(ps))]


def pc_sampling_lines(join) -> list[str]:
    """The PC-sampling lines of a capture header: source, join, counts, mix (report/text.py)."""
    out = []
    for i, (text, kind) in enumerate(pc_sampling_summary(join.to_dict())):
        text = escape(text)
        if kind == "warn":
            text = text.replace("not joined", "[yellow]not joined[/yellow]", 1)
        elif kind == "note":
            text = f"[dim]{text}[/dim]"
        out.append(("samples  " if i == 0 else "         ") + text)
    return out


def render_pc_sampling_view(view, console, top: int = 20, mode: str = "both") -> None:
    """``attlens pcsampling PATH`` and ``attlens analyze`` on a PC-sampling-only directory."""
    from attlens.analysis.pcsampling_view import NO_CYCLES

    src = view.source
    t = view.totals
    console.print(f"[bold]attlens pc sampling[/bold] — [bold cyan]{escape(view.kernel or '(every kernel)')}[/bold cyan]")
    console.print(f"  source   {escape(src['path'])} ({src['format']}, {', '.join(src['methods'])}; by {view.grouping})")
    console.print(f"  samples  {t['samples']:,}" + (f" of {t['in_file']:,} in the file" if t["in_file"] != t["samples"] else "")
                  + (f"; {t['issued']:,} issued, {t['stalled']:,} stalled" if t["stalled"] is not None else "; no issue bit (host-trap)"))
    if t["stalled"]:
        console.print("  why      " + " · ".join(f"{k} {v:.0%}" for k, v in t["reason_shares"].items()))
    console.print(f"  cycles   [yellow]unavailable[/yellow] — {NO_CYCLES}")
    if mode in ("asm", "both"):
        first = {"listing": "pc", "code-object-offset": "offset", "instruction-text": "#"}[view.grouping]
        tb = FitTable(f"Top {top} instructions by samples", [Col(first), Col("samples"), Col("share"), Col("issued"), Col("stalled"),
                                                              list_column("sampled stall reasons", min_width=14), isa_column(), source_column()])
        for i, r in enumerate(view.rows[:top], 1):
            key = {"pc": r["pc"], "offset": None if r["offset"] is None else hex(r["offset"]), "#": i}[first]
            ps = r["pc_samples"]
            tb.add_row(str(key), _n(ps["samples"]), _pct(ps["share"]), _n(ps["issued"]), _n(ps["stalled"]), escape(reason_mix(ps)),
                       escape(r["isa"] or "?"), escape(_short_source(r["source"])))
        console.print(tb)
    if mode in ("src", "both"):
        tb = FitTable(f"Top {top} source lines by samples", [source_column(), Col("instr"), Col("samples"), Col("share"),
                                                              Col("stalled"), list_column("sampled stall reasons", min_width=14)])
        for ln in view.lines[:top]:
            ps = ln["pc_samples"]
            tb.add_row(escape(_short_source(ln["source"]) if ln["file"] else ln["source"]), str(ln["instructions"]), _n(ps["samples"]),
                       _pct(ps["share"]), _n(ps["stalled"]), escape(reason_mix(ps)))
        console.print(tb)
    for w in view.warnings:
        console.print(f"  [yellow]![/yellow] {escape(w)}")
    for n in view.notes:
        console.print(f"  [dim]{escape(n)}[/dim]")


# --------------------------------------------------------------------------- waits


def render_waits(ws, console, top: int = 10) -> None:
    d = ws.result.dispatch
    rec = d.stall_recorded  # False (rocprofv2): every wait figure is the records' stall, unavailable ("-"), never 0
    scope = "steady-state loop iterations (after the first)" if ws.steady else "every execution"
    console.print(f"[bold]attlens waits[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    share = ws.total_wait / ws.kernel_stall if rec and ws.kernel_stall else None
    console.print(f"  {len(ws.sites)} wait sites, {_n(ws.executions)} executions ({scope}), {_sn(ws.total_wait, rec)} wait cycles"
                  f" = {_sp(share, rec) if rec else '-'} of all stall")
    t = FitTable(f"Wait per execution, top {top} sites by total wait" if rec else f"Wait per execution, first {top} sites in pc order",
                 [*pc_columns(), *map(Col, ("total", "share", "execs", "no wait", "mean", "stddev", "p50", "p90", "p95", "max")), class_column(),
                  isa_column(), source_column(), list_column("waits on")])
    for s in ws.sites[:top]:
        prods = ", ".join(str(p) for p, _ in s.producers[:3]) + (f" +{len(s.producers) - 3}" if len(s.producers) > 3 else "")
        t.add_row(*pc_cells(d, s.pc), _sn(s.total, rec), _sp(s.share_of_stall, rec), _n(s.executions), _sn(s.zero_wait_executions, rec),
                  *(_sf(v, rec) for v in (s.mean, s.stddev, s.p50, s.p90, s.p95)), _sn(s.max, rec),
                  s.wait_class, escape(s.isa), escape(_short_source(s.source)), prods)
    console.print(t)
    for n in ws.notes:
        console.print(f"  [yellow]![/yellow] {escape(n)}")


def _sf(v, recorded: bool = True) -> str:
    """A stall figure with decimals, shown whole: "-" when unavailable."""
    return "-" if v is None or not recorded else f"{v:,.0f}"



# --------------------------------------------------------------------------- captures


def _under(path, root) -> str:
    """``path`` relative to the folder searched (``big/ui_output_…``), so
    captures that differ only near the end stay apart; whole when outside it."""
    rel = os.path.relpath(str(path), str(root))
    return str(path) if rel.startswith("..") else ("." if rel == "." else rel)


def render_captures(cl, console) -> None:
    t = FitTable(f"Captures under {escape(str(cl.path))}", [Col("status", "wrap", give_way=GIVE_WAY["status"]), Col("layout", "text", give_way=GIVE_WAY["class"]),
                                                              Col("kernel", "text", give_way=GIVE_WAY["name"]), Col("target", "text", give_way=GIVE_WAY["class"]),
                                                              Col("waves"), Col("instructions"), Col("dispatch"), Col("path", "isa", give_way=GIVE_WAY["instruction"])])
    for c in cl.captures:
        status = c.status if c.error is None else f"{c.status}: {c.error}"
        t.add_row(escape(status), c.layout or "-", escape(c.kernel or "-"), c.target or "-", _n(c.waves), _n(c.instructions),
                  str(c.dispatch_id) if c.dispatch_id is not None else "-", escape(_under(c.path, cl.path)))
    console.print(t)
    if not cl.captures:
        console.print("  no capture (no filenames.json) at or below this folder")
    if cl.others:
        o = FitTable("Other profiler outputs", [Col("layout", "text"), Col("status", "wrap"), Col("target", "text"), Col("files", "wrap"),
                                                 Col("path", "path")])
        for x in cl.others:
            status = x.status if x.error is None else f"{x.status}: {x.error}"
            o.add_row(x.layout, escape(status), x.target or "-", escape(", ".join(x.files)), escape(str(x.path)))
        console.print(o)
    if cl.stopped:
        console.print(f"  [yellow]![/yellow] {escape(cl.stopped)}")



# --------------------------------------------------------------------------- occupancy


def render_occupancy(o, console) -> None:
    """``attlens occupancy``: an :class:`~attlens.analysis.occupancy.OccupancyResult`."""
    cap = o.capture
    console.print(f"[bold]attlens occupancy[/bold] — [bold cyan]{escape(cap['kernel'])}[/bold cyan]  ({escape(cap['path'])})")
    if not o.available:
        console.print(f"  theoretical occupancy unavailable: {escape(o.reason or '')}")
    else:
        console.print(f"  theoretical {o.theoretical_waves_per_simd} waves/SIMD, limited by {', '.join(o.limiters)}")
        t = FitTable(None, [Col("limit", "text"), Col("waves/SIMD"), Col("detail", "wrap")])
        for lim in o.limits:
            t.add_row(lim.name, _n(lim.waves_per_simd), escape(lim.detail))
        console.print(t)
    console.print(f"  observed: max {_n(o.observed_max_waves_per_simd_traced_cu)} waves/SIMD on the traced CU, "
                  f"max {_n(o.observed_max_waves_per_simd_all_cus)} over all CUs (occupancy.json)")
    if o.grid_limited:
        console.print(f"  [yellow]![/yellow] grid-limited: {_n(o.workgroups)} workgroups for a resident capacity of {_n(o.resident_workgroup_capacity)}")
    for line in o.explanation:
        console.print(f"  {escape(line)}")


# --------------------------------------------------------------------------- waves


def render_waves(wa, console, top: int = 10) -> None:
    """``attlens waves``: a :class:`~attlens.analysis.waves.WaveAnalysis`."""
    from attlens.analysis.phases import PHASES
    from attlens.analysis.pipes import PIPES

    d = wa.result.dispatch
    st, clk = wa.states, wa.clock
    console.print(f"[bold]attlens waves[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({d.waves.count:,} waves, {escape(str(d.path))})")
    if clk.frequency_hz:
        offs = ", ".join(f"SE{k}+{v}" for k, v in sorted((clk.se_offsets_cycles or {}).items()))
        console.print(f"  clock    {clk.frequency_hz / 1e6:,.0f} MHz; {escape(clk.note)}" + (f" ({offs})" if offs else ""))
    else:
        console.print(f"  clock    {escape(clk.note)}")
    t = FitTable("Wave states (all traced waves, weighted by lifetime)", [Col("state", "text"), Col("cycles"), Col("share"), Col("time")])
    for name, cyc in st.cycles.items():
        us = clk.cycles_to_us(cyc)
        t.add_row(name, _n(cyc), _pct(st.share[name]), "-" if us is None else f"{us:,.1f} µs·wave")
    console.print(t)
    console.print("  [dim]the decoder's wave states, shares of wave lifetime; STALL here is not the instruction stall of "
                  "analyze and plan (cycles instructions waited to issue, a share of latency): docs/analysis.md, Two kinds of stall[/dim]")
    t = FitTable("Per SIMD", [Col(c) for c in ("SE", "CU", "SIMD", "waves", "IDLE", "EXEC", "WAIT", "STALL")])
    for r in st.per_simd:
        tot = max(sum(r[s] for s in ("IDLE", "EXEC", "WAIT", "STALL")), 1)
        t.add_row(str(r["se"]), str(r["cu"]), str(r["simd"]), str(r["waves"]), *(_pct(r[s] / tot) for s in ("IDLE", "EXEC", "WAIT", "STALL")))
    console.print(t)
    t = FitTable("Pipe utilization (share of the traced window each pipe was busy, over all SIMDs)",
                 [Col("pipe", "text"), Col("issue cycles"), Col("busy cycles"), Col("busy share")])
    for p in PIPES:
        v = wa.pipes.kernel[p]
        t.add_row(p, _n(v["issue_cycles"]), _n(v["busy_cycles"]), _pct(v["busy_share"]))
    console.print(t)
    rec = wa.stall_recorded  # False (rocprofv2): the records' stall figures are "-", never 0 (the wave states above are measured)
    t = FitTable("Phases", [Col("phase", "text"), Col("records"), Col("stall"), Col("latency")])
    for p in PHASES:
        v = wa.phases.kernel[p]
        if v["records"]:
            t.add_row(p, _n(v["records"]), _sn(v["stall"], rec), _n(v["latency"]))
    console.print(t)
    t = FitTable(f"Stall per execution of the top {top} instructions" + ("" if rec else " by latency"),
                 [*pc_columns(), *map(Col, ("executions", "p50", "p90", "max", "first exec mean", "later mean")), isa_column()])
    for x in wa.phases.instructions[:top]:
        t.add_row(*pc_cells(d, x.pc), _n(x.executions), _sf(x.stall_p50, rec), _sf(x.stall_p90, rec), _sn(x.stall_max, rec),
                  _sf(x.first_execution_stall_mean, rec), _sf(x.later_execution_stall_mean, rec), escape(d.code.isa[x.pc]))
    console.print(t)
    if not rec:
        from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

        console.print(f"  [yellow]![/yellow] {escape(STALL_UNRECORDED_RANKING)}")
    for f in wa.phases.flags:
        console.print(f"  [yellow]![/yellow] {escape(f)}")



# --------------------------------------------------------------------------- deps


def render_deps(deps, console, top: int = 10) -> None:
    """``attlens deps``: a :class:`~attlens.analysis.deps.DepsResult`."""
    from attlens.analysis.waitstats import WAIT_UNRECORDED

    result, att, producers = deps.result, deps.attribution, deps.producers
    d = result.dispatch
    rec = deps.stall_recorded  # False (rocprofv2): no wait cycle can be charged: "-", never 0
    title = f" (pc {deps.pc})" if deps.pc is not None else (f" (line {deps.line})" if deps.line else "")
    console.print(f"[bold]attlens deps[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]{escape(title)}")
    console.print(f"  {_sn(att.total_charged, rec)} wait cycles charged to producers over {len(att.pairs.first_of_wait):,} resolved wait executions ({result.deps.model} counter rules)")
    if not rec:
        console.print(f"  [yellow]![/yellow] {escape(WAIT_UNRECORDED)}; rows in pc order")
    t = FitTable(f"Top {top} producers by wait cycles caused" if rec else f"First {top} producers waited on, in pc order",
                 [*pc_columns(), *map(Col, ("waited on", "share", "pairs", "dist instr (med/min)", "dist cycles (med)", "outstanding")),
                  class_column(), isa_column(), source_column()])
    for p in producers[:top]:
        t.add_row(*pc_cells(d, p.pc), _sn(p.waited_cycles, rec), _sp(p.share_of_wait, rec), _n(p.pairs), f"{p.distance_instructions_median:,.0f}/{p.distance_instructions_min}",
                  f"{p.distance_cycles_median:,.0f}", f"{p.outstanding_mean:.1f}", p.wait_class, escape(p.isa), escape(_short_source(p.source)))
    console.print(t)
    t = FitTable(f"Source lines whose memory ops were waited on (top {top})", [source_column(), Col("waited on"), Col("share"), Col("producers")])
    for src, cyc, n in att.by_producer_line()[:top]:
        t.add_row(escape(_short_source(src) if src != "(no source)" else src), _sn(cyc, rec), _sp(cyc / att.total_charged if att.total_charged else None, rec), str(n))
    console.print(t)
    # the producer list is numbers: it wraps between entries, never cut
    t = FitTable(f"Top {top} waits and whom they waited on",
                 [*pc_columns("wait pc"), Col("stall"), Col("charged"), isa_column(), list_column("producers (pc: cycles)", min_width=14)])
    for wpc, prods in deps.wait_rows()[:top]:
        who = ", ".join(f"{p}: {c:,}" if rec else str(p) for p, c in sorted(prods.items(), key=lambda kv: -kv[1])[:4])
        if len(prods) > 4:
            who += f", +{len(prods) - 4} more"
        t.add_row(*pc_cells(d, wpc), _sn(int(result.sums.stall[wpc]), rec), _sn(int(sum(prods.values())), rec), escape(d.code.isa[wpc]), who)
    console.print(t)


# --------------------------------------------------------------------------- plan and rules


def render_plan(plan, console, max_findings: int | None = None) -> None:
    """``attlens plan``: a :class:`~attlens.analysis.plan.Plan` (with the analysis it was made from).
    The story first — the verdict and the priority list, one line per finding —
    then the dispatch facts every finding stands on, then each finding's
    evidence, change and falsifier, then the ledger and the silenced rules."""
    from attlens.analysis.plan import stall_summary
    from attlens.report.text import verdict_sentence

    result = plan.result
    d = result.dispatch
    console.print(f"[bold]attlens plan[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({escape(str(d.path))})")
    console.print(f"[bold]Verdict[/bold]  {escape(verdict_sentence(plan))}")
    fs = plan.findings if max_findings is None else plan.findings[:max_findings]
    if fs:
        console.print("[bold]Priorities[/bold]")
        for i, f in enumerate(fs, 1):
            console.print(f"  {i:>2}. {f.severity:<4} {escape(f.title)}  {escape('[' + f.rule + ']')} · {escape(stake_and_prediction(f))}")
    else:
        console.print("No rule fired: no pattern above its threshold (see `attlens rules`).")
    console.print("")
    for line in header_lines(plan):
        console.print(escape(line))
    if d.stall_recorded:
        console.print("[bold]Instruction stall by class[/bold]")
        for c, s_, sh in stall_summary(result)[:6]:
            console.print(f"  {c:<16} {s_:>14,} cycles  {sh:6.1%}")
    else:
        console.print("[bold]Instruction stall by class[/bold]  unavailable: the records carry no stall cycles (rocprofv2); latency and idle are measured")
    for i, f in enumerate(fs, 1):
        color = {"HIGH": "red", "MED": "yellow", "LOW": "green", "INFO": "blue"}[f.severity]
        tag = escape("[" + f.rule + "]")
        console.print(f"\n[bold]{i}. [{color}]{f.severity}[/{color}] {escape(f.title)}[/bold]  {tag} · {escape(stake_and_prediction(f))} · confidence {f.confidence:.2f}")
        console.print(f"   [bold]why:[/bold] {escape(f.rationale)}")
        for line in finding_detail(f):
            console.print(f"     {escape(line)}")
        console.print(f"   [bold]change:[/bold] {escape(f.change)}")
        console.print(f"   [bold]would prove it wrong:[/bold] {escape(f.falsify)}")
    if fs:
        console.print(f"\nCycle ledger: {plan.cycles_at_stake:,} of {plan.total_cycles:,} traced wave-cycles at stake ({plan.cycles_at_stake / max(plan.total_cycles, 1):.1%}; "
                      "every traced wave's idle + latency, not the dispatch's time); no pc claimed twice.")
    for y in plan.yielded:
        console.print(f"  {escape(y['rule'])} yielded all its cycles to {escape(', '.join(y['held_by']))}")
    for rid, fails in plan.rules_silenced.items():
        c = fails[0]
        console.print(f"[dim]  silenced {escape(rid)}: {escape(c['text'])} — {escape(str(c['detail']))}[/dim]")
    for rid, err in plan.rule_errors.items():
        console.print(f"[yellow]! rule {rid} failed: {escape(err)}[/yellow]")



# --------------------------------------------------------------------------- what-if


def render_whatif(doc: dict, console, dispatch=None, top: int = 20) -> None:
    """``attlens whatif``: the ``attlens.whatif`` object (``to_dict()``), the
    story first — the dispatch time before → after, the gain with its
    interval, the bound when it holds the gain, the calibration residual —
    then the edits, the findings the replay cannot express, and the pcs whose
    stall changed (``top`` of them; 0 = all). ``dispatch``: the capture, for
    the pcs' addresses."""
    from attlens.report.text import whatif_lines

    console.print(f"[bold]attlens whatif[/bold] — [bold cyan]{escape(doc.get('kernel') or '(unnamed kernel)')}[/bold cyan]  ({escape(doc['capture'])})")
    from rich.table import Table

    story = Table.grid(padding=(0, 1))  # the label column stays, the text wraps beside it
    story.add_column(style="bold", no_wrap=True)
    story.add_column()
    for label, text in whatif_lines(doc):
        story.add_row(label, escape(text))
    console.print(story)
    pcs = sorted(doc["changed"]["pcs"], key=lambda x: -abs(x["stall_after"] - x["stall_before"]))
    if not pcs:
        return
    shown = pcs if top == 0 else pcs[:top]
    t = FitTable(None, [*pc_columns(), Col("stall before"), Col("stall after"), Col("change"), isa_column()])
    for x in shown:
        pc = x["pc"]
        cells = pc_cells(dispatch, pc) if dispatch is not None and 0 <= pc < dispatch.code.size else [str(pc), "-"]
        delta = x["stall_after"] - x["stall_before"]
        t.add_row(*cells, _n(x["stall_before"]), _n(x["stall_after"]), f"{delta:+,}", escape(x["instruction"]))
    console.print(t)
    if len(shown) < len(pcs):
        console.print(f"[dim]… {len(pcs) - len(shown)} more changed pcs (--top 0 for all; --json has every one)[/dim]")


def rules_text(rules) -> str:
    """``attlens rules``: every rule with its trigger, preconditions, evidence and limits, as plain text."""
    out = []
    for r in rules.values():
        out.append(f"{r.id}  ({r.kind}) — {r.title}")
        out.append(f"    trigger:   {r.trigger}")
        if r.semantics:
            out.append(f"    semantics: {r.semantics}")
        for pid, text in r.preconditions:
            out.append(f"    requires:  [{pid}] {text}")
        out.append(f"    evidence:  {r.evidence}")
        out.append(f"    limits:    {r.limits}")
        if r.directions:
            out.append(f"    assumes:   {', '.join(r.directions)}")
    return "\n".join(out) + "\n"



# --------------------------------------------------------------------------- diff


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
    if res.stall_compared:
        t = FitTable("Per class (stall cycles per wave)", [Col("class", "text", min_width=11), *map(Col, ("before", "after", "delta", "relative"))])
        for c in res.classes[:top]:
            rel = "-" if c["stall_relative"] is None else f"{c['stall_relative']:+.1%}"
            t.add_row(c["class"], f"{c['stall_before']:,.0f}", f"{c['stall_after']:,.0f}", f"{c['stall_delta']:+,.0f}", rel)
    else:  # a side records no stall (rocprofv2): no stall delta; the classes' latency is compared, said in one line
        from attlens.analysis.diff import stall_unrecorded_note

        console.print(f"  [yellow]![/yellow] {escape(stall_unrecorded_note(res.before, res.after))}")
        t = FitTable("Per class (latency cycles per wave)", [Col("class", "text", min_width=11), *map(Col, ("before", "after", "delta", "relative"))])
        for c in res.classes[:top]:
            x, y = c["latency_before"], c["latency_after"]
            t.add_row(c["class"], f"{x:,.0f}", f"{y:,.0f}", f"{y - x:+,.0f}", "-" if not x else f"{(y - x) / x:+.1%}")
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
    for m in res.moved_lines()[:5]:
        console.print(f"  moved    {m['sites']:>5} sites {escape(os.path.basename(m['from']))} → {escape(os.path.basename(m['to']))}")
    for s in res.changed_sites()[:top]:
        site = s.after or s.before
        console.print(f"  {s.kind:<8} {escape(os.path.basename(s.line))}  {escape(site.isa[:60])}  latency {site.latency:,}")
    pl = getattr(res, "plans", None)
    if pl:
        console.print(f"[bold]Plans[/bold]: before — {escape(pl['before']['verdict'] or 'no verdict')}")
        console.print(f"       after — {escape(pl['after']['verdict'] or 'no verdict')}")
        for f in pl["resolved"]:
            pred = f" — before: {f['predicted_before']}" if f.get("predicted_before") else ""
            console.print(f"  resolved   {f['severity']:<4} {escape(f['title'])} {escape('[' + f['rule'] + ']')}{escape(pred)}")
        for f in pl["new"]:
            console.print(f"  new        {f['severity']:<4} {escape(f['title'])} {escape('[' + f['rule'] + ']')}")
        for f in pl["persisting"]:
            if f["share_before"] or f["share_after"]:
                pred = f"; before: {f['predicted_before']}" if f.get("predicted_before") else ""
                console.print(f"  persisting {escape(f['rule'])}: {f['share_before']:.1%} → {f['share_after']:.1%} of traced wave-cycles at stake"
                              + escape(pred))



# --------------------------------------------------------------------------- kernels


def _opt(x, fmt="{:,}") -> str:
    return "-" if x is None else fmt.format(x)


def _dims(t) -> str:
    if t is None:
        return "-"
    t = list(t)
    while len(t) > 1 and t[-1] == 1:
        t.pop()
    return "×".join(f"{v:,}" for v in t)


def render_kernels(table, console: Console, top: int = 20) -> None:
    """``attlens kernels``: a :class:`~attlens.capture.kernels.KernelTable`."""
    rows, files, source, total = table.rows, table.files, table.source, table.total_kernel_time_us
    where = ", ".join(str(f) for f in files[:3]) + (f" (+{len(files) - 3})" if len(files) > 3 else "")
    excluded = sum(1 for r in rows if r.excluded)
    console.print(f"[bold]attlens kernels[/bold] — {len(rows)} kernel(s) from {escape(source or '?')}: {escape(where)}")
    from attlens.capture.kernels import DEFAULT_EXCLUDE

    pattern = table.exclude
    if not pattern:
        how = " (no exclude pattern)"
    elif pattern == DEFAULT_EXCLUDE:
        how = " (default pattern: HIP runtime blits, PyTorch elementwise/copy/fill/random/reduce)"
    else:
        how = f" (exclude /{escape(pattern[:60])}{'…' if len(pattern) > 60 else ''}/)"
    console.print(f"  total kernel time {_opt(total, '{:,.1f}')} µs; {excluded} runtime helper kernel(s) marked [dim]helper[/dim]{how}")
    has_res = any(r.dispatch_count for r in rows)
    cols = [Col("#"), Col("total µs"), Col("%"), Col("calls"), Col("avg µs")]
    if has_res:
        # ids are numbers: they wrap between ids, never cut
        cols += [Col("kernel ids", "wrap", min_width=6), *map(Col, ("VGPR", "AGPR", "SGPR", "LDS B", "workgroup", "grid"))]
    t = FitTable(f"Top {min(top, len(rows))} kernels by total GPU time", cols + [Col("kernel", "text", min_width=24)])
    for r in rows[:top]:
        cells = [str(r.rank), _opt(r.total_us, "{:,.1f}"), _opt(r.percent, "{:.1f}"), _opt(r.calls), _opt(r.average_us, "{:,.2f}")]
        if has_res:
            several = len(r.shapes) > 1
            cells += [
                ", ".join(map(str, r.kernel_ids)) or "-",
                _opt(r.vgpr) if "vgpr" not in r.varying else "var",
                _opt(r.agpr) if "agpr" not in r.varying else "var",
                _opt(r.sgpr) if "sgpr" not in r.varying else "var",
                _opt(r.lds_bytes) if "lds_bytes" not in r.varying else "var",
                _dims(r.workgroup) if r.workgroup is not None or not several else f"{len(r.shapes)} shapes",
                _dims(r.grid) if r.grid is not None or not several else f"{len(r.shapes)} shapes",
            ]
        label = escape(r.name)
        cells.append(f"[dim](helper) {label}[/dim]" if r.excluded else label)
        t.add_row(*cells)
    console.print(t)
    if len(rows) > top:
        console.print(f"  … {len(rows) - top} more kernel(s) not shown")
    for note in table.notes:
        console.print(f"  [yellow]note[/yellow] {escape(note)}")


# --------------------------------------------------------------------------- pmc


def _mib(x) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.2f} MiB"


def _span(t, fmt) -> str:
    if t is None:
        return "n/a"
    return fmt(t[0]) if t[0] == t[1] else f"{fmt(t[0])}–{fmt(t[1])}"


def _mark(v: bool | None) -> str:
    return {True: "[bold red]YES[/bold red]", False: "[green]no[/green]", None: "[dim]?[/dim]"}[v]


def _pmc_summary(results, console: Console) -> None:
    t = FitTable("PMC — L2 / memory per dispatch", [Col("dispatch"), Col("kernel", "text", min_width=16), Col("L2 hit"), Col("read"), Col("written"),
                                                    Col("over-fetch"), Col("GB/s"), Col("of peak"), Col("findings", "wrap")])
    for r in results:
        name = r.kernel or "-"
        fired = ", ".join(d.title for d in r.fired) or "-"
        t.add_row("-" if r.dispatch_id is None else str(r.dispatch_id), escape(name), _pct(r.l2_hit_rate),
                  _span(r.read_bytes_range, _mib), _mib(r.write_bytes), _span(r.over_fetch_range, lambda x: f"{x:.2f}x"),
                  _span(r.achieved_gbps_range, lambda x: f"{x:,.0f}"), _span(r.fraction_of_peak_range, _pct), escape(fired))
    console.print(t)


def _pmc_detail(r, console: Console) -> None:
    head = f"dispatch {r.dispatch_id}" if r.dispatch_id is not None else "dispatch"
    console.print(f"\n[bold]{escape(head)}[/bold] — [bold cyan]{escape(r.kernel or '(unnamed kernel)')}[/bold cyan]")
    console.print(f"  target   {r.target} ({r.product}, {r.xcc} XCC, peak {r.peak_hbm_gbps:,.0f} GB/s — {escape(r.peak_source)})")
    t = FitTable(None, [Col("metric", "text", min_width=18), Col("value"), Col("from", "wrap", min_width=20)])
    hits = "n/a" if r.l2_hits is None or r.l2_misses is None else f"{r.l2_hits:,.0f} hit / {r.l2_misses:,.0f} miss"
    t.add_row("L2 hit rate", _pct(r.l2_hit_rate), f"TCC_HIT / (TCC_HIT + TCC_MISS): {hits}")
    if r.read_mix:
        mix = " · ".join(f"{k} {_pct(v)}" for k, v in r.read_mix.items())
        t.add_row("read request mix", mix, f"{r.l2_line_bytes}-B L2 line")
    if r.write_mix:
        t.add_row("write request mix", " · ".join(f"{k} {_pct(v)}" for k, v in r.write_mix.items()), "")
    t.add_row("read from memory", _span(r.read_bytes_range, _mib), escape(r.read_bytes_method or "-"))
    if r.fetch_size_formula_bytes is not None and r.read_bytes_range and r.fetch_size_formula_bytes != r.read_bytes_range[1]:
        t.add_row("  FETCH_SIZE formula", _mib(r.fetch_size_formula_bytes), "BUBBLE formula (rocprofv3 FETCH_SIZE x 1024)")
    t.add_row("written to memory", _mib(r.write_bytes), escape(r.write_bytes_method or "-"))
    if r.hbm_read_bytes is not None or r.hbm_write_bytes is not None:
        t.add_row("HBM only (read / write)", f"{_mib(r.hbm_read_bytes)} / {_mib(r.hbm_write_bytes)}", escape(r.hbm_method or "-"))
    if r.ideal_bytes is not None:
        t.add_row("over-fetch", _span(r.over_fetch_range, lambda x: f"{x:.3f}x"), f"read / ideal {_mib(r.ideal_bytes)}")
    dur = "n/a" if r.duration_ns is None else f"{r.duration_ns / 1000:,.2f} µs"
    t.add_row("duration", dur, escape(r.duration_source or "-"))
    t.add_row("achieved bandwidth", _span(r.achieved_gbps_range, lambda x: f"{x:,.0f} GB/s"),
              f"(read + written) / duration; {_span(r.fraction_of_peak_range, _pct)} of peak")
    if r.gpu_busy_cycles_per_xcc is not None:
        t.add_row("GPU busy cycles per XCC", f"{r.gpu_busy_cycles_per_xcc:,.0f}", f"GRBM_GUI_ACTIVE / {r.xcc} (CSV sums XCCs)")
    console.print(t)
    for d in r.decisions:
        console.print(f"  {_mark(d.verdict)}  [bold]{escape(d.title)}[/bold] — {escape(d.text)}")
        console.print(f"       [dim]rule: {escape(d.threshold)}[/dim]")
    for note in r.notes:
        console.print(f"  [yellow]note[/yellow] {escape(note)}")


def render_pmc(counters, console: Console, *, detail: bool | None = None) -> None:
    """``attlens pmc``: a :class:`~attlens.analysis.pmc.PmcCounters` (or its
    PmcResults). Summary table of all dispatches, then per-dispatch details
    (metrics, decisions with their numbers, notes). ``detail=None``: details
    when there are at most 4 dispatches."""
    from attlens.analysis.pmc import PmcCounters, PmcResult

    if isinstance(counters, PmcCounters):
        items = list(counters.results)
    else:
        items = [counters] if isinstance(counters, PmcResult) else list(counters)
    if not items:
        console.print("[yellow]no dispatch with PMC counters[/yellow]")
        return
    _pmc_summary(items, console)
    if detail or (detail is None and len(items) <= 4):
        for r in items:
            _pmc_detail(r, console)


# --------------------------------------------------------------------------- profile


def render_profile(res, console) -> None:
    """``attlens profile`` / ``attlens capture``: a :class:`~attlens.capture.profile.ProfileResult`."""
    for s in res.steps:
        mark = {"ok": "[green]✓[/green]", "skipped": "[yellow]–[/yellow]"}.get(s["status"], "•")
        console.print(f"{mark} [bold]{s['step']}[/bold]: {escape(s['detail'])}")
    if res.kernels is not None and (not res.att_available or res.kernel is None):
        render_kernels(res.kernels, console)
    if res.noise:
        console.print(f"  noise floor: class shares of the two dispatches differ by ≤ {res.noise['max_class_share_difference']:.1%}; "
                      "changes smaller than this between builds are not significant")
    if res.analysis is not None:
        console.rule("analysis of the best capture")
        render_analysis(res.analysis, console, topk=8)
    for c in res.next_commands:
        console.print(f"next: {escape(c)}")
