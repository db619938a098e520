"""attlens.forked.beside and relay: two pieces of work on two cores, the same result as one after the other."""

from __future__ import annotations

import os

import numpy as np
import pytest

from attlens import forked
from conftest import require_fork, require_shared


@pytest.fixture(autouse=True)
def _fork_possible():
    require_fork()


def test_the_child_computes_on_the_parents_data():
    data = np.arange(1_000_000, dtype=np.int64)
    parent = os.getpid()
    (total, pid), mine = forked.beside(lambda: (int(data.sum()), os.getpid()), lambda: int(data[::2].sum()))
    assert total == 499999500000 and mine == int(data[::2].sum())
    assert pid != parent, "the work ran in a child"


def test_a_failing_child_is_done_again_here():
    calls = []

    def work():
        calls.append(os.getpid())
        if len(calls) == 1 and os.getpid() != parent:
            os._exit(3)  # killed or out of memory
        return "done"

    parent = os.getpid()
    assert forked.beside(work, lambda: 1) == ("done", 1)
    assert calls == [parent], "only the retry here is seen by this process"


def test_an_error_of_the_work_is_raised_here():
    def work():
        raise ValueError("bad capture")

    with pytest.raises(ValueError, match="bad capture"):
        forked.beside(work, lambda: 1)


def test_an_error_beside_ends_the_child(tmp_path):
    flag = tmp_path / "child-finished"

    def work():
        import time

        time.sleep(1)
        flag.write_text("x")
        return 1

    def meanwhile():
        raise KeyError("x")

    with pytest.raises(KeyError):
        forked.beside(work, meanwhile)
    import time

    time.sleep(1.5)
    assert not flag.exists(), "the child was ended, not left running"


def test_one_worker_keeps_everything_here(monkeypatch):
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")
    assert forked.beside(os.getpid, os.getpid) == (os.getpid(), os.getpid())


def test_relay_hands_the_message_to_the_child_after_its_early_part():
    data = np.arange(1_000_000, dtype=np.int64)
    parent = os.getpid()
    big = list(range(200_000))  # larger than a pipe holds: send must not wait for the child's early part

    def meanwhile(send):
        send({"scale": 3, "big": big})
        return int(data[::2].sum())

    (total, pid), mine = forked.relay(lambda: int(data.sum()), lambda early, msg: (early * msg["scale"] + sum(msg["big"]), os.getpid()),
                                      meanwhile)
    assert total == int(data.sum()) * 3 + sum(big) and mine == int(data[::2].sum())
    assert pid != parent, "the finish ran in a child"


def test_relay_a_failing_child_is_done_again_here():
    parent = os.getpid()

    def prepare():
        if os.getpid() != parent:
            os._exit(3)
        return 2

    assert forked.relay(prepare, lambda early, msg: early + msg, lambda send: send(5) or "mine") == (7, "mine")


def test_relay_an_error_beside_ends_the_child():
    with pytest.raises(KeyError):
        forked.relay(lambda: 1, lambda early, msg: early, lambda send: {}["x"])


def test_relay_without_a_message_is_an_error():
    with pytest.raises(RuntimeError, match="not one"):
        forked.relay(lambda: 1, lambda early, msg: early, lambda send: None)


def test_relay_one_worker_keeps_everything_here(monkeypatch):
    monkeypatch.setenv("ATTLENS_PARSE_WORKERS", "1")
    assert forked.relay(os.getpid, lambda early, msg: (early, msg), lambda send: send(os.getpid()) or 1) == ((os.getpid(), os.getpid()), 1)


def test_while_waiting_runs_its_task_once_in_the_wait_for_a_child():
    ran = []
    with forked.while_waiting(lambda: ran.append(os.getpid())):
        pid, rfd = forked.start(lambda: 7)
        assert forked.join(pid, rfd) == (True, 7)
        pid, rfd = forked.start(lambda: 8)
        assert forked.join(pid, rfd) == (True, 8)
    assert ran == [os.getpid()], "once, in this process"


def test_while_waiting_a_failing_task_is_ignored_and_an_unused_one_dropped():
    def bad():
        raise ImportError("no such module")

    with forked.while_waiting(bad):
        pid, rfd = forked.start(lambda: 1)
        assert forked.join(pid, rfd) == (True, 1)
    ran = []
    with forked.while_waiting(lambda: ran.append(1)):
        pass  # never waited: it does not run, and does not stay queued
    pid, rfd = forked.start(lambda: 2)
    assert forked.join(pid, rfd) == (True, 2) and ran == []


def test_while_waiting_runs_before_the_parents_parts_of_a_two_process_parse():
    """The wave parse's parent takes its share of parts after the task (the
    child takes more meanwhile), not after them at the join."""
    from attlens.io.filenames_json import read_filenames_json
    from attlens.io.wave_files import read_wave_files

    require_fork()
    cap = require_shared() / "traces" / "vec_add/big/ui_output_agent_14705_dispatch_25"
    entries = read_filenames_json(cap / "filenames.json").waves
    parent, events = os.getpid(), []
    with forked.while_waiting(lambda: events.append("task")):
        table = read_wave_files(cap, entries, workers=2, per_part=lambda t: events.append("part") if os.getpid() == parent else None)
    assert len(table.entries) == len(entries)
    assert events[:1] == ["task"] and events.count("task") == 1, events


def test_a_childs_arrays_come_back_through_memory_not_the_pipe(monkeypatch):
    """The result's arrays travel out of band (a memory file the parent maps,
    copy-on-write): equal, writable, and the pipe carries only the rest."""
    big = np.arange(3_000_000, dtype=np.int64)
    piped = []
    real_fdopen = os.fdopen

    def fdopen(fd, mode="r", *a, **k):
        f = real_fdopen(fd, mode, *a, **k)
        if mode == "rb":
            read = f.read
            f.read = lambda *x: piped.append(len(b := read(*x))) or b
        return f

    monkeypatch.setattr(os, "fdopen", fdopen)
    pid, rfd = forked.start(lambda: {"a": big * 3, "b": [big[:5] + 1, "text"], "n": 7})
    ok, got = forked.join(pid, rfd)
    assert ok and np.array_equal(got["a"], big * 3) and got["b"][1] == "text" and got["n"] == 7
    assert np.array_equal(got["b"][0], big[:5] + 1)
    got["a"][0] = -1  # a private copy of the page: writable, and nobody else sees it
    assert got["a"][0] == -1 and sum(piped) < 10_000, "the 24 MB went through memory, not the pipe"


def test_values_sent_ahead_reach_the_parent_whole_beside_the_result(monkeypatch):
    """send_ahead in a child writes a value's arrays into the result's memory
    file at once (the parse child, part by part); the parent gets each value
    back whole, its arrays after the ones sent before and the result's own
    after them, none through the pipe. Outside a child it is the value itself."""
    big = np.arange(2_000_000, dtype=np.int64)
    assert forked.send_ahead(big) is big  # here: no memory file

    def work():
        sent = [forked.send_ahead({"k": k, "a": big * k, "none": None}) for k in (1, 2, 3)]
        small = forked.send_ahead(("no", "arrays"))  # nothing out of band
        return {"sent": sent, "small": small, "own": big + 7}

    pid, rfd = forked.start(work)
    ok, got = forked.join(pid, rfd)
    assert ok and got["small"] == ("no", "arrays") and np.array_equal(got["own"], big + 7)
    assert [s["k"] for s in got["sent"]] == [1, 2, 3] and all(s["none"] is None for s in got["sent"])
    for s in got["sent"]:
        assert np.array_equal(s["a"], big * s["k"])
    got["sent"][0]["a"][0] = -1  # copy-on-write: writable here
    assert got["sent"][0]["a"][0] == -1 and got["sent"][1]["a"][0] == 0
    pid, rfd = forked.start(lambda: [forked.send_ahead((1, 2))])  # only small values: an empty memory file
    assert forked.join(pid, rfd) == (True, [(1, 2)])


def test_a_result_cut_short_is_a_failed_child():
    """A child that died half-way through sending: the parent sees fewer bytes
    than announced and does the work itself (beside, relay), never unpickles
    a fragment."""
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        os.write(wfd, (1000).to_bytes(8, "little") + b"\x80\x05partial")
        os._exit(0)
    os.close(wfd)
    assert forked.join(pid, rfd) == (False, None)


def test_a_joined_child_is_reaped_later_never_waited_for():
    pid, rfd = forked.start(lambda: 5)
    assert forked.join(pid, rfd) == (True, 5)
    import time

    for _ in range(200):
        forked.reap()
        if pid not in forked._ZOMBIES:
            break
        time.sleep(0.01)
    assert pid not in forked._ZOMBIES
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def test_a_result_that_cannot_be_mapped_is_a_failed_child(monkeypatch):
    """The result's memory file cannot be mapped (no memory left): the child
    counts as failed and beside() does its work here, never a traceback."""
    def no_map(payload, mfd):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(forked, "_unpack_result", no_map)
    data = np.arange(100_000, dtype=np.int64)
    assert forked.beside(lambda: data * 2, lambda: 1)[0].tolist() == (data * 2).tolist()


def test_a_command_imports_its_analysis_while_the_parse_child_works(tmp_path):
    """``analyze`` (and every command that analyzes: attlens.cli.common.load_analyzed)
    forks the parse child before it imports the analysis' modules, which the
    parse does not need; the parent imports them while the child parses."""
    import subprocess
    import sys

    cap = require_shared() / "traces" / "vec_add/big/ui_output_agent_14705_dispatch_25"
    script = (
        "import sys\n"
        "import attlens.forked as f\n"
        "real = f.start\n"
        "def start(*a, **k):\n"
        "    if not hasattr(f, 'seen'):\n"
        "        f.seen = 'attlens.analysis.hotspots' in sys.modules or 'attlens.analysis.analyze' in sys.modules\n"
        "        print('analysis imported before the fork:', f.seen, file=sys.stderr)\n"
        "    return real(*a, **k)\n"
        "f.start = start\n"
        "from attlens.cli import main\n"
        "sys.argv = ['attlens', 'analyze', sys.argv[1], '--json']\n"
        "code = main()\n"
        "print('after:', 'attlens.analysis.hotspots' in sys.modules, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    env = dict(os.environ, ATTLENS_PARSE_WORKERS="2", ATTLENS_NO_CACHE="1")
    p = subprocess.run([sys.executable, "-c", script, str(cap)], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "analysis imported before the fork: False" in p.stderr and "after: True" in p.stderr, p.stderr
    assert '"schema": "attlens.analyze"' in p.stdout
