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
    """A path a capture names that attlens will not read: ``str()`` is
    ``"<name>: <reason>"``, ``reason`` the part after the name."""

    def __init__(self, name, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


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
        raise OutsideCapture(repr(name), "not a file name")
    if os.path.isabs(name):
        raise OutsideCapture(name, "an absolute path (only files inside the capture are read)")
    base = Path(os.path.realpath(root))
    target = Path(os.path.realpath(base / name))
    if target != base and base not in target.parents:
        raise OutsideCapture(name, "leads outside the capture directory")
    return target


def _open_regular(path, follow: bool = True) -> tuple[int, os.stat_result]:
    """A read-only descriptor of ``path`` and its stat, refused unless it is a
    regular file. O_NONBLOCK: opening a FIFO must not wait for a writer.
    Not ``follow``: a symlink is not opened (``OSError`` ELOOP)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(Path(path).name, "not a regular file (a FIFO, device or directory)")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_regular(path, limit: int | None = None, follow: bool = True) -> bytes:
    """Bytes of ``path`` if it is a regular file (never blocks on a FIFO).

    Raises :class:`NotRegularFile`, :class:`TooLarge` (more than ``limit``
    bytes), or ``OSError`` (missing, unreadable; ``ELOOP`` for a symlink
    when not ``follow``) for the caller to report."""
    fd, st = _open_regular(path, follow)
    try:
        if limit is not None and st.st_size > limit:
            raise TooLarge(Path(path).name, f"{st.st_size:,} bytes, more than the {limit:,}-byte limit")
        # One read of the stated size (no second copy of a large file), then
        # on to EOF rather than trusting st_size: the file may be growing.
        chunks, size = [], 0
        want = st.st_size + 1
        while block := os.read(fd, max(want, 1 << 16)):
            size += len(block)
            if limit is not None and size > limit:
                raise TooLarge(Path(path).name, f"more than the {limit:,}-byte limit")
            chunks.append(block)
            want = 1 << 20
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def read_head(path, n: int) -> bytes:
    """The first ``n`` bytes of a regular file (to tell its kind)."""
    fd, _st = _open_regular(path)
    try:
        return os.read(fd, n)
    finally:
        os.close(fd)


def read_capture_file(root: Path, name: str | os.PathLike, limit: int | None = None) -> bytes:
    """Resolve ``name`` inside the capture ``root`` and read it as a regular file."""
    return read_regular(resolve_inside(root, name), limit)


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


def read_own_file(path, limit: int | None = None) -> bytes:
    """``path`` read confined to its own directory: a symlink leading out of
    that directory, a FIFO or a device is refused. Every file attlens finds or
    a capture names is read this way."""
    path = Path(path)
    return read_capture_file(path.parent, path.name, limit)


def read_input_file(path, limit: int | None = None) -> bytes:
    """:func:`read_own_file` for the io readers, failures as the one-line
    errors of :mod:`attlens.errors` naming the file: missing or a directory →
    InputNotFound; refused (outside, not regular, too large) or unreadable →
    CorruptCapture (which the loader turns into a warning for optional files)."""
    from attlens.errors import CorruptCapture, InputNotFound

    path = Path(path)
    try:
        return read_own_file(path, limit)
    except FileNotFoundError:
        raise InputNotFound(f"{path}: file not found") from None
    except NotRegularFile:
        if path.is_dir():
            raise InputNotFound(f"{path}: a directory, not a file") from None
        raise CorruptCapture(f"{path.name}: not read (not a regular file: a FIFO or a device)") from None
    except RefusedPath as exc:
        raise CorruptCapture(f"{path.name}: not read ({exc.reason})") from None
    except OSError as exc:
        raise CorruptCapture(f"{path}: cannot read ({exc.strerror or exc})") from None


def user_path(path) -> Path:
    """A path the user named on the command line: trusted, so a symlink there
    is followed now (the file it names is then read confined to *its* folder)."""
    p = Path(path)
    return Path(os.path.realpath(p)) if os.path.islink(p) else p
