"""Write-behind digests: a forked child writes a freshly parsed capture's
digest while the command goes on analyzing it.

Packing and writing the digest takes about as long as the analysis after the
parse (softmax ×10: 1.0 s and 0.9 s); done one after the other they add up.
Within :func:`scope` (the command line, one command) the loader hands the
write to a child and gets a :class:`PendingDigest`: derived results the
analysis stores meanwhile are encoded at once and kept in memory, and
written into the digest when it exists (:func:`settle`). Stored answers
settle first (they are kept in the digest's folder), and so does the end of
the scope, so a command never exits before its digest is written. Outside a
scope (the Python API, the MCP server), or where a fork is not possible or
not worth it, the digest is written in place as before.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

# Below this many bytes of record times (0.5 M records) the write takes a few ms and a fork is not
# worth it (softmax, 1.4 M records: 0.05 s of packing and writing).
MIN_RECORDS_BYTES = 4 << 20
_state: dict = {"on": False, "pending": []}


@contextmanager
def scope():
    """Write digests behind within this block; every one is written when it ends."""
    previous = _state["on"]
    _state["on"] = True
    try:
        yield
    finally:
        _state["on"] = previous
        settle()


def settle() -> None:
    """Wait for every digest being written and store what was kept for it."""
    while _state["pending"]:
        _state["pending"].pop(0).settle()


def write(store, capture, key: str, data):
    """The digest of ``data`` (attlens.cache.capture.write_digest): written now,
    or by a forked child within :func:`scope` (a :class:`PendingDigest`).

    The digest is placed only if the capture did not change while it was
    read (its key looked at again). Whoever waits does that: the command,
    when it comes to wait for the child (:meth:`PendingDigest.settle`: it
    would wait anyway; softmax x5: 0.06-0.09 s of the child's 0.4 s), sends
    the child its word; a child done before the word came (the command is
    still busy: a report, the next capture) looks itself and ends, holding
    nothing. The child tells the command as soon as the digest is in place;
    what it does after and its exit cost the command nothing."""
    from attlens.cache.capture import write_digest
    from attlens.forked import can_fork, quiet_exit

    if not _state["on"] or data.records.time.nbytes < MIN_RECORDS_BYTES or not can_fork():
        return write_digest(store, capture, key, data)
    word_r, word_w = os.pipe()  # this process -> child: the capture is unchanged (b"1") or not
    done_r, done_w = os.pipe()  # child -> this process: its exit code, once the digest is in place
    pid = os.fork()
    if pid == 0:  # child: never returns
        code, told = 1, []

        def tell(c: int) -> None:  # once: the digest is in place (0), or will not be
            if not told:
                told.append(c)
                try:
                    os.write(done_w, bytes([c]))
                except OSError:
                    pass

        try:
            os.close(word_w)
            os.close(done_r)
            written = write_digest(store, capture, key, data, unchanged=lambda: _word_or_look(word_r, capture, key, done_w),
                                   placed=lambda: tell(0))
            code = 0 if written is not None else 3
        except BaseException:
            pass
        finally:
            tell(code)  # the mapping of the digest after the placing is the child's own
            quiet_exit(code)
    os.close(word_r)
    os.close(done_w)
    pending = PendingDigest(store, capture, key, pid, word_w, done_r)
    _state["pending"].append(pending)
    return pending


# Sent by the child before it looks at the capture itself: a command that comes to wait meanwhile
# does not look too (softmax: 8 ms, the child and the command arriving within a few ms of each other)
LOOKING = b"L"


def _word_or_look(fd: int, capture, key: str, done_w: int | None = None) -> bool:
    """In the child, its digest written: the command's word that the capture
    is unchanged, if it came already, else a look of its own (also when the
    command ended without a word), announced on ``done_w`` (:data:`LOOKING`)."""
    try:
        if _ready(fd):
            word = os.read(fd, 1)
            if word in (b"0", b"1"):
                return word == b"1"
        if done_w is not None:
            try:
                os.write(done_w, LOOKING)
            except OSError:
                pass
        return _unchanged(capture, key)
    finally:
        os.close(fd)


def _ready(fd: int) -> bool:
    """Something (or the end) can be read from ``fd`` now (poll: no limit on the descriptor's number, unlike select)."""
    import select

    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


def _unchanged(capture, key: str) -> bool:
    from attlens.cache.keys import current_capture_key

    try:
        return current_capture_key(capture) == key
    except OSError:
        return False


class PendingDigest:
    """The digest a child is writing, as the analysis sees it: nothing derived
    yet; what is stored is encoded now and kept until :meth:`settle`, then
    every call goes to the written digest (none if the child failed)."""

    def __init__(self, store, capture, key: str, pid: int, word_w: int, done_r: int):
        self.store, self.capture, self.key, self.pid = store, capture, key, pid
        self.word_w, self.done_r = word_w, done_r
        self.kept: dict[str, tuple] = {}  # name -> (value, arrays, meta)
        self.settled = False
        self.digest = None

    def get_derived(self, name: str, codec):
        if self.settled:
            return None if self.digest is None else self.digest.get_derived(name, codec)
        kept = self.kept.get(name)
        return None if kept is None else kept[0]

    def put_derived(self, name: str, value, codec) -> None:
        if self.settled:
            if self.digest is not None:
                self.digest.put_derived(name, value, codec)
            return
        arrays, meta = codec.encode(value)  # as it is now: the caller may change the value later
        self.kept[name] = (value, arrays, meta)

    def settle(self):
        """Unless the child is done already or looking itself (:data:`LOOKING`),
        tell it whether the capture is unchanged; wait for its word that the
        digest is in place (not for its exit: it is reaped later), open what it
        wrote and store what was kept."""
        if self.settled:
            return self.digest
        from attlens.forked import leave_to_reap

        self.settled = True
        try:
            if not _ready(self.done_r):
                try:
                    os.write(self.word_w, b"1" if _unchanged(self.capture, self.key) else b"0")
                except OSError:  # the child is gone
                    pass
            os.close(self.word_w)
            code = os.read(self.done_r, 1)
            while code == LOOKING:
                code = os.read(self.done_r, 1)
            os.close(self.done_r)
        finally:
            leave_to_reap(self.pid)
        if code == b"\0":
            self.digest = self.store.open(self.capture, self.key)  # None if it wrote nothing
        if self.digest is not None:
            for name, (_, arrays, meta) in self.kept.items():
                self.digest.put_encoded(name, arrays, meta)
        self.kept.clear()
        return self.digest
