"""The Ray engine (``--engine ray``, ``pip install -e '.[ray]'`` in the clone).

Each job's profile run is a Ray task asking for one GPU (``num_gpus=1``,
``num_cpus=0``: the GPU is the unit, as in the local engine); Ray picks the
node and the GPU, and the task pins the job to it (``ray.get_gpu_ids()``, see
:mod:`attlens.sweep.gpus`). The analysis of a finished capture is a CPU task
(``num_cpus=1``), so GPUs go on profiling while CPUs analyze. Ray's own task
retries are off: the sweep's retry policy (transient failures only, with
backoff) applies, and a task lost with its worker or node counts as a
transient failure.

``--address`` joins an existing cluster (the sweep folder must be on a file
system every node sees, and attlens installed on every node); without it a
local Ray is started with the sweep's GPUs declared as Ray GPU resources, and
stopped at the end. The driver keeps at most as many profile tasks in flight
as the cluster has GPUs, so *running* in the manifest means running.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections import deque
from pathlib import Path

from attlens.errors import EngineUnavailable
from attlens.sweep import job as jobmod
from attlens.sweep.run import Session
from attlens.sweep.spec import Job

POLL_SECONDS = 0.2


def profile_task(root: str, job: dict, attempt: int, adir: str, gpu_ids: list[str] | None) -> dict:
    """Runs on a Ray worker holding one GPU."""
    import ray

    ids = ray.get_gpu_ids()
    gpu = None
    if ids:
        k = int(float(ids[0]))
        gpu = gpu_ids[k] if gpu_ids and k < len(gpu_ids) else str(k)
    a = jobmod.start(Path(root), Job.from_dict(job), gpu, "ray", attempt=(attempt, Path(adir)))
    rc, timed_out = jobmod.wait(a)
    return jobmod.conclude(Path(root), a, rc, timed_out)


def finish_task(root: str, adir: str) -> dict:
    """Runs on a Ray worker holding one CPU."""
    from attlens.errors import AttlensError

    try:
        return {"result": jobmod.finish(Path(root), Path(adir)), "error": None, "exit_code": 0}
    except AttlensError as exc:
        return {"result": None, "error": exc.message, "exit_code": exc.exit_code}


def _ray():
    try:
        import ray
    except ImportError:
        raise EngineUnavailable("the ray engine needs Ray, which is not installed", hint="pip install 'ray>=2.9' (in the attlens clone: pip install -e '.[ray]')") from None
    return ray


def run_ray(s: Session, progress, only: set[str] | None = None, address: str | None = None, gpus: list[str] | None = None) -> None:
    ray = _ray()
    # Ray prints its own messages (worker and raylet notices) on the driver's
    # stdout, which belongs to the sweep's --json output: send them to stderr.
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        _run(ray, s, progress, only, address, gpus)
    finally:
        sys.stdout.flush()
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)


def _run(ray, s: Session, progress, only, address, gpus) -> None:
    started_here = False
    if not ray.is_initialized():
        try:
            if address:
                ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
            else:
                ray.init(num_gpus=len(gpus or []), num_cpus=os.cpu_count() or 1, include_dashboard=False, log_to_driver=False,
                         logging_level=logging.ERROR)
                started_here = True
        except Exception as exc:  # ConnectionError, RuntimeError ...: one line, documented code
            raise EngineUnavailable(f"cannot start or reach Ray{' at ' + address if address else ''}: {exc}") from None
    try:
        _drive(ray, s, progress, only, None if address else gpus)
    finally:
        if started_here:
            ray.shutdown()


def _drive(ray, s: Session, progress, only, gpu_ids) -> None:
    capacity = int(ray.cluster_resources().get("GPU", 0))
    if capacity < 1:
        raise EngineUnavailable("the Ray cluster has no GPU resource", hint="start it with GPUs (ray start --num-gpus N) or give --gpus")
    profile_remote = ray.remote(num_gpus=1, num_cpus=0, max_retries=0)(profile_task)
    finish_remote = ray.remote(num_cpus=1, max_retries=0)(finish_task)
    s.progress = progress
    queue: deque[str] = deque(s.todo(only))
    not_before: dict[str, float] = {}
    inflight: dict = {}  # ref -> ("profile", stub rec) | ("finish", rec)

    def submit_ready(now):
        profiling = sum(k == "profile" for k, _ in inflight.values())
        for name in list(queue):
            if profiling >= capacity:
                return
            if not_before.get(name, 0.0) > now:
                continue
            queue.remove(name)
            job = s.jobs[name]
            n, adir = jobmod.new_attempt_dir(s.root, job, "ray", None)
            stub = {"job": name, "attempt": n, "attempt_dir": jobmod.rel(s.root, adir), "engine": "ray", "host": None, "gpu": None,
                    "started_at": time.time(), "ended_at": None, "seconds": None, "exit_code": None}
            s.manifest.begin_attempt(name, n, "ray", None, None, stub["started_at"])
            ref = profile_remote.remote(str(s.root), job.to_dict(), n, str(adir), gpu_ids)
            inflight[ref] = ("profile", stub)
            profiling += 1
            progress.slot(name, f"attempt {n}")

    def on_profile(stub, rec):
        progress.slot(stub["job"], None)
        progress.slots.pop(stub["job"], None)
        decision, delay = s.profiled(rec)
        if decision == "analyze":
            inflight[finish_remote.remote(str(s.root), str(s.root / rec["attempt_dir"]))] = ("finish", rec)
        elif decision == "retry":
            not_before[rec["job"]] = time.monotonic() + delay
            queue.append(rec["job"])

    try:
        while queue or inflight:
            submit_ready(time.monotonic())
            progress.set_counts(analyzing=sum(k == "finish" for k, _ in inflight.values()))
            if not inflight:
                time.sleep(POLL_SECONDS)
                continue
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=POLL_SECONDS)
            for ref in ready:
                kind, rec = inflight.pop(ref)
                try:
                    out = ray.get(ref)
                    err = None
                except ray.exceptions.RayError as exc:  # the worker or its node died
                    out, err = None, f"Ray: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
                if kind == "profile":
                    if out is None:
                        ended = time.time()
                        out = {**rec, "kind": "transient", "error": err, "ended_at": ended, "seconds": round(ended - rec["started_at"], 3),
                               "timed_out": False}
                    on_profile(rec, out)
                elif out is not None and out["result"] is not None:
                    s.finished(rec, out["result"])
                else:
                    s.analysis_failed(rec, err or out["error"], None if out is None else out["exit_code"])
    except BaseException:
        # Ctrl-C / SIGTERM: a plain cancel interrupts each task, which ends its
        # job's process tree (jobmod.wait); the attempts are recorded as interrupted.
        for ref, (kind, rec) in inflight.items():
            try:
                ray.cancel(ref)
            except Exception:
                pass
        for ref, (kind, rec) in inflight.items():
            try:
                ray.wait([ref], timeout=10)
            except Exception:
                pass
            s.interrupted({**rec, "ended_at": time.time()})
        raise
