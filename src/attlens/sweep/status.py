"""``attlens sweep status``: the manifest as one JSON object
(``attlens.sweep_status``, docs/sweep.md) and as a terminal table."""

from __future__ import annotations

from pathlib import Path

from attlens.jsondoc import header

STATUS_SCHEMA = "attlens.sweep_status"


def status_doc(m, scheduler: dict | None = None) -> dict:
    """``scheduler``: job name -> the Slurm state of its array task (Slurm sweeps)."""
    attempts: dict[str, list] = {}
    for a in m.attempts():
        attempts.setdefault(a["job_id"], []).append(
            {k: a[k] for k in ("attempt", "outcome", "exit_code", "error", "engine", "host", "gpu", "started_at", "ended_at", "seconds")})
    jobs = []
    for j in m.jobs():
        spec = j["spec"] or {}
        jobs.append({
            "job": j["job_id"],
            "state": j["state"],
            "attempts": j["attempts"],
            "engine": j["engine"],
            "host": j["host"],
            "gpu": j["gpu"],
            "started_at": j["started_at"],
            "ended_at": j["ended_at"],
            "seconds": j["seconds"],
            "exit_code": j["exit_code"],
            "error": j["error"],
            "kernel_regex": spec.get("kernel"),
            "shape": spec.get("shape"),
            "tags": spec.get("tags") or [],
            "spec_hash": j["spec_hash"],
            "folder": f"jobs/{j['job_id']}",
            "log": f"jobs/{j['job_id']}/job.log",
            "attempt_dir": j["attempt_dir"],
            "capture": j["capture"],
            "report": j["report"],
            "profile_json": j["profile_json"],
            "slurm_job": j["slurm_job"],
            "slurm_state": (scheduler or {}).get(j["job_id"]),
            "summary": j["summary"],
            "attempt_history": attempts.get(j["job_id"], []),
        })
    return {
        **header(STATUS_SCHEMA),
        "dir": str(m.root),
        "sweep_file": m.meta("sweep_file"),
        "engine": m.meta("engine"),
        "counts": m.counts(),
        "jobs": jobs,
    }


def _fmt_s(x) -> str:
    return "" if x is None else f"{x:.1f}"


def render_status(doc: dict, console) -> None:
    from rich.markup import escape
    from rich.table import Table

    c = doc["counts"]
    total = sum(c.values())
    console.print(f"[bold]{escape(doc['dir'])}[/bold]: {total} job(s): {c['done']} done, {c['failed']} failed, {c['running']} running, "
                  f"{c['pending']} pending (engine {escape(str(doc['engine']))})")
    slurm = any(j["slurm_job"] for j in doc["jobs"])
    t = Table(show_lines=False)
    for col in ("job", "state", "attempts", "GPU", "seconds", "exit", "kernel", "result / error"):
        t.add_column(col, justify="right" if col in ("attempts", "seconds", "exit") else "left", overflow="fold")
    if slurm:
        t.add_column("slurm")
    style = {"done": "green", "failed": "red", "running": "yellow", "pending": "dim"}
    for j in doc["jobs"]:
        s = j["summary"] or {}
        note = j["report"] or j["error"] or ""
        row = [escape(j["job"]), f"[{style[j['state']]}]{j['state']}[/]", str(j["attempts"]), escape(str(j["gpu"] or "")), _fmt_s(j["seconds"]),
               "" if j["exit_code"] is None else str(j["exit_code"]), escape(s.get("kernel") or j["kernel_regex"] or ""), escape(note)]
        if slurm:
            row.append(escape(" ".join(x for x in (j["slurm_job"], j["slurm_state"]) if x)))
        t.add_row(*row)
    console.print(t)
    failed = [j for j in doc["jobs"] if j["state"] == "failed"]
    for j in failed:
        console.print(f"[red]failed[/red] {escape(j['job'])}: log {escape(str(Path(doc['dir']) / j['log']))}")
