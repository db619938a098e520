"""``attlens sweep report``: every job (or capture) side by side.

``dashboard.html``: one offline page in the report's look (report.css,
docs/report.md conventions): a Content-Security-Policy that allows only the
page's own script (by hash), no network, and every string from a trace or a
sweep file inside one ``<script type="application/json">`` block
(:func:`attlens.report.html.json_for_script`), put in the document with
``textContent`` only. Each row links to its capture's HTML report.

``FINDINGS.md`` beside it: which kernels are grid-starved, bandwidth-bound,
issue-bound — read from the plan's findings by rule id (:data:`CATEGORIES`),
so a rule added to attlens later lands in its category without a change
here; a category no rule of this attlens can detect says so — and the top
finding of each job, the failed jobs and the capture-health notes.

Input: a sweep folder (rows from its manifest: nothing is analyzed again),
or any folder of captures (each analyzed, its report written into
``<dashboard>-reports/`` beside the dashboard; never into the input).
"""

from __future__ import annotations

import html
import os
import re
import shlex
from pathlib import Path

from attlens import __version__
from attlens.jsondoc import header
from attlens.errors import AttlensError, InputNotFound, OutputRefused, UsageError

REPORT_SCHEMA = "attlens.sweep_report"

# category id, heading, what it means, rule ids that belong to it (re.search)
CATEGORIES = (
    ("grid-starved", "Grid-starved", "the grid does not give every CU (or SIMD) enough waves to hide latency",
     re.compile(r"grid[-_]?(starv|limit)|starv")),
    ("bandwidth-bound", "Bandwidth-bound", "the kernel moves memory near the hardware's peak bandwidth: only moving fewer bytes helps",
     re.compile(r"bandwidth")),
    ("issue-bound", "Issue-bound", "the waves are busy issuing instructions: fewer or cheaper instructions help, not more latency hiding",
     re.compile(r"issue[-_]?(bound|limit)")),
)


# --------------------------------------------------------------------------- rows


def _sweep_rows(root: Path, out: Path) -> tuple[list[dict], dict]:
    from attlens.sweep.manifest import Manifest

    m = Manifest.open(root)
    try:
        jobs = m.jobs()
        meta = {"source": "sweep", "dir": str(root), "sweep_file": m.meta("sweep_file"), "engine": m.meta("engine"), "counts": m.counts()}
    finally:
        m.close()
    from attlens.sweep.job import discovery_dir

    rows = []
    for j in jobs:
        spec = j["spec"] or {}
        capture = root / j["capture"] if j["capture"] else None
        rows.append({
            "job": j["job_id"],
            "state": j["state"],
            "attempts": j["attempts"],
            "exit_code": j["exit_code"],
            "error": j["error"],
            "seconds": j["seconds"],
            "gpu": j["gpu"],
            "tags": spec.get("tags") or [],
            "shape_label": spec.get("shape"),
            "capture": j["capture"],
            "href": _link(root / j["report"], out) if j["report"] else None,
            "log": _link(root / "jobs" / j["job_id"] / "job.log", out),
            "summary": j["summary"],
            "reproduce": _plan_command(capture, discovery_dir(root / j["attempt_dir"]) if j["attempt_dir"] else None),
        })
    return rows, meta


def _plan_command(capture: Path | None, rocprof_dir) -> str | None:
    """The ``attlens plan`` command that reads what the row's analysis read
    (a sweep job: its discovery run's outputs as ``--rocprof-dir``), so its
    duration and bandwidth are the row's."""
    if capture is None:
        return None
    cmd = ["attlens", "plan", str(capture)] + (["--rocprof-dir", str(rocprof_dir)] if rocprof_dir else [])
    return " ".join(shlex.quote(x) for x in cmd)


def _analyze_one(args) -> dict:
    cap, report_path, rocprof_dir = args
    from attlens.sweep.summary import analyze_capture

    try:
        return {"summary": analyze_capture(Path(cap), Path(report_path), rocprof_dir=rocprof_dir), "error": None}
    except AttlensError as exc:
        return {"summary": None, "error": exc.message}


def _capture_rows(folder: Path, out: Path, rocprof_dir) -> tuple[list[dict], dict]:
    from attlens.model.locate import resolve_capture_dirs

    caps = [c for c in resolve_capture_dirs(folder, all_captures=True) if "empty_shells" not in c.relative_to(folder).parts]
    reports = out.parent / f"{out.stem}-reports"
    names: set[str] = set()
    work = []
    for c in caps:
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", c.relative_to(folder).as_posix() if c != folder else c.name).strip("._")[:120] or "capture"
        name, k = base, 2
        while name in names:
            name, k = f"{base}-{k}", k + 1
        names.add(name)
        work.append((str(c), str(reports / f"{name}.html"), rocprof_dir))
    results = _map(_analyze_one, work)
    rows = []
    for (cap, rpath, _), res in zip(work, results):
        ok = res["summary"] is not None
        rows.append({
            "job": Path(cap).relative_to(folder).as_posix() if Path(cap) != folder else Path(cap).name,
            "state": "done" if ok else "failed",
            "attempts": None, "exit_code": None, "error": res["error"], "seconds": None, "gpu": None, "tags": [], "shape_label": None,
            "capture": cap,
            "href": _link(Path(rpath), out) if ok else None,
            "log": None,
            "summary": res["summary"],
            "reproduce": _plan_command(Path(cap), rocprof_dir),
        })
    return rows, {"source": "captures", "dir": str(folder), "sweep_file": None, "engine": None,
                  "counts": {"done": sum(r["state"] == "done" for r in rows), "failed": sum(r["state"] == "failed" for r in rows)}}


def _map(fn, work: list) -> list:
    """Analyze captures on the CPUs (one process each, at most one per core)."""
    n = min(len(work), os.cpu_count() or 1)
    if n <= 1:
        return [fn(w) for w in work]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=n) as ex:
        return list(ex.map(fn, work))


def _link(target: Path, out: Path) -> str:
    return Path(os.path.relpath(Path(target).resolve(), Path(out).resolve().parent)).as_posix()


# --------------------------------------------------------------------------- findings


def categorize(rows: list[dict]) -> list[dict]:
    """Per category: the rule ids of this attlens that belong to it, and the
    jobs whose plan has a finding of one of them."""
    from attlens.analysis.plan import load_rules

    registered = sorted(load_rules())
    out = []
    for cid, title, meaning, rx in CATEGORIES:
        rules = [r for r in registered if rx.search(r)]
        hits = []
        for r in rows:
            s = r.get("summary") or {}
            for f in s.get("findings") or []:
                if rx.search(f["rule"]):
                    hits.append({"job": r["job"], "kernel": s.get("kernel"), "shape": s.get("shape"), "rule": f["rule"], "title": f["title"],
                                 "severity": f["severity"], "share": f.get("share"), "bandwidth_fraction": s.get("bandwidth_fraction")})
                    break
        out.append({"id": cid, "title": title, "meaning": meaning, "rules": rules, "jobs": hits})
    return out


def findings_markdown(rows: list[dict], cats: list[dict], meta: dict) -> str:
    from attlens.report.markdown import _code, _pct, _table, _text

    analyzed = [r for r in rows if r.get("summary") and r["summary"].get("att_available")]
    lines = ["# Sweep findings", ""]
    c = meta.get("counts") or {}
    src = f"sweep folder {_code(meta['dir'])}" if meta["source"] == "sweep" else f"captures under {_code(meta['dir'])}"
    lines += [f"{len(rows)} job(s) from the {src}: {c.get('done', 0)} done, {c.get('failed', 0)} failed"
              + (f", {c.get('pending', 0) + c.get('running', 0)} not finished" if meta["source"] == "sweep" else "")
              + f"; {len(analyzed)} with an analyzed capture. Generated by attlens {__version__}; the table is in the dashboard beside this file.", ""]
    for cat in cats:
        lines += [f"## {cat['title']}", "", f"_{_text(cat['meaning'])}._", ""]
        if not cat["rules"]:
            lines += ["No rule of this attlens detects this yet (none of its rule ids matches the category), so this list is empty "
                      "whatever the kernels do; it fills in when such a rule exists.", ""]
            continue
        rules = ", ".join(_code(r) for r in cat["rules"])
        if not cat["jobs"]:
            lines += [f"None of the {len(analyzed)} analyzed kernel(s) (rules: {rules}).", ""]
            continue
        rows_md = [[_text(h["job"]), _code(h["kernel"] or "", table=True), _text(h["shape"] or ""), f"{h['severity']}", _text(h["title"]),
                    _pct(h["share"]), _pct(h["bandwidth_fraction"])] for h in cat["jobs"]]
        lines += _table(["job", "kernel", "shape", "severity", "finding", "cycles at stake", "bandwidth fraction"], rows_md, "lllllrr")
        lines += ["", f"Rules: {rules}.", ""]
    lines += ["## Top finding of each job", ""]
    tops = []
    for r in rows:
        s = r.get("summary") or {}
        f = s.get("top_finding")
        if r["state"] != "done" or not s:
            continue
        tops.append([_text(r["job"]), _code(s.get("kernel") or "", table=True), _text(s.get("shape") or ""),
                     "no performance rule fired" if f is None else f"{f['severity']} {_text(f['title'])} ({_code(f['rule'], table=True)})",
                     _pct(None if f is None else f.get("share")), _text((f or {}).get("predicted_text") or "—")])
    lines += (_table(["job", "kernel", "shape", "top finding", "cycles at stake", "predicted"], tops, "llllrl") if tops else ["No job finished."]) + [""]
    failed = [r for r in rows if r["state"] == "failed"]
    if failed:
        lines += ["## Failed", ""]
        lines += _table(["job", "attempts", "exit", "error"],
                        [[_text(r["job"]), "" if r["attempts"] is None else str(r["attempts"]), "" if r["exit_code"] is None else str(r["exit_code"]),
                          _text(r["error"] or "")] for r in failed], "lrrl")
        lines.append("")
    unhealthy = [r for r in rows if (r.get("summary") or {}).get("health", {}).get("issues")]
    if unhealthy:
        lines += ["## Capture health", "", "Notes that qualify the numbers of these jobs (capture findings and analysis warnings):", ""]
        for r in unhealthy:
            h = r["summary"]["health"]
            lines.append(f"- {_text(r['job'])} ({h['status']}): " + "; ".join(_text(i) for i in h["issues"]))
        lines.append("")
    return "\n".join(lines)


# --------------------------------------------------------------------------- page


def render_dashboard_text(rows: list[dict], cats: list[dict], meta: dict, title: str) -> str:
    from attlens.report.html import _csp, _fill, _template, json_for_script

    script = _template("sweep.js")
    if "</script" in script.lower():  # pragma: no cover - template invariant
        raise ValueError("sweep.js must not contain </script")
    from attlens.analysis.stalls import CLASS_IDS

    data = {**header(REPORT_SCHEMA), "title": title, "meta": meta, "rows": rows,
            "categories": cats, "class_order": CLASS_IDS}
    return _fill(_template("sweep.html"), {
        "TITLE": html.escape(title, quote=True),
        "CSP": html.escape(_csp(script), quote=True),
        "STYLE": _template("report.css") + _template("sweep.css"),
        "SCRIPT": script,
        "DATA": json_for_script(data),
    })


def _inside(child: Path, parent: Path) -> bool:
    try:
        child.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


def report(path, output=None, rocprof_dir=None) -> dict:
    """Write the dashboard and FINDINGS.md; return the ``attlens.sweep_report`` object."""
    from attlens.fsutil import write_atomic
    from attlens.sweep.manifest import Manifest

    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p}: no such file or directory")
    if not p.is_dir():
        raise InputNotFound(f"{p}: not a directory (give a sweep folder or a folder of captures)")
    is_sweep = Manifest.exists(p)
    out = Path(output) if output else (p / "dashboard.html" if is_sweep else Path("dashboard.html"))
    if out.suffix.lower() not in (".html", ".htm"):
        raise UsageError(f"{out}: the dashboard is an HTML file (-o NAME.html)")
    if out.is_dir():
        raise OutputRefused(f"{out} is a directory; give a file name (-o {out / 'dashboard.html'})")
    reports = out.parent / f"{out.stem}-reports"  # where a folder of captures gets its reports (_capture_rows)
    if not is_sweep and (_inside(out, p) or _inside(reports, p)):
        raise OutputRefused(f"{out} (or its reports in {reports}) is inside the input folder {p}: outputs never land in an input",
                            hint="pass -o OUTSIDE/dashboard.html")
    if is_sweep:
        rows, meta = _sweep_rows(p.resolve(), out)
        title = f"attlens sweep — {p.resolve().name}"
    else:
        rows, meta = _capture_rows(p.resolve(), out, rocprof_dir)
        title = f"attlens captures — {p.resolve().name}"
    cats = categorize(rows)
    findings = out.with_name("FINDINGS.md")
    write_atomic(out, render_dashboard_text(rows, cats, meta, title))
    write_atomic(findings, findings_markdown(rows, cats, meta))
    return {**header(REPORT_SCHEMA), "dashboard": str(out), "findings_md": str(findings),
            "meta": meta, "categories": cats, "rows": rows}
