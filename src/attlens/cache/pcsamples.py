"""PC-sample tables kept in the digest store beside the capture digests
(docs/cache.md, docs/pcsampling.md): read a results.json of a million samples
once, map its columns afterwards.

A separate record type in its own folder, so it never touches a capture's
digest: ``<cache dir>/digests-v1/pcs-<hash of the source's real path>/<key>/``
holding ``pcsamples.json`` + ``pcsamples-<token>.bin`` (the same checked,
memory-mapped record form as capture digests) and ``used``. The key covers
the source's name, size, mtime, ctime and inode (every entry of it for a
directory) and attlens' code fingerprint; a changed source gets a new key and
its old record is removed. A source that holds no sample is remembered too
(the record carries the refusal), so a big results.json without samples
beside a capture is not parsed on every command. The eviction and
``attlens cache clear`` of the store cover these folders like any digest.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

import orjson

from attlens.cache import inside_capture, note, open_cache, private

STEM = "pcsamples"
FOLDER_PREFIX = "pcs-"


def source_state(path) -> list:
    """Name, size, mtime, ctime and inode of a sample source (of each entry
    of a directory): what its record and any answer using it depend on."""
    p = os.path.realpath(path)
    st = os.stat(p)
    items: list = [p, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
    if os.path.isdir(p):
        entries = []
        with os.scandir(p) as it:
            for e in it:
                try:
                    s = e.stat(follow_symlinks=True)
                    entries.append((e.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
                except OSError:
                    entries.append((e.name, -1, 0, 0, 0))
        items.append(sorted(entries))
    return items


def _key(path) -> str:
    from attlens.cache.keys import code_fingerprint

    return hashlib.blake2b(orjson.dumps([code_fingerprint(), "pcsamples-1", source_state(path)]), digest_size=12).hexdigest()


def _folder(store, path) -> Path:
    from attlens.cache.keys import path_hash

    return store.top / (FOLDER_PREFIX + path_hash(Path(path)))


def _encode(table) -> tuple[dict, dict]:
    meta = {k: getattr(table, k) for k in ("format", "path", "instructions", "comments", "code_objects", "kernel_symbols",
                                          "agents", "pid", "hostname", "att_filenames", "warnings", "notes")}
    meta["dispatch_kernels"] = [[int(d), int(k)] for d, k in table.dispatch_kernels.items()]
    return dict(table.columns), meta


def _decode(rec):
    from attlens.errors import CorruptCapture, EmptyCapture
    from attlens.io.pcsampling import COLUMNS, PcSampleTable

    m = rec.meta
    if m.get("refused"):
        kind = {"EmptyCapture": EmptyCapture}.get(m["refused"]["kind"], CorruptCapture)
        raise kind(m["refused"]["message"])
    cols = {name: rec.array(name) for name in COLUMNS}
    t = PcSampleTable(m["format"], m["path"], cols, list(m["instructions"]), list(m["comments"]),
                      code_objects=list(m["code_objects"]), kernel_symbols=list(m["kernel_symbols"]),
                      dispatch_kernels={int(d): int(k) for d, k in m["dispatch_kernels"]}, agents=list(m["agents"]),
                      pid=m["pid"], hostname=m["hostname"], att_filenames=list(m["att_filenames"]),
                      warnings=list(m["warnings"]), notes=list(m["notes"]))
    return t


def cached_samples(path, read, cache=None):
    """``read(path)`` (a :class:`~attlens.io.pcsampling.PcSampleTable`), or the
    table stored for ``path`` in its current state. ``cache`` as for
    :func:`attlens.load` (None: the user cache, False: none). A source that
    holds no sample raises the same error from the record as from the file."""
    from attlens.cache.store import DamagedDigest, _Record, _remove
    from attlens.errors import EmptyCapture

    store = open_cache(cache)
    if store is None or inside_capture(store.root, path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))):
        return read(path)
    if not store.usable():  # a cache folder others can write: not used (attlens.cache.private)
        return read(path)
    try:
        key = _key(path)
        folder = _folder(store, path)
    except OSError:
        return read(path)
    target = folder / key
    if target.is_dir():
        try:
            rec = _Record(target, STEM)
            table = _decode(rec)
            for name in table.columns:  # checked now: a damaged record is dropped before anything uses it
                rec.array(name)
            private.touch(target / "used")
            return table
        except FileNotFoundError:
            _remove(target)
        except (DamagedDigest, KeyError, TypeError, ValueError) as exc:
            note(f"{path}: its stored PC-sample table in {store.root} is damaged ({exc}); reading the file again")
            _remove(target)
    try:
        table = read(path)
    except EmptyCapture as exc:
        _store(store, folder, key, {}, {"refused": {"kind": "EmptyCapture", "message": exc.message}})
        raise
    arrays, meta = _encode(table)
    try:
        if _key(path) == key:  # unchanged while it was read
            _store(store, folder, key, arrays, meta)
    except OSError:
        pass
    return table


def _store(store, folder: Path, key: str, arrays: dict, meta: dict) -> None:
    from attlens.cache.store import _remove, _write_record

    from attlens.cache.keys import TOP

    tmp = folder / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        private.make_dirs(store.root, [TOP, folder.name])  # 0700, and refused when not private
        for old in folder.iterdir():  # other states of this source are stale
            if old.name != key and not old.name.startswith("."):
                _remove(old)
        os.mkdir(tmp, 0o700)
        _write_record(tmp, STEM, arrays, meta)
        private.touch(tmp / "used")
        try:
            os.rename(tmp, folder / key)
        except OSError:
            if not (folder / key).is_dir():
                raise
            _remove(tmp)  # stored by a concurrent command first
    except OSError as exc:
        _remove(tmp)
        store.cannot_write(exc)
        return
    except BaseException:
        _remove(tmp)
        raise
    store.evict(keep=folder / key)
