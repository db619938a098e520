"""Many JSON objects of one shape, formatted by NumPy instead of one dict each.

:class:`Rows` builds ``n`` rows block by block in an ``(n, width)`` byte
matrix: constant bytes, bytes picked per row from a :class:`Table` (strings
JSON-encoded once, by :func:`~attlens.textsafe.dumps_json`), and numbers whose
digits come from integer arithmetic. Every block is padded with NUL bytes to
its widest row (and to whole 4-byte words, so blocks are copied a word at a
time); JSON text never holds a raw NUL (orjson escapes control characters),
so :func:`squeeze`, dropping every NUL byte of the matrix, leaves the rows
exactly, back to back. That drop, one pass over the padded matrix, is half
of the formatting time: the matrix is built with as few passes as possible
(one ``take`` of a template per row, see :meth:`Rows.matrix`) in a buffer
each thread reuses (:meth:`Rows.squeezed`).

Numbers: :meth:`Rows.integer` writes an integer as JSON does;
:meth:`Rows.thousandths` writes ``v / 1000`` with three decimals
(``1234.500``): the exact decimal value of the quotient, so a JSON reader gets
the same double as from the shortest form of ``v / 1000``.
"""

from __future__ import annotations

import functools
import threading

import numpy as np

from attlens.textsafe import dumps_json


def _words(b: np.ndarray) -> np.ndarray:
    """``(k, w)`` uint8 as ``(k, ceil(w / 4))`` uint32, NUL-padded on the right."""
    k, w = b.shape
    padded = np.zeros((k, -(-w // 4) * 4), dtype=np.uint8)
    padded[:, :w] = b
    return padded.view(np.uint32)


def _groups_table() -> np.ndarray:
    """Digit groups of three as 4-byte words, NUL first: rows 0..999 zero-padded
    ("007"), rows 1000..1999 a leading group (no leading zeros: "7"), row
    2000 nothing (a group before the leading one)."""
    t = np.zeros((2001, 4), dtype=np.uint8)
    v = np.arange(1000)
    for col, p in zip((1, 2, 3), (100, 10, 1)):
        digit = ord("0") + (v // p) % 10
        t[:1000, col] = digit
        t[1000:2000, col] = np.where((v >= p) | (p == 1), digit, 0)
    return t.view(np.uint32)[:, 0].copy()


_GROUPS = _groups_table()
_FRACTION = np.concatenate([np.full((1000, 1), ord("."), dtype=np.uint8),
                            _groups_table().view(np.uint8).reshape(2001, 4)[:1000, 1:]], axis=1).view(np.uint32)[:, 0].copy()
_MINUS = np.array([[0, 0, 0, ord("-")]], dtype=np.uint8).view(np.uint32)[0, 0]


class Table:
    """Byte strings to pick from per row (a NUL-padded matrix of words)."""

    def __init__(self, strings: list[bytes]):
        width = max((len(s) for s in strings), default=0)
        m = np.zeros((len(strings), width), dtype=np.uint8)
        for i, s in enumerate(strings):
            if b"\0" in s:  # would vanish with the padding
                raise ValueError("a table string holds a NUL byte")
            m[i, : len(s)] = np.frombuffer(s, dtype=np.uint8)
        self.words = _words(m)

    @classmethod
    def of_json(cls, prefix: bytes, values: list, suffix: bytes = b"") -> Table:
        """``prefix + JSON(value) + suffix`` for each value."""
        return cls([prefix + dumps_json(v) + suffix for v in values])


def _digit_groups(v: np.ndarray) -> list[np.ndarray]:
    """Decimal digits of ``v`` (>= 0: int64, or uint64 magnitudes) in groups
    of three, one word each, most significant first (NUL where ``v`` has
    fewer digits)."""
    top = int(v.max()) if len(v) else 0
    if top < 1000:  # the common case: one group, the leading one
        return [np.take(_GROUPS, (v + 1000).astype(np.intp, copy=False))[:, None]]
    groups, q = [], v
    while True:  # q = v // 1000**k for group k, least significant first
        above = q // 1000
        idx = q - above * 1000
        idx[above == 0] += 1000
        if groups:  # a group before the leading one is empty
            idx[q == 0] = 2000
        groups.append(np.take(_GROUPS, idx.astype(np.intp, copy=False))[:, None])
        if not int(above.max()):
            return groups[::-1]
        q = above


class Rows:
    """``n`` JSON rows assembled from blocks, left to right."""

    def __init__(self, n: int):
        self.n = n
        # (kind, uint32 words, index): "const" (1, k) words in every row;
        # "rows" (n, k) words, row by row; "table" a Table's words, row index[i] in row i
        self._blocks: list[tuple] = []

    def const(self, b: bytes) -> Rows:
        if b:
            self._blocks.append(("const", _const_words(bytes(b)), None))
        return self

    def table(self, table: Table, idx: np.ndarray) -> Rows:
        idx = np.asarray(idx)
        if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= len(table.words)):
            raise IndexError(f"table row out of range (0..{len(table.words) - 1})")
        self._blocks.append(("table", table.words, idx))
        return self

    def _words_per_row(self, words: np.ndarray) -> None:
        self._blocks.append(("rows", words, None))

    def _sign(self, v: np.ndarray) -> np.ndarray:
        """A ``-`` block when some value is negative; the magnitudes (as
        uint64 then: |int64 min| does not fit an int64)."""
        if len(v) and int(v.min()) < 0:
            self._words_per_row(np.where(v < 0, _MINUS, 0).astype(np.uint32)[:, None])
            return np.abs(v).view(np.uint64)
        return v

    def integer(self, v: np.ndarray) -> Rows:
        for g in _digit_groups(self._sign(np.asarray(v, dtype=np.int64))):
            self._words_per_row(g)
        return self

    def thousandths(self, v: np.ndarray) -> Rows:
        """``v / 1000`` as ``int.ddd`` (``-`` first when negative)."""
        v = self._sign(np.asarray(v, dtype=np.int64))
        whole = v // 1000
        for g in _digit_groups(whole):
            self._words_per_row(g)
        self._words_per_row(np.take(_FRACTION, (v - whole * 1000).astype(np.intp, copy=False))[:, None])
        return self

    def matrix(self, scratch: bool = False) -> np.ndarray:
        """The NUL-padded ``(n, width)`` uint8 matrix of the rows; with
        ``scratch``, in this thread's reused buffer (valid until its next use).

        Built as one ``take`` from a template, a row per row of the widest
        tables (those of one index) holding those tables and every constant,
        then the other blocks written over it: most bytes are written once,
        straight into the matrix (instruction rows: the pc's mnemonic and
        args; copying every block into place was a third of the export's
        formatting time)."""
        widths = [words.shape[1] for _, words, _ in self._blocks]
        shape = (self.n, sum(widths))
        out = _scratch("matrix", shape, np.uint32) if scratch else np.empty(shape, dtype=np.uint32)
        key = self._template_key()
        if key is not None:  # mode "clip": with out=, the default mode copies through a buffer; table() checked the range
            np.take(self._template(key, shape[1]), key, axis=0, out=out, mode="clip")
        col = 0
        for kind, words, idx in self._blocks:
            k = words.shape[1]
            if key is None or not (kind == "const" or idx is key):
                out[:, col : col + k] = np.take(words, idx, axis=0) if kind == "table" else words
            col += k
        return out.view(np.uint8)

    def _template_key(self) -> np.ndarray | None:
        """The index of the table blocks that fill most of a row (None: no table)."""
        width: dict[int, int] = {}
        for kind, words, idx in self._blocks:
            if kind == "table":
                width[id(idx)] = width.get(id(idx), 0) + words.shape[1]
        best = max(width, key=width.get, default=None)
        return next((idx for kind, _, idx in self._blocks if kind == "table" and id(idx) == best), None)

    def _template(self, key: np.ndarray, width: int) -> np.ndarray:
        """A row per row of ``key``'s tables: their words and the constants."""
        t = np.zeros((next(len(w) for _, w, idx in self._blocks if idx is key), width), dtype=np.uint32)
        col = 0
        for kind, words, idx in self._blocks:
            if kind == "const" or idx is key:
                t[:, col : col + words.shape[1]] = words
            col += words.shape[1]
        return t

    def squeezed(self) -> np.ndarray:
        """The rows back to back (:func:`squeeze`; the matrix built in a reused buffer)."""
        return squeeze(self.matrix(scratch=True))[0]

    def squeezed_groups(self, groups: np.ndarray) -> list[np.ndarray]:
        """Each group of rows back to back (:func:`squeeze_groups`; the matrix built in a reused buffer)."""
        return squeeze_groups(self.matrix(scratch=True), groups)


@functools.lru_cache(maxsize=256)
def _const_words(b: bytes) -> np.ndarray:
    """A constant's ``(1, k)`` words (read-only), made once: the export uses a
    few constants thousands of times."""
    words = _words(np.frombuffer(b, dtype=np.uint8)[None, :])
    words.flags.writeable = False
    return words


_SCRATCH = threading.local()


def _scratch(name: str, shape: tuple, dtype) -> np.ndarray:
    """An uninitialised array of ``shape`` in a buffer this thread reuses.
    Why: a fresh array of a megabyte or more is fresh pages from the kernel
    (NumPy asks malloc, malloc mmap); the export's matrices and masks cost
    ~40,000 page faults, 0.08 s of its 0.5 s of CPU."""
    n = int(np.prod(shape))
    buf = getattr(_SCRATCH, name, None)
    if buf is None or buf.dtype != dtype or buf.size < n:
        buf = np.empty(n, dtype=dtype)
        setattr(_SCRATCH, name, buf)
    return buf[:n].reshape(shape)


def squeeze(m: np.ndarray, groups: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The rows of ``m`` back to back without their NUL padding (a uint8
    array, new), and, given row offsets ``groups`` (ascending, ``0 .. n``), the byte
    offset where each group of rows starts."""
    flat = m.reshape(-1)
    keep = np.not_equal(flat, 0, out=_scratch("keep", flat.shape, np.bool_))
    out = flat[keep]
    if groups is None:
        return out, None
    width = m.shape[1]
    bounds = groups.tolist()
    at = [0]
    for a, b in zip(bounds, bounds[1:]):
        at.append(at[-1] + int(np.count_nonzero(keep[a * width : b * width])))
    return out, np.array(at, dtype=np.int64)


def squeeze_groups(m: np.ndarray, groups: np.ndarray) -> list[np.ndarray]:
    """Each group of rows of ``m`` (row offsets ``groups``, ascending, ``0 ..
    n``) back to back without their NUL padding, one new uint8 array a group.
    Squeezed group by group, no pass counts the bytes of each (a tenth of
    the squeeze's time for the export's per-wave pieces)."""
    flat = m.reshape(-1)
    keep = np.not_equal(flat, 0, out=_scratch("keep", flat.shape, np.bool_))
    width, bounds = m.shape[1], groups.tolist()
    return [flat[a * width : b * width][keep[a * width : b * width]] for a, b in zip(bounds, bounds[1:])]
