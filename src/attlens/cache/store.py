"""The digest store: one folder per capture, one digest per capture state.

Layout (docs/cache.md)::

    <cache dir>/digests-v1/<hash of the capture's real path>/<content key>/
        capture.json              "<crc32>\\n<JSON>": array table + everything small
        capture-<token>.bin       the columns, 64-byte aligned, mapped read-only
        derived-<name>.json       one per derived result, same form
        derived-<name>-<token>.bin
        used                      touched on every use (eviction order)

A ``.json`` file is written last and renamed into place, so a reader sees a
record whole or not at all; the folder itself is built under a temporary
name and renamed. Arrays are checked against their CRC-32 when first used.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import secrets
import time
import zlib
from pathlib import Path

import numpy as np
import orjson

from attlens.cache import max_bytes, note
from attlens.cache import private
from attlens.cache.keys import TOP as _TOP
from attlens.cache.keys import FORMAT, capture_key, code_fingerprint  # noqa: F401  (re-exported)
from attlens.cache.keys import path_hash as _path_hash

_ALIGN = 64


class DamagedDigest(Exception):
    """A digest file is missing, truncated, or does not match its checksum."""


# ---------------------------------------------------------------------------
# one record: arrays in a .bin, a table and small values in a .json
# ---------------------------------------------------------------------------


def _byte_steps(arr):
    """The bytes of an array (or of a :class:`~attlens.cache.packing.Packed`
    one, step by step as it is made), each step written before the next is made."""
    if hasattr(arr, "steps"):
        for _, part in arr.steps():
            yield memoryview(part).cast("B")
        return
    arr = np.ascontiguousarray(arr)
    if arr.size:
        yield memoryview(arr).cast("B")


def _write_record(folder: Path, stem: str, arrays: dict[str, np.ndarray], meta) -> int:
    """Write ``<stem>-<token>.bin`` then ``<stem>.json`` (atomically, mode
    0600); returns bytes. A failure (a full disk, Ctrl-C) leaves no temporary
    file and no data file without its record."""
    token = secrets.token_hex(4)
    bin_name = f"{stem}-{token}.bin"
    table = {}
    sizes = [0]

    def chunks():
        offset = 0
        for name, arr in arrays.items():
            pad = (-offset) % _ALIGN
            if pad:
                yield b"\0" * pad
                offset += pad
            crc = 0
            for view in _byte_steps(arr):
                crc = zlib.crc32(view, crc)
                yield view
            table[name] = [arr.dtype.str, list(arr.shape), offset, arr.nbytes, crc]
            offset += arr.nbytes
        sizes[0] = offset

    private.write_file(folder / bin_name, chunks())
    offset = sizes[0]
    try:
        body = orjson.dumps({"bin": bin_name, "size": offset, "arrays": table, "meta": meta}, option=orjson.OPT_NON_STR_KEYS)
        private.write_file(folder / f"{stem}.json", [b"%08x\n" % zlib.crc32(body), body])
    except BaseException:
        private.unlink(folder / bin_name)
        raise
    return offset + len(body)


class _Record:
    """A record mapped read-only; arrays are checked on first use."""

    def __init__(self, folder: Path, stem: str):
        path = folder / f"{stem}.json"
        try:
            raw = private.read_bytes(path)
        except FileNotFoundError:
            raise
        except private.NotPrivate as exc:
            raise DamagedDigest(str(exc)) from None
        except OSError as exc:
            raise DamagedDigest(f"{path.name}: {exc.strerror or exc}") from None
        head, _, body = raw.partition(b"\n")
        try:
            ok = len(head) == 8 and int(head, 16) == zlib.crc32(body)
        except ValueError:
            ok = False
        if not ok:
            raise DamagedDigest(f"{path.name}: checksum mismatch")
        try:
            doc = orjson.loads(body)
            self.meta = doc["meta"]
            self.table = doc["arrays"]
            size = int(doc["size"])
            bin_name = doc["bin"]
            if not isinstance(bin_name, str) or not bin_name.startswith(f"{stem}-") or "/" in bin_name or os.sep in bin_name:
                raise ValueError
            bin_path = folder / bin_name
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            raise DamagedDigest(f"{path.name}: not a digest record") from None
        try:
            fd = private.open_read(bin_path)  # a regular file of this user, never a FIFO waited on
            try:
                actual = os.fstat(fd).st_size
                if actual != size:
                    raise DamagedDigest(f"{bin_path.name}: {actual} bytes, expected {size}")
                self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if size else None
            finally:
                os.close(fd)
        except private.NotPrivate as exc:
            raise DamagedDigest(str(exc)) from None
        except OSError as exc:
            raise DamagedDigest(f"{bin_path.name}: {exc.strerror or exc}") from None
        self._checked: dict[str, np.ndarray] = {}

    def array(self, name: str) -> np.ndarray:
        arr = self._checked.get(name)
        if arr is not None:
            return arr
        try:
            dtype, shape, offset, nbytes, crc = self.table[name]
            dt = np.dtype(dtype)
            count = int(np.prod(shape)) if shape else 1
            if dt.hasobject or count * dt.itemsize != nbytes:
                raise ValueError
        except (KeyError, TypeError, ValueError):
            raise DamagedDigest(f"array {name!r}: bad table entry") from None
        if nbytes == 0:
            arr = np.zeros(shape, dtype=dt)
        else:
            if self._mm is None or offset + nbytes > len(self._mm):
                raise DamagedDigest(f"array {name!r}: beyond the end of the data file")
            arr = np.frombuffer(self._mm, dtype=dt, count=count, offset=offset).reshape(shape)
            if zlib.crc32(memoryview(arr).cast("B")) != crc:
                raise DamagedDigest(f"array {name!r}: checksum mismatch")
        self._checked[name] = arr
        return arr

    def names(self) -> list[str]:
        return list(self.table)


# ---------------------------------------------------------------------------
# the store
# ---------------------------------------------------------------------------


# Temporary files and folders older than this are leftovers of a killed
# command (a live writer renames its own within seconds): removed on eviction.
STALE_TEMP_SECONDS = 3600


class DigestStore:
    def __init__(self, root: Path):
        self.root = Path(root)
        self._warned_write = False
        self._problem: str | bool | None = False  # not looked at yet
        self._total: int | None = None  # bytes in the cache at the last scan, plus what this process wrote since

    @property
    def top(self) -> Path:
        return self.root / _TOP

    def folder_of(self, capture: Path) -> Path:
        return self.top / _path_hash(capture)

    def problem(self) -> str | None:
        """Why this cache directory must not be used (another user's, writable
        by others: attlens.cache.private), or None. Looked at once per store."""
        if self._problem is False:
            self._problem = private.chain_problem(self.root, [_TOP])
        return self._problem

    def usable(self) -> bool:
        """The directory is private (or not there yet); otherwise a note, once."""
        why = self.problem()
        if why:
            private.refuse_note(self.root, why)
        return not why

    # -- reading ------------------------------------------------------------
    def open(self, capture: Path, key: str):
        """The digest of ``capture`` in state ``key``: a :class:`Digest`, or None
        (absent, stale or damaged: the latter two are removed with a note)."""
        if not self.usable():
            return None
        folder = self.folder_of(capture)
        if not folder.is_dir():
            return None
        why = private.chain_problem(self.top, [folder.name])
        if why:
            private.refuse_note(self.root, why)
            return None
        target = folder / key
        stale = [p for p in _children(folder) if p.name != key and not p.name.startswith(".")]
        if stale:
            note(f"{capture}: its digest is out of date (the capture or attlens changed since it was made); rebuilding it")
            for p in stale:
                _remove(p)
        if not os.path.lexists(target):
            return None
        why = private.folder_problem(target)
        if why:
            self.drop(target, capture, why)
            return None
        try:
            rec = _Record(target, "capture")
        except FileNotFoundError:
            # a digest folder without its record would block every rewrite (the rename onto it fails)
            self.drop(target, capture, "capture.json missing")
            return None
        except DamagedDigest as exc:
            self.drop(target, capture, str(exc))
            return None
        private.touch(target / "used")
        return Digest(self, capture, target, rec)

    def drop(self, folder: Path, capture: Path, why: str, digest=None) -> None:
        if digest is not None:
            digest.dead = True
        note(f"{capture}: its digest in {self.root} is damaged ({why}); ignoring it and parsing the capture again")
        _remove(folder)

    # -- writing ------------------------------------------------------------
    def write(self, capture: Path, key: str, arrays: dict, meta: dict, commit=None, placed=None):
        """Store a new digest; returns it (mapped), or None when the cache
        directory cannot be written (noted once) or is not private, or when
        ``commit()``, asked once everything is written, says not to.
        ``placed()`` is called once the digest is in place and the cache
        evicted (before the digest is mapped here)."""
        if not self.usable():
            return None
        folder = self.folder_of(capture)
        target = folder / key
        tmp = folder / f".tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            private.make_dirs(self.root, [_TOP, folder.name])
            os.mkdir(tmp, 0o700)
            written = _write_record(tmp, "capture", arrays, meta)
            private.touch(tmp / "used")
            if commit is not None and not commit():
                _remove(tmp)
                return None
            try:
                os.rename(tmp, target)
            except OSError:
                if not target.is_dir():
                    raise
                _remove(tmp)  # a concurrent command stored the same digest first
        except private.NotPrivate as exc:
            _remove(tmp)
            private.refuse_note(self.root, exc.why)
            self._problem = exc.why
            return None
        except OSError as exc:
            _remove(tmp)
            self.cannot_write(exc)
            return None
        except BaseException:
            _remove(tmp)  # a record that cannot be serialized (or Ctrl-C) leaves no hidden folder the eviction never sees
            raise
        self.evict(keep=target, added=written)
        if placed is not None:
            placed()
        try:
            return Digest(self, capture, target, _Record(target, "capture"))
        except (OSError, DamagedDigest):
            return None

    def cannot_write(self, exc: OSError) -> None:
        if not self._warned_write:
            self._warned_write = True
            note(f"cannot write to the cache directory {self.root} ({exc.strerror or exc}); continuing without a digest")

    # -- management ---------------------------------------------------------
    def entries(self, with_capture: bool = True) -> list[dict]:
        """Every digest: folder, bytes, last use and (``with_capture``) the
        capture it belongs to, read from its record — eviction, after every
        write, needs only sizes and use times and reads no record."""
        out = []
        for folder in _children(self.top):
            for d in _children(folder):
                if d.name.startswith("."):
                    continue
                size = 0
                for f in _children(d):
                    try:
                        st = f.lstat()
                    except OSError:
                        continue
                    size += st.st_size if not os.path.isdir(f) or os.path.islink(f) else 0
                try:
                    last = (d / "used").lstat().st_mtime
                except OSError:
                    last = 0.0
                capture = None
                if with_capture:
                    try:
                        capture = _Record(d, "capture").meta.get("capture")
                    except (OSError, DamagedDigest, AttributeError):
                        pass
                out.append({"folder": str(d), "capture": capture if isinstance(capture, str) else None, "bytes": size,
                            "last_used": last})
        out.sort(key=lambda e: -e["last_used"])
        return out

    def evict(self, keep: Path | None = None, added: int = 0) -> int:
        """Remove least recently used digests until the total is under the cap
        (and temporary leftovers of killed commands). The cache is scanned once
        per store; later writes of this process (``added`` bytes) are counted
        on that total, and it is scanned again only when they may pass the cap
        (a scan after every derived result made a busy cache quadratic)."""
        cap = max_bytes()
        if self._total is not None:
            self._total += added
            if self._total <= cap:
                return 0
        self._remove_stale_temps()
        entries = self.entries(with_capture=False)
        total = sum(e["bytes"] for e in entries)
        removed = 0
        for e in reversed(entries):  # oldest first
            if total <= cap:
                break
            if keep is not None and Path(e["folder"]) == keep:
                continue
            _remove(Path(e["folder"]))
            total -= e["bytes"]
            removed += 1
        self._total = total
        return removed

    def _remove_stale_temps(self) -> None:
        old = time.time() - STALE_TEMP_SECONDS
        for folder in _children(self.top):
            for p in _children(folder):
                inner = _children(p) if not p.name.startswith(".") and p.is_dir() and not p.is_symlink() else []
                for q in [p, *inner]:
                    if q.name.startswith(".") and ".tmp" in q.name:
                        try:
                            if q.lstat().st_mtime < old:
                                _remove(q)
                        except OSError:
                            pass

    def clear(self) -> dict:
        """Remove every digest; returns what was really removed:
        ``{"removed": n, "bytes": freed, "left": n, "errors": [why, ...]}``."""
        entries = self.entries(with_capture=False)
        removed = freed = 0
        errors: list[str] = []
        for e in entries:
            why = private.remove_tree(Path(e["folder"]))
            if why is None:
                removed += 1
                freed += e["bytes"]
            else:
                errors.append(why)
        private.remove_tree(self.top)  # the folders and leftovers around the digests (what remains is named above)
        return {"removed": removed, "bytes": freed, "left": len(entries) - removed, "errors": errors}


def _children(p: Path) -> list[Path]:
    try:
        return sorted(p.iterdir())
    except OSError:
        return []


def _remove(p: Path) -> None:
    private.remove_tree(p)


# ---------------------------------------------------------------------------
# one digest: the capture's columns plus derived results
# ---------------------------------------------------------------------------


class Digest:
    def __init__(self, store: DigestStore, capture: Path, folder: Path, record: _Record):
        self.store = store
        self.capture = capture
        self.folder = folder
        self.record = record
        self.meta = record.meta
        self.dead = False  # dropped while in use: read and write nothing more

    def array(self, name: str) -> np.ndarray:
        return self.record.array(name)

    def get_derived(self, name: str, codec):
        if self.dead:
            return None
        try:
            rec = _Record(self.folder, f"derived-{_safe(name)}")
            return codec.decode({k: rec.array(k) for k in rec.names()}, rec.meta)
        except FileNotFoundError:
            return None
        except (DamagedDigest, KeyError, TypeError, ValueError) as exc:
            note(f"{self.capture}: stored result {name!r} is damaged ({exc}); computing it again")
            for f in self.folder.glob(f"derived-{_safe(name)}*"):
                _remove(f)
            return None

    def put_derived(self, name: str, value, codec) -> None:
        if self.dead:
            return
        self.put_encoded(name, *codec.encode(value))

    def put_encoded(self, name: str, arrays: dict, meta) -> None:
        """Store a derived result already encoded (``codec.encode``)."""
        if self.dead:
            return
        try:
            written = _write_record(self.folder, f"derived-{_safe(name)}", arrays, meta)
        except OSError as exc:
            self.store.cannot_write(exc)
        else:
            self.store.evict(keep=self.folder, added=written)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


# ---------------------------------------------------------------------------
# codecs for derived results
# ---------------------------------------------------------------------------


class DataclassCodec:
    """A dataclass whose fields are NumPy arrays or JSON values."""

    def __init__(self, cls):
        self.cls = cls

    def encode(self, obj):
        arrays, meta = {}, {}
        for f in dataclasses.fields(obj):
            v = getattr(obj, f.name)
            if isinstance(v, np.ndarray):
                arrays[f.name] = v
            else:
                meta[f.name] = v
        return arrays, meta

    def decode(self, arrays, meta):
        return self.cls(**checked_fields(self.cls, {**arrays, **meta}))


def checked_fields(cls, values: dict) -> dict:
    """``values`` for the dataclass ``cls``, each checked against its field's
    annotation (one level into lists, tuples and dicts). A record whose CRC
    matches but whose content attlens did not write (edited, or from a bug)
    is refused here — a ``DamagedDigest``, dropped and recomputed — instead
    of failing later, deep in an analysis."""
    import typing

    if not isinstance(values, dict):
        raise DamagedDigest(f"{cls.__name__}: not an object")
    names = {f.name for f in dataclasses.fields(cls)}
    if set(values) - names:
        raise DamagedDigest(f"{cls.__name__}: unknown field(s) {', '.join(sorted(set(values) - names))[:80]}")
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that cannot be resolved here: the names are still checked
        hints = {}
    for name, v in values.items():
        if name in hints and not _fits(v, hints[name]):
            raise DamagedDigest(f"{cls.__name__}.{name}: {type(v).__name__} where {hints[name]} is expected")
    return values


def _fits(v, hint, depth: int = 0) -> bool:
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any or hint is object or depth > 3:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_fits(v, a, depth) for a in args)
    if hint is type(None):
        return v is None
    if hint is bool:
        return isinstance(v, (bool, np.bool_))
    if hint is int:
        return isinstance(v, (int, np.integer)) and not isinstance(v, bool)
    if hint is float:
        return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
    if origin in (list, tuple, set, frozenset):
        if not isinstance(v, (list, tuple)):
            return False
        if origin is tuple and args and args[-1] is not Ellipsis:
            return len(v) == len(args) and all(_fits(x, a, depth + 1) for x, a in zip(v, args))
        return not args or all(_fits(x, args[0], depth + 1) for x in v)
    if origin is dict:
        if not isinstance(v, dict):
            return False
        return not args or all(_fits(x, args[1], depth + 1) for x in v.values())
    if isinstance(hint, type):
        if hint in (list, tuple):
            return isinstance(v, (list, tuple))
        return isinstance(v, hint)
    return True  # a type this check does not know: not refused


class TupleCodec:
    """A tuple of values, each with its own codec."""

    def __init__(self, *codecs):
        self.codecs = codecs

    def encode(self, values):
        arrays, meta = {}, []
        for i, (c, v) in enumerate(zip(self.codecs, values)):
            a, m = c.encode(v)
            arrays.update({f"{i}.{k}": x for k, x in a.items()})
            meta.append(m)
        return arrays, meta

    def decode(self, arrays, meta):
        out = []
        for i, c in enumerate(self.codecs):
            prefix = f"{i}."
            out.append(c.decode({k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}, meta[i]))
        return tuple(out)
