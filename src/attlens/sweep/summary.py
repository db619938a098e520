"""One row of the sweep dashboard: the headline figures of one analyzed
capture, kept in the manifest (``jobs.summary``) and shown side by side.

Every value comes from the analysis and the plan of the capture (the same
numbers as ``attlens analyze --json`` / ``attlens plan --json``); a value that
could not be determined is ``None`` (null in JSON), never 0.

- ``duration_us``: the duration ``attlens plan`` uses (µs; analysis/dispatch_facts.py):
  the median of the run's dispatches of the kernel with the same grid, or
  the capture's own span when they disagree; else the traced dispatch's own
  row / the mean of the kernel's dispatches in the ``*kernel_trace.csv``
  beside the capture (a sweep job: its discovery run), with its source.
- ``dominant_class`` / ``stall_mix``: stall cycles per taxonomy class over all
  traced waves, as shares of the total stall (docs/taxonomy.md).
- ``occupancy``: theoretical waves per SIMD and its limiter(s) / the observed
  peak on the traced CU.
- ``top_finding``: the plan's first finding about the kernel (a whole-dispatch
  limit such as grid starvation or the bandwidth ceiling, else the
  highest-priority performance finding; when neither fired, the plan's note
  on the largest stall class);
  capture findings (few waves, prologue only, no source lines, ...) go to
  ``health.issues`` (with a partial load and a noisy pair of dispatches),
  the analysis warnings to ``health.notes``. Status: ``bad`` (partial input
  or a HIGH capture finding), ``warn`` (any other issue), ``ok``.
- ``bandwidth_fraction``: achieved / peak HBM bandwidth from the plan's
  bandwidth estimate (PMC bytes when attached, else the trace's estimate;
  docs/analysis.md) when bytes, duration and peak are known; otherwise
  unknown (None), never 0. ``bandwidth_text``: the same as ``attlens plan``
  prints it (``80%``, ``≤ 156%`` for a looping kernel whose trace estimate
  counts re-reads, ``40%–45%`` for a streaming kernel's two byte bounds).
"""

from __future__ import annotations

from pathlib import Path

from attlens.jsondoc import header

SUMMARY_SCHEMA = "attlens.sweep_summary"
NOISY_SHARE = 0.05  # two dispatches whose class shares differ more than this are flagged


def _r(x, nd: int = 6):
    return None if x is None else round(float(x), nd)


def _finding(f) -> dict:
    # share of cycles at stake: only performance findings claim cycles
    from attlens.report.text import predicted_label

    return {"rule": f.rule, "kind": f.kind, "severity": f.severity, "title": f.title, "confidence": f.confidence,
            "share": _r(f.share_of_cycles) if f.kind == "performance" else None, "predicted_text": predicted_label(f)}


def bandwidth_fraction(plan) -> tuple[float | None, str | None]:
    """Achieved / peak HBM bandwidth of the plan's estimate, with its source."""
    bw = getattr(plan, "bandwidth", None)
    if bw is None or not bw.available or bw.fraction_of_peak is None:
        return None, None
    where = "PMC counters" if bw.source == "pmc" else "trace estimate (upper bound)"
    return float(bw.fraction_of_peak), f"{where}: {bw.achieved_gbps:,.0f} of {bw.peak_gbps:,.0f} GB/s"


def bandwidth_text(plan) -> str | None:
    """The same fraction of peak as ``attlens plan`` prints it (a range, or
    "≤" for a looping kernel's trace estimate): the dashboard shows this."""
    from attlens.report.text import bandwidth_share

    return bandwidth_share(getattr(plan, "bandwidth", None))


def _duration_from_trace(dispatch) -> tuple[float | None, str | None]:
    """Mean duration of the kernel's dispatches in the kernel trace the loader used."""
    from attlens.errors import AttlensError
    from attlens.io.rocprof_csv import read_kernel_trace

    for f in getattr(dispatch, "rocprof_files", None) or []:
        if not str(f).endswith("kernel_trace.csv"):
            continue
        try:
            rows = [r for r in read_kernel_trace(Path(f)) if r["kernel_name"] == dispatch.kernel_name]
        except (AttlensError, OSError):
            continue
        ds = [r["end_ns"] - r["start_ns"] for r in rows if r["start_ns"] is not None and r["end_ns"] is not None and r["end_ns"] >= r["start_ns"]]
        if ds:
            return sum(ds) / len(ds) / 1000.0, f"{Path(f).name}: mean of {len(ds)} dispatch(es)"
    return None, None


def _shape_text(res) -> str | None:
    if res.grid is None:
        return None
    g = "×".join(map(str, res.grid))
    w = "×".join(map(str, res.workgroup)) if res.workgroup else "?"
    return f"grid {g}, workgroup {w}"


def summarize(result, plan, profile_doc: dict | None = None, shape: str | None = None) -> dict:
    """The dashboard row of one analyzed capture."""
    d = result.dispatch
    b = result.breakdown
    o = result.occupancy
    total_stall = b.total_stall
    mix = {c: _r(v / total_stall) for c, v in b.by_class_stall.items() if v and total_stall}
    top = max(((c, v) for c, v in b.by_class_stall.items() if v), key=lambda kv: kv[1], default=None)
    # the plan's order: dispatch limits first, then performance; else its note
    # on the largest stall class (why no advice is supported)
    lead = [f for f in plan.findings if f.kind in ("dispatch", "performance")] or [f for f in plan.findings if f.kind == "note"]
    capture_findings = [f for f in plan.findings if f.kind == "capture"]
    bw, bw_src = bandwidth_fraction(plan)
    duration, dsrc = _duration_from_trace(d)
    if d.resources.duration_ns is not None:
        duration, dsrc = d.resources.duration_ns / 1000.0, d.resources.sources.get("duration_ns")
    facts = getattr(plan, "dispatch_facts", None)
    if facts is not None and facts.duration.ns is not None:
        # the duration attlens plan prints: the median of the run's same-grid dispatches (or the capture's span)
        duration, dsrc = facts.duration.ns / 1000.0, f"{facts.duration.source}: {facts.duration.detail}"
    k = (profile_doc or {}).get("kernel") or {}
    if duration is None and k.get("average_us") is not None:
        duration, dsrc = float(k["average_us"]), f"attlens profile kernel table: mean of {k.get('dispatch_count') or k.get('calls')} dispatch(es)"
    issues = [f"{f.rule}: {f.title}" for f in capture_findings]
    if d.partial:
        issues.append(f"partial: some input was skipped ({len(result.warnings)} warning(s))")
    noise = (profile_doc or {}).get("noise_check")
    if noise and (noise.get("max_class_share_difference") or 0) > NOISY_SHARE:
        issues.append(f"noisy: stall class shares of dispatches {noise.get('dispatches')} differ by up to {noise['max_class_share_difference']:.1%}")
    bad = d.partial or any(f.severity == "HIGH" for f in capture_findings)
    return {
        **header(SUMMARY_SCHEMA),
        "att_available": True,
        "kernel": d.kernel_name or None,
        "shape": shape if shape is not None else _shape_text(d.resources),
        "grid": list(d.resources.grid) if d.resources.grid else None,
        "workgroup": list(d.resources.workgroup) if d.resources.workgroup else None,
        "target": d.arch.target,
        "dispatch_id": d.resources.dispatch_id,
        "duration_us": _r(duration, 3),
        "duration_source": dsrc,
        "waves": d.waves.count,
        "total_cycles": b.total_latency + b.total_idle,
        "latency": b.total_latency,
        "stall": total_stall,
        "idle": b.total_idle,
        "stall_share": _r(total_stall / b.total_latency) if b.total_latency else None,
        "dominant_class": None if top is None else top[0],
        "dominant_class_share": None if top is None or not total_stall else _r(top[1] / total_stall),
        "stall_mix": mix,
        "occupancy": {"theoretical": o.theoretical_waves_per_simd, "observed": o.observed_max_waves_per_simd_traced_cu, "limiters": list(o.limiters)},
        "top_finding": _finding(lead[0]) if lead else None,
        "findings": [_finding(f) for f in plan.findings],
        "bandwidth_fraction": _r(bw),
        "bandwidth_source": bw_src,
        "bandwidth_text": bandwidth_text(plan),
        "health": {"status": "bad" if bad else ("warn" if issues else "ok"), "issues": issues, "notes": list(result.warnings) + list(result.notes)},
    }


def summarize_without_capture(profile_doc: dict, shape: str | None = None) -> dict:
    """The row of a job whose target offers no thread trace (timing only)."""
    k = profile_doc.get("kernel") or {}
    res = k.get("resources") or {}  # the attlens.kernels row shape
    return {
        **header(SUMMARY_SCHEMA),
        "att_available": False,
        "kernel": k.get("name"),
        "shape": shape,
        "grid": res.get("grid"),
        "workgroup": res.get("workgroup"),
        "target": profile_doc.get("target"),
        "dispatch_id": None,
        "duration_us": _r(k.get("average_us"), 3),
        "duration_source": "discovery run" if k.get("average_us") is not None else None,
        "waves": None, "total_cycles": None, "latency": None, "stall": None, "idle": None, "stall_share": None,
        "dominant_class": None, "dominant_class_share": None, "stall_mix": {},
        "occupancy": {"theoretical": None, "observed": None, "limiters": []},
        "top_finding": None, "findings": [], "bandwidth_fraction": None, "bandwidth_source": None, "bandwidth_text": None,
        "health": {"status": "bad", "issues": [profile_doc.get("att_unavailable_reason") or "no thread trace on this target"], "notes": []},
    }


def analyze_capture(capture: Path, report_path: Path | None, profile_doc: dict | None = None, shape: str | None = None,
                    rocprof_dir=None) -> dict:
    """Load and analyze one capture, write its HTML report (when asked) and
    return its dashboard row."""
    from attlens.analysis.analyze import analyze
    from attlens.analysis.plan import make_plan
    from attlens.analysis.waves import analyze_waves
    from attlens.model.loader import load
    from attlens.report.html import render_html

    r = analyze(load(capture, rocprof_dir=rocprof_dir))
    waves = analyze_waves(r)
    plan = make_plan(r, waves=waves)
    if report_path is not None:
        render_html(r, plan, waves, report_path)
    return summarize(r, plan, profile_doc, shape)
