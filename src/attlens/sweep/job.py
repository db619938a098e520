"""One job's attempts, the same for every engine.

Layout of a job's folder (``DIR/jobs/<name>/``)::

    job.log                  every attempt: command, GPU, exit, and its stderr
    attempt-<n>/job.json     the job spec and where the attempt ran
    attempt-<n>/profile/     the ``attlens profile --out`` folder (captures, logs)
    attempt-<n>/profile.json its ``--json`` output (or its ``attlens.error``)
    attempt-<n>/stderr.txt   its stderr, also appended to job.log
    attempt-<n>/process.json host, pid and start time of its profile run
    attempt-<n>/analysis.log the analysis step's output (local engine)
    attempt-<n>/report.html  the capture's HTML report
    attempt-<n>/result.json  written last: the attempt is complete
    attempt-<n>/attempt.json how the attempt ended (read back by resume and by
                             ``sweep status`` for Slurm tasks)

An attempt number is taken by creating its folder (``mkdir`` is atomic), so
two processes never share one, and nothing of an earlier attempt is
overwritten. A job is *done* only when ``result.json`` exists, and it is
written after the report: a killed sweep never leaves a half-done job
recorded as done.

Failure classes (docs/sweep.md): an exit that looks transient is retried
with backoff — rocprofv3 or the program failed or timed out (exit 14), the job
ran out of time, or was killed by a signal (OOM killer, node trouble).
Everything else is permanent: no rocprofv3 (10), no decoder (11), kernel or
iteration not found (12), no waves on the traced CU (13), usage errors (2),
unreadable captures (3–7) and internal errors (1).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from attlens.errors import EXIT_PROFILER_FAILED, AttlensError
from attlens.fsutil import write_atomic
from attlens.sweep.gpus import pin_env
from attlens.sweep.proc import end_tree, start_time
from attlens.sweep.spec import Job

ATTEMPT_PREFIX = "attempt-"
RESULT_SCHEMA = "attlens.sweep_result"
TRANSIENT_EXIT_CODES = frozenset({EXIT_PROFILER_FAILED})
OK_EXIT_CODES = frozenset({0, 8})  # 8: analysis printed, some input skipped (the row says so)
MAX_BACKOFF = 3600.0


def host() -> str:
    return socket.gethostname()


JOBS_DIR = "jobs"  # DIR/jobs/<name>/attempt-<n>/


def job_dir(root: Path, name: str) -> Path:
    return Path(root) / JOBS_DIR / name


def rel(root: Path, p) -> str | None:
    if p is None:
        return None
    try:
        return Path(p).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return str(p)


def backoff_delay(job: Job, failures: int) -> float:
    """Seconds before the next attempt after ``failures`` transient failures."""
    return min(job.backoff * (2 ** max(failures - 1, 0)), MAX_BACKOFF)


def attempt_number(path: Path) -> int | None:
    name = Path(path).name
    if name.startswith(ATTEMPT_PREFIX) and name[len(ATTEMPT_PREFIX):].isdigit():
        return int(name[len(ATTEMPT_PREFIX):])
    return None


def attempt_dirs(root: Path, name: str) -> list[Path]:
    d = job_dir(root, name)
    try:
        found = [p for p in d.iterdir() if p.is_dir() and attempt_number(p) is not None]
    except OSError:
        return []
    return sorted(found, key=attempt_number)


def new_attempt_dir(root: Path, job: Job, engine: str, gpu: str | None) -> tuple[int, Path]:
    d = job_dir(root, job.name)
    d.mkdir(parents=True, exist_ok=True)
    existing = [attempt_number(p) for p in attempt_dirs(root, job.name)]
    n = max(existing, default=0) + 1
    while True:
        adir = d / f"{ATTEMPT_PREFIX}{n}"
        try:
            adir.mkdir()
            break
        except FileExistsError:
            n += 1
    write_atomic(adir / "job.json", json.dumps({"job": job.to_dict(), "spec_hash": job.spec_hash, "attempt": n, "engine": engine,
                                                "host": host(), "gpu": gpu}, indent=1))
    return n, adir


def profile_command(job: Job, adir: Path) -> list[str]:
    return [sys.executable, "-m", "attlens", "profile", "--out", str(adir / "profile"), "--json", *job.profile_args(), "--", *job.argv]


def child_env(job: Job, gpu: str | None) -> dict:
    """The sweep's environment, the job's ``env``, then the GPU pinning (it wins)."""
    return pin_env({**os.environ, **job.env}, gpu)


@dataclass
class Attempt:
    """A started ``attlens profile`` run of one job."""

    job: Job
    n: int
    dir: Path
    gpu: str | None
    engine: str
    started_at: float
    t0: float
    proc: subprocess.Popen | None = None
    pid_start: str | None = None
    start_error: str | None = None  # the process could not be started

    @property
    def deadline(self) -> float:
        return self.t0 + self.job.timeout


def start(root: Path, job: Job, gpu: str | None, engine: str, attempt: tuple[int, Path] | None = None, pin: bool = True) -> Attempt:
    """Create the attempt's folder (unless ``attempt`` names one made by the
    driver) and start its ``attlens profile`` run in a new process group
    (never waits). ``pin=False``: the scheduler already pinned the GPU (Slurm);
    ``gpu`` is only recorded."""
    n, adir = attempt if attempt is not None else new_attempt_dir(root, job, engine, gpu)
    argv = profile_command(job, adir)
    with (job_dir(root, job.name) / "job.log").open("a", encoding="utf-8") as log:
        log.write(f"=== attempt {n} on {host()} GPU {gpu if gpu is not None else '(as assigned by the scheduler)'} at "
                  f"{time.strftime('%Y-%m-%d %H:%M:%S')}: {' '.join(argv)} (cwd {job.cwd})\n")
    a = Attempt(job, n, adir, gpu, engine, time.time(), time.monotonic())
    try:
        with (adir / "profile.json").open("wb") as out, (adir / "stderr.txt").open("wb") as err:
            a.proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=job.cwd, env=child_env(job, gpu if pin else None),
                                      start_new_session=True)
        a.pid_start = start_time(a.proc.pid)
        # Where the job runs, for a later run to end it should this sweep (or
        # its Ray worker) die without doing so.
        write_atomic(adir / "process.json", json.dumps({"host": host(), "pid": a.proc.pid, "pid_start": a.pid_start}))
    except OSError as exc:
        a.start_error = f"cannot start the job: {exc.strerror or exc}" + (f" (cwd {job.cwd})" if not Path(job.cwd).is_dir() else "")
    return a


def wait(a: Attempt) -> tuple[int | None, bool]:
    """Block until the attempt ends or runs out of time; returns (exit code,
    timed out). Any interruption (Ctrl-C, a Ray cancel) ends its process tree."""
    if a.proc is None:
        return None, False
    try:
        rc = a.proc.wait(timeout=max(a.deadline - time.monotonic(), 0.01))
        return rc, False
    except subprocess.TimeoutExpired:
        end_tree(a.proc)
        return a.proc.poll(), True
    except BaseException:
        end_tree(a.proc)
        raise


def _error_text(a: Attempt, rc: int | None) -> str:
    try:
        doc = json.loads((a.dir / "profile.json").read_bytes() or b"null")
        if isinstance(doc, dict) and doc.get("schema") == "attlens.error":
            e = doc.get("error") or {}
            return str(e.get("message")) + (f" (hint: {e['hint']})" if e.get("hint") else "")
    except (OSError, ValueError):
        pass
    try:
        lines = [ln.strip() for ln in (a.dir / "stderr.txt").read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    return lines[-1] if lines else f"attlens profile exited with {rc} and printed nothing"


def conclude(root: Path, a: Attempt, rc: int | None, timed_out: bool) -> dict:
    """The attempt's record after its profile run: ``kind`` ok / transient /
    permanent, exit code, error. Appends its stderr to the job log."""
    ended = time.time()
    if a.start_error:
        kind, err = "permanent", a.start_error
    elif timed_out:
        kind, err = "transient", f"timed out after {a.job.timeout:g} s; the job's whole process tree was ended"
    elif rc in OK_EXIT_CODES:
        kind, err = "ok", None
    elif rc is not None and (rc < 0 or rc == 130):
        kind, err = "transient", f"attlens profile was killed by signal {-rc if rc < 0 else 2}"
    elif rc in TRANSIENT_EXIT_CODES:
        kind, err = "transient", _error_text(a, rc)
    else:
        kind, err = "permanent", _error_text(a, rc)
    try:
        text = (a.dir / "stderr.txt").read_text(errors="replace")
    except OSError:
        text = ""
    with (job_dir(root, a.job.name) / "job.log").open("a", encoding="utf-8") as log:
        log.write(text if not text or text.endswith("\n") else text + "\n")
        log.write(f"=== attempt {a.n}: exit {rc}{' (timed out)' if timed_out else ''} after {ended - a.started_at:.1f} s: {kind}"
                  f"{': ' + err if err else ''}\n")
    return {
        "job": a.job.name, "attempt": a.n, "attempt_dir": rel(root, a.dir), "engine": a.engine, "host": host(), "gpu": a.gpu,
        "pid": a.proc.pid if a.proc else None, "started_at": a.started_at, "ended_at": ended, "seconds": round(ended - a.started_at, 3),
        "exit_code": rc, "kind": kind, "error": err, "timed_out": timed_out,
    }


def write_record(adir: Path, rec: dict) -> None:
    """``attempt.json``: how the attempt ended (its final outcome)."""
    write_atomic(Path(adir) / "attempt.json", json.dumps(rec, indent=1, sort_keys=True))


def read_json(p: Path):
    try:
        return json.loads(Path(p).read_bytes())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- analysis step


def discovery_dir(adir: Path) -> Path | None:
    """The attempt's discovery run: its rocprofv3 outputs give the grid,
    workgroup and kernel duration that the ATT run's own outputs lack, so the
    capture is analyzed with them (``--rocprof-dir``)."""
    disc = Path(adir) / "profile" / "discovery"
    return disc if disc.is_dir() else None


def finish(root: Path, adir: Path) -> dict:
    """Analyze the attempt's best capture, write its report, then
    ``result.json`` (last). Raises :class:`AttlensError` when the capture
    cannot be analyzed."""
    from attlens.sweep.summary import analyze_capture, summarize_without_capture

    spec = read_json(adir / "job.json") or {}
    job = Job.from_dict(spec.get("job") or {})
    doc = read_json(adir / "profile.json")
    if not isinstance(doc, dict) or doc.get("schema") != "attlens.profile":
        raise AttlensError(f"{adir / 'profile.json'}: not the JSON output of attlens profile")
    best = doc.get("best_capture")
    report = None
    if best:
        report = adir / "report.html"
        summary = analyze_capture(Path(best), report, doc, job.shape, rocprof_dir=discovery_dir(adir))
    else:
        summary = summarize_without_capture(doc, job.shape)
    result = {
        "schema": RESULT_SCHEMA,
        "schema_version": 1,
        "job": job.name,
        "attempt": attempt_number(adir),
        "spec_hash": spec.get("spec_hash"),
        "attempt_dir": rel(root, adir),
        "capture": rel(root, best) if best else None,
        "report": rel(root, report),
        "profile_json": rel(root, adir / "profile.json"),
        "summary": summary,
        "finished_at": time.time(),
    }
    write_atomic(adir / "result.json", json.dumps(result, indent=1, sort_keys=True))
    return result


def read_result(root: Path, adir: Path, spec_hash: str | None) -> dict | None:
    """The attempt's result if it is complete and belongs to this spec."""
    r = read_json(Path(adir) / "result.json")
    if not isinstance(r, dict) or r.get("schema") != RESULT_SCHEMA or not isinstance(r.get("summary"), dict):
        return None
    if spec_hash is not None and r.get("spec_hash") != spec_hash:
        return None
    if r.get("report") and not (Path(root) / r["report"]).is_file():
        return None
    return r


def finish_command(root: Path, adir: Path) -> list[str]:
    return [sys.executable, "-m", "attlens.sweep.worker", "finish", str(root), str(adir)]
