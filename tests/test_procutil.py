"""A timeout ends the child and every process it started (its process group)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from attlens.procutil import GroupTimeout, run_group


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); read its state.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_timeout_ends_grandchildren(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    # The child starts a grandchild that sleeps, writes its pid, then hangs itself.
    script = (
        "import subprocess, sys, time\n"
        f"g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "time.sleep(300)\n"
    )
    t0 = time.monotonic()
    with pytest.raises(GroupTimeout):
        run_group([sys.executable, "-c", script], timeout=2.0, grace=1.0)
    assert time.monotonic() - t0 < 30
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_exit_status_and_orphans(tmp_path):
    pidfile = tmp_path / "orphan.pid"
    # The leader exits 3 at once, leaving a sleeping process in its group behind.
    script = (
        "import subprocess, sys\n"
        f"g = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
        f"open({str(pidfile)!r}, 'w').write(str(g.pid))\n"
        "sys.exit(3)\n"
    )
    assert run_group([sys.executable, "-c", script], timeout=30, grace=1.0) == 3
    orphan = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(orphan)
