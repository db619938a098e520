"""Writing files so that a reader never sees half a file and an interrupted
write never replaces a good one: temporary file in the same folder, then
``os.replace``. A path that cannot be written (a directory, a parent that is
a file, read-only, disk full) is an :class:`attlens.errors.OutputRefused`
naming the path, not an internal error."""

from __future__ import annotations

import errno
import os
import secrets
from contextlib import contextmanager
from pathlib import Path

# Errors of writing the output itself (raised by the caller's writes inside
# atomic_writer); any other OSError of the caller's block is not ours to name.
_WRITE_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}


def _refused(out: Path, exc: OSError):
    from attlens.errors import OutputRefused

    return OutputRefused(f"cannot write {out}: {_why(exc)}", hint="choose another output path")


@contextmanager
def atomic_writer(path: str | os.PathLike):
    """A binary file to write in pieces; it replaces ``path`` only when the
    block ends without an error (so a large output is streamed, never held)."""
    out = Path(path)
    # an unpredictable name created exclusively: a symlink planted in a shared
    # folder under the temporary name is never followed (O_EXCL, O_NOFOLLOW)
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        if out.is_dir():
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        out.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
        f = os.fdopen(fd, "wb")
    except OSError as exc:
        raise _refused(out, exc) from None
    try:
        with f:
            try:
                yield f
            except OSError as exc:
                if exc.errno in _WRITE_ERRNOS:
                    raise _refused(out, exc) from None
                raise
        try:
            os.replace(tmp, out)
        except OSError as exc:
            raise _refused(out, exc) from None
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def reserve(fd: int, at: int, size: int) -> None:
    """Allocate bytes ``at .. at + size`` of the file open on ``fd`` (an
    :func:`atomic_writer` file) before writing them (exactly those: the file
    is as long as what was written, nothing to truncate). Why: ext4 flushes a file's not-yet-allocated blocks
    when it is renamed over another (``auto_da_alloc``), so ``os.replace`` of a
    fresh 138 MB file over an older one took 0.05-0.1 s; blocks allocated
    beforehand need no flush. Where the file system cannot allocate
    (``posix_fallocate`` unsupported), nothing is reserved."""
    if size <= 0 or not hasattr(os, "posix_fallocate"):
        return
    try:
        os.posix_fallocate(fd, at, size)
    except OSError as exc:
        if exc.errno in _WRITE_ERRNOS:
            raise
        # EINVAL/EOPNOTSUPP and the like: write without reserving


def write_all(fd: int, pieces: list, at: int | None = None) -> None:
    """Write the buffers ``pieces`` to ``fd`` in order without joining them:
    ``os.writev`` (at most ``IOV_MAX`` buffers a call, and again from where a
    call stopped), or ``os.write`` each where there is no writev. With ``at``,
    from that file offset (``os.pwritev``; the file position does not move):
    two processes writing their parts of one file."""
    views = [memoryview(p).cast("B") for p in pieces if len(p)]
    if at is None and not hasattr(os, "writev"):
        for v in views:
            while v:
                v = v[os.write(fd, v):]
        return
    i = 0
    while i < len(views):
        batch = views[i : i + _IOV_MAX]
        n = os.writev(fd, batch) if at is None else os.pwritev(fd, batch, at)
        if at is not None:
            at += n
        while i < len(views) and n >= len(views[i]):  # the buffers written whole
            n -= len(views[i])
            i += 1
        if n:  # one written in part
            views[i] = views[i][n:]


_IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") and "SC_IOV_MAX" in os.sysconf_names else 16


def make_dirs(path: str | os.PathLike) -> Path:
    """Create an output folder (and its parents); one that cannot be created
    (a read-only parent, a file in the way, a full disk) is an
    :class:`~attlens.errors.OutputRefused` naming it, not an internal error."""
    out = Path(path)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _refused(out, exc) from None
    return out


def write_atomic(path: str | os.PathLike, data: bytes | str) -> int:
    """Write ``data`` to ``path`` atomically; returns the bytes written."""
    raw = data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data
    with atomic_writer(path) as f:
        f.write(raw)
    return len(raw)


def _why(exc: OSError) -> str:
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a part of its folder path is a file, not a directory"
    return exc.strerror or str(exc)
