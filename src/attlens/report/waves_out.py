"""JSON and terminal renderers of the ``waves`` and ``deps`` commands."""

from __future__ import annotations

from rich.markup import escape

from attlens import __version__
from attlens.analysis.phases import PHASES
from attlens.analysis.pipes import PIPES
from attlens.model.dispatch import STATE_NAMES
from attlens.report.console import Col, FitTable
from attlens.report.terminal import _n, _pct, _short_source

WAVES_SCHEMA = "attlens.waves"
DEPS_SCHEMA = "attlens.deps"


def _capture(result) -> dict:
    d = result.dispatch
    return {"path": str(d.path), "kernel": d.kernel_name, "dispatch_id": d.resources.dispatch_id, "target": d.arch.target}


def waves_to_dict(result, wa, per_wave: bool = True) -> dict:
    d = result.dispatch
    w = d.waves
    st = wa.states
    clk = wa.clock
    out = {
        "schema": WAVES_SCHEMA,
        "schema_version": 1,
        "attlens_version": __version__,
        "capture": _capture(result),
        "clock": {
            "shader_clock_mhz": None if clk.frequency_hz is None else round(clk.frequency_hz / 1e6, 3),
            "aligned": clk.aligned,
            "se_offsets_cycles": None if clk.offsets is None else {str(k): v for k, v in clk.offsets.items()},
            "note": clk.note,
        },
        "states": {
            "cycles": st.kernel,
            "share": {k: round(v, 6) for k, v in st.kernel_share.items()},
            "total_lifetime": int(st.lifetime.sum()),
            "per_simd": st.per_simd,
            "overhang_cycles_max": int(st.overhang.max()) if len(st.overhang) else 0,
        },
        "pipes": {
            "total_window_cycles": wa.pipes.total_window,
            "kernel": {p: {**v, "busy_share": None if v["busy_share"] is None else round(v["busy_share"], 6)} for p, v in wa.pipes.kernel.items()},
            "per_simd": wa.pipes.per_simd,
        },
        "phases": {
            "kernel": wa.phases.kernel,
            "instructions": [
                {
                    "pc": x.pc,
                    "isa": d.code.isa[x.pc],
                    "executions": x.executions,
                    "stall_p50": x.stall_p50,
                    "stall_p90": x.stall_p90,
                    "stall_max": x.stall_max,
                    "first_execution_stall_mean": round(x.first_execution_stall_mean, 3),
                    "later_execution_stall_mean": None if x.later_execution_stall_mean is None else round(x.later_execution_stall_mean, 3),
                    "stall_by_phase": x.stall_by_phase,
                }
                for x in wa.phases.distributions
            ],
            "static_loops": [{"branch_pc": lp.branch_pc, "first_pc": lp.first_pc, "last_pc": lp.last_pc, "executed": lp.executed} for lp in wa.phases.static_loops],
            "short_waves": wa.phases.waves_short,
            "short_wave_threshold": wa.phases.short_threshold,
            "traced_cu_share_of_median": {str(k): v for k, v in wa.phases.traced_cu_share.items()},
        },
        "flags": wa.phases.flags,
        "warnings": result.warnings,
    }
    if per_wave:
        out["waves"] = [
            {
                "file": w.filenames[i],
                "se": int(w.se[i]),
                "cu": int(w.cu[i]),
                "simd": int(w.simd[i]),
                "slot": int(w.slot[i]),
                "instance": int(w.instance[i]),
                "begin": int(w.begin[i]),
                "end": int(w.end[i]),
                "records": int(w.n_records[i]),
                "states": {STATE_NAMES[s]: int(st.per_wave[i, s]) for s in (1, 2, 3, 4)},
            }
            for i in range(w.count)
        ]
    return out


def render_waves(result, wa, console, topk: int = 10) -> None:
    d = result.dispatch
    st, clk = wa.states, wa.clock
    console.print(f"[bold]attlens waves[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]  ({d.waves.count:,} waves, {escape(str(d.path))})")
    if clk.frequency_hz:
        offs = ", ".join(f"SE{k}+{v}" for k, v in sorted((clk.offsets or {}).items()))
        console.print(f"  clock    {clk.frequency_hz / 1e6:,.0f} MHz; {escape(clk.note)}" + (f" ({offs})" if offs else ""))
    else:
        console.print(f"  clock    {escape(clk.note)}")
    t = FitTable("Wave states (all traced waves, weighted by lifetime)", [Col("state", "text"), Col("cycles"), Col("share"), Col("time")])
    for name, cyc in st.kernel.items():
        us = clk.cycles_to_us(cyc)
        t.add_row(name, _n(cyc), _pct(st.kernel_share[name]), "-" if us is None else f"{us:,.1f} µs·wave")
    console.print(t)
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
    t = FitTable("Phases", [Col("phase", "text"), Col("records"), Col("stall"), Col("latency")])
    for p in PHASES:
        v = wa.phases.kernel[p]
        if v["records"]:
            t.add_row(p, _n(v["records"]), _n(v["stall"]), _n(v["latency"]))
    console.print(t)
    t = FitTable(f"Stall per execution of the top {topk} instructions",
                 [*map(Col, ("pc", "executions", "p50", "p90", "max", "first exec mean", "later mean")), Col("instruction", "wrap", min_width=16)])
    for x in wa.phases.distributions[:topk]:
        later = "-" if x.later_execution_stall_mean is None else f"{x.later_execution_stall_mean:,.0f}"
        t.add_row(str(x.pc), _n(x.executions), f"{x.stall_p50:,.0f}", f"{x.stall_p90:,.0f}", _n(x.stall_max), f"{x.first_execution_stall_mean:,.0f}", later, escape(d.code.isa[x.pc]))
    console.print(t)
    for f in wa.phases.flags:
        console.print(f"  [yellow]![/yellow] {escape(f)}")


def _producer(p) -> dict:
    return {
        "pc": p.pc,
        "isa": p.isa,
        "source": p.source,
        "wait_class": p.wait_class,
        "waited_cycles": p.waited_cycles,
        "share_of_wait": round(p.share_of_wait, 6),
        "pairs": p.pairs,
        "executions": p.executions,
        "distance_instructions_median": p.distance_instr_median,
        "distance_instructions_min": p.distance_instr_min,
        "distance_cycles_median": p.distance_cycles_median,
        "outstanding_mean": round(p.outstanding_mean, 3),
        "waits": [{"wait_pc": k, "cycles": v} for k, v in p.waits.items()],
    }


def select_deps(result, att, pc: int | None = None, line: str | None = None):
    """Producers and waits selected by --pc / --line (all when neither)."""
    d = result.dispatch
    st = d.static
    if pc is not None:
        pcs = {pc}
    elif line is not None:
        pcs = {p for p, loc in enumerate(st.own_source) if loc is not None and _line_matches(str(loc), line)}
    else:
        return att.producers, att.by_wait_pc
    producers = [p for p in att.producers if p.pc in pcs or any(w in pcs for w in p.waits)]
    waits = {w: v for w, v in att.by_wait_pc.items() if w in pcs or any(pp in pcs for pp in v)}
    return producers, waits


def _line_matches(loc: str, query: str) -> bool:
    # path-suffix match: "kernels/x.py:42" matches "/abs/path/kernels/x.py:42"
    return loc == query or loc.endswith("/" + query.lstrip("/"))


def deps_to_dict(result, att, producers, waits, topk: int | None) -> dict:
    d = result.dispatch
    k = None if not topk else topk
    wait_rows = []
    for wpc, prods in sorted(waits.items(), key=lambda kv: -sum(kv[1].values())):
        loc = d.static.own_source[wpc]
        wait_rows.append(
            {
                "wait_pc": wpc,
                "isa": d.code.isa[wpc],
                "source": str(loc) if loc else None,
                "stall": int(result.sums.stall[wpc]),
                "charged_cycles": int(sum(prods.values())),
                "producers": [{"pc": p, "isa": d.code.isa[p], "cycles": c} for p, c in sorted(prods.items(), key=lambda kv: -kv[1])],
            }
        )
    return {
        "schema": DEPS_SCHEMA,
        "schema_version": 1,
        "attlens_version": __version__,
        "capture": _capture(result),
        "waitcnt_model": result.deps.model,
        "total_charged_cycles": att.total_charged,
        "wait_executions_resolved": int(len(att.pairs.first_of_wait)),
        "producers": [_producer(p) for p in (producers if k is None else producers[:k])],
        "producer_lines": [
            {"source": src, "waited_cycles": cyc, "share_of_wait": round(cyc / att.total_charged, 6) if att.total_charged else None, "producers": n}
            for src, cyc, n in att.by_producer_line()
        ][: k or None],
        "waits": wait_rows if k is None else wait_rows[:k],
    }


def render_deps(result, att, producers, waits, console, topk: int = 10, title: str = "") -> None:
    d = result.dispatch
    console.print(f"[bold]attlens deps[/bold] — [bold cyan]{escape(d.kernel_name)}[/bold cyan]{escape(title)}")
    console.print(f"  {_n(att.total_charged)} wait cycles charged to producers over {len(att.pairs.first_of_wait):,} resolved wait executions ({result.deps.model} counter rules)")
    t = FitTable(f"Top {topk} producers by wait cycles caused",
                 [*map(Col, ("pc", "waited on", "share", "pairs", "dist instr (med/min)", "dist cycles (med)", "outstanding")),
                  Col("class", "text", min_width=11), Col("instruction", "wrap", min_width=16), Col("source", "path")])
    for p in producers[:topk]:
        t.add_row(str(p.pc), _n(p.waited_cycles), _pct(p.share_of_wait), _n(p.pairs), f"{p.distance_instr_median:,.0f}/{p.distance_instr_min}",
                  f"{p.distance_cycles_median:,.0f}", f"{p.outstanding_mean:.1f}", p.wait_class, escape(p.isa), escape(_short_source(p.source)))
    console.print(t)
    t = FitTable(f"Source lines whose memory ops were waited on (top {topk})", [Col("source", "path"), Col("waited on"), Col("share"), Col("producers")])
    for src, cyc, n in att.by_producer_line()[:topk]:
        t.add_row(escape(_short_source(src) if src != "(no source)" else src), _n(cyc), _pct(cyc / att.total_charged if att.total_charged else None), str(n))
    console.print(t)
    # the producer list is numbers: it wraps between entries, never cut
    t = FitTable(f"Top {topk} waits and whom they waited on",
                 [Col("wait pc"), Col("stall"), Col("charged"), Col("instruction", "wrap", min_width=16), Col("producers (pc: cycles)", "wrap", min_width=14)])
    for wpc, prods in sorted(waits.items(), key=lambda kv: -sum(kv[1].values()))[:topk]:
        top = ", ".join(f"{p}: {c:,}" for p, c in sorted(prods.items(), key=lambda kv: -kv[1])[:4])
        if len(prods) > 4:
            top += f", +{len(prods) - 4} more"
        t.add_row(str(wpc), _n(int(result.sums.stall[wpc])), _n(int(sum(prods.values()))), escape(d.code.isa[wpc]), top)
    console.print(t)
