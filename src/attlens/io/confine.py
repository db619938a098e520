"""Reading only what a capture may make attlens read.

A capture directory is written by someone else (bundles, tarballs, CI
artifacts), and its files name other files (``filenames.json`` → wave files,
``snapshots.json`` → source copies). Every such name is resolved *inside* the
capture directory, after symlinks, and only regular files are opened: a name
like ``../../x``, an absolute path, a symlink leading outside, a FIFO (which
would block a reader forever) or a device such as ``/dev/zero`` (which never
ends) is refused with :class:`OutsideCapture` / :class:`NotRegularFile`, which
callers turn into a warning. ``limit`` caps how many bytes are read.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class RefusedPath(Exception):
    """A path a capture names that attlens will not read (message says why)."""


class OutsideCapture(RefusedPath):
    pass


class NotRegularFile(RefusedPath):
    pass


class TooLarge(RefusedPath):
    pass


def resolve_inside(root: Path, name: str | os.PathLike) -> Path:
    """``root/name`` with symlinks resolved, refused unless it stays inside ``root``."""
    name = os.fspath(name)
    if not name or "\x00" in name:
        raise OutsideCapture(f"{name!r}: not a file name")
    if os.path.isabs(name):
        raise OutsideCapture(f"{name}: an absolute path (only files inside the capture are read)")
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / name))
    if target != base and base not in target.parents:
        raise OutsideCapture(f"{name}: leads outside the capture directory")
    return target


def read_regular(path: Path, limit: int | None = None, follow: bool = True) -> bytes:
    """Bytes of ``path`` if it is a regular file (never blocks on a FIFO).

    Raises :class:`NotRegularFile`, :class:`TooLarge` (more than ``limit``
    bytes), or ``OSError`` (missing, unreadable; ``ELOOP`` for a symlink
    when not ``follow``) for the caller to report."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{Path(path).name}: not a regular file")
        if limit is not None and st.st_size > limit:
            raise TooLarge(f"{Path(path).name}: {st.st_size:,} bytes is more than the {limit:,}-byte limit")
        chunks, size = [], 0
        # Read to EOF rather than trusting st_size: the file may be growing.
        while block := os.read(fd, 1 << 20):
            size += len(block)
            if limit is not None and size > limit:
                raise TooLarge(f"{Path(path).name}: more than the {limit:,}-byte limit")
            chunks.append(block)
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_inside(root_real: str, name: str, limit: int | None = None) -> bytes:
    """:func:`read_capture_file` for many names under one root that the caller
    resolved once (``os.path.realpath``): a plain file name (no separator, not
    ``.``/``..``) is opened directly without following a symlink, so it cannot
    leave the root and costs no path resolution; any other name, or a symlink,
    takes the full :func:`resolve_inside` check."""
    if name and "/" not in name and os.sep not in name and name not in (".", "..") and "\x00" not in name:
        try:
            return read_regular(os.path.join(root_real, name), limit, follow=False)
        except OSError as exc:
            if exc.errno != errno.ELOOP:
                raise
    return read_regular(resolve_inside(Path(root_real), name), limit)


def read_capture_file(root: Path, name: str | os.PathLike, limit: int | None = None) -> bytes:
    """Resolve ``name`` inside the capture ``root`` and read it as a regular file."""
    return read_regular(resolve_inside(root, name), limit)
