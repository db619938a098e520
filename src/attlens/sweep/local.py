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
from attlens.sweep.proc import end_tree
from attlens.sweep.run import Session

POLL_SECONDS = 0.1


@dataclass
class _Analysis:
    rec: dict
    proc: subprocess.Popen | None
    t0: float
    deadline: float


def default_analysis_workers() -> int:
    return max(1, (os.cpu_count() or 2) // 2)


def run_local(s: Session, gpus: list[str], progress, only: set[str] | None = None, analysis_workers: int | None = None) -> None:
    workers = analysis_workers or default_analysis_workers()
    queue: deque[str] = deque(s.todo(only))
    not_before: dict[str, float] = {}
    running: dict[str, jobmod.Attempt] = {}  # gpu -> attempt
    waiting: deque[dict] = deque()  # profiled, waiting for an analysis slot
    analyzing: list[_Analysis] = []
    counts = {"done": 0, "failed": 0}

    def count(state: str) -> None:
        counts[state] += 1
        progress.set_counts(done=counts["done"], failed=counts["failed"], analyzing=len(analyzing) + len(waiting))

    def next_ready(now: float) -> str | None:
        for name in queue:
            if not_before.get(name, 0.0) <= now:
                queue.remove(name)
                return name
        return None

    def after_profile(rec: dict, gpu: str) -> None:
        decision, delay = s.profiled(rec)
        if decision == "analyze":
            waiting.append(rec)
            progress.event(f"{rec['job']}: profiled on GPU {gpu} in {rec['seconds']:.1f} s (attempt {rec['attempt']}); analyzing")
        elif decision == "retry":
            not_before[rec["job"]] = time.monotonic() + delay
            queue.append(rec["job"])
            progress.event(f"{rec['job']}: attempt {rec['attempt']} failed ({rec['error']}); retry in {delay:g} s")
        else:
            count("failed")
            progress.event(f"{rec['job']}: FAILED (attempt {rec['attempt']}, exit {rec['exit_code']}): {rec['error']}")

    def after_analysis(an: _Analysis, rc: int | None, timed_out: bool) -> None:
        rec = an.rec
        adir = s.root / rec["attempt_dir"]
        result = jobmod.read_result(s.root, adir, s.jobs[rec["job"]].spec_hash) if rc == 0 and not timed_out else None
        if result is not None:
            s.finished(rec, result)
            count("done")
            progress.event(f"{rec['job']}: done ({result['summary'].get('kernel') or 'no capture'})")
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
        count("failed")
        progress.event(f"{rec['job']}: FAILED in analysis: {err}")

    def start_analysis(rec: dict) -> None:
        adir = s.root / rec["attempt_dir"]
        with (adir / "analysis.log").open("wb") as log:
            try:
                proc = subprocess.Popen(jobmod.finish_command(s.root, adir), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True)
            except OSError as exc:
                s.analysis_failed(rec, f"cannot start: {exc}", None)
                count("failed")
                return
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
                    after_profile(jobmod.conclude(s.root, a, None, False), gpu)
                    continue
                s.started(a)
                running[gpu] = a
                progress.slot(f"GPU {gpu}", f"{name} (attempt {a.n})")
            for gpu, a in list(running.items()):
                rc, timed_out = a.proc.poll(), False
                if rc is None and time.monotonic() > a.deadline:
                    end_tree(a.proc)
                    rc, timed_out = a.proc.poll(), True
                if rc is None and not timed_out:
                    continue
                del running[gpu]
                progress.slot(f"GPU {gpu}", None)
                after_profile(jobmod.conclude(s.root, a, rc, timed_out), gpu)
            while waiting and len(analyzing) < workers:
                start_analysis(waiting.popleft())
            for an in list(analyzing):
                rc, timed_out = an.proc.poll(), False
                if rc is None and time.monotonic() > an.deadline:
                    end_tree(an.proc)
                    rc, timed_out = an.proc.poll(), True
                if rc is None and not timed_out:
                    continue
                analyzing.remove(an)
                after_analysis(an, rc, timed_out)
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
