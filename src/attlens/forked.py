"""Two independent pieces of work on two cores: one in a forked child, the
other in this process, their results joined (the child's by pickle).

Forking shares the loaded capture's arrays without copying them (copy on
write), which a process pool could not. Used where a command has two
independent passes over a loaded capture (the report: the plan's replay
beside the page's timelines), or a child that starts early and takes one
message from this process half-way (:func:`relay`). Without fork, with one core, in a threaded
process (a server), or when the child fails, the child's work runs here
afterwards: the result is the same, only slower.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager


def can_fork() -> bool:
    """Fork is possible and worth it: Linux, two cores for this process, no other thread."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return False
    import threading

    if threading.active_count() > 1:
        return False  # forking a threaded process (a server) is unsafe
    try:
        return len(os.sched_getaffinity(0)) >= 2
    except (AttributeError, OSError):
        return (os.cpu_count() or 1) >= 2


def start(work) -> tuple[int, int]:
    """Fork a child that runs ``work()`` and sends its result back; returns
    ``(pid, read end)`` for :func:`join` or :func:`end`.

    The result is pickled with its large buffers (NumPy arrays) out of band:
    they are written into a memory file the parent maps, and only the rest
    goes down the pipe. Why: a pipe passes 64 KiB at a time, and the parse
    child's wait results (32 MB at softmax x5) took 0.13 s from its last
    part to the parent's join (pickling, the pipe, unpickling copies)."""
    mfd = _memory_file()
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 0
        try:
            os.close(rfd)
            _AHEAD.update(mfd=mfd, end=0)
            payload = _pack_result(work(), mfd)
            with os.fdopen(wfd, "wb") as f:
                f.write(len(payload).to_bytes(8, "little") + payload)
        except BaseException:
            code = 1
        finally:
            quiet_exit(code)
    os.close(wfd)
    if mfd is not None:
        _RESULT_FILES[rfd] = mfd
    return pid, rfd


# The memory file of each child's result, by the read end of its pipe.
_RESULT_FILES: dict[int, int] = {}
_ALIGN = 64  # result buffers start on cache lines (NumPy's own alignment is 16)


def _memory_file() -> int | None:
    try:
        return os.memfd_create("attlens-result", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None  # the result goes down the pipe whole


# In a child of start(): its result's memory file and where its written part ends (send_ahead).
_AHEAD: dict = {"mfd": None, "end": 0}


def _write_buffers(obj, mfd: int) -> tuple[list, bytes]:
    """``(places, pickle)`` of ``obj``, its out-of-band buffers written into
    the memory file ``mfd`` after what is there (:data:`_AHEAD`)."""
    import pickle

    from attlens.fsutil import write_all

    buffers: list = []
    body = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    at = end = _AHEAD["end"]
    pieces, places = [], []
    for b in buffers:
        raw = b.raw()
        if end % _ALIGN:
            pieces.append(bytes(_ALIGN - end % _ALIGN))
            end += len(pieces[-1])
        places.append((end, raw.nbytes))
        pieces.append(raw)
        end += raw.nbytes
    if end > at:
        os.ftruncate(mfd, end)
        write_all(mfd, pieces, at=at)
    _AHEAD["end"] = end
    return places, body


def _pack_result(result, mfd: int | None) -> bytes:
    """The pipe's bytes of ``result``: its pickle, with the out-of-band
    buffers' places in the memory file ``mfd`` (written here, after what
    :func:`send_ahead` wrote)."""
    import pickle

    if mfd is None:
        return pickle.dumps((None, pickle.dumps(result, protocol=5)), protocol=5)
    return pickle.dumps(_write_buffers(result, mfd), protocol=5)


class _Ahead:
    """A value :func:`send_ahead` wrote: pickled small (its buffers' places
    and the rest), made whole again in the parent from the mapped memory file."""

    def __init__(self, places: list, body: bytes):
        self.places, self.body = places, body

    def __reduce__(self):
        return _from_ahead, (self.places, self.body)


def send_ahead(value):
    """In a child of :func:`start`: write ``value``'s large buffers (NumPy
    arrays) into the result's memory file now, while the child still works,
    and return a small stand-in the result can hold; the parent gets
    ``value`` back, its arrays views of the file. Why: the parse child's
    per-part results (0.3 GB at softmax x30) were folded and copied into
    the file after its last part, while the parent waited. Anywhere else
    (this process, no memory file) ``value`` itself."""
    mfd = _AHEAD["mfd"]
    if mfd is None:
        return value
    return _Ahead(*_write_buffers(value, mfd))


_MAPPED: list = []  # while a result is unpickled here: the view of its memory file


def _from_ahead(places: list, body: bytes):
    import pickle

    if not places:  # nothing was out of band
        return pickle.loads(body)
    view = _MAPPED[-1]
    return pickle.loads(body, buffers=[view[at : at + n] for at, n in places])


def _unpack_result(payload: bytes, mfd: int | None):
    """The result :func:`_pack_result` sent: its buffers, and those of what
    was sent ahead, are views of the memory file, mapped copy-on-write (no
    copy, and writable)."""
    import pickle

    places, body = pickle.loads(payload)
    size = os.fstat(mfd).st_size if mfd is not None else 0
    if not size:  # pickled whole, or nothing was out of band
        return pickle.loads(body)
    import mmap

    view = memoryview(mmap.mmap(mfd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE))
    _MAPPED.append(view)
    try:
        return pickle.loads(body, buffers=[view[at : at + n] for at, n in places])
    finally:
        _MAPPED.pop()


def quiet_exit(code: int) -> None:
    """End a forked child now: its standard streams are closed first, so a
    reader of the command's output (a pipe, ``$(...)``) sees the end without
    waiting for the child's memory to be torn down."""
    for fd in (1, 2):
        try:
            os.close(fd)
        except OSError:
            pass
    os._exit(code)


_WHILE_WAITING: list = []


@contextmanager
def while_waiting(task):
    """Within this block, the first time this process has a child working
    beside it it runs ``task()``: work a later step needs anyway (the report
    imports its analyses while the parse child works). That is when it waits
    for a child (:func:`join`), or earlier when the caller has a share of
    work it takes from (:func:`run_waiting`: the wave parse's parts, so the
    child takes more of them). Its errors are ignored (the later step meets
    them); never run, it is dropped."""
    _WHILE_WAITING.append(task)
    try:
        yield
    finally:
        if task in _WHILE_WAITING:
            _WHILE_WAITING.remove(task)


def run_waiting() -> None:
    """Run the tasks of :func:`while_waiting` now (a child works beside this process)."""
    while _WHILE_WAITING:
        try:
            _WHILE_WAITING.pop(0)()
        except Exception:
            pass


def join(pid: int, rfd: int) -> tuple[bool, object]:
    """``(True, result)`` of a child of :func:`start`, or ``(False, None)``
    when it failed (killed, out of memory, an error in its work). A child
    that sent its whole result is not waited for: it is reaped later
    (:func:`reap`), its teardown costs this process nothing."""
    import pickle

    run_waiting()

    mfd = _RESULT_FILES.pop(rfd, None)
    try:
        with os.fdopen(rfd, "rb") as f:
            payload = f.read()
        size = int.from_bytes(payload[:8], "little")
        if len(payload) < 8 or len(payload) != 8 + size:  # it died before sending all
            os.waitpid(pid, 0)
            return False, None
        leave_to_reap(pid)
        try:
            return True, _unpack_result(payload[8:], mfd)
        except (OSError, EOFError, ValueError, pickle.UnpicklingError):  # no memory to map it, a result that does not load:
            return False, None  # as a failed child (its work is done here)
    finally:
        if mfd is not None:
            os.close(mfd)  # a mapping of it stays valid


_ZOMBIES: list[int] = []


def leave_to_reap(pid: int) -> None:
    """A child whose work is done, left to end on its own (collected by :func:`reap`)."""
    _ZOMBIES.append(pid)
    reap()


def reap() -> None:
    """Collect the children that have ended since :func:`join` left them (never waits)."""
    for pid in list(_ZOMBIES):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _ZOMBIES.remove(pid)


def end(pid: int, rfd: int) -> None:
    """Stop a child of :func:`start` whose result is not wanted (Ctrl-C, an error beside it)."""
    import signal

    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(rfd)
    mfd = _RESULT_FILES.pop(rfd, None)
    if mfd is not None:
        os.close(mfd)


def beside(work, meanwhile):
    """``(work(), meanwhile())``, ``work`` in a forked child while this process
    runs ``meanwhile``. ``work``'s result must pickle; its side effects
    (files it writes) happen in the child. ``ATTLENS_PARSE_WORKERS=1`` keeps
    everything in this process."""
    if os.environ.get("ATTLENS_PARSE_WORKERS") == "1" or not can_fork():
        return work(), meanwhile()
    pid, rfd = start(work)
    try:
        mine = meanwhile()
    except BaseException:
        end(pid, rfd)
        raise
    ok, theirs = join(pid, rfd)
    return (theirs if ok else work()), mine  # a failed child's work (an error it raised too) runs here


def relay(prepare, finish, meanwhile):
    """``(finish(prepare(), message), meanwhile(send))``: a forked child runs
    ``prepare()`` at once, then ``finish`` with the one message this process
    passes to ``send`` while it runs ``meanwhile`` (work the child needs from
    this process starts the child's early part sooner). ``meanwhile`` must
    call ``send`` once. ``finish``'s result must pickle; without fork, or
    when the child fails, both parts run here after ``meanwhile``."""
    box: list = []
    if os.environ.get("ATTLENS_PARSE_WORKERS") == "1" or not can_fork():
        mine = meanwhile(box.append)
        return finish(prepare(), _sent(box)), mine
    down_r, down_w = os.pipe()

    def work():
        import pickle
        import threading

        os.close(down_w)
        got: list = []
        # the message may be larger than a pipe holds: drained meanwhile, so send never waits for prepare
        reader = threading.Thread(target=lambda: got.append(_read_all(down_r)), daemon=True)
        reader.start()
        early = prepare()
        reader.join()
        if not got or not got[0]:
            raise EOFError("no message from the parent")
        return finish(early, pickle.loads(got[0]))

    pid, rfd = start(work)
    os.close(down_r)
    open_w = [down_w]

    def send(message) -> None:
        import pickle

        box.append(message)
        fd = open_w.pop()
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(pickle.dumps(message, protocol=5))
        except OSError:  # the child is gone: join sees it and the work is done here
            pass

    try:
        mine = meanwhile(send)
    except BaseException:
        for fd in open_w:
            os.close(fd)
        end(pid, rfd)
        raise
    for fd in open_w:  # never sent: the child stops at EOF
        os.close(fd)
    ok, theirs = join(pid, rfd)
    message = _sent(box)
    return (theirs if ok else finish(prepare(), message)), mine


def _sent(box: list):
    if len(box) != 1:
        raise RuntimeError(f"relay: meanwhile sent {len(box)} messages, not one")
    return box[0]


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read()
