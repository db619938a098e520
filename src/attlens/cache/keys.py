"""The keys of the digest store, without NumPy: which state of a capture, of
the files beside it and of attlens a digest (or a stored answer) belongs to.
Computing them costs one directory scan per folder."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import orjson

FORMAT = 1  # of the digest layout (docs/cache.md); part of every key
TOP = f"digests-v{FORMAT}"  # the folder of this layout in the cache directory
_CODE_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """attlens version, and in a source checkout (not an installed package)
    the (path, size, mtime) of its source files: a digest written by other
    code is never read."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        from attlens import __version__

        pkg = Path(__file__).resolve().parents[1]
        items = [__version__, str(FORMAT)]
        installed = any(part in ("site-packages", "dist-packages") for part in pkg.parts)
        for dirpath, dirnames, filenames in ([] if installed else os.walk(pkg)):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(filenames):
                if f.endswith((".py", ".yaml", ".yml")):
                    st = os.stat(os.path.join(dirpath, f))
                    items.append(f"{os.path.relpath(os.path.join(dirpath, f), pkg)}:{st.st_size}:{st.st_mtime_ns}")
        _CODE_FINGERPRINT = hashlib.blake2b("\n".join(items).encode(), digest_size=8).hexdigest()
    return _CODE_FINGERPRINT


def capture_key(capture: Path) -> str:
    """Content key of a capture directory's current state: every entry's name,
    size, mtime, ctime and inode (a replaced or touched file changes it),
    plus the code fingerprint."""
    st = os.stat(capture)
    items: list = [code_fingerprint(), st.st_ino, st.st_mtime_ns, st.st_ctime_ns]
    with os.scandir(capture) as it:
        names = []
        for e in it:
            try:
                s = e.stat(follow_symlinks=True)
                names.append((e.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
            except OSError:
                names.append((e.name, -1, 0, 0, 0))
    names.sort()
    items.append(names)
    return hashlib.blake2b(orjson.dumps(items), digest_size=12).hexdigest()


def path_hash(capture: Path) -> str:
    """The digest folder's name: a hash of the capture's real path."""
    return hashlib.blake2b(os.path.realpath(capture).encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()


def context_key(capture: Path, rocprof_dir) -> str:
    """The state of every file the context lookup may read beside the capture
    (the capture's own files are covered by :func:`capture_key`)."""
    from attlens.model.rundirs import RUN_OUTPUT_SUFFIXES, search_dirs

    items: list = [None if rocprof_dir is None else os.path.realpath(rocprof_dir)]
    real_d = os.path.realpath(capture)
    for sd in search_dirs(capture, rocprof_dir):
        real = os.path.realpath(sd)
        if real == real_d:
            continue
        entries = []
        with os.scandir(real) as it:
            for e in it:
                if not e.name.endswith(RUN_OUTPUT_SUFFIXES):
                    continue  # only what the lookup may read: an unrelated file changes nothing
                try:
                    st = e.stat()
                except OSError:
                    continue
                entries.append((e.name, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        items.append((real, sorted(entries)))
    return hashlib.blake2b(orjson.dumps(items), digest_size=10).hexdigest()
