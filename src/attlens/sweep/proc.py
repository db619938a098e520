"""Ending a job's whole process tree.

A job is ``attlens profile`` in its own process group (attlens.procutil); it
starts rocprofv3 in *another* group (procutil again), and a profiled program
may start more. Signalling the job's group alone would kill attlens and orphan
rocprofv3 and the program, still holding the GPU. So before signalling, the
tree under the job is read from ``/proc`` (parent links), and every process
group found in it is ended: SIGTERM, a grace period, SIGKILL.

A sweep killed with SIGKILL cannot end its jobs; the manifest keeps each
attempt's pid and the process start time (``/proc/<pid>/stat`` field 22), so
the next run ends a job left running by the dead sweep, and only if that pid
is still the same process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from attlens.procutil import GRACE_SECONDS, end_group


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot, as text (None: gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _state_and_parent(pid: int) -> tuple[str, int] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().decode("ascii", "replace").rsplit(")", 1)[-1].split()
        return fields[0], int(fields[1])
    except (OSError, ValueError, IndexError):
        return None


def alive(pid: int) -> bool:
    """Running (a zombie is not)."""
    st = _state_and_parent(pid)
    return st is not None and st[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit():
            continue
        st = _state_and_parent(int(name))
        if st is not None:
            children.setdefault(st[1], []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in out:
                out.append(c)
                todo.append(c)
    return [p for p in out if alive(p)]


def _groups(pids) -> set[int]:
    """Process groups of ``pids``, never the caller's own."""
    out = set()
    for p in pids:
        try:
            out.add(os.getpgid(p))
        except OSError:
            pass
    out.discard(os.getpgrp())
    return out


def _signal(groups, pids, sig) -> None:
    for g in groups:
        try:
            os.killpg(g, sig)
        except (ProcessLookupError, PermissionError):
            pass
    for p in pids:
        try:
            os.kill(p, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _wait_gone(pids, seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def end_tree(proc: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """End the job started as ``proc`` (leader of its own group) and every
    process below it, whatever group or session they moved to."""
    tree = descendants(proc.pid)
    others = _groups(tree) - {proc.pid}
    _signal(others, tree, signal.SIGTERM)
    end_group(proc, grace)  # the job's own group: SIGTERM, grace, SIGKILL
    left = _wait_gone(tree, grace)
    if left:
        _signal(_groups(left), left, signal.SIGKILL)
        _wait_gone(left, grace)


def end_tree_pid(pid: int, started: str | None, grace: float = GRACE_SECONDS) -> bool:
    """End the tree of a job a previous (killed) sweep left running, if ``pid``
    is still that process (same start time). Returns True if it was found."""
    if started is None or start_time(pid) != started or not alive(pid):
        return False
    tree = [pid, *descendants(pid)]
    groups = _groups(tree)
    _signal(groups, tree, signal.SIGTERM)
    left = _wait_gone(tree, grace)
    if left:
        _signal(_groups(left), left, signal.SIGKILL)
        _wait_gone(left, grace)
    return True
