"""Plain text shared by the terminal and Markdown renderers: numbers as
people read them (thousands separators, shares in %, rounded floats), the
plan's evidence as readable rows, the dispatch facts a plan stands on."""

from __future__ import annotations

import os


def n(x) -> str:
    """An integer with thousands separators; ``n/a`` when unknown."""
    return "n/a" if x is None else f"{x:,}"


def pct(x) -> str:
    """A fraction as a percentage with one decimal; ``n/a`` when unknown."""
    return "n/a" if x is None else f"{100 * x:.1f}%"


def short_source(src: str | None) -> str:
    """``/long/path/file.py:42`` as ``file.py:42``; ``-`` when there is none."""
    if not src:
        return "-"
    f, _, ln = src.rpartition(":")
    return f"{os.path.basename(f)}:{ln}" if f else src


_SHARE_KEYS = ("share", "fraction", "fill")


def fmt_value(key: str, v) -> str:
    """One evidence value as text: thousands separators, rounded floats, shares in %."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        if key.endswith(("pc", "pcs", "producers", "waits", "needed_next", "line", "loop", "id")) or key in ("already_first", "loop_pcs"):
            return str(v)
        if key.endswith("bytes") and v >= 10**6:
            return f"{v:,} ({fmt_bytes(v)})"
        return f"{v:,}"
    if isinstance(v, float):
        if any(k in key for k in _SHARE_KEYS) and abs(v) <= 10:
            return f"{100 * v:.1f}%"
        if abs(v) >= 100:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    if isinstance(v, dict):
        return " · ".join(f"{k} {fmt_value(k, x)}" for k, x in v.items() if not isinstance(x, (list, dict)) or x)
    if isinstance(v, (list, tuple)):
        if all(not isinstance(x, (dict, list)) for x in v):
            return ", ".join(fmt_value(key, x) for x in v)
        return "; ".join(fmt_value(key, x) for x in v)
    return str(v)


def _row(item) -> str:
    if not isinstance(item, dict):
        return fmt_value("", item)
    parts = []
    for k, v in item.items():
        if v is None or v == [] or v == {}:
            continue
        if k == "pc":
            parts.append(f"pc {v}")
        elif isinstance(v, list) and any(isinstance(x, dict) for x in v):
            inner = ", ".join(" ".join(fmt_value(kk, vv) if kk in ("file", "isa", "source") else f"{kk.replace('_', ' ')} {fmt_value(kk, vv)}" for kk, vv in x.items()) for x in v if isinstance(x, dict))
            parts.append(f"{k.replace('_', ' ')} [{inner}]")
        elif k in ("isa", "source", "line", "hazard", "file", "isa_text"):
            parts.append(str(v))
        else:
            parts.append(f"{k.replace('_', ' ')} {fmt_value(k, v)}")
    return " · ".join(parts)


def evidence_lines(ev: dict, limit: int = 6) -> list[str]:
    out = []
    for k, v in ev.items():
        if v == [] or v == {}:
            continue
        label = k.replace("_", " ")
        if isinstance(v, list) and any(isinstance(x, dict) for x in v):
            out.append(f"{label}:")
            for item in v[:limit]:
                out.append("  - " + _row(item))
            if len(v) > limit:
                out.append(f"  - … {len(v) - limit} more")
        elif isinstance(v, dict) and v and any(isinstance(x, (dict, list)) for x in v.values()):
            out.append(f"{label}:")
            for kk, vv in v.items():
                if isinstance(vv, list) and any(isinstance(x, dict) for x in vv):
                    out.append(f"  {kk.replace('_', ' ')}:")
                    out += ["    - " + _row(x) for x in vv[:limit]]
                else:
                    out.append(f"  {kk.replace('_', ' ')}: {_row(vv) if isinstance(vv, dict) else fmt_value(kk, vv)}")
        elif isinstance(v, list) and any(isinstance(x, str) and len(x) > 40 for x in v):
            out.append(f"{label}:")
            out += ["  - " + x for x in v[:limit]]
        else:
            out.append(f"{label}: {fmt_value(k, v)}")
    return out


def loops_line(f) -> str | None:
    rows = []
    for w in f.loops[:4]:
        if w.get("loop") is None:
            rows.append(f"pc {w['pc']}: {w.get('note', 'outside loops')}")
        else:
            rows.append(f"pc {w['pc']} in loop {w['loop']} (pcs {w['loop_pcs'][0]}–{w['loop_pcs'][1]}, {fmt_value('trips', w['trips_mean'])} trips/entry)")
    if not rows:
        return None
    more = f" … {len(f.loops) - 4} more" if len(f.loops) > 4 else ""
    return "loops: " + "; ".join(rows) + more


def ledger_line(f) -> str | None:
    yielded = [s for s in f.shared if "held_by" in s]
    partners = [s for s in f.shared if "also_claimed_by" in s]
    if not yielded and not partners:
        return None
    parts = []
    if yielded:
        held = sorted({r for s in yielded for r in s["held_by"]})
        parts.append(f"yields {sum(s['cycles_not_granted'] for s in yielded):,} cycles at pc {', '.join(str(s['pc']) for s in yielded[:4])} to {', '.join(held)}")
    if partners:
        who = sorted({s["also_claimed_by"] for s in partners})
        parts.append(f"shares pc {', '.join(str(s['pc']) for s in partners[:4])} with {', '.join(who)} (which got the rest)")
    return "ledger: " + "; ".join(parts)


def finding_detail(f) -> list[str]:
    lines = evidence_lines(f.evidence)
    for extra in (loops_line(f), ledger_line(f)):
        if extra:
            lines.append(extra)
    for c in f.preconditions:
        lines.append(f"checked: {c['text']} — {c['detail']}")
    return lines


def stake_label(f) -> str:
    """What a finding puts at stake, for a header line."""
    if f.severity == "INFO" or f.kind == "note":
        return "no action"
    if f.kind == "performance":
        return f"{f.cycles_at_stake:,} traced wave-cycles at stake ({f.share_of_cycles:.1%})"
    if f.kind == "dispatch" and getattr(f, "dispatch_time", None) and f.dispatch_time.get("bound_ns") is not None:
        return f"whole dispatch: bounds the {fmt_ns(f.dispatch_time.get('measured_ns'))} at {fmt_ns(f.dispatch_time['bound_ns'])}"
    return {"capture": "capture quality", "dispatch": "whole dispatch"}[f.kind]


def stake_and_prediction(f) -> str:
    """The cycles at stake and, beside them, the predicted gain (when the plan has one)."""
    pred = predicted_label(f)
    return stake_label(f) + (f" · {pred}" if pred else "")


def predicted_text(p: dict | None) -> str | None:
    """A finding's ``predicted`` (the what-if replay, docs/whatif.md) as one
    phrase printed beside its cycles at stake: the predicted kernel-time gain
    with its interval and the dispatch time before → after; "not predicted:
    <reason>" when the replay cannot express the change; None when the plan
    carries no prediction (unavailable, never a zero gain)."""
    if not p:
        return None
    if not p.get("expressible"):
        return f"not predicted: {p.get('reason') or 'the replay cannot express this change'}"
    text = f"predicted {gain_text(p.get('gain'))} ({interval_text(p.get('low'), p.get('high'))})"
    before, after = p.get("dispatch_ns_before"), p.get("dispatch_ns_after")
    if before is not None and after is not None:
        text += f", {fmt_ns(round(before))} → {fmt_ns(round(after))}"
    if p.get("bound"):
        text += f", held by {BOUND_WORDS.get(p['bound'], p['bound'])}"
    cal = p.get("calibration")
    if cal and not cal.get("within"):
        text += f"; the replay is off by {cal['span_residual']:+.1%} of the span on this capture"
    return text


# what holds a prediction (``bound.kind`` of attlens.whatif, ``predicted.bound`` of a plan finding)
BOUND_WORDS = {"bandwidth": "the bytes at peak HBM bandwidth", "issue": "the busiest SIMD pipe's issue time",
               "stake": "the finding's cycles at stake"}


def predicted_label(f) -> str | None:
    """:func:`predicted_text` of a finding (object or dict; a plan made before predictions existed has none)."""
    p = f.get("predicted") if isinstance(f, dict) else getattr(f, "predicted", None)
    return predicted_text(p)


def gain_text(share) -> str:
    """A predicted gain (a share of kernel time saved; positive = faster) as words."""
    if share is None:
        return "gain unknown"
    if abs(share) < 0.0005:
        return "no change in kernel time"
    return f"{abs(share):.1%} {'faster' if share > 0 else 'slower'}"


def interval_text(low, high) -> str:
    """A gain's interval: ``6.1% to 12.0%`` (negative = slower)."""
    if low is None or high is None:
        return "interval unknown"
    return f"{_signed_pct(low)} to {_signed_pct(high)}"


def _signed_pct(x: float) -> str:
    return f"−{-x:.1%}" if x < -0.0005 else f"{max(x, 0.0):.1%}"


def edit_text(e: dict) -> str:
    """One edit of a what-if replay in words."""
    kind = e.get("kind")
    if kind == "hide-wait":
        what = f"hide the wait at pc {e.get('pc')}"
    elif kind == "move":
        what = f"move the load at pc {e.get('pc')} before pc {e.get('before_pc')}"
    elif kind == "waves-per-simd":
        what = f"{e.get('waves_per_simd')} resident waves per SIMD"
    elif kind == "prefetch":
        what = f"prefetch the load at pc {e.get('pc')}"
    elif kind == "barrier-skew":
        what = "remove the barrier skew" + (f" at pc {e['pc']}" if e.get("pc") is not None else "")
    elif kind == "early-exit":
        what = "remove the early exit" + (f" at pc {e['pc']}" if e.get("pc") is not None else "")
    else:
        what = str(kind) + (f" at pc {e['pc']}" if e.get("pc") is not None else "")
    src = e.get("source") or ""
    return what + (f" ({src.split(':', 1)[1]})" if src.startswith("rule:") else "")


def whatif_lines(doc: dict) -> list[tuple[str, str]]:
    """The story of an ``attlens.whatif`` object as (label, text) lines: the
    prediction, the bound, the calibration, the edits, what the replay could
    not express, the waves changed. Shared by the terminal and Markdown."""
    before, after, g, b, cal = doc["before"], doc["after"], doc["gain"], doc["bound"], doc["calibration"]
    out = []
    if before.get("dispatch_ns") is not None and after.get("dispatch_ns") is not None:
        times = f"dispatch {fmt_ns(round(before['dispatch_ns']))} → {fmt_ns(round(after['dispatch_ns']))}"
    else:
        times = "dispatch time unknown"
    times += f" (replayed span {before['replayed_span_cycles']:,} → {after['replayed_span_cycles']:,} cycles)"
    if not doc["edits"]:
        out.append(("Predicted", f"{times}: no edit applied, this is the calibration replay"))
    else:
        out.append(("Predicted", f"{times}: {gain_text(g['share'])} (interval {interval_text(g['low'], g['high'])})"))
    at = fmt_ns(None if b.get("dispatch_ns") is None else round(b["dispatch_ns"]))
    if b.get("kind") == "stake" and b.get("binding"):
        out.append(("Bound", f"capped at the applied findings' cycles at stake ({at}): the replay alone went further"))
    elif b.get("kind") and b.get("binding"):
        out.append(("Bound", f"{BOUND_WORDS[b['kind']]} ({at}) holds the gain: no edit can make the kernel faster than it"))
    elif b.get("kind") == "stake":
        out.append(("Bound", f"the interval's high end is capped at the applied findings' cycles at stake ({at})"))
    elif b.get("kind"):
        out.append(("Bound", f"{BOUND_WORDS[b['kind']]}: {at}, not reached"))
    wr = cal["wave_residual"]
    out.append(("Calibration", f"no-change replay {cal['span_replayed_cycles']:,} vs traced {cal['span_traced_cycles']:,} cycles: "
                               f"residual {cal['span_residual']:+.1%} of the span ({'within' if cal['within'] else 'OUTSIDE'} the "
                               f"{cal['tolerance']:.0%} tolerance); per wave median {wr['median']:.1%}, p95 {wr['p95']:.1%}, max {wr['max']:.1%}"))
    if doc["edits"]:
        out.append(("Edits", "; ".join(edit_text(e) for e in doc["edits"]) + ("" if len(doc["edits"]) == 1 else ", replayed together")))
    for u in doc.get("unexpressible") or []:
        out.append(("Not predicted", f"{u['rule']}: {u['reason']}"))
    for note in doc.get("notes") or []:
        out.append(("Note", note))
    ch = doc["changed"]
    text = f"{ch['waves']:,} wave(s) with a different duration, {len(ch['pcs']):,} pc(s) with a different stall"
    if not ch["waves"] and before["replayed_span_cycles"] != after["replayed_span_cycles"]:
        text += "; the span changed through when waves start (each wave's own duration is unchanged)"
    out.append(("Changed", text))
    return out


def fmt_ns(ns) -> str:
    if ns is None:
        return "unknown"
    return f"{ns / 1000:,.2f} µs" if ns >= 1000 else f"{ns} ns"


def fmt_bytes(b) -> str:
    if b is None:
        return "unknown"
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= div:
            return f"{b / div:,.1f} {unit}"
    return f"{b:,.0f} B"


def bandwidth_share(bw) -> str | None:
    """The plan's achieved fraction of peak HBM bandwidth as it prints it: a
    range when a streaming kernel's two byte bounds differ, "≤" for a
    looping kernel's trace estimate (re-reads count), else one value; None
    when unavailable. The HTML report's script (report.js, bandwidthShare)
    and the sweep dashboard show the same text."""
    if bw is None or not bw.available or bw.fraction_of_peak is None:
        return None
    streaming = (bw.streaming_share or 0) >= 0.9
    if bw.fraction_of_peak_low is not None and abs(bw.fraction_of_peak_low - bw.fraction_of_peak) > 0.005 and streaming:
        return f"{bw.fraction_of_peak_low:.0%}–{bw.fraction_of_peak:.0%}"
    if bw.source == "trace" and not streaming:
        return f"≤ {bw.fraction_of_peak:.0%}"
    return f"{bw.fraction_of_peak:.0%}"


def header_lines(plan) -> list[str]:
    """The dispatch facts every finding stands on."""
    dd = plan.dispatch
    out = []
    if dd.get("workgroups"):
        out.append(f"Dispatch   {dd['workgroups']:,} workgroups × {dd['waves_per_workgroup']} waves = {dd['grid_waves']:,} waves on "
                   f"{dd.get('cus') or '?'} CUs ({dd.get('target') or 'target unknown'}{', ' + dd['product'] if dd.get('product') else ''}); "
                   f"{dd['traced_waves']:,} traced ({dd.get('traced') or 'SEs unknown'}); duration {fmt_ns(dd.get('duration_ns'))}"
                   + (f" ({dd['duration_source'].split(':')[0]})" if dd.get("duration_source") else ""))
    else:
        out.append(f"Dispatch   grid unknown (no kernel_trace.csv row); {dd['traced_waves']:,} traced waves")
    o = dd["occupancy"]
    vi = o.get("vgpr_inputs") or {}
    if o.get("theoretical_waves_per_simd") is not None:
        vg = ""
        if vi:
            rep = f"reported {vi['reported_vgprs']}" if vi.get("reported_vgprs") is not None else "no reported count"
            vg = f"; VGPRs: {rep}, ISA scan {vi['isa_registers']} → {vi['registers_used']} used ({vi['rule']}) → {vi['allocated']} allocated (granule {vi['granule']})"
        out.append(f"Occupancy  {o['theoretical_waves_per_simd']} waves/SIMD theoretical (limit {', '.join(o['limiters'])}), "
                   f"{o['observed_max_waves_per_simd']} observed on the traced CU{vg}; LDS {o.get('lds_bytes')} B")
    for w in (plan.dispatch_facts.warnings if getattr(plan, "dispatch_facts", None) is not None else []):
        out.append(f"Check      {w}")
    for c in dd.get("kernel_candidates") or []:
        if c.get("picked"):
            out.append(f"Kernel     picked kernel id {c['kernel_id']} among kernels sharing the name ({c['where']}; see notes)")
            break
    bw = plan.bandwidth
    if bw is not None:
        if bw.available and bw.fraction_of_peak is None:
            out.append(f"Bandwidth  {fmt_bytes(bw.bytes_moved)} requested in {fmt_ns(bw.duration_ns)} = {bw.requested_gbps:,.0f} GB/s, above the "
                       f"{bw.peak_gbps:,.0f} GB/s HBM peak: re-read from L2/MALL, the HBM share needs PMC counters")
        elif bw.available:
            rng = bandwidth_share(bw)
            out.append(f"Bandwidth  {fmt_bytes(bw.bytes_moved)} {'(PMC)' if bw.source == 'pmc' else 'requested (trace estimate)'} in {fmt_ns(bw.duration_ns)} "
                       f"= {bw.achieved_gbps:,.0f} GB/s: {rng} of the {bw.peak_gbps:,.0f} GB/s HBM peak"
                       + (" (looping kernel: data re-read from L2 counts too, an upper bound)" if bw.source == "trace" and (bw.streaming_share or 0) < 0.9 else ""))
        else:
            out.append(f"Bandwidth  unavailable: {bw.reason}")
    lp = plan.loops
    if lp is not None:
        it = [x for x in lp.loops if x.iterated]
        odd = lp.unexplained_repeats()
        if not lp.loops and not odd:
            out.append("Loops      none: straight-line code (no backward branch, no pc repeats in a wave)")
        elif not lp.loops:
            out.append(f"Loops      no backward branch decoded, but {len(odd)} pc(s) repeat within a wave (pcs {odd[0]}–{odd[-1]}): treated as a loop")
        else:
            desc = "; ".join(f"loop {x.id} pcs {x.first_pc}–{x.branch_pc}: " + (f"{fmt_value('t', x.trips_mean)} trips/entry ({x.trips_min}–{x.trips_max}), {x.entries:,} entries"
                                                                               if x.iterated else "never iterated") for x in lp.loops[:4])
            out.append(f"Loops      {len(it)} of {len(lp.loops)} iterated: {desc}")
    return out


def top_findings_lines(plan, count: int = 3) -> list[str]:
    """The first findings of a plan, one line each (the ``analyze`` summary block)."""
    return [f"{f.severity:<4} {f.title} [{f.rule}]" + (f" — {f.share_of_cycles:.1%} of traced wave-cycles at stake" if f.kind == "performance" else "")
            + (f"; {predicted_label(f)}" if predicted_label(f) else "")
            for f in plan.findings[:count]]


def verdict_sentence(plan) -> str:
    """The plan's verdict in one sentence: ``plan.verdict`` when the plan has
    one (its ``sentence``), else its first finding as the one line the
    Markdown report has always led with."""
    v = getattr(plan, "verdict", None)
    if v is not None:
        sentence = v.get("sentence") if isinstance(v, dict) else getattr(v, "sentence", None)
        if sentence is None and hasattr(v, "to_dict"):
            sentence = v.to_dict().get("sentence")
        if sentence:
            return str(sentence)
    if not plan.findings:
        return "No rule fired: no pattern above its threshold (attlens rules lists them)."
    f = plan.findings[0]
    stake = f", {f.share_of_cycles:.1%} of traced wave-cycles at stake" if f.kind == "performance" else ""
    return f"{f.severity}: {f.title} [{f.rule}]{stake}."



def reason_mix(ps: dict | None, k: int = 3) -> str:
    """``WAITCNT 89% · ALU_DEPENDENCY 11%`` of a ``pc_samples`` object (shares of its stalled samples)."""
    if not ps or not ps.get("samples"):
        return ""
    if ps.get("stalled") is None:
        return "(no issue bit: host-trap)"
    if not ps["stalled"]:
        return "issued only"
    items = list(ps["reasons"].items())
    text = " · ".join(f"{r} {v / ps['stalled']:.0%}" for r, v in items[:k]) + (f" · +{len(items) - k}" if len(items) > k else "")
    return f"{text} (of {ps['stalled']:,} stalled)"


def pc_sampling_summary(d: dict) -> list[tuple[str, str]]:
    """The PC samples of a capture in a few lines (``(text, kind)``, kind
    ``line``, ``warn`` or ``note``) from the ``pc_sampling`` object of
    ``attlens.analyze``: source, join, counts, why waves stalled."""
    j, smp, src = d["join"], d["samples"], d["source"]
    out = [(f"{src['path']} ({src['format']}, {', '.join(src['methods'])})", "line")]
    if j["mode"] == "none":
        out.append((f"not joined: {j['reason']}", "warn"))
    else:
        out.append((f"joined by {j['mode']}, scope {j['scope']}, confidence {j['confidence']:.2f}: {j['reason']}", "line"))
        left = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in smp["excluded"].items() if v)
        out.append((f"{smp['joined']:,} of {smp['in_file']:,} samples joined" + (f" (left out: {left})" if left else ""), "line"))
        if d["stalled"] is not None and d["stalled"]:
            mix = " · ".join(f"{k} {v:.0%}" for k, v in list(d["reason_shares"].items())[:4])
            out.append((f"why waves stalled (of {d['stalled']:,} stalled samples, {d['issued']:,} issued): {mix}", "line"))
        elif d["stalled"] is None and smp["joined"]:
            out.append(("host-trap samples: where waves were, not whether or why they stalled", "line"))
    out += [(x, "note") for x in d["notes"]]
    return out
