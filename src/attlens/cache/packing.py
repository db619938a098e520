"""Integer arrays stored narrow in a digest, and widened back exactly.

A digest keeps what later commands read; most of it is integer columns whose
values need far fewer bits than their in-memory dtype (a pc index in int32
fits 16 bits, cycle counts rarely pass 65,535, record times grow by a few
cycles from one record to the next). Each integer array is stored in the
narrowest of uint8 … int64 that holds its values, or of its successive
differences when that is narrower (``delta``: times, offsets, record
indices; the first value is kept in the encoding), with its original dtype recorded, so the array read back is equal,
element by element and in dtype, to the one written. Work happens in bounded
steps: no full-size int64 temporary.
"""

from __future__ import annotations

import numpy as np

# the stored types, narrowest first
_TYPES = (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32, np.int64)
STEP = 1 << 20  # elements per step of the delta passes
MIN_DELTA = 1024  # smaller arrays are stored plain (a delta saves nothing worth a pass)


def _fits(lo: int, hi: int):
    for t in _TYPES:
        info = np.iinfo(t)
        if info.min <= lo and hi <= info.max:
            return np.dtype(t)
    return None


def _delta_range(a: np.ndarray, widest: int) -> tuple[int, int] | None:
    """(min, max) of 0 and of ``a[i] - a[i-1]``, in steps; None as soon as
    they need more than ``widest`` bytes (the differences cannot win: record
    times jump back at every wave's start, so one step tells, and the other
    steps were 0.05 s of a digest's writing at softmax x5)."""
    lo = hi = 0
    for s in range(1, len(a), STEP):
        d = a[s : s + STEP].astype(np.int64) - a[s - 1 : s - 1 + STEP][: len(a[s : s + STEP])]
        lo, hi = min(lo, int(d.min())), max(hi, int(d.max()))
        dt = _fits(lo, hi)
        if dt is None or dt.itemsize > widest:
            return None
    return lo, hi


def _delta(a: np.ndarray, dtype) -> np.ndarray:
    out = np.empty(len(a), dtype=dtype)
    for s, part in Packed(a, np.dtype(dtype), True).steps():
        out[s : s + len(part)] = part
    return out


def _encoding(a: np.ndarray, delta: bool | None):
    """``(stored dtype, differences?)`` of ``a``, or None: stored as it is."""
    if a.dtype.kind not in "iu" or a.size == 0 or (a.dtype.kind == "u" and a.dtype.itemsize == 8):
        return None
    plain = _fits(int(a.min()), int(a.max()))
    # differences are tried where they can win: a value needing 4+ bytes
    # (times, offsets, record indices), not a 1-2 byte column (one more pass)
    if a.ndim == 1 and delta is not False and (delta or (len(a) >= MIN_DELTA and plain.itemsize >= 4)):
        # the widest differences that still win: narrower than the values, or (asked for) no wider than the array
        span = _delta_range(a, max(plain.itemsize - 1, a.dtype.itemsize if delta else 0))
        if span is not None:
            return _fits(*span), True
    return None if plain.itemsize >= a.dtype.itemsize else (plain, False)


def _describe(a: np.ndarray, dtype, use_delta: bool) -> list:
    return [a.dtype.str, "delta", list(a.shape), int(a[0])] if use_delta else [a.dtype.str, "plain", list(a.shape)]


def pack(a: np.ndarray, delta: bool | None = None) -> tuple[np.ndarray, list | None]:
    """``(stored array, encoding)``; the encoding is None when ``a`` is stored
    as it is. ``delta``: True to store differences (unless that is wider than
    the array itself), False never, None (default) when that is narrower than
    the values."""
    a = np.asarray(a)
    how = _encoding(a, delta)
    if how is None:
        return a, None
    dtype, use_delta = how
    return (_delta(a, dtype) if use_delta else a.astype(dtype)), _describe(a, dtype, use_delta)


def pack_lazily(a: np.ndarray, delta: bool | None = None) -> tuple[np.ndarray | Packed, list | None]:
    """:func:`pack`, the stored array made a step at a time as it is written
    (a :class:`Packed`) instead of whole."""
    a = np.asarray(a)
    how = _encoding(a, delta)
    if how is None:
        return a, None
    return Packed(a, np.dtype(how[0]), how[1]), _describe(a, *how)


class Packed:
    """An array as a digest stores it, made ``STEP`` elements at a time in
    one reused buffer while it is written (cache.store). Why: the whole
    stored copy is fresh memory, and its first touch was most of the
    packing's time in the digest's writer (softmax x30: 0.7 of 1.1 s)."""

    def __init__(self, source: np.ndarray, dtype: np.dtype, delta: bool):
        self.source, self.dtype, self.delta = source, dtype, delta
        self.shape = source.shape
        self.nbytes = source.size * dtype.itemsize

    def steps(self):
        """``(first index, stored values)`` of each step; the values are a
        view of a buffer the next step reuses."""
        a = self.source.reshape(-1)
        buf = np.empty(min(len(a), STEP), dtype=self.dtype)
        for s in range(0, len(a), STEP):
            part = a[s : s + STEP]
            out = buf[: len(part)]
            if not self.delta:
                np.copyto(out, part, casting="unsafe")
            elif s:
                np.subtract(part, a[s - 1 : s - 1 + len(part)], out=out, dtype=np.int64, casting="unsafe")
            else:
                out[0] = 0  # the first value is in the encoding
                np.subtract(part[1:], part[:-1], out=out[1:], dtype=np.int64, casting="unsafe")
            yield s, out


def unpack(stored: np.ndarray, enc: list | None) -> np.ndarray:
    """The array :func:`pack` was given (raises ValueError on a bad encoding)."""
    if enc is None:
        return stored
    try:
        dtype, kind, shape = np.dtype(enc[0]), enc[1], tuple(int(x) for x in enc[2])
    except (TypeError, ValueError, IndexError):
        raise ValueError("bad packing entry") from None
    if dtype.kind not in "iu" or kind not in ("plain", "delta") or int(np.prod(shape)) != stored.size:
        raise ValueError("bad packing entry")
    if kind == "plain":
        return stored.astype(dtype).reshape(shape)
    try:
        first = int(enc[3])
    except (TypeError, ValueError, IndexError):
        raise ValueError("bad packing entry") from None
    out = np.cumsum(stored, dtype=np.int64)
    out += first
    return out.astype(dtype, copy=False).reshape(shape)


class PackedCodec:
    """A derived-result codec whose integer arrays are stored packed."""

    def __init__(self, codec):
        self.codec = codec

    def encode(self, value):
        arrays, meta = self.codec.encode(value)
        out, enc = {}, {}
        for k, a in arrays.items():
            out[k], e = pack(a)
            if e is not None:
                enc[k] = e
        return out, {"packed": 1, "enc": enc, "meta": meta}

    def decode(self, arrays, meta):
        if not isinstance(meta, dict) or meta.get("packed") != 1 or not isinstance(meta.get("enc"), dict):
            raise ValueError("not a packed record")
        enc = meta["enc"]
        return self.codec.decode({k: unpack(a, enc.get(k)) for k, a in arrays.items()}, meta["meta"])
