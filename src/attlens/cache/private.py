"""The cache directory is private to its user, as ssh keeps its keys.

A stored answer or digest is served without re-reading the capture, so
whoever can write into the cache directory decides what attlens prints. Its
checksums (CRC-32) only catch accidents — a truncated or half-written file,
a flipped bit —: anyone able to write a file can write a matching checksum,
and a keyed checksum would not help either (whoever can write the folder can
replace the key). What keeps a planted answer out is that nobody else can
write there, so attlens uses a cache directory only when

- it and every folder under it that attlens uses is owned by the user and
  writable by nobody else: not writable by others, and writable by its group
  only when the group is the user's own private group (the user-private-group
  convention of many distributions: group named after the user, no other
  member);
- every file it opens there is a regular file owned by the user and not
  writable by others, opened without following a symlink and without
  blocking (a FIFO or a device is refused at once, never waited on).

Folders attlens creates are ``0700`` and files ``0600``, whatever the umask.
Temporary files are removed on every failure (full disk included).
Without NumPy: :mod:`attlens.cache.answers` uses it on the fast path.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import stat
import sys
from pathlib import Path

_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class NotPrivate(OSError):
    """A file or folder of the cache that attlens must not trust (not a regular
    file or folder, another user's, writable by others)."""

    def __init__(self, path, why: str):
        super().__init__(errno.EPERM, why, str(path))
        self.why = why

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename) or self.filename}: {self.why}"


def _own_private_group(gid: int) -> bool:
    """The group is the user's private group: named after the user, with no
    member but the user (the user-private-group convention)."""
    try:
        import grp
        import pwd

        user = pwd.getpwuid(os.geteuid())
        group = grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return gid == user.pw_gid and group.gr_name == user.pw_name and set(group.gr_mem) <= {user.pw_name}


def mode_problem(st, what: str = "folder") -> str | None:
    """Why a folder (or file) with this ``stat`` must not be trusted, or None."""
    me = os.geteuid()
    if st.st_uid != me:
        return f"the {what} is owned by uid {st.st_uid}, not by you (uid {me})"
    if st.st_mode & stat.S_IWOTH:
        return f"the {what} is writable by every user (mode {stat.S_IMODE(st.st_mode):04o})"
    if st.st_mode & stat.S_IWGRP and not _own_private_group(st.st_gid):
        return f"the {what} is writable by its group (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def folder_problem(path: Path, follow: bool = False) -> str | None:
    """Why ``path`` is not a private folder of this user (None: it is, or it
    does not exist yet). ``follow``: the path may be a symlink (the cache
    directory the user named); folders under it never are."""
    try:
        st = os.stat(path) if follow else os.lstat(path)
    except OSError:  # not there, or not reachable: writing it will say why (a note, no digest)
        return None
    if not stat.S_ISDIR(st.st_mode):
        return "not a directory" if follow or not stat.S_ISLNK(st.st_mode) else "a symlink, not a folder"
    return mode_problem(st)


def chain_problem(root: Path, parts=()) -> str | None:
    """The first problem of ``root`` and of each folder ``root/parts[0]/...``
    that exists, named; None when all are private."""
    why = folder_problem(root, follow=True)
    if why:
        return f"{root}: {why}"
    p = Path(root)
    for part in parts:
        p = p / part
        why = folder_problem(p)
        if why:
            return f"{p}: {why}"
    return None


def open_read(path: Path) -> int:
    """A descriptor of ``path`` for reading: a regular file of this user that
    others cannot write, opened without following a symlink and without
    blocking. Raises :class:`NotPrivate` otherwise (or the OSError)."""
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotPrivate(path, "not a regular file")
        why = mode_problem(st, "file")
        if why:
            raise NotPrivate(path, why)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_bytes(path: Path) -> bytes:
    """The whole of a private regular file (:func:`open_read`)."""
    fd = open_read(path)
    with os.fdopen(fd, "rb") as f:
        return f.read()


def make_dirs(root: Path, parts=()) -> Path:
    """Create ``root`` (mode 0700; missing parents with the usual mode) and
    ``root/parts...`` (each 0700); returns the last. Raises :class:`NotPrivate`
    when one of them exists and is not private."""
    root = Path(root)
    os.makedirs(root, mode=0o700, exist_ok=True)
    p = root
    for part in parts:
        p = p / part
        try:
            os.mkdir(p, 0o700)
        except FileExistsError:
            pass
    why = chain_problem(root, parts)
    if why:
        raise NotPrivate(p, why)
    return p


def create_temp(folder: Path, stem: str) -> tuple[Path, int]:
    """A new file ``folder/.<stem>.tmp-<random>`` (mode 0600, created
    exclusively, never through a planted symlink) and its descriptor."""
    tmp = Path(folder) / f".{stem}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    return tmp, os.open(tmp, _CREATE_FLAGS, 0o600)


def write_file(path: Path, chunks) -> int:
    """Write ``chunks`` (bytes-like) to a temporary file beside ``path`` and
    rename it into place; on any failure (a full disk, Ctrl-C) the temporary
    file is removed and the error raised. Returns the bytes written."""
    path = Path(path)
    tmp, fd = create_temp(path.parent, path.name)
    n = 0
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
                n += len(c)
        os.replace(tmp, path)
    except BaseException:
        unlink(tmp)
        raise
    return n


def touch(path: Path) -> None:
    """Set ``path``'s mtime to now (its use time), creating it 0600 when absent;
    never through a symlink. Failures are ignored (eviction order only)."""
    try:
        os.utime(path, follow_symlinks=False)
    except FileNotFoundError:
        try:
            os.close(os.open(path, _CREATE_FLAGS, 0o600))
        except OSError:
            pass
    except OSError:
        pass


def unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_tree(path: Path) -> str | None:
    """Remove a file or a folder (never following a symlink); returns why not
    everything could be removed, or None."""
    failures: list[str] = []

    def onerror(func, p, exc_info):
        exc = exc_info[1]
        if not isinstance(exc, FileNotFoundError):
            failures.append(f"{p}: {getattr(exc, 'strerror', None) or exc}")

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if stat.S_ISDIR(st.st_mode):
        if sys.version_info >= (3, 12):
            shutil.rmtree(path, onexc=lambda func, p, exc: onerror(func, p, (type(exc), exc, None)))
        else:
            shutil.rmtree(path, onerror=onerror)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            failures.append(f"{path}: {exc.strerror or exc}")
    if failures or os.path.lexists(path):
        return failures[0] if failures else f"{path}: still there"
    return None


_REFUSED: set[str] = set()


def refuse_note(root: Path, why: str) -> None:
    """The one note about a cache directory attlens will not use (once per process and folder)."""
    from attlens.cache import note

    if str(root) in _REFUSED:
        return
    _REFUSED.add(str(root))
    note(f"not using the cache directory {root}: {why}; continuing without a digest "
         f"(make it yours and private, chmod 700, or choose another --cache-dir; docs/cache.md)")
