"""Two processes formatting a file's parts in turns, each writing its own.

Why processes, not threads: the export formats its rows with NumPy, a few
thousand at a time, hundreds of NumPy calls a chunk; with two threads
(NumPy releases the GIL inside each call) the formatting of softmax took
0.22-0.24 s against 0.25 s on one thread, with two processes 0.13-0.15 s
(measured on the 2-core machine of the benchmarks, each process alone).

:func:`take_turns` forks once everything the formatting reads is in memory
(copy-on-write: nothing is copied). The parent formats items 0, 2, 4, ...,
the child 1, 3, 5, ...; each writes an item's bytes at its offset in the
shared file (``os.pwritev``) once the other has sent, through a pipe, the
offset where the item before ended. The child then sends what its
``report`` says (pickled) and exits without running any of the parent's
clean-up (``attlens.forked.quiet_exit``); the parent does not wait for its
exit. An error in either process stops both and is raised in the parent;
Ctrl-C is the parent's to answer (the child ignores SIGINT and is killed).

Only where a fork is safe and worth it (:func:`usable`): Linux, two cores,
no other thread running (a fork copies the calling thread only; a lock
another thread holds would stay held in the child forever); not with
``ATTLENS_PARSE_WORKERS=1`` (everything in one process, as for the parse).
"""

from __future__ import annotations

import os
import pickle
import signal
import struct

_OFFSET = struct.Struct("<q")


class _PeerGone(Exception):
    """The other process closed its pipe before sending an offset."""


def usable() -> bool:
    """A fork is safe and worth it (:func:`attlens.forked.can_fork`: Linux,
    two cores, no other thread), and ``os.pwritev`` is there."""
    from attlens.forked import can_fork

    return hasattr(os, "pwritev") and os.environ.get("ATTLENS_PARSE_WORKERS") != "1" and can_fork()


def _send(fd: int, offset: int) -> None:
    try:
        os.write(fd, _OFFSET.pack(offset))  # 8 bytes: a pipe takes them whole
    except BrokenPipeError:  # the other process stopped (Python ignores SIGPIPE)
        raise _PeerGone from None


def _recv(fd: int) -> int:
    return _OFFSET.unpack(_read_exactly(fd, _OFFSET.size))[0]


def _read_exactly(fd: int, size: int) -> bytes:
    parts, left = [], size
    while left:
        part = os.read(fd, min(left, 1 << 20))
        if not part:
            raise _PeerGone
        parts.append(part)
        left -= len(part)
    return b"".join(parts)


def _my_turns(work, items: list, write, me: int, offset: int, recv: int, send: int) -> int:
    """Items ``me``, ``me + 2``, ... formatted and written in turn; the end
    offset of the file's items (waited for when the other wrote the last)."""
    n = len(items)
    for i in range(me, n, 2):
        result = work(items[i])
        if i:
            offset = _recv(recv)
        offset += write(result, offset)
        if i + 1 < n or me == 1:  # the parent waits for the end of the last item
            _send(send, offset)
    if me == 0 and n % 2 == 0:  # the child wrote the last item
        offset = _recv(recv)
    return offset


def _child(work, items, write, report, offset: int, recv: int, send: int, out: int) -> None:
    """The child's part; never returns."""
    code, message = 1, b""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent answers Ctrl-C
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        _my_turns(work, items, write, 1, offset, recv, send)
        message, code = pickle.dumps(("done", report())), 0
    except _PeerGone:  # the parent stopped: it has its own error to raise
        pass
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        message = _pickled_error(exc)
    finally:
        try:
            from attlens.fsutil import write_all

            write_all(out, [_OFFSET.pack(len(message)), message] if message else [])
        finally:
            from attlens.forked import quiet_exit

            quiet_exit(code)


def _pickled_error(exc: BaseException) -> bytes:
    try:
        message = pickle.dumps(("error", exc))
        pickle.loads(message)  # an exception whose arguments do not round-trip
        return message
    except Exception:  # noqa: BLE001
        return pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))


def _childs_answer(fd: int, pid: int):
    """The child's report, or its error. Read as soon as it is sent; the
    child is left to end on its own (attlens.forked.leave_to_reap: tearing
    down its memory takes it a few ms this process need not wait)."""
    try:
        data = _read_exactly(fd, _recv(fd))
    except _PeerGone:  # no answer: killed, or out of memory
        _, status = os.waitpid(pid, 0)
        return ("error", RuntimeError(f"the export's second process ended without an answer (wait status {status})"))
    answer = pickle.loads(data)  # before the reaping: a pid reaped is never killed (it may be another's then)
    from attlens.forked import leave_to_reap

    leave_to_reap(pid)
    return answer


def take_turns(work, items: list, write, report, offset: int):
    """``write(work(item), at)`` for each item in order, ``at`` the offset
    where the item before ended (``offset`` for the first); ``write``
    returns the bytes it wrote. Returns the offset after the last item and
    the child's ``report()`` (what its own ``write`` calls gathered); None
    when no process could be forked (nothing was done: do it otherwise)."""
    to_child, to_parent, answer = os.pipe(), os.pipe(), os.pipe()
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the child ignores it before any can land
    try:
        pid = os.fork()
        if pid == 0:
            for fd in (to_child[1], to_parent[0], answer[0]):
                os.close(fd)
            _child(work, items, write, report, offset, to_child[0], to_parent[1], answer[1])
    except OSError:  # EAGAIN, ENOMEM: too many processes, or no memory for the copy
        for fd in (*to_child, *to_parent, *answer):
            os.close(fd)
        return None
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    for fd in (to_child[0], to_parent[1], answer[1]):
        os.close(fd)
    answer_kind = None
    try:
        try:
            end = _my_turns(work, items, write, 0, offset, to_parent[0], to_child[1])
        except _PeerGone:  # the child stopped early: its answer says why
            end = None
        answer_kind, value = _childs_answer(answer[0], pid)
    except BaseException:
        if answer_kind is None:  # not reaped yet (after waitpid the pid may be another process's)
            _stop(pid)
        raise
    finally:
        for fd in (to_parent[0], to_child[1], answer[0]):
            os.close(fd)
    if answer_kind == "error":
        raise value
    if end is None:  # a child that stops early answers with its error
        raise RuntimeError("the export's second process stopped without an error")
    return end, value


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass
