"""What every engine shares: opening the sweep folder (one driver at a time),
resuming what a previous run left, and the bookkeeping of attempts (retry
policy, manifest transactions, attempt records).

Resume (docs/sweep.md): done jobs are skipped; failed jobs get a fresh retry
budget; a job a killed sweep left *running* is looked at on disk first — its
attempt folder may hold a complete ``result.json`` (the sweep died after the
job finished but before recording it: it is recorded, not redone); otherwise
the attempt is marked *lost*, its leftover processes (same host, same pid
and start time) are ended, and the job runs again.
"""

from __future__ import annotations

import fcntl
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import SweepBusy
from attlens.sweep import job as jobmod
from attlens.sweep.manifest import Manifest
from attlens.sweep.proc import end_tree_pid
from attlens.sweep.spec import Job, Sweep

LOCK_FILE = ".sweep.lock"


class FolderLock:
    """An exclusive ``flock`` on ``DIR/.sweep.lock``; the kernel releases it
    when the holder dies, so a killed sweep never leaves the folder locked."""

    def __init__(self, root: Path):
        self.path = Path(root) / LOCK_FILE
        self.fd: int | None = None

    def acquire(self, wait: bool = False) -> bool:
        from attlens.fsutil import make_dirs

        make_dirs(self.path.parent)  # a sweep folder that cannot be made: exit 9
        try:
            # never through a symlink, never blocking on a FIFO; a folder or device in its place is refused
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o644)
        except OSError as exc:
            raise self._damaged(exc.strerror or str(exc)) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise self._damaged("not a regular file")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError as exc:
            os.close(fd)
            raise self._damaged(exc.strerror or str(exc)) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        return True

    def _damaged(self, why: str):
        from attlens.errors import SweepDamaged

        return SweepDamaged(f"{self.path}: the sweep folder's lock file cannot be used ({why})",
                            hint=f"no attlens sweep holds a folder through anything but a regular file: remove it (rm -r {self.path}) and run again")

    def holder(self) -> str:
        try:
            return self.path.read_text().strip() or "?"
        except OSError:
            return "?"

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


@dataclass
class Session:
    """An opened sweep folder for one ``sweep run``."""

    root: Path
    manifest: Manifest
    lock: FolderLock
    jobs: dict[str, Job]
    engine: str
    failures: dict[str, int] = field(default_factory=dict)  # transient failures in this run
    notes: list[str] = field(default_factory=list)
    progress: object = None  # attlens.sweep.progress.Progress of the engine, for the events below
    finished_count: dict[str, int] = field(default_factory=lambda: {"done": 0, "failed": 0})

    def close(self) -> None:
        self.manifest.close()
        self.lock.release()

    def todo(self, only: set[str] | None = None) -> list[str]:
        """Jobs of the sweep file still to run, in file order."""
        states = {j["job_id"]: j["state"] for j in self.manifest.jobs()}
        return [n for n in self.jobs if states.get(n) in ("pending", "running") and (only is None or n in only)]

    # ------------------------------------------------------------------ bookkeeping
    def started(self, a: jobmod.Attempt) -> None:
        self.manifest.begin_attempt(a.job.name, a.n, a.engine, jobmod.host(), a.gpu, a.started_at,
                                    a.proc.pid if a.proc else None, a.pid_start)

    def _event(self, text: str, state: str | None = None) -> None:
        if state is not None:
            self.finished_count[state] += 1
        if self.progress is not None:
            if state is not None:
                self.progress.set_counts(**self.finished_count)
            self.progress.event(text)

    def profiled(self, rec: dict) -> tuple[str, float]:
        """After the profile step: ``("analyze", 0)``, ``("retry", delay)`` or
        ``("failed", 0)``; the manifest and the attempt record say the same."""
        name, job = rec["job"], self.jobs[rec["job"]]
        if rec["kind"] == "ok":
            self.manifest.end_attempt(name, rec["attempt"], {**rec, "outcome": "analyzing"})
            where = f"{rec['host']} " if rec.get("engine") != "local" else ""
            self._event(f"{name}: profiled on {where}GPU {rec['gpu']} in {rec['seconds']:.1f} s (attempt {rec['attempt']}); analyzing")
            return "analyze", 0.0
        if rec["kind"] == "transient":
            n = self.failures.get(name, 0) + 1
            self.failures[name] = n
            if n <= job.retries:
                delay = jobmod.backoff_delay(job, n)
                rec = {**rec, "outcome": "retry", "retry_in": delay}
                jobmod.write_record(self.root / rec["attempt_dir"], rec)
                self.manifest.end_attempt(name, rec["attempt"], rec, job_state="pending")
                self._event(f"{name}: attempt {rec['attempt']} failed ({rec['error']}); retry in {delay:g} s")
                return "retry", delay
        rec = {**rec, "outcome": "failed"}
        jobmod.write_record(self.root / rec["attempt_dir"], rec)
        self.manifest.end_attempt(name, rec["attempt"], rec, job_state="failed")
        self._event(f"{name}: FAILED (attempt {rec['attempt']}, exit {rec['exit_code']}): {rec['error']}", "failed")
        return "failed", 0.0

    def finished(self, rec: dict, result: dict) -> None:
        ended = time.time()
        rec = {**rec, "outcome": "done", "ended_at": ended, "seconds": round(ended - rec["started_at"], 3)}
        jobmod.write_record(self.root / rec["attempt_dir"], rec)
        self.manifest.record_done(rec["job"], rec["attempt"], rec, result)
        self._event(f"{rec['job']}: done ({result['summary'].get('kernel') or 'no capture'})", "done")

    def analysis_failed(self, rec: dict, error: str, exit_code: int | None) -> None:
        ended = time.time()
        rec = {**rec, "outcome": "failed", "kind": "permanent", "error": f"analysis: {error}", "exit_code": exit_code,
               "ended_at": ended, "seconds": round(ended - rec["started_at"], 3)}
        jobmod.write_record(self.root / rec["attempt_dir"], rec)
        self.manifest.end_attempt(rec["job"], rec["attempt"], rec, job_state="failed")
        self._event(f"{rec['job']}: FAILED in analysis: {error}", "failed")

    def interrupted(self, rec: dict) -> None:
        rec = {**rec, "outcome": "interrupted", "error": "the sweep was stopped", "ended_at": rec.get("ended_at") or time.time()}
        jobmod.write_record(self.root / rec["attempt_dir"], rec)
        self.manifest.end_attempt(rec["job"], rec["attempt"], rec, job_state="pending")


def _lock(root: Path) -> FolderLock:
    lock = FolderLock(root)
    if not lock.acquire():
        raise SweepBusy(f"{root}: another attlens sweep run (pid {lock.holder()}) is using this folder",
                        hint="wait for it, or stop it; a killed sweep releases the folder by itself")
    return lock


def open_session(root: Path, sweep: Sweep, engine: str, overrides: dict | None = None, only: set[str] | None = None) -> Session:
    """Lock DIR, create/open its manifest, add the sweep file's jobs, resume."""
    from attlens.errors import UsageError

    root = Path(root).resolve()
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root}: exists and is not a folder")
    if root.is_dir() and not os.path.lexists(Manifest.path(root)) and not (root / jobmod.JOBS_DIR).is_dir() \
            and any(p.name != LOCK_FILE for p in root.iterdir()):
        raise UsageError(f"{root}: exists, is not empty and holds no sweep", hint="give a new folder (or the folder of an earlier run of this sweep)")
    lock = _lock(root)
    try:
        manifest = Manifest.open(root, create=True)
        jobs = {}
        for j in sweep.jobs:
            for k, v in (overrides or {}).items():
                if v is not None:
                    setattr(j, k, v)
            jobs[j.name] = j
        if only:
            unknown = sorted(only - set(jobs))
            if unknown:
                raise UsageError(f"--only: no job named {', '.join(unknown)} in {sweep.path}")
        changes = manifest.sync_jobs(sweep.jobs)
        manifest.set_meta(sweep_file=str(sweep.path), sweep_sha256=sweep.sha256, engine=engine, last_run_at=time.time())
        s = Session(root, manifest, lock, jobs, engine)
        if manifest.created:
            rebuilt = rebuild(s)
            if rebuilt:
                s.notes.append(f"a new manifest: {rebuilt} job(s) taken from their folders under {root / jobmod.JOBS_DIR} (done jobs are not run again)")
        if changes["changed"]:
            s.notes.append(f"{len(changes['changed'])} job(s) changed in the sweep file and run again: {', '.join(changes['changed'][:10])}")
        recover(s)
        failed = [j["job_id"] for j in manifest.jobs() if j["state"] == "failed" and j["job_id"] in jobs and (not only or j["job_id"] in only)]
        if failed:
            manifest.set_state(failed, "pending")
            s.notes.append(f"{len(failed)} failed job(s) retried")
        return s
    except BaseException:
        lock.release()
        raise


def rebuild(s: Session) -> int:
    """A new manifest in a folder that already holds job folders (the old
    manifest was damaged and moved aside): fold every job's attempt folders
    in, so a job with a complete result is done, not profiled again. Returns
    the jobs that had folders."""
    n = 0
    for j in s.manifest.jobs():
        if jobmod.attempt_dirs(s.root, j["job_id"]):
            ingest(s.root, s.manifest, j, lost_error="its attempt was not recorded (the manifest was rebuilt from the job folders)")
            n += 1
    return n


def recover(s: Session) -> None:
    """Settle what a killed run left: results on disk are recorded, leftover
    processes ended, unrecorded attempts marked lost."""
    m = s.manifest
    me = jobmod.host()
    for a in m.running_attempts():
        if a["engine"] == "slurm":
            continue  # a Slurm task may still be running: its array decides (slurm.refresh)
        where = {"host": a["host"], "pid": a["pid"], "pid_start": a["pid_start"]}
        if not a["pid"]:  # started by a Ray worker: the attempt folder says where
            where = jobmod.read_json(jobmod.job_dir(s.root, a["job_id"]) / f"{jobmod.ATTEMPT_PREFIX}{a['attempt']}" / "process.json") or {}
        if where.get("host") == me and where.get("pid"):
            if end_tree_pid(where["pid"], where.get("pid_start")):
                s.notes.append(f"ended job {a['job_id']} (attempt {a['attempt']}, pid {where['pid']}) left running by a stopped sweep")
    for j in m.jobs():
        if j["state"] != "running" or j["engine"] == "slurm":
            continue
        ingest(s.root, m, j, lost_error="the sweep running this attempt stopped before recording it")


def ingest(root: Path, m: Manifest, j: dict, lost_error: str) -> str:
    """Fold a job's attempt folders into the manifest; returns the job's new
    state. An attempt with a complete result makes the job done; one with a
    final attempt.json is recorded as it says; one with neither is lost."""
    name = j["job_id"]
    known = {a["attempt"]: a for a in m.attempts(name)}
    done = None
    last: tuple[int, dict] | None = None  # the newest attempt of this spec and how it ended
    for adir in jobmod.attempt_dirs(root, name):
        n = jobmod.attempt_number(adir)
        spec = jobmod.read_json(adir / "job.json") or {}
        if spec.get("spec_hash") != j["spec_hash"]:
            continue  # an attempt of an earlier version of the job
        result = jobmod.read_result(root, adir, j["spec_hash"])
        rec = jobmod.read_json(adir / "attempt.json") or {}
        base = {"engine": spec.get("engine") or "local", "host": spec.get("host"), "gpu": spec.get("gpu"),
                "started_at": rec.get("started_at") or (known.get(n) or {}).get("started_at") or _mtime(adir / "job.json"),
                "attempt_dir": jobmod.rel(root, adir)}
        if result is not None:
            done = (n, {**base, **rec, "outcome": "done"}, result)
            continue
        if rec.get("outcome") in ("retry", "failed", "interrupted"):
            rec = {**base, **rec}
            if known.get(n, {}).get("outcome") != rec["outcome"]:
                m.end_attempt(name, n, rec)
        else:
            rec = {**base, "outcome": "lost", "error": lost_error, "ended_at": time.time()}
            if known.get(n, {}).get("outcome") != "lost":
                m.end_attempt(name, n, rec)
        last = (n, rec)
    if done is not None:
        n, rec, result = done
        if rec.get("ended_at") is None:
            rec["ended_at"] = result.get("finished_at")
            rec["seconds"] = round(rec["ended_at"] - rec["started_at"], 3) if rec.get("started_at") else None
        m.record_done(name, n, rec, result)
        return "done"
    if last is not None and last[1]["outcome"] == "failed":
        m.end_attempt(name, last[0], last[1], job_state="failed")
        return "failed"
    m.set_state([name], "pending")
    return "pending"


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return time.time()
