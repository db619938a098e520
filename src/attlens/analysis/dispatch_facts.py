"""The facts about the whole dispatch every verdict stands on, measured and
cross-checked: how long it ran, which part of the GPU the capture saw, which
waves did the work, whether a few long workgroups set its time, and how many
bytes it moved (analysis/bandwidth.py) at that duration.

Duration: the median ``End - Start`` of the run's dispatches of the kernel
with the same grid (kernel_trace.csv), dispatches beyond 1.5x the median
(or below 2/3 of it) named as outliers; cross-checked with the capture's own
span: the first wave start to the last wave end in occupancy.json (every CU of
the traced SEs, SE clocks aligned by realtime.json) at the shader clock. The
kernel trace adds launch and completion overhead (1.3–4.4 µs on the shared
captures) and its dispatches are other executions of the kernel, so the two
agree within ``max(25 %, 5 µs)``; beyond that the capture's span is used (it
measures this dispatch) and a warning says which was used and why.

Coverage: the traced SEs, the XCCs they belong to (SE i on XCC i // (SEs /
XCCs)), and whether occupancy.json's wave count on those SEs matches the grid
(grid waves x traced SEs / SEs, within 25 % + one workgroup per SE): a grid
that does not describe the captured dispatch is said, not used silently.

Working waves: a traced wave that ran under a tenth of the longest wave's
instructions and ended at ``s_endpgm`` after a taken branch into code that
reaches ``s_endpgm`` within a few instructions exited early. On the whole
traced XCC (occupancy.json) waves are split by lifetime at the geometric mean
of the longest early-exit and the shortest working traced wave, when the two
populations do not overlap.

Load imbalance: from occupancy.json lifetimes. When the span is ≥ 2x the
median wave lifetime and at most 10 % of the waves live ≥ half the span, a few
long workgroups set the dispatch time: more resident waves cannot shorten it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.groups import packed_key
from attlens.results import brief_repr

OUTLIER_RATIO = 1.5  # a dispatch beyond 1.5x (or below 1/1.5 of) the median is an outlier
AGREE_SHARE = 0.25  # kernel-trace median and capture span agree within this share ...
AGREE_NS = 5000  # ... or within this many ns (launch + completion overhead)
GRID_TOLERANCE = 0.25  # occupancy.json waves vs the grid's share of the traced SEs
EARLY_EXIT_SHARE = 0.10  # of the longest wave's instructions
EARLY_EXIT_REACH = 12  # instructions from the branch target to s_endpgm
IMBALANCE_RATIO = 2.0  # span / median wave lifetime
IMBALANCE_FEW = 0.10  # at most this share of the waves set the span
# The long waves set the span only if the other waves finish within this share
# of it: long waves are those living >= half the span, so without them the span
# must shrink to at most half, or the long waves merely overlap a span the
# others' staggered starts set (rocprofv2 elementwise: one 1,920-cycle wave in
# a 3,832-cycle span that the other 2,815 waves also cover end to end).
IMBALANCE_REST_SHARE = 0.5


@dataclass
class Duration:
    ns: int | None  # the duration the plan uses
    source: str | None  # "kernel trace" | "capture span" | None
    detail: str  # where it comes from, in words
    kernel_trace: dict | None = None  # file, dispatches, median/min/max, the capture's own id's row, outliers
    capture_span: dict | None = None  # cycles, ns, clock, SEs
    agreement: str = "unchecked"  # agree | disagree | unchecked
    warning: str | None = None

    def to_dict(self) -> dict:
        return {"ns": self.ns, "source": self.source, "detail": self.detail, "kernel_trace": self.kernel_trace,
                "capture_span": self.capture_span, "agreement": self.agreement, "warning": self.warning}


@dataclass
class Coverage:
    traced_ses: list[int]
    shader_engines: int | None  # SEs of the GPU
    xcc_count: int | None
    ses_per_xcc: int | None
    xccs_traced: list[int] | None
    waves_on_traced_ses: int | None  # started waves in occupancy.json
    expected_waves_on_traced_ses: float | None  # grid waves x traced SEs / SEs
    grid_matches: bool | None  # None: not checkable
    detail: str

    def to_dict(self) -> dict:
        return {"traced_ses": self.traced_ses, "shader_engines": self.shader_engines, "xcc_count": self.xcc_count,
                "ses_per_xcc": self.ses_per_xcc, "xccs_traced": self.xccs_traced, "waves_on_traced_ses": self.waves_on_traced_ses,
                "expected_waves_on_traced_ses": None if self.expected_waves_on_traced_ses is None else round(self.expected_waves_on_traced_ses, 1),
                "grid_matches": self.grid_matches, "detail": self.detail}

    def xcc_text(self) -> str:
        """Which XCCs (and SEs) were traced, for re-targeting advice."""
        ses = f"SE{'s' if len(self.traced_ses) != 1 else ''} {_ranges(self.traced_ses)}"
        if not self.xccs_traced or not self.xcc_count:
            return f"{ses}" + (f" of {self.shader_engines}" if self.shader_engines else "")
        return (f"XCC{'s' if len(self.xccs_traced) != 1 else ''} {_ranges(self.xccs_traced)} of {self.xcc_count} "
                f"({ses} of {self.shader_engines})")


@dataclass
class Populations:
    traced: int
    traced_early_exit: int
    exit_branches: list[dict]  # [{branch_pc, target_pc, waves}]
    early_instructions_max: int | None
    working_instructions_median: int | None
    lifetime_threshold_cycles: int | None  # separates early-exit from working lifetimes (None: overlap or no early exits)
    xcc_waves: int | None  # waves started on the traced SEs (occupancy.json)
    xcc_early_exit: int | None
    early_lifetime_range: list[int] | None  # cycles, traced early-exit waves
    working_share: float  # of all waves, best estimate (traced XCC, else traced waves)
    early_mask: np.ndarray | None = field(default=None, repr=False)  # per traced wave: exited early

    @property
    def traced_working(self) -> int:
        return self.traced - self.traced_early_exit

    def to_dict(self) -> dict:
        return {"traced": self.traced, "traced_early_exit": self.traced_early_exit, "traced_working": self.traced_working,
                "exit_branches": self.exit_branches, "early_instructions_max": self.early_instructions_max,
                "working_instructions_median": self.working_instructions_median,
                "lifetime_threshold_cycles": self.lifetime_threshold_cycles, "xcc_waves": self.xcc_waves,
                "xcc_early_exit": self.xcc_early_exit, "early_lifetime_range": self.early_lifetime_range,
                "working_share": round(self.working_share, 4)}


@dataclass
class Imbalance:
    waves: int  # waves with a start and an end in occupancy.json
    span_cycles: int
    median_lifetime_cycles: int
    ratio: float  # span / median lifetime
    long_waves: int  # lifetime ≥ half the span
    long_workgroups: int  # long waves / waves per workgroup, rounded up
    long_lifetime_range: list[int] | None
    span_without_long_cycles: int | None  # first start to last end of the other waves
    imbalanced: bool  # the trigger holds and the long waves set the span
    sets_span: bool = True  # without the long waves the span shrinks to <= IMBALANCE_REST_SHARE of it

    def to_dict(self) -> dict:
        return {"waves": self.waves, "span_cycles": self.span_cycles, "median_lifetime_cycles": self.median_lifetime_cycles,
                "ratio": round(self.ratio, 2), "long_waves": self.long_waves, "long_workgroups": self.long_workgroups,
                "long_lifetime_range": self.long_lifetime_range, "span_without_long_cycles": self.span_without_long_cycles,
                "imbalanced": self.imbalanced}


@brief_repr(("duration_ns", lambda f: f.duration.ns), ("duration_source", lambda f: f.duration.source),
            ("grid_matches", lambda f: f.coverage.grid_matches), ("working_share", lambda f: round(f.populations.working_share, 3)),
            ("imbalanced", lambda f: f.imbalance.imbalanced if f.imbalance else None))
@dataclass
class DispatchFacts:
    duration: Duration
    coverage: Coverage
    populations: Populations
    imbalance: Imbalance | None
    clock_mhz: float | None
    bandwidth: object = None  # analysis.bandwidth.Bandwidth at this duration (set by the plan)
    warnings: list[str] = field(default_factory=list)

    def wave_weights(self, d) -> tuple[np.ndarray | None, str | None]:
        """Per traced wave, how many grid waves it stands for: early-exit and
        working waves each by the share measured on the traced SEs (their mix
        on the traced CU can differ a lot), else None (all alike)."""
        from attlens.analysis.occupancy import grid_waves

        p = self.populations
        _, gw = grid_waves(d)
        m = p.early_mask
        if not gw or m is None or not p.traced_early_exit or p.traced_early_exit == p.traced or p.xcc_early_exit is None:
            return None, None
        ne, nw = int(m.sum()), int((~m).sum())
        ws = p.working_share
        w = np.where(m, gw * (1 - ws) / ne, gw * ws / nw)
        return w, (f"early-exit and working traced waves stand for their shares of the grid as measured on the traced SEs "
                   f"({ws:.1%} working: {p.xcc_waves - p.xcc_early_exit} of {p.xcc_waves}), not the traced CU's mix ({nw} of {p.traced})")

    @property
    def bounds(self) -> list[str]:
        return list(getattr(self.bandwidth, "bounds", []) or [])

    def to_dict(self) -> dict:
        bw = self.bandwidth
        return {
            "duration": self.duration.to_dict(),
            "coverage": self.coverage.to_dict(),
            "populations": self.populations.to_dict(),
            "imbalance": self.imbalance.to_dict() if self.imbalance else None,
            "clock_mhz": None if self.clock_mhz is None else round(self.clock_mhz, 1),
            "bytes": None if bw is None else {
                "source": bw.source, "read_bytes": _r(bw.read_bytes), "write_bytes": _r(bw.write_bytes), "bytes_moved": _r(bw.bytes_moved),
                "bytes_moved_low": _r(bw.bytes_moved_low), "shared_address_saving_bytes": _r(bw.shared_address_saving_bytes),
                "lanes_sharing_an_address": [{"pc": pc, "lanes": n} for pc, n in sorted(bw.lanes_sharing.items())]},
            "bounds": self.bounds,
            "warnings": self.warnings,
        }


def _r(x):
    return None if x is None else int(round(x))


def _ranges(xs: list[int]) -> str:
    """[0, 1, 2, 3, 8] → '0–3, 8'."""
    out, xs = [], sorted(xs)
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}–{xs[j]}")
        i = j + 1
    return ", ".join(out)


# --------------------------------------------------------------------------- duration


def _kernel_trace(d) -> dict | None:
    res = d.resources
    rows = [r for r in res.run_dispatches if r.get("duration_ns")]
    if not rows:
        return None
    ns = np.array([r["duration_ns"] for r in rows], dtype=np.float64)
    med = float(np.median(ns))
    out = [{"dispatch_id": r["dispatch_id"], "duration_ns": int(r["duration_ns"]), "ratio_to_median": round(r["duration_ns"] / med, 2)}
           for r in rows if r["duration_ns"] > OUTLIER_RATIO * med or r["duration_ns"] < med / OUTLIER_RATIO]
    own = next((r for r in rows if r["dispatch_id"] == res.dispatch_id), None)
    return {"file": res.sources.get("run_dispatches"), "dispatches": len(rows), "median_ns": int(round(med)), "min_ns": int(ns.min()),
            "max_ns": int(ns.max()), "outliers": sorted(out, key=lambda x: -abs(np.log(x["ratio_to_median"])))[:8],
            "same_id_as_capture": None if own is None else {"dispatch_id": own["dispatch_id"], "duration_ns": int(own["duration_ns"]),
                                                            "ratio_to_median": round(own["duration_ns"] / med, 2)}}


def _aligned_events(d, clock) -> tuple[np.ndarray | None, bool]:
    """occupancy.json events, (n, 7) se, time, cu, simd, slot, start, kernel,
    with SE clocks aligned when realtime.json allows (then True): unaligned,
    times compare only within one SE."""
    occ = d.occupancy
    if occ is None or not len(occ.events):
        return None, False
    ev = occ.events.copy()
    offsets = clock.se_offsets_cycles if clock is not None else None
    if offsets:
        ses, inv = np.unique(ev[:, 0], return_inverse=True)  # one offset per SE, not one look-up per event
        ev[:, 1] += np.array([offsets.get(se, 0) for se in ses.tolist()], dtype=np.int64)[inv.reshape(-1)]
        return ev, True
    return ev, len(np.unique(ev[:, 0])) == 1


def _capture_span(ev, clock, aligned: bool) -> dict | None:
    if ev is None or not len(ev) or not aligned:
        return None  # the SEs' clocks cannot be compared
    cycles = int(ev[:, 1].max() - ev[:, 1].min())
    hz = clock.frequency_hz if clock is not None else None
    return {"cycles": cycles, "ns": None if not hz else int(round(cycles / hz * 1e9)), "clock_mhz": None if not hz else round(hz / 1e6, 1),
            "ses": sorted(set(ev[:, 0].tolist())), "from": "occupancy.json, first wave start to last wave end (SE clocks aligned)"}


def _duration(d, ev, clock, grid_matches, aligned: bool) -> Duration:
    kt = _kernel_trace(d)
    span = _capture_span(ev, clock, aligned)
    src = (f"{kt['file']}: median End_Timestamp - Start_Timestamp of {kt['dispatches']} dispatch{'es' if kt['dispatches'] != 1 else ''} "
           "of the same name and grid") if kt else None
    span_ns = span["ns"] if span else None
    if kt is None and span_ns is None:
        return Duration(None, None, "no kernel_trace.csv row with timestamps and no occupancy.json span at a known clock", kt, span)
    if kt is None:
        return Duration(span_ns, "capture span", f"the capture's own span: {span['cycles']:,} cycles at {span['clock_mhz']:,.0f} MHz "
                        "(no kernel_trace.csv row with timestamps)", kt, span)
    med = kt["median_ns"]
    if span_ns is None:
        return Duration(med, "kernel trace", src or f"median of {kt['dispatches']} dispatches", kt, span)
    agree = abs(med - span_ns) <= max(AGREE_SHARE * max(med, span_ns), AGREE_NS)
    if agree:
        return Duration(med, "kernel trace", f"{src}; the capture's span {span_ns:,} ns agrees", kt, span, "agree")
    why = " (the grid does not match the capture either: another dispatch shape)" if grid_matches is False else ""
    warn = (f"the kernel trace's dispatches of this kernel and grid take a median {med:,} ns but this capture's waves span {span_ns:,} ns "
            f"({span['cycles']:,} cycles at {span['clock_mhz']:,.0f} MHz){why}: the plan uses the capture's span")
    return Duration(span_ns, "capture span", f"the capture's own span: {span['cycles']:,} cycles at {span['clock_mhz']:,.0f} MHz "
                    f"(the kernel trace's median {med:,} ns disagrees)", kt, span, "disagree", warn)


# --------------------------------------------------------------------------- coverage


def _coverage(d, ev) -> Coverage:
    from attlens.analysis.occupancy import grid_waves

    f = d.arch.facts or {}
    traced = sorted(set(d.waves.se.tolist()) | (set(ev[:, 0].tolist()) if ev is not None else set()))
    ses, xccs = f.get("shader_engines"), f.get("xcc_count")
    per = ses // xccs if ses and xccs and ses % xccs == 0 else None
    xt = sorted({se // per for se in traced}) if per else None
    started = int((ev[:, 5] == 1).sum()) if ev is not None else None
    wpw, gw = grid_waves(d)
    if started is None or not gw or not ses:
        why = "no occupancy.json" if started is None else ("grid unknown" if not gw else "SE count unknown")
        return Coverage(traced, ses, xccs, per, xt, started, None, None, f"grid not checked against the capture: {why}")
    occ_ses = sorted(set(ev[:, 0].tolist()))
    expected = gw * len(occ_ses) / ses
    ok = started <= gw and abs(started - expected) <= GRID_TOLERANCE * expected + (wpw or 1) * len(occ_ses)
    detail = (f"occupancy.json: {started:,} waves started on SE{'s' if len(occ_ses) > 1 else ''} {_ranges(occ_ses)}; the grid's "
              f"{gw:,} waves put {expected:,.0f} there ({len(occ_ses)} of {ses} SEs)")
    if not ok:
        detail += ": the grid from the kernel trace does not describe the captured dispatch"
    return Coverage(traced, ses, xccs, per, xt, started, expected, ok, detail)


# --------------------------------------------------------------------------- wave populations


def _lifetimes(ev) -> np.ndarray:
    """(start, end, se, cu) of every wave with both events, occupancy.json."""
    if ev is None or not len(ev):
        return np.zeros((0, 4), dtype=np.int64)
    # per (se, cu, simd, slot) the events alternate start, end in time order (ends first at equal times)
    packed = packed_key(ev.T[[0, 2, 3, 4, 1, 5]].astype(np.int64, copy=False))  # one gather: each column contiguous
    if packed is None:  # the columns' ranges overflow one int64: a sort on each in turn
        order = np.lexsort((ev[:, 5], ev[:, 1], ev[:, 4], ev[:, 3], ev[:, 2], ev[:, 0]))
        same = np.all(ev[order[1:]][:, [0, 2, 3, 4]] == ev[order[:-1]][:, [0, 2, 3, 4]], axis=1)
    else:
        key, mult = packed
        order = np.argsort(key, kind="stable")
        slot = key[order] // mult[3]  # the (se, cu, simd, slot) part
        same = slot[1:] == slot[:-1]
    start, time = ev[order, 5], ev[order, 1]
    pair = np.flatnonzero(same & (start[:-1] == 1) & (start[1:] == 0))
    rows = order[pair]
    return np.column_stack([time[pair], time[pair + 1], ev[rows, 0], ev[rows, 2]])


def _early_exit(d) -> tuple[np.ndarray, list[dict]]:
    """Traced waves that exited early, and the branches that sent them to s_endpgm."""
    from attlens.analysis.loops import branch_target

    w, recs, st, code = d.waves, d.records, d.static, d.code
    if not w.count or not recs.count:
        return np.zeros(0, dtype=bool), []
    n = w.n_records
    endpgm = np.array([m.startswith("s_endpgm") for m in st.mnemonic], dtype=bool)  # per pc: one test per pc, not per wave
    ended = (w.rec_stop > w.rec_start) & endpgm[recs.pc[np.maximum(w.rec_stop - 1, 0)]]
    short = (n < max(int(n.max() * EARLY_EXIT_SHARE), 1)) & ended
    listed = code.instruction_mask.tolist()  # a property: computed once, not per pc
    vaddr_to_pc = {int(v): pc for pc, v in enumerate(code.vaddr.tolist()) if listed[pc]}
    early = np.zeros(w.count, dtype=bool)
    exits: dict[tuple[int, int], int] = {}
    for i in np.flatnonzero(short).tolist():
        a, b = int(w.rec_start[i]), int(w.rec_stop[i])
        pcs = recs.pc[a:b].tolist()
        for k in range(len(pcs) - 2, -1, -1):
            m = st.mnemonic[pcs[k]]
            if not m.startswith(("s_cbranch", "s_branch")):
                continue
            t = branch_target(d, pcs[k], vaddr_to_pc)
            if t is not None and pcs[k + 1] == t and _reaches_end(code, st, t):
                early[i] = True
                exits[(pcs[k], t)] = exits.get((pcs[k], t), 0) + 1
            break
    rows = [{"branch_pc": b, "branch": code.isa[b], "target_pc": t, "waves": c} for (b, t), c in sorted(exits.items(), key=lambda kv: -kv[1])]
    return early, rows


def _reaches_end(code, st, pc: int) -> bool:
    n = 0
    listed = code.instruction_mask
    for q in range(pc, code.size):
        if not listed[q]:
            continue
        m = st.mnemonic[q]
        if m.startswith("s_endpgm"):
            return True
        if m.startswith(("s_branch", "s_cbranch", "s_setpc")) or n >= EARLY_EXIT_REACH:
            return False
        n += 1
    return False


def _populations(d, lives: np.ndarray) -> Populations:
    w = d.waves
    early, exits = _early_exit(d)
    n = w.n_records
    life = (w.end - w.begin).astype(np.int64)
    ne = int(early.sum())
    thr = None
    xcc_early = None
    rng = [int(life[early].min()), int(life[early].max())] if ne else None
    if ne and ne < w.count:
        lo, hi = int(life[early].max()), int(life[~early].min())
        if hi > lo:
            thr = int(round(np.sqrt(max(lo, 1) * hi)))
    if thr is not None and len(lives):
        xcc_early = int(((lives[:, 1] - lives[:, 0]) < thr).sum())
    if xcc_early is not None and len(lives):
        share = 1 - xcc_early / len(lives)
    else:
        share = 1 - ne / w.count if w.count else 1.0
    return Populations(
        traced=int(w.count), traced_early_exit=ne, exit_branches=exits,
        early_instructions_max=int(n[early].max()) if ne else None,
        working_instructions_median=int(np.median(n[~early])) if ne < w.count else None,
        lifetime_threshold_cycles=thr, xcc_waves=int(len(lives)) if len(lives) else None, xcc_early_exit=xcc_early,
        early_lifetime_range=rng, working_share=float(share), early_mask=early)


def _span(lives: np.ndarray, aligned: bool) -> int:
    """First start to last end; per SE (the longest) when the SE clocks are not aligned."""
    if aligned or not len(lives):
        return int(lives[:, 1].max() - lives[:, 0].min()) if len(lives) else 0
    return max(int(lives[lives[:, 2] == se, 1].max() - lives[lives[:, 2] == se, 0].min()) for se in np.unique(lives[:, 2]))


def _imbalance(d, lives: np.ndarray, aligned: bool = True) -> Imbalance | None:
    from attlens.analysis.occupancy import grid_waves

    if len(lives) < 2:
        return None
    life = lives[:, 1] - lives[:, 0]
    span = _span(lives, aligned)
    med = int(np.median(life))
    if span <= 0 or med <= 0:
        return None
    long_ = life >= span / 2
    nl = int(long_.sum())
    wpw = grid_waves(d)[0] or 1
    rest = lives[~long_]
    without = _span(rest, aligned) if len(rest) else None
    sets_span = without is not None and without <= IMBALANCE_REST_SHARE * span
    imbalanced = span / med >= IMBALANCE_RATIO and 0 < nl <= IMBALANCE_FEW * len(lives) and sets_span
    return Imbalance(int(len(lives)), span, med, span / med, nl, -(-nl // wpw),
                     [int(life[long_].min()), int(life[long_].max())] if nl else None, without, bool(imbalanced), bool(sets_span))


# --------------------------------------------------------------------------- all


def compute_dispatch_facts(result) -> DispatchFacts:
    """Everything but the bytes (the plan adds its Bandwidth at this duration)."""
    from attlens.analysis.clock import compute_clock

    d = result.dispatch
    clock = compute_clock(d) if d.realtime is not None else None
    ev, aligned = _aligned_events(d, clock)
    cov = _coverage(d, ev)
    dur = _duration(d, ev, clock, cov.grid_matches, aligned)
    lives = _lifetimes(ev)
    pops = _populations(d, lives)
    imb = _imbalance(d, lives, aligned)
    warnings = [x for x in (dur.warning,) if x]
    if cov.grid_matches is False:
        warnings.append(cov.detail)
    kt = dur.kernel_trace
    if kt and kt["outliers"]:
        o = kt["outliers"][0]
        warnings.append(f"{len(kt['outliers'])} of {kt['dispatches']} dispatches of the kernel with this grid are outliers "
                        f"(dispatch {o['dispatch_id']}: {o['duration_ns']:,} ns, {o['ratio_to_median']}x the median {kt['median_ns']:,} ns); "
                        "the median is used")
    hz = clock.frequency_hz if clock is not None else None
    return DispatchFacts(dur, cov, pops, imb, None if not hz else hz / 1e6, warnings=warnings)
