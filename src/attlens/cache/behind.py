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
    or by a forked child within :func:`scope` (a :class:`PendingDigest`)."""
    from attlens.cache.capture import write_digest
    from attlens.forked import can_fork

    if not _state["on"] or data.records.time.nbytes < MIN_RECORDS_BYTES or not can_fork():
        return write_digest(store, capture, key, data)
    pid = os.fork()
    if pid == 0:  # child: never returns
        code = 1
        try:
            code = 0 if write_digest(store, capture, key, data) is not None else 3
        except BaseException:
            pass
        finally:
            os._exit(code)
    pending = PendingDigest(store, capture, key, pid)
    _state["pending"].append(pending)
    return pending


class PendingDigest:
    """The digest a child is writing, as the analysis sees it: nothing derived
    yet; what is stored is encoded now and kept until :meth:`settle`, then
    every call goes to the written digest (none if the child failed)."""

    def __init__(self, store, capture, key: str, pid: int):
        self.store, self.capture, self.key, self.pid = store, capture, key, pid
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
        """Wait for the child; open what it wrote and store what was kept."""
        if self.settled:
            return self.digest
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:  # reaped elsewhere: what it left tells
            status = 0
        self.settled = True
        if status == 0:
            self.digest = self.store.open(self.capture, self.key)  # None if it wrote nothing
        if self.digest is not None:
            for name, (_, arrays, meta) in self.kept.items():
                self.digest.put_encoded(name, arrays, meta)
        self.kept.clear()
        return self.digest
