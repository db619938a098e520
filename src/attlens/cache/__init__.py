"""Decode once: a capture's digest, kept in a user cache directory.

The first command on a capture stores what the loader read (every column,
the code listing, the index, occupancy, realtime and snapshot maps) and, as
commands compute them, the expensive derived arrays (wait dependencies, per-pc
sums and wait pairs, hidden latency) in a versioned, memory-mappable form
(docs/cache.md). Later commands map it instead of parsing.

- Where: ``--cache-dir``, else ``$ATTLENS_CACHE_DIR``, else
  ``$XDG_CACHE_HOME/attlens``, else ``~/.cache/attlens``; never inside the
  capture (read-only captures work).
- Key: the capture's real path, and for each of its files at any depth name,
  size, mtime, ctime and inode, plus the attlens version and a fingerprint of
  its source files (:mod:`attlens.cache.keys`). A changed capture (touched,
  truncated, rewritten, replaced file) has a new key: the old digest is
  dropped with a note and a new one built.
- Private (:mod:`attlens.cache.private`): a cache folder another user owns
  or others can write is not used; files are opened as regular files of the
  user only, never through a symlink, never blocking.
- Never trusted: every array carries a CRC-32 checked when the array is
  first used, the manifest is checked whole; a damaged digest is dropped with
  a note and the capture parsed again.
- Writes are atomic (a private temporary folder renamed into place), so
  concurrent commands are safe; a read-only or full cache directory means
  "no cache" with a note, never an error.
- Size cap (``ATTLENS_CACHE_MAX_BYTES``, default 4 GiB): least recently used
  digests are evicted after each write.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

DEFAULT_MAX_BYTES = 4 << 30
# Set by the command line (--cache-dir / --no-cache) for the command it runs.
_configured: dict = {"dir": None, "enabled": True}


def configure(cache_dir: str | os.PathLike | None = None, enabled: bool = True) -> None:
    """Where ``attlens.load`` keeps digests in this process (CLI options)."""
    _configured["dir"] = None if cache_dir is None else Path(cache_dir)
    _configured["enabled"] = enabled


def default_cache_dir() -> Path:
    if _configured["dir"] is not None:
        return _configured["dir"]
    env = os.environ.get("ATTLENS_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "attlens"


def max_bytes() -> int:
    env = os.environ.get("ATTLENS_CACHE_MAX_BYTES", "")
    try:
        v = int(env)
        return v if v >= 0 else DEFAULT_MAX_BYTES
    except ValueError:
        return DEFAULT_MAX_BYTES


def note(message: str) -> None:
    """A one-line note on stderr (never on stdout, so ``--json`` stays clean)."""
    print(f"attlens: note: {message}", file=sys.stderr)


def inside_capture(root, capture) -> bool:
    """The cache directory is the capture or inside it (``--cache-dir CAPTURE``,
    a relative ``ATTLENS_CACHE_DIR`` run from the capture): nothing is stored
    there, a capture is only read (docs/cache.md)."""
    r, c = os.path.realpath(root), os.path.realpath(capture)
    return r == c or r.startswith(c.rstrip(os.sep) + os.sep)


def cache_root() -> Path | None:
    """The cache directory of this process, or None when digests are off
    (``--no-cache``, ``ATTLENS_NO_CACHE=1``)."""
    if not _configured["enabled"] or os.environ.get("ATTLENS_NO_CACHE", "").lower() in ("1", "true", "yes"):
        return None
    return default_cache_dir()


def open_cache(cache=None):
    """The digest store to use: ``cache`` is None (default location; disabled
    by ``ATTLENS_NO_CACHE=1``), False (no cache), a path, or a store."""
    from attlens.cache.store import DigestStore

    if cache is False:
        return None
    if isinstance(cache, DigestStore):
        return cache
    if cache is None:
        root = cache_root()
        return None if root is None else DigestStore(root)
    return DigestStore(Path(cache))


def memo(dispatch, name: str, compute, codec, store: bool = True):
    """``compute()``, or its result stored in the dispatch's digest (then kept
    there for the next command, unless ``store`` is False: another process
    stores it meanwhile). Without a digest it is just ``compute()``.
    ``dispatch`` may also be the digest itself."""
    from attlens.cache.behind import PendingDigest
    from attlens.cache.packing import PackedCodec
    from attlens.cache.store import Digest

    # a Digest, a digest being written (cache/behind.py), or a dispatch holding one
    digest = dispatch if isinstance(dispatch, (Digest, PendingDigest)) else getattr(dispatch, "digest", None)
    if digest is None:
        return compute()
    codec = PackedCodec(codec)  # integer arrays stored narrow (cache/packing.py)
    value = digest.get_derived(name, codec)
    if value is None:
        value = compute()
        if store:
            digest.put_derived(name, value, codec)
    return value
