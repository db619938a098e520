"""Preconditions several rules share: the dispatch-level verdicts their advice
must not contradict (registry.OPPOSITE), each a (id, text) pair to declare
and a check that records itself with ``ctx.require``.

* not at the HBM ceiling: memory-latency, memory-request, more-waves and
  issue-bound advice assume the bytes could arrive sooner;
* not issue-bound: memory advice assumes no compute pipe sets the time;
* not imbalanced: more resident waves cannot shorten a span set by a few
  long workgroups;
* the grid describes the capture: rules that reason from the grid's size.
"""

from __future__ import annotations

from attlens.analysis.bandwidth import CEILING_FRACTION

# A compute pipe busy this share of the traced window sets the dispatch time:
# the rest of the kernel's work fits in the remaining ≤ 20 %, so cutting waits
# elsewhere gains at most that much while fewer instructions on the pipe scale
# the time. Below it, waits and other pipes hold ≥ 20 % of the time, and a
# memory-bound kernel can keep a pipe 50–65 % busy too (softmax: VALU 65 % busy
# while it streams at 70 % of the HBM peak), so a busier-than-half pipe is not
# yet a limiter.
ISSUE_BOUND_BUSY = 0.80

NOT_AT_CEILING = ("not-at-ceiling", "the dispatch is not at the HBM bandwidth ceiling (by PMC bytes, or the trace's lower bound for a streaming kernel): otherwise the bytes cannot arrive sooner")
NOT_ISSUE_BOUND = ("not-issue-bound", f"no compute pipe (VALU, MFMA, SALU) is busy ≥ {ISSUE_BOUND_BUSY:.0%} of the traced window: otherwise issuing that pipe's instructions sets the dispatch time, not memory")
NOT_IMBALANCED = ("not-imbalanced", "the dispatch's span is not set by a few long workgroups (occupancy.json lifetimes): more resident waves cannot shorten such a span")
GRID_MATCHES = ("grid-matches", "the kernel trace's grid describes the captured dispatch (occupancy.json's waves on the traced SEs match its share)")


def not_at_ceiling(ctx, rule_id: str) -> bool:
    bw = ctx.bandwidth
    at = bw.at_ceiling
    if at:
        detail = f"at {bw.fraction_of_peak_low if bw.source == 'trace' else bw.fraction_of_peak:.0%} of the {bw.peak_gbps:,.0f} GB/s peak"
    elif at is False:
        detail = f"{bw.fraction_of_peak:.0%} of peak at most" if bw.fraction_of_peak is not None else "below"
    elif not bw.available:
        detail = f"undecided (taken as holding): {bw.reason}"
    elif bw.fraction_of_peak_low is not None and bw.fraction_of_peak_low < CEILING_FRACTION:
        upper = f"{bw.fraction_of_peak:.0%}" if bw.fraction_of_peak is not None else "above 100 %"
        detail = (f"undecided (taken as holding): between {bw.fraction_of_peak_low:.0%} (lower bound) and {upper} "
                  f"(every requested byte from HBM) of the {bw.peak_gbps:,.0f} GB/s peak, across the {CEILING_FRACTION:.0%} ceiling")
    else:
        upper = (f"{bw.fraction_of_peak:.0%} of the peak only if every requested byte came from HBM" if bw.fraction_of_peak is not None
                 else f"the requested bytes exceed the {bw.peak_gbps:,.0f} GB/s peak, so many come from L2")
        detail = (f"undecided (taken as holding): {upper}; "
                  f"{1 - (bw.streaming_share or 0):.0%} of the bytes come from instructions that run again, whose data may come from cache")
    return ctx.require(rule_id, "not-at-ceiling", not at, detail)


def mfma_pipe_share(ctx) -> tuple[float | None, str | None]:
    """(Σ MFMA executions x passes x 4 cycles / the traced SIMD windows, why it
    is not used). A share above 100 % is impossible: the pass table does not
    fit these MFMAs, so the estimate is dropped and said."""
    from attlens.analysis.rules.schedule import mfma_passes

    s, st = ctx.result.sums, ctx.d.static
    window = ctx.waves.pipes.total_window_cycles
    if not window:
        return None, None
    cyc = sum(int(s.hit[pc]) * 4 * (mfma_passes(ctx, st.mnemonic[pc]) or 0) for pc, c in enumerate(st.cls) if c == "mfma" and s.hit[pc])
    if not cyc:
        return None, None
    if cyc > window:
        return None, (f"MFMA executions x passes x 4 = {cyc:,} cycles exceed the {window:,}-cycle traced window ({cyc / window:.0%}): "
                      "the pass counts of the architecture table do not fit these MFMAs; the estimate is not used")
    return cyc / window, None


def pipe_shares(ctx) -> tuple[dict[str, float], list[str]]:
    """Busy share of every pipe over the traced window (MFMA: the larger of its
    issue union and its passes), and the figures dropped as impossible."""
    def compute():
        kern = ctx.waves.pipes.kernel
        shares = {p: v["busy_share"] or 0.0 for p, v in kern.items() if p not in ("IMMED/MSG", "BRANCH")}
        dropped = []
        by_passes, why = mfma_pipe_share(ctx)
        if why:
            dropped.append(why)
        if by_passes is not None:
            shares["MFMA"] = max(shares.get("MFMA", 0.0), by_passes)
        for p, v in list(shares.items()):
            if v > 1.0:  # cannot happen for a union within its window; said if it does
                dropped.append(f"{p} busy {v:.0%} of the window: impossible, not used")
                shares.pop(p)
        return shares, dropped

    return ctx.memo("pipe_shares", compute)


COMPUTE_PIPES = ("VALU", "MFMA", "SALU/SMEM")


def busiest_compute(ctx) -> tuple[str | None, float]:
    shares, _ = pipe_shares(ctx)
    comp = {p: v for p, v in shares.items() if p in COMPUTE_PIPES}
    if not comp:
        return None, 0.0
    p = max(comp, key=comp.get)
    return p, comp[p]


def not_issue_bound(ctx, rule_id: str) -> bool:
    pipe, busy = busiest_compute(ctx)
    return ctx.require(rule_id, "not-issue-bound", busy < ISSUE_BOUND_BUSY,
                       f"busiest compute pipe {pipe} at {busy:.0%} of the traced window" if pipe else "no compute pipe busy")


def not_imbalanced(ctx, rule_id: str) -> bool:
    imb = ctx.facts.imbalance
    if imb is None:
        return ctx.require(rule_id, "not-imbalanced", True, "not checked: no wave lifetimes in occupancy.json")
    detail = (f"{imb.long_waves} of {imb.waves} waves on the traced SEs live ≥ half the {imb.span_cycles:,}-cycle span "
              f"(median lifetime {imb.median_lifetime_cycles:,} cycles, span {imb.ratio:.1f}x it)")
    return ctx.require(rule_id, "not-imbalanced", not imb.imbalanced, detail)


def grid_matches(ctx, rule_id: str) -> bool:
    cov = ctx.facts.coverage
    return ctx.require(rule_id, "grid-matches", cov.grid_matches is not False, cov.detail)
