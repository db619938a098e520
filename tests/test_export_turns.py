"""Two processes formatting the export's chunks in turns (attlens.report.turns):
each item's bytes at the offset the item before ended, whichever process
made it; what the child gathered comes back; an error in either process is
raised in the parent and no process is left behind."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import numpy as np
import pytest

from attlens.report import turns

pytestmark = pytest.mark.skipif(not turns.usable(), reason="no safe fork here (not Linux, or other threads running)")


def _items(n: int) -> list[bytes]:
    rng = np.random.default_rng(n)
    return [bytes([65 + i % 26]) * int(k) for i, k in enumerate(rng.integers(1, 5000, n))]


def _run(tmp_path, items, work=bytes, start=b"head:"):
    """take_turns over ``items`` into a file; (file bytes, end, child's report)."""
    path = tmp_path / "out.bin"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    written = []
    try:
        os.write(fd, start)

        def write(data, at):
            written.append(len(data))
            return os.pwrite(fd, data, at)

        end, report = turns.take_turns(work, items, write, lambda: sorted(written), len(start))
    finally:
        os.close(fd)
    return path.read_bytes(), end, report, written


@pytest.mark.parametrize("n", [1, 2, 3, 8, 41])
def test_items_land_in_order_and_the_child_reports_its_own(tmp_path, n):
    items = _items(n)
    data, end, report, mine = _run(tmp_path, items)
    assert data == b"head:" + b"".join(items) and end == len(data)
    assert mine == [len(x) for x in items[0::2]]  # the parent wrote the even items
    assert report == sorted(len(x) for x in items[1::2])


def _no_child_left():
    """Every child has ended (one whose answer came may not be reaped yet: reaped here)."""
    import time

    deadline = time.monotonic() + 10
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        assert pid or time.monotonic() < deadline, "a child process is still running"
        if not pid:
            time.sleep(0.01)


@pytest.mark.parametrize("failing", [0, 1, 6, 7])
def test_an_error_in_either_process_is_raised_in_the_parent(tmp_path, failing):
    """Item ``failing`` raises (even: the parent's, odd: the child's); the
    parent raises that error, the child is gone."""

    def work(item):
        if item == failing:
            raise ValueError(f"item {item}")
        return b"x" * 10

    with pytest.raises(ValueError, match=f"item {failing}"):
        _run(tmp_path, list(range(12)), work)
    _no_child_left()


def test_an_error_that_does_not_pickle_comes_back_as_its_text(tmp_path):
    class Odd(Exception):
        def __init__(self, a, b):
            super().__init__(f"{a}-{b}")

    def work(item):
        if item == 3:
            raise Odd(1, 2)
        return b"x"

    with pytest.raises(Exception, match="1-2"):
        _run(tmp_path, list(range(6)), work)
    _no_child_left()


def test_a_child_killed_outright_is_an_error_not_a_hang(tmp_path):
    import signal

    def work(item):
        if item == 5:
            os.kill(os.getpid(), signal.SIGKILL)
        return b"x"

    with pytest.raises(RuntimeError, match="second process"):
        _run(tmp_path, list(range(10)), work)
    _no_child_left()


@pytest.mark.parametrize("in_child", [True, False])
def test_a_full_disk_in_either_process_refuses_the_output_and_keeps_the_old_file(shared, tmp_path, monkeypatch, in_child):
    """ENOSPC from a chunk's pwritev, in the child or in the parent, is the
    command's 'output refused'; the older trace stays, no temporary."""
    from attlens import fsutil
    from attlens.analysis.clock import compute_clock
    from attlens.errors import OutputRefused
    from attlens.model.loader import load
    from attlens.report import perfetto

    d = load(shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25")
    out = tmp_path / "t.json"
    out.write_bytes(b"older trace")
    parent, pwritev = os.getpid(), os.pwritev

    def fills_up(fd, buffers, at):
        if (os.getpid() != parent) == in_child and at > 300_000:
            raise OSError(errno.ENOSPC, "No space left on device")
        return pwritev(fd, buffers, at)

    monkeypatch.setattr(fsutil.os, "pwritev", fills_up)
    monkeypatch.setattr(perfetto, "CHUNK_EVENTS", 512)
    with pytest.raises(OutputRefused):
        perfetto.stream_trace(SimpleNamespace(dispatch=d), compute_clock(d), out, max_events=0)
    assert out.read_bytes() == b"older trace" and [p.name for p in tmp_path.iterdir()] == ["t.json"]
    _no_child_left()


def test_when_no_process_can_be_forked_the_threads_write_the_same_file(shared, tmp_path, monkeypatch):
    """fork() failing (EAGAIN: too many processes) leaves no pipe open and
    the threads write the file, byte for byte what two processes write."""
    from attlens.analysis.clock import compute_clock
    from attlens.model.loader import load
    from attlens.report import perfetto

    d = load(shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25")
    monkeypatch.setattr(perfetto, "CHUNK_EVENTS", 512)
    perfetto.stream_trace(SimpleNamespace(dispatch=d), compute_clock(d), tmp_path / "forked.json", max_events=0)
    _no_child_left()

    def no_fork():
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(turns.os, "fork", no_fork)
    fds = len(os.listdir("/proc/self/fd"))
    perfetto.stream_trace(SimpleNamespace(dispatch=d), compute_clock(d), tmp_path / "threads.json", max_events=0)
    assert len(os.listdir("/proc/self/fd")) == fds
    assert (tmp_path / "threads.json").read_bytes() == (tmp_path / "forked.json").read_bytes()
