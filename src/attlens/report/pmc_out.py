"""Renderers of the PMC (L2/HBM counter) analysis: JSON dict and rich tables.

``pmc_to_dict`` gives the ``attlens.pmc`` v1 object (docs/pmc.md). Values that
could not be determined are ``null``, never 0; fractions are in [0, 1]; bytes
are bytes; bandwidths are GB/s (10^9 B/s); ranges are ``[low, high]``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.markup import escape

from attlens import __version__
from attlens.analysis.pmc import Decision, PmcResult
from attlens.report.console import Col, FitTable

PMC_SCHEMA = "attlens.pmc"
PMC_SCHEMA_VERSION = 1


def _r(x, nd: int = 6):
    if x is None:
        return None
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return round(x, nd) if isinstance(x, float) else x


def _rr(t):
    return None if t is None else [_r(t[0]), _r(t[1])]


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return _r(v) if isinstance(v, float) else v


def decision_to_dict(d: Decision) -> dict:
    return {"id": d.id, "title": d.title, "verdict": d.verdict, "text": d.text, "threshold": d.threshold,
            "numbers": _plain(d.numbers)}


def result_to_dict(r: PmcResult) -> dict:
    """One dispatch (no schema header)."""
    return {
        "dispatch_id": r.dispatch_id,
        "kernel": r.kernel_name,
        "target": {"name": r.target, "product": r.product, "xcc": r.xcc, "peak_hbm_gbps": _r(r.peak_hbm_gbps),
                   "peak_source": r.peak_source, "l2_line_bytes": r.l2_line_bytes},
        "l2": {"hits": _r(r.l2_hits), "misses": _r(r.l2_misses), "requests": _r(r.l2_requests), "hit_rate": _r(r.l2_hit_rate)},
        "read": {"requests": _plain(r.read_requests) or None, "mix": _plain(r.read_mix) or None,
                 "bytes": _r(r.read_bytes), "bytes_range": _rr(r.read_bytes_range), "method": r.read_bytes_method,
                 "fetch_size_formula_bytes": _r(r.fetch_size_formula_bytes)},
        "write": {"requests": _plain(r.write_requests) or None, "mix": _plain(r.write_mix) or None,
                  "bytes": _r(r.write_bytes), "method": r.write_bytes_method},
        "hbm": {"read_bytes": _r(r.hbm_read_bytes), "write_bytes": _r(r.hbm_write_bytes), "method": r.hbm_method},
        "over_fetch": {"ideal_bytes": _r(r.ideal_bytes), "ratio": _r(r.over_fetch), "ratio_range": _rr(r.over_fetch_range)},
        "bandwidth": {"duration_ns": _r(r.duration_ns), "duration_source": r.duration_source, "bytes_moved": _r(r.bytes_moved),
                      "achieved_gbps": _r(r.achieved_gbps), "achieved_gbps_range": _rr(r.achieved_gbps_range),
                      "fraction_of_peak": _r(r.fraction_of_peak), "fraction_of_peak_range": _rr(r.fraction_of_peak_range)},
        "gpu_busy_cycles_per_xcc": _r(r.gpu_busy_cycles_per_xcc),
        "decisions": [decision_to_dict(d) for d in r.decisions],
        "counters": _plain(r.counters),
        "notes": list(r.notes),
    }


def pmc_to_dict(results: PmcResult | Iterable[PmcResult], *, source: str | None = None) -> dict:
    """``attlens.pmc`` v1: ``{"schema", "schema_version", "attlens_version", "source", "dispatches": [...]}``.
    Accepts one result or several."""
    items = [results] if isinstance(results, PmcResult) else list(results)
    return {
        "schema": PMC_SCHEMA,
        "schema_version": PMC_SCHEMA_VERSION,
        "attlens_version": __version__,
        "source": source,
        "dispatches": [result_to_dict(r) for r in items],
    }


# ---------------------------------------------------------------------------
# Terminal
# ---------------------------------------------------------------------------


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _mib(x) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.2f} MiB"


def _span(t, fmt) -> str:
    if t is None:
        return "n/a"
    return fmt(t[0]) if t[0] == t[1] else f"{fmt(t[0])}–{fmt(t[1])}"


def _mark(v: bool | None) -> str:
    return {True: "[bold red]YES[/bold red]", False: "[green]no[/green]", None: "[dim]?[/dim]"}[v]


def _summary(results: Sequence[PmcResult], console: Console) -> None:
    t = FitTable("PMC — L2 / memory per dispatch", [Col("dispatch"), Col("kernel", "text", min_width=16), Col("L2 hit"), Col("read"), Col("written"),
                                                    Col("over-fetch"), Col("GB/s"), Col("of peak"), Col("findings", "wrap")])
    for r in results:
        name = r.kernel_name or "-"
        fired = ", ".join(d.title for d in r.fired) or "-"
        t.add_row("-" if r.dispatch_id is None else str(r.dispatch_id), escape(name), _pct(r.l2_hit_rate),
                  _span(r.read_bytes_range, _mib), _mib(r.write_bytes), _span(r.over_fetch_range, lambda x: f"{x:.2f}x"),
                  _span(r.achieved_gbps_range, lambda x: f"{x:,.0f}"), _span(r.fraction_of_peak_range, _pct), escape(fired))
    console.print(t)


def _detail(r: PmcResult, console: Console) -> None:
    head = f"dispatch {r.dispatch_id}" if r.dispatch_id is not None else "dispatch"
    console.print(f"\n[bold]{escape(head)}[/bold] — [bold cyan]{escape(r.kernel_name or '(unnamed kernel)')}[/bold cyan]")
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
    for n in r.notes:
        console.print(f"  [yellow]note[/yellow] {escape(n)}")


def render_pmc(results: PmcResult | Iterable[PmcResult], console: Console, *, detail: bool | None = None) -> None:
    """Summary table of all dispatches, then per-dispatch details (metrics,
    decisions with their numbers, notes). ``detail=None``: details when there
    are at most 4 dispatches."""
    items = [results] if isinstance(results, PmcResult) else list(results)
    if not items:
        console.print("[yellow]no dispatch with PMC counters[/yellow]")
        return
    _summary(items, console)
    if detail or (detail is None and len(items) <= 4):
        for r in items:
            _detail(r, console)
