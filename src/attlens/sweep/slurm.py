"""The Slurm engine (``--engine slurm``): one job array per submission.

``sweep run --engine slurm`` writes ``DIR/slurm/array-<k>.json`` (the jobs,
in task order) and ``DIR/slurm/array-<k>.sh``, a batch script with
``#SBATCH --array=0-<N-1>%<K>`` and one GPU per task (``--gres=gpu:1`` unless
``--gres`` says otherwise), and submits it with ``sbatch --parsable``. Each
array task runs ``python -m attlens.sweep.worker slurm-task array-<k>.json
$SLURM_ARRAY_TASK_ID``: one job, with its retries and backoff, on the GPU
Slurm gave it (Slurm sets ``ROCR_VISIBLE_DEVICES``/``CUDA_VISIBLE_DEVICES``
for a GPU gres; attlens leaves them as they are and records the GPU from
``SLURM_JOB_GPUS``). The task writes only in its job's folder; the manifest
is updated by the submitting side: ``sweep status`` (and ``sweep run --wait``)
asks ``squeue`` which tasks are still queued or running (``sacct`` too when
accounting is enabled) and folds in the attempt records and results of the
tasks that ended. A task that ended without a record (node lost, time limit,
scancel before start) leaves its job pending for the next ``sweep run``.

Requirements: the sweep folder on a file system the nodes share, the same
Python (``sys.executable`` of the submitting process) and attlens on every
node, and the submitting environment exported to the tasks (sbatch's default
``--export=ALL``).
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import EngineUnavailable, UsageError
from attlens.fsutil import write_atomic
from attlens.sweep import job as jobmod
from attlens.sweep.run import Session, ingest
from attlens.sweep.spec import Job

SUBMISSION_SCHEMA = "attlens.sweep_slurm_submission"
QUEUED = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING", "SIGNALING", "STAGE_OUT")
_SAFE = re.compile(r"^[A-Za-z0-9_.:=,%@/+-]+$")


@dataclass
class SlurmOptions:
    partition: str | None = None
    max_parallel: int | None = None
    gres: str = "gpu:1"
    extra: list[str] = field(default_factory=list)
    wait: bool = False
    poll: float = 2.0


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise EngineUnavailable(f"{name} not found on PATH: the slurm engine needs a Slurm client", hint="run on a Slurm login node")
    return path


def time_limit_minutes(jobs: list[Job]) -> int:
    """Enough for the slowest job: every attempt may use its timeout for the
    profile run and again for the analysis, plus the backoffs and 5 minutes."""
    worst = 0.0
    for j in jobs:
        backoffs = sum(jobmod.backoff_delay(j, k) for k in range(1, j.retries + 1))
        worst = max(worst, (j.retries + 1) * 2 * j.timeout + backoffs)
    return int(math.ceil(worst / 60.0)) + 5


def array_script(root: Path, sub_path: Path, n: int, jobs: list[Job], opts: SlurmOptions) -> str:
    for name, v in (("--partition", opts.partition), ("--gres", opts.gres)):
        if v is not None and not _SAFE.match(v):
            raise UsageError(f"{name} {v!r}: only letters, digits and _.:=,%@/+- are allowed")
    array = f"0-{n - 1}" + (f"%{opts.max_parallel}" if opts.max_parallel else "")
    lines = ["#!/bin/bash",
             f"# attlens sweep: {n} job(s) of {root} (docs/sweep.md); one job per array task",
             "#SBATCH --job-name=attlens-sweep",
             f"#SBATCH --array={array}",
             "#SBATCH --ntasks=1",
             f"#SBATCH --time={time_limit_minutes(jobs)}"]
    if opts.gres and opts.gres != "none":
        lines.append(f"#SBATCH --gres={opts.gres}")
    if opts.partition:
        lines.append(f"#SBATCH --partition={opts.partition}")
    lines += ["", f"exec {shlex.quote(sys.executable)} -m attlens.sweep.worker slurm-task {shlex.quote(str(sub_path))} \"$SLURM_ARRAY_TASK_ID\"", ""]
    return "\n".join(lines)


def submit(s: Session, names: list[str], opts: SlurmOptions) -> dict:
    sbatch = _tool("sbatch")
    sdir = s.root / "slurm"
    (sdir / "logs").mkdir(parents=True, exist_ok=True)
    k = 1
    while (sdir / f"array-{k}.json").exists():
        k += 1
    sub_path, script_path = sdir / f"array-{k}.json", sdir / f"array-{k}.sh"
    jobs = [s.jobs[n] for n in names]
    write_atomic(sub_path, json.dumps({"schema": SUBMISSION_SCHEMA, "schema_version": 1, "root": str(s.root),
                                       "jobs": [j.to_dict() for j in jobs], "created_at": time.time()}, indent=1))
    write_atomic(script_path, array_script(s.root, sub_path, len(jobs), jobs, opts))
    argv = [sbatch, "--parsable", f"--output={sdir / 'logs' / '%A_%a.out'}", *opts.extra, str(script_path)]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EngineUnavailable(f"sbatch did not run: {exc}") from None
    out = p.stdout.strip()
    m = re.match(r"^(\d+)", out)
    if p.returncode != 0 or not m:
        err = (p.stderr.strip().splitlines() or [out or f"exit {p.returncode}"])[-1]
        raise EngineUnavailable(f"sbatch refused the array: {err}", hint=f"the script is {script_path}")
    array_id = m.group(1)
    s.manifest.add_slurm_array(array_id, str(script_path.relative_to(s.root)), names)
    return {"array_id": array_id, "tasks": len(names), "script": str(script_path), "submission": str(sub_path)}


# --------------------------------------------------------------------------- scheduler state


def _run(argv: list[str]) -> str | None:
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def queue_states(array_ids: list[str]) -> dict[str, str]:
    """``"<array>_<task>" -> state`` of the tasks ``squeue`` still lists."""
    if not array_ids or shutil.which("squeue") is None:
        return {}
    out = _run(["squeue", "-h", "-r", "-j", ",".join(array_ids), "-o", "%i|%T"]) or ""
    states = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 2 and re.match(r"^\d+_\d+$", parts[0]):
            states[parts[0]] = parts[1]
    return states


def accounting_states(array_ids: list[str]) -> dict[str, str]:
    """``"<array>_<task>" -> state`` from ``sacct`` (empty when accounting is off)."""
    if not array_ids or shutil.which("sacct") is None:
        return {}
    out = _run(["sacct", "-n", "-P", "-X", "-j", ",".join(array_ids), "-o", "JobID,State"]) or ""
    states = {}
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) == 2 and re.match(r"^\d+_\d+$", parts[0]):
            states[parts[0]] = parts[1].split()[0]
    return states


def refresh(m, fold: bool = True) -> dict[str, str]:
    """Fold the ended array tasks' records into the manifest (each task once;
    ``fold=False``: only read, while another process drives the sweep);
    returns job -> Slurm state of its latest task (``squeue``, else ``sacct``,
    else ``ENDED`` once it left the queue)."""
    arrays = [a["array_id"] for a in m.slurm_arrays()]
    queued = queue_states(arrays)
    acct = accounting_states(arrays)
    jobs = {j["job_id"]: j for j in m.jobs()}
    for task, name in (m.open_slurm_tasks() if fold else []):
        j = jobs.get(name)
        q = queued.get(task)
        if q in QUEUED:
            if q == "RUNNING" and j is not None and j["state"] != "running" and j["slurm_job"] == task:
                m.set_state([name], "running")
            continue
        if j is not None and j["slurm_job"] == task:  # a newer task of the job supersedes this one
            how = acct.get(task) or "not in squeue; no accounting"
            new = ingest(m.root, m, j, lost_error=f"Slurm task {task} ended without a result ({how})")
            if new == "pending" and not m.attempts(name):
                m.set_state([name], "failed", error=f"Slurm task {task} ended without starting the job ({how}); see slurm/logs/{task}.out")
        m.fold_slurm_task(task)
    return {j["job_id"]: queued.get(j["slurm_job"]) or acct.get(j["slurm_job"]) or "ENDED" for j in m.jobs() if j["slurm_job"]}


def run_slurm(s: Session, opts: SlurmOptions, progress, only: set[str] | None = None) -> dict | None:
    """Submit the jobs still to run (not those already queued); with
    ``opts.wait``, follow the array until every task left the queue."""
    _tool("sbatch")
    states = refresh(s.manifest)
    queued = {name for name, st in states.items() if st in QUEUED}
    todo = [n for n in s.todo(only) if n not in queued]
    info = None
    if todo:
        info = submit(s, todo, opts)
        progress.event(f"submitted {info['tasks']} job(s) as Slurm array {info['array_id']} ({info['script']})")
    elif queued:
        progress.event(f"{len(queued)} job(s) already queued in Slurm; nothing new to submit")
    if opts.wait:
        while True:
            states = refresh(s.manifest)
            c = s.manifest.counts()
            progress.set_counts(done=c["done"], failed=c["failed"], analyzing=0)
            if not any(st in QUEUED for st in states.values()):
                break
            time.sleep(opts.poll)
    return info


# --------------------------------------------------------------------------- the array task


def run_task(submission: str, index: int) -> int:
    """One array task: job ``index`` of the submission, with its retries."""
    from attlens.errors import AttlensError, EXIT_PROFILER_FAILED

    sub = jobmod.read_json(Path(submission))
    if not isinstance(sub, dict) or sub.get("schema") != SUBMISSION_SCHEMA or not 0 <= index < len(sub.get("jobs") or []):
        print(f"attlens: error: {submission}: no job {index} in this submission", file=sys.stderr)
        return 2
    root = Path(sub["root"])
    job = Job.from_dict(sub["jobs"][index])
    task = f"{os.environ.get('SLURM_ARRAY_JOB_ID', '?')}_{os.environ.get('SLURM_ARRAY_TASK_ID', index)}"
    gpu = os.environ.get("SLURM_JOB_GPUS") or os.environ.get("SLURM_STEP_GPUS") or os.environ.get("ROCR_VISIBLE_DEVICES")

    def stop(signum, frame):  # scancel / time limit: end the job's tree (jobmod.wait), record it
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    failures = 0
    while True:
        a = jobmod.start(root, job, gpu, "slurm", pin=False)
        try:
            rc, timed_out = jobmod.wait(a)
        except KeyboardInterrupt:
            rec = jobmod.conclude(root, a, a.proc.poll() if a.proc else None, False)
            jobmod.write_record(a.dir, {**rec, "outcome": "interrupted", "error": "the Slurm task was stopped", "slurm_job": task})
            return 130
        rec = {**jobmod.conclude(root, a, rc, timed_out), "slurm_job": task}
        if rec["kind"] == "ok":
            try:
                jobmod.finish(root, a.dir)
            except AttlensError as exc:
                ended = time.time()
                jobmod.write_record(a.dir, {**rec, "outcome": "failed", "kind": "permanent", "error": f"analysis: {exc.message}",
                                            "exit_code": exc.exit_code, "ended_at": ended, "seconds": round(ended - rec["started_at"], 3)})
                return exc.exit_code
            ended = time.time()
            jobmod.write_record(a.dir, {**rec, "outcome": "done", "ended_at": ended, "seconds": round(ended - rec["started_at"], 3)})
            return 0
        if rec["kind"] == "transient" and failures < job.retries:
            failures += 1
            delay = jobmod.backoff_delay(job, failures)
            jobmod.write_record(a.dir, {**rec, "outcome": "retry", "retry_in": delay})
            time.sleep(delay)
            continue
        jobmod.write_record(a.dir, {**rec, "outcome": "failed"})
        return rec["exit_code"] if isinstance(rec["exit_code"], int) and rec["exit_code"] > 0 else EXIT_PROFILER_FAILED
