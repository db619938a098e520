"""Writing files so that a reader never sees half a file and an interrupted
write never replaces a good one: temporary file in the same folder, then
``os.replace``."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: bytes | str) -> int:
    """Write ``data`` to ``path`` atomically; returns the bytes written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(raw)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(raw)


@contextmanager
def atomic_writer(path: str | os.PathLike):
    """A binary file to write in pieces; it replaces ``path`` only when the
    block ends without an error (so a large output is streamed, never held)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            yield f
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
