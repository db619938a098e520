"""The keys of the digest store, without NumPy: which state of a capture, of
the files beside it and of attlens a digest (or a stored answer) belongs to.
Computing them costs one directory scan per folder (stat only, no file is
read); a command computes each key once (:func:`command_scope`)."""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from contextvars import ContextVar
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


def _stat_items(st) -> tuple:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def _tree(capture: Path) -> list:
    """(relative name, size, mtime, ctime, inode) of every entry of the capture
    directory at any depth: a wave file that ``filenames.json`` names in a
    subfolder (``sub/W0.json``) is read like a top-level one, so its state is
    part of the key. Symlinks are stat'ed through (what a reader would open)
    but a symlinked folder is not walked: a file it leads to inside the
    capture is walked where it really lies, one outside is refused by the
    readers. Stat only: nothing is read."""
    out = []
    todo = [""]
    while todo:
        rel = todo.pop()
        with os.scandir(os.path.join(capture, rel) if rel else capture) as it:
            for e in it:
                name = f"{rel}/{e.name}" if rel else e.name
                shown = os.fsencode(name).decode("latin-1")  # a name that is not UTF-8 keeps its bytes
                try:
                    if e.is_dir(follow_symlinks=False):
                        todo.append(name)
                    out.append((shown, *_stat_items(e.stat(follow_symlinks=True))))
                except OSError:
                    out.append((shown, -1, 0, 0, 0))
    out.sort()
    return out


def _compute_capture_key(capture: Path) -> str:
    st = os.stat(capture)
    items: list = [code_fingerprint(), st.st_ino, st.st_mtime_ns, st.st_ctime_ns, _tree(capture)]
    return hashlib.blake2b(orjson.dumps(items), digest_size=12).hexdigest()


# Keys known in the running command (:func:`command_scope`): a command computes
# each capture's key once and every part of it (the stored answer, the
# digest, the context lookup) uses that value. Outside a scope (a library
# caller, the MCP server between calls) every call looks again.
_SCOPE: ContextVar[dict | None] = ContextVar("attlens_key_scope", default=None)


@contextmanager
def command_scope(known: dict | None = None):
    """Within the block, :func:`capture_key` and :func:`context_key` of a path
    are computed once (``known``: keys already computed, by ``("capture",
    real path)``)."""
    token = _SCOPE.set(dict(known or {}))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def _scoped(kind: str, parts: tuple, compute, fresh: bool):
    scope = _SCOPE.get()
    if scope is None:
        return compute()
    k = (kind, *parts)
    if fresh or k not in scope:
        scope[k] = compute()
    return scope[k]


def capture_key(capture: Path, fresh: bool = False) -> str:
    """Content key of a capture directory's current state: for every entry at
    any depth its name, size, mtime, ctime and inode (a replaced, rewritten or
    touched file changes it: rewriting a file changes its ctime even when its
    size and mtime are restored), the directory's own, plus the code
    fingerprint. ``fresh``: look again even inside a :func:`command_scope`
    (the check that a capture did not change while it was read)."""
    real = os.path.realpath(capture)
    return _scoped("capture", (real,), lambda: _compute_capture_key(Path(capture)), fresh)


def current_capture_key(capture: Path) -> str:
    """:func:`capture_key` looked at now, leaving the command's known key as it
    is (the check that a capture did not change while it was read: a command
    that goes on keeps the key of the state it read)."""
    return _compute_capture_key(Path(capture))


def path_hash(capture: Path) -> str:
    """The digest folder's name: a hash of the capture's real path."""
    return hashlib.blake2b(os.path.realpath(capture).encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()


def context_key(capture: Path, rocprof_dir) -> str:
    """The state of every file the context lookup may read beside the capture
    (the capture's own files are covered by :func:`capture_key`)."""
    rd = None if rocprof_dir is None else os.path.realpath(rocprof_dir)
    return _scoped("context", (os.path.realpath(capture), rd), lambda: _compute_context_key(capture, rocprof_dir), False)


def _compute_context_key(capture: Path, rocprof_dir) -> str:
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
