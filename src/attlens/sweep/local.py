"""The local engine: this machine's GPUs, one job per GPU at a time.

One loop, no threads: it starts ``attlens profile`` on every free GPU (the
job pinned to it, :mod:`attlens.sweep.gpus`), polls the running ones, ends a
job's whole process tree when it runs out of time, schedules retries after
their backoff without holding a GPU, and runs the analysis of finished
captures (report + headline figures) as separate processes on the CPUs while
the GPUs profile the next jobs. Ctrl-C or SIGTERM ends every running job's
tree and records the attempts as interrupted (the jobs run again next time).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections import deque
from dataclasses import dataclass

from attlens.sweep import job as jobmod
from attlens.sweep.proc import end_tree, start_time
from attlens.sweep.run import Session

POLL_SECONDS = 0.1


@dataclass
class _Analysis:
    rec: dict
    proc: subprocess.Popen | None
    t0: float
    deadline: float


def _ended(proc: subprocess.Popen, deadline: float) -> tuple[int | None, bool] | None:
    """(exit code, timed out) once the process ended or ran out of time (its
    tree is then ended); None while it runs."""
    rc = proc.poll()
    if rc is not None:
        return rc, False
    if time.monotonic() > deadline:
        end_tree(proc)
        return proc.poll(), True
    return None


def default_analysis_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def run_local(s: Session, gpus: list[str], progress, only: set[str] | None = None, analysis_workers: int | None = None) -> None:
    workers = analysis_workers or default_analysis_workers()
    s.progress = progress
    queue: deque[str] = deque(s.todo(only))
    not_before: dict[str, float] = {}
    running: dict[str, jobmod.Attempt] = {}  # gpu -> attempt
    waiting: deque[dict] = deque()  # profiled, waiting for an analysis slot
    analyzing: list[_Analysis] = []

    def next_ready(now: float) -> str | None:
        for name in queue:
            if not_before.get(name, 0.0) <= now:
                queue.remove(name)
                return name
        return None

    def after_profile(rec: dict) -> None:
        decision, delay = s.profiled(rec)
        if decision == "analyze":
            waiting.append(rec)
        elif decision == "retry":
            not_before[rec["job"]] = time.monotonic() + delay
            queue.append(rec["job"])

    def after_analysis(an: _Analysis, rc: int | None, timed_out: bool) -> None:
        rec = an.rec
        adir = s.root / rec["attempt_dir"]
        result = jobmod.read_result(s.root, adir, s.jobs[rec["job"]].spec_hash) if rc == 0 and not timed_out else None
        if result is not None:
            s.finished(rec, result)
            return
        if timed_out:
            err = f"did not finish within {s.jobs[rec['job']].timeout:g} s"
        else:
            try:
                lines = [ln for ln in (adir / "analysis.log").read_text(errors="replace").splitlines() if ln.strip()]
            except OSError:
                lines = []
            err = lines[-1].strip() if lines else f"exited with {rc}"
        s.analysis_failed(rec, err, rc)

    def start_analysis(rec: dict) -> None:
        adir = s.root / rec["attempt_dir"]
        with (adir / "analysis.log").open("wb") as log:
            try:
                proc = subprocess.Popen(jobmod.finish_command(s.root, adir), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
            except OSError as exc:
                s.analysis_failed(rec, f"cannot start: {exc}", None)
                return
        s.manifest.set_attempt_process(rec["job"], rec["attempt"], proc.pid, start_time(proc.pid))
        t0 = time.monotonic()
        analyzing.append(_Analysis(rec, proc, t0, t0 + s.jobs[rec["job"]].timeout))

    try:
        while queue or running or waiting or analyzing:
            now = time.monotonic()
            for gpu in gpus:
                if gpu in running:
                    continue
                name = next_ready(now)
                if name is None:
                    break
                a = jobmod.start(s.root, s.jobs[name], gpu, "local")
                if a.proc is None:  # could not even start: a permanent failure
                    s.started(a)
                    after_profile(jobmod.conclude(s.root, a, None, False))
                    continue
                s.started(a)
                running[gpu] = a
                progress.slot(f"GPU {gpu}", f"{name} (attempt {a.n})")
            for gpu, a in list(running.items()):
                ended = _ended(a.proc, a.deadline)
                if ended is not None:
                    del running[gpu]
                    progress.slot(f"GPU {gpu}", None)
                    after_profile(jobmod.conclude(s.root, a, *ended))
            while waiting and len(analyzing) < workers:
                start_analysis(waiting.popleft())
            for an in list(analyzing):
                ended = _ended(an.proc, an.deadline)
                if ended is not None:
                    analyzing.remove(an)
                    after_analysis(an, *ended)
            progress.set_counts(analyzing=len(analyzing) + len(waiting))
            time.sleep(POLL_SECONDS)
    except BaseException:
        # Ctrl-C / SIGTERM: end every job's tree; the attempts are recorded as
        # interrupted and their jobs run again next time.
        for gpu, a in running.items():
            end_tree(a.proc)
            rec = jobmod.conclude(s.root, a, a.proc.poll(), False)
            s.interrupted(rec)
        for an in analyzing:
            end_tree(an.proc)
            s.interrupted(an.rec)
        for rec in waiting:
            s.interrupted(rec)
        raise
