"""Running a child program so that a timeout or Ctrl-C ends it *and* every
process it started: the child leads its own process group, and the whole
group is signalled (SIGTERM, then SIGKILL after a grace period).

Used by the capture workflow (rocprofv3 and the program under it) and by
sweeps (one ``attlens profile`` per job)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

GRACE_SECONDS = 5.0


class GroupTimeout(Exception):
    """The child did not finish in time; its process group was ended."""

    def __init__(self, seconds: float):
        super().__init__(f"did not finish within {seconds:g} s")
        self.seconds = seconds


def end_group(proc: subprocess.Popen, grace: float = GRACE_SECONDS) -> None:
    """SIGTERM the child's process group, wait up to ``grace`` s, then SIGKILL it."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_alive(proc.pid):
                return
            time.sleep(0.05)
    proc.poll()


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def run_group(argv: list[str], *, timeout: float | None, stdout=None, stderr=None, cwd=None, env=None,
              grace: float = GRACE_SECONDS) -> int:
    """Run ``argv`` (a list, no shell) in a new process group and return its
    exit status. On timeout the whole group is ended and :class:`GroupTimeout`
    raised; on KeyboardInterrupt the group is ended and the interrupt re-raised.
    ``OSError`` (program missing, not executable) propagates."""
    proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                            start_new_session=True)
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        end_group(proc, grace)
        raise GroupTimeout(timeout or 0) from None
    except BaseException:
        end_group(proc, grace)
        raise
    # The leader exited; children it left behind in the group are ended too,
    # so no orphan keeps a GPU or an output file busy.
    if _group_alive(proc.pid):
        end_group(proc, grace)
    return rc
