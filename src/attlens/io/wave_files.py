"""Per-wave ``se*_sm*_sl*_wv*.json`` files, read into columns of their final dtype.

Format: att-format.md §2.3. A capture holds up to tens of thousands of these
files and tens of millions of ``[time, type, stall, duration, pc]`` records;
building a Python object per number costs more than everything else attlens
does, so the three arrays of each file (``instructions``, ``timeline``,
``waitcnt``) are cut out of the raw bytes, checked for the writer's compact
grammar in bulk (many files at once, with C-speed ``bytes`` operations) and
parsed by simdjson (pysimdjson), which validates the JSON and flattens the
integers of a whole batch into one int64 buffer in C, straight into the
preallocated columns. orjson parses the small rest of each file. A file whose
arrays do not look like the writer's compact output (pretty-printed,
reordered keys) is parsed whole by orjson and its arrays re-serialized
compactly, so both paths end in the same checks.

Strictness: the fast path accepts exactly what ``orjson.loads`` followed by
:func:`check_wave_doc`'s schema accepts, with the same values (a property test
mutates real wave files byte by byte to hold it to that). The schema is the
decoder's record struct: every number is a non-negative integer within its
field's type (``time`` int64 below 10^18, ``type`` uint8, ``stall``/``duration``/
``pc`` int32, timeline ``state`` uint8 and ``duration`` int32), rows have
exactly 5 (instructions) or 2 (timeline) fields, ``waitcnt`` is
``[[pc, [[pc, reserved], ...]], ...]``; ``cu``/``id``/``simd``/``slot`` are
non-negative integers, ``begin <= end``. A file that breaks it is skipped
with a warning naming the file and the first bad value.

Files are opened only inside the capture and only if regular
(:mod:`attlens.io.confine`). Large captures are parsed by two processes
(``fork``; the columns live in shared memory) that claim parts of the listing
from its two ends until they meet, each also running the caller's per-part
analysis on what it parsed (``per_part``); on an idle 2-core machine that
about halves the wall time, and when one core is busy with other work the
other process simply takes more parts: docs/design.md.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from attlens import forked
from attlens.io.filenames_json import WaveEntry
from attlens.io.jsonfile import MAX_JSON_BYTES

INT32_MAX = 2**31 - 1
TIME_LIMIT = 10**18  # times stay below this (< 2^62) so sums of times and durations cannot overflow int64; also the fast parser's bound
_DIGITS = b"0123456789"
_INSTR_KEY = b'"instructions":['
_TIMELINE_KEY = b'"timeline":['
_WAITCNT_KEY = b'"waitcnt":['
# Stand-ins for the cut arrays inside the rest of the document; each must
# occur exactly once there so the cut span is known to be the wave's own key.
_MARK_I, _MARK_T, _MARK_W = b"-1.25e-300", b"-2.25e-300", b"-3.25e-300"
_MARK_VALUES = {k: float(k) for k in (_MARK_I, _MARK_T, _MARK_W)}
# Records per file byte: a record takes at least 12 bytes ("[0,0,0,0,0],"),
# a timeline entry 6 ("[0,0],"): capacities for the preallocated columns.
_MIN_RECORD_BYTES, _MIN_STATE_BYTES = 12, 6
BATCH_BYTES = 1 << 21  # files parsed together (bounds the transient int64 block)
PARALLEL_MIN_BYTES = 24 << 20  # below this, a second process costs more than it saves

INSTR_FIELDS = ("time", "type", "stall", "duration", "pc")
TIMELINE_FIELDS = ("state", "duration")
# (lowest, highest) allowed per field, by the decoder's field types.
# (every lower bound is 0: _Sink._bad_fields relies on it)
_INSTR_LIMITS = ((0, TIME_LIMIT - 1), (0, 255), (0, INT32_MAX), (0, INT32_MAX), (0, INT32_MAX))
_TIMELINE_LIMITS = ((0, 255), (0, INT32_MAX))
_SCALARS = ("cu", "id", "simd", "slot")


class WaveFileError(Exception):
    """One wave file is unusable; the loader drops that wave with a warning."""


# ---------------------------------------------------------------------------
# the compact-array grammar, checked in bulk
# ---------------------------------------------------------------------------

_SKELETON_CACHE: dict[tuple[int, int], bytes] = {}


def _row_skeleton(rows: int, width: int) -> bytes:
    """Punctuation of ``rows`` compact rows of ``width`` numbers: ``[[,,,,],[,,,,]]``."""
    key = (rows, width)
    sk = _SKELETON_CACHE.get(key)
    if sk is None:
        row = b"[" + b"," * (width - 1) + b"]"
        sk = b"[" + b",".join([row] * rows) + b"]" if rows else b"[]"
        if rows < 4096:
            _SKELETON_CACHE[key] = sk
    return sk


_PARSE_ERRORS = (ValueError, TypeError, RuntimeError)  # what pysimdjson raises on bad text or a number of another type


def new_parser():
    """A simdjson parser: one per reading thread (a parser is reused for every
    batch, and may not be shared between threads)."""
    import simdjson

    return simdjson.Parser()


def _parse_numbers(segs: list[bytes], parser=None) -> np.ndarray | None:
    """All numbers of the non-empty compact segments ``segs``, in order, as
    int64, or None when the text is not valid JSON whose numbers are all
    integers of int64 range. The callers have checked that only digits, commas
    and brackets occur (so no sign, fraction, exponent or blank) and the
    bracket/comma skeleton. simdjson validates the JSON (no leading zero, no
    empty slot, no overflow) and flattens the arrays into one buffer in C: no
    Python object per number."""
    if not segs:
        return np.zeros(0, dtype=np.int64)
    parser = parser or new_parser()
    try:
        pieces = [b","] * (2 * len(segs) + 1)  # "[" seg "," seg ... "]", joined in one copy
        pieces[0], pieces[-1] = b"[", b"]"
        pieces[1::2] = segs
        doc = parser.parse(b"".join(pieces))
        try:
            buf = doc.as_buffer(of_type="i")
        finally:
            del doc  # the parser may not be reused while a view of its document lives
    except _PARSE_ERRORS:
        return None
    return np.frombuffer(buf, dtype=np.int64)


def parse_int_rows(segs: list[bytes], width: int, parser=None) -> tuple[np.ndarray, list[int]] | None:
    """Rows of ``width`` integers from compact JSON arrays (one per file), as one
    (n, width) int64 block and the row count of each segment; None when any
    segment is not exactly compact JSON of non-negative integer rows."""
    # A segment whose digit-free rest is the rows' skeleton holds nothing but
    # digits, commas and brackets: no sign, fraction, exponent or blank.
    rows: list[int] = []
    per_row = width + 2  # "[" + (width-1) "," + "]" + the separating ","
    for s in segs:
        sk = s.translate(None, _DIGITS)
        r = (len(sk) - 1) // per_row if len(sk) > 2 else 0
        if sk != _row_skeleton(r, width):
            return None
        rows.append(r)
    values = _parse_numbers([s for s, r in zip(segs, rows) if r], parser)
    if values is None or values.size != width * sum(rows):
        return None
    return values.reshape(-1, width), rows


def _reduce_waitcnt_skeleton(sk: bytes) -> bool:
    """Whether a digit-free skeleton is ``[[,[[,],...]],...]`` (entries of a
    number and a list of number pairs)."""
    t = sk.replace(b"[,]", b"p")
    while b"p,p" in t:
        t = t.replace(b"p,p", b"p")
    t = t.replace(b"[,[p]]", b"e").replace(b"[,[]]", b"e")
    while b"e,e" in t:
        t = t.replace(b"e,e", b"e")
    return t in (b"[]", b"[e]")


def check_waitcnt_segs(segs: list[bytes], parser=None) -> np.ndarray | None:
    """Numbers of compact ``waitcnt`` arrays (checked like :func:`parse_int_rows`,
    every number a pc or count within int32), or None when a segment is not
    exactly that grammar."""
    # as in parse_int_rows, a skeleton that reduces holds nothing but digits, commas and brackets
    nonempty = []
    for s in segs:
        if not _reduce_waitcnt_skeleton(s.translate(None, _DIGITS)):
            return None
        if len(s) > 2:
            nonempty.append(s)
    values = _parse_numbers(nonempty, parser)
    if values is None or (values.size and int(values.max()) > INT32_MAX):
        return None
    return values


# ---------------------------------------------------------------------------
# the schema, on parsed documents (the reference every fast path must equal)
# ---------------------------------------------------------------------------


def _is_int(x) -> bool:
    return type(x) is int


def _show(x) -> str:
    """A short, safe rendering of a JSON value in a message (a nested value
    is named, not dumped: it may be thousands of levels deep)."""
    if isinstance(x, list):
        return "a list"
    if isinstance(x, dict):
        return "an object"
    return orjson.dumps(x).decode()[:40]


def _bad_row(rows, width: int, limits, names) -> str | None:
    if not isinstance(rows, list):
        return "is not a list"
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != width:
            return f"entry {i} is not a list of {width} numbers ({', '.join(names)})"
        for name, x, (lo, hi) in zip(names, row, limits):
            if not _is_int(x):
                return f"entry {i}: {name} {_show(x)} is not an integer"
            if not lo <= x <= hi:
                return f"entry {i}: {name} {x} is {'negative' if x < 0 else 'out of range'} (allowed {lo}..{hi})"
    return None


def _bad_waitcnt(value) -> str | None:
    if not isinstance(value, list):
        return "is not a list"
    for i, e in enumerate(value):
        if not (isinstance(e, list) and len(e) == 2 and _is_int(e[0]) and isinstance(e[1], list)):
            return f"entry {i} is not [pc, [[pc, 0], ...]]"
        if not 0 <= e[0] <= INT32_MAX:
            return f"entry {i}: pc {e[0]} is out of range"
        for p in e[1]:
            if not (isinstance(p, list) and len(p) == 2 and _is_int(p[0]) and _is_int(p[1])):
                return f"entry {i}: {_show(p)} is not a [pc, 0] pair"
            if not (0 <= p[0] <= INT32_MAX and 0 <= p[1] <= INT32_MAX):
                return f"entry {i}: pair {p} is out of range"
    return None


def check_wave_doc(doc) -> dict:
    """The scalars of a parsed wave file, checked (raises :class:`WaveFileError`)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("wave"), dict):
        raise WaveFileError("no 'wave' object")
    w = doc["wave"]
    out = {}
    for key in ("begin", "end"):
        v = w.get(key)
        if not _is_int(v):
            raise WaveFileError(f"'wave' lacks an integer '{key}'")
        if not 0 <= v < TIME_LIMIT:
            raise WaveFileError(f"'wave.{key}' {v} is out of range (0..10^18)")
        out[key] = v
    if out["end"] < out["begin"]:
        raise WaveFileError(f"'wave.end' {out['end']} is before 'wave.begin' {out['begin']}")
    for key in _SCALARS:
        if key in w:
            v = w[key]
            if not _is_int(v) or not 0 <= v <= INT32_MAX:
                raise WaveFileError(f"'wave.{key}' {_show(v)} is not a non-negative integer")
            out[key] = v
    n_decl = doc.get("num_insts")
    if n_decl is not None and not _is_int(n_decl):
        raise WaveFileError("'num_insts' is not an integer")
    out["num_insts"] = n_decl
    return out


def reference_parse(data: bytes) -> dict:
    """Plain ``orjson.loads`` + schema check of one wave file, the slow path and
    the oracle of the fast one: ``{"scalars", "instructions", "timeline", "waitcnt"}``
    with Python lists, or :class:`WaveFileError`."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WaveFileError(f"invalid or truncated JSON ({str(exc).splitlines()[0]})") from None
    scalars = check_wave_doc(doc)
    w = doc["wave"]
    instr = w.get("instructions", [])
    tl = w.get("timeline", [])
    wc = w.get("waitcnt", [])
    for name, value, msg in (
        ("instructions", instr, _bad_row(instr, 5, _INSTR_LIMITS, INSTR_FIELDS)),
        ("timeline", tl, _bad_row(tl, 2, _TIMELINE_LIMITS, TIMELINE_FIELDS)),
        ("waitcnt", wc, _bad_waitcnt(wc)),
    ):
        if msg:
            raise WaveFileError(f"'{name}' {msg}")
    if scalars["num_insts"] is not None and scalars["num_insts"] != len(instr):
        raise WaveFileError(
            f"num_insts says {scalars['num_insts']} but {len(instr)} instructions are stored (truncated file?)"
        )
    return {"scalars": scalars, "instructions": instr, "timeline": tl, "waitcnt": wc}


# ---------------------------------------------------------------------------
# cutting one file
# ---------------------------------------------------------------------------


def _cut_rows(data: bytes, key: bytes, after: int = 0) -> tuple[int, int] | None:
    """Byte span of the flat list of int rows after the first ``key`` from
    byte ``after`` on (brackets included)."""
    i = data.find(key, after)
    if i < 0:
        return None
    start = i + len(key) - 1
    if data[start + 1 : start + 2] == b"]":
        return start, start + 2
    end = data.find(b"]]", start)
    return None if end < 0 else (start, end + 2)


@dataclass
class _Cut:
    """One file split into its three compact arrays and its checked scalars."""

    entry: WaveEntry
    scalars: dict
    instr: bytes
    timeline: bytes
    waitcnt: bytes


def _cut_file(data: bytes, entry: WaveEntry) -> _Cut:
    """Fast split; files not in the writer's layout take the reference path
    (arrays re-serialized compactly, so the same bulk checks apply)."""
    span_i = _cut_rows(data, _INSTR_KEY)
    # the writer puts "timeline" after "instructions" (sorted keys): looked for past them, not
    # through them again; whichever spans are cut, the markers below prove they are the wave's own
    span_t = _cut_rows(data, _TIMELINE_KEY, span_i[1]) if span_i is not None else None
    if span_i is not None and span_t is not None and span_t[0] > span_i[1]:
        # The writer puts "waitcnt" last in "wave" (sorted keys): the file
        # ends with its array followed by "}}".
        end = len(data.rstrip())
        k = data.find(_WAITCNT_KEY, span_t[1])
        if k >= 0 and data[end - 2 : end] == b"}}":
            span_w = (k + len(_WAITCNT_KEY) - 1, end - 2)
            rest = b"".join(
                (
                    data[: span_i[0]], _MARK_I, data[span_i[1] : span_t[0]], _MARK_T,
                    data[span_t[1] : span_w[0]], _MARK_W, data[span_w[1] :],
                )
            )
            if all(rest.count(m) == 1 for m in _MARK_VALUES):
                try:
                    doc = orjson.loads(rest)
                except orjson.JSONDecodeError:
                    doc = None
                w = doc.get("wave") if isinstance(doc, dict) else None
                if (
                    isinstance(w, dict)
                    and w.get("instructions") == _MARK_VALUES[_MARK_I]
                    and w.get("timeline") == _MARK_VALUES[_MARK_T]
                    and w.get("waitcnt") == _MARK_VALUES[_MARK_W]
                ):
                    return _Cut(
                        entry, check_wave_doc(doc), data[span_i[0] : span_i[1]],
                        data[span_t[0] : span_t[1]], data[span_w[0] : span_w[1]],
                    )
    return _reference_cut(data, entry)


def _compacted(cut: _Cut) -> _Cut | None:
    """``cut`` with its arrays re-serialized compactly, or None when that
    changes nothing (then the file is judged as it is) or one is not JSON."""
    try:
        segs = [orjson.dumps(orjson.loads(s)) for s in (cut.instr, cut.timeline, cut.waitcnt)]
    except orjson.JSONDecodeError:
        return None
    if segs == [cut.instr, cut.timeline, cut.waitcnt]:
        return None
    return _Cut(cut.entry, cut.scalars, *segs)


def _reference_cut(data: bytes, entry: WaveEntry) -> _Cut:
    ref = reference_parse(data)
    return _Cut(entry, ref["scalars"], orjson.dumps(ref["instructions"]), orjson.dumps(ref["timeline"]), orjson.dumps(ref["waitcnt"]))


# ---------------------------------------------------------------------------
# columns
# ---------------------------------------------------------------------------

RECORD_DTYPES = {"time": np.int64, "category": np.uint8, "stall": np.int32, "duration": np.int32, "pc": np.int32}
STATE_DTYPES = {"state": np.uint8, "duration": np.int32}


def _alloc(n: int, dtype, shared: bool) -> np.ndarray:
    """A lazily backed array of ``n`` elements (pages become resident only
    when written), in memory a forked child can write when ``shared``."""
    nbytes = max(int(n) * np.dtype(dtype).itemsize, 1)
    if not hasattr(mmap, "MAP_PRIVATE"):  # not a POSIX system: a plain (lazily zeroed) array
        return np.empty(int(n), dtype=dtype)
    flags = mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE
    buf = mmap.mmap(-1, nbytes, flags=flags | getattr(mmap, "MAP_ANONYMOUS", 0x20))
    return np.frombuffer(buf, dtype=dtype, count=int(n))


@dataclass
class WaveTable:
    """Every usable wave file of a capture, columnar (records of wave ``i``
    are rows ``rec_start[i]:rec_start[i] + rec_count[i]``, back to back)."""

    entries: list[WaveEntry]
    cu: np.ndarray  # int32 (-1 when the file has none)
    wave_id: np.ndarray
    simd: np.ndarray
    slot: np.ndarray
    begin: np.ndarray  # int64
    end: np.ndarray
    rec_count: np.ndarray  # int64
    tl_count: np.ndarray
    records: dict[str, np.ndarray]  # RECORD_DTYPES columns
    states: dict[str, np.ndarray]  # STATE_DTYPES columns
    waitcnt_blob: np.ndarray  # uint8: every kept wave's compact waitcnt JSON, back to back
    waitcnt_off: np.ndarray  # int64, len(entries) + 1 offsets into the blob
    problems: list[tuple[WaveEntry, str]] = field(default_factory=list)  # waves skipped
    notes: list[tuple[WaveEntry, str]] = field(default_factory=list)  # waves kept with records dropped
    # per process that parsed (one or two, in file order): ``fold`` of what ``per_part`` returned (read_wave_files)
    derived: list = field(default_factory=list)
    meanwhile: object = None  # what read_wave_files' ``meanwhile`` returned


class _Sink:
    """Preallocated output columns plus per-wave metadata, filled batch by batch."""

    def __init__(self, rec_cap: int, tl_cap: int, shared: bool, extra: dict | None = None):
        self.rec = {k: _alloc(rec_cap, t, shared) for k, t in {**RECORD_DTYPES, **(extra or {})}.items()}
        self.tl = {k: _alloc(tl_cap, t, shared) for k, t in STATE_DTYPES.items()}
        self.n_rec = 0
        self.n_tl = 0
        self.meta: list[tuple] = []  # (entry, scalars, n_rec, n_tl)
        self.waitcnt: list[bytes] = []
        self.problems: list[tuple[WaveEntry, str]] = []
        self.notes: list[tuple[WaveEntry, str]] = []
        self.parser = new_parser()

    def add_batch(self, cuts: list[_Cut], n_pc: int | None, valid_pc: np.ndarray | None) -> None:
        parsed = self._parse_batch(cuts)
        if parsed is None:  # isolate the bad file(s)
            if len(cuts) == 1:
                compact = _compacted(cuts[0])
                if compact is not None:  # valid JSON with spaces in an array: the same checks on its compact form
                    self.add_batch([compact], n_pc, valid_pc)
                else:
                    self._fail(cuts[0])
                return
            for c in cuts:
                self.add_batch([c], n_pc, valid_pc)
            return
        instr, rows_i, tl, rows_t = parsed
        bad = self._bad_fields(instr, _INSTR_LIMITS)
        file_of = np.repeat(np.arange(len(cuts)), rows_i)
        bad_tl = self._bad_fields(tl, _TIMELINE_LIMITS)
        tl_file_of = np.repeat(np.arange(len(cuts)), rows_t)
        bad_files = set(file_of[bad].tolist()) | set(tl_file_of[bad_tl].tolist())
        if bad_files:
            for i in sorted(bad_files):
                self._fail(cuts[i])
            keep_files = [cuts[i] for i in range(len(cuts)) if i not in bad_files]
            if keep_files:
                self.add_batch(keep_files, n_pc, valid_pc)
            return
        keep_rec = None
        if n_pc is not None and len(instr):
            pcs = instr[:, 4]
            outside = pcs >= n_pc
            if outside.any():
                skipped = set()
                for i in np.unique(file_of[outside]).tolist():
                    first = int(pcs[outside & (file_of == i)][0])
                    self.problems.append((cuts[i].entry, f"pc index {first} is outside the {n_pc}-entry listing"))
                    skipped.add(i)
                keep_files = [i for i in range(len(cuts)) if i not in skipped]
                if keep_files:
                    self.add_batch([cuts[i] for i in keep_files], n_pc, valid_pc)
                return
            if valid_pc is not None:
                keep_rec = valid_pc[pcs]
                if keep_rec.all():
                    keep_rec = None
        if keep_rec is not None:
            dropped = np.bincount(file_of[~keep_rec], minlength=len(cuts))
            for i in np.flatnonzero(dropped).tolist():
                self.notes.append((cuts[i].entry, f"{int(dropped[i])} record(s) point at label rows or absent pcs; those records dropped"))
            instr = instr[keep_rec]
            rows_i = (np.asarray(rows_i) - dropped).tolist()
        self._put(instr, tl)
        for c, ri, rt in zip(cuts, rows_i, rows_t):
            self.meta.append((c.entry, c.scalars, int(ri), int(rt)))
            self.waitcnt.append(c.waitcnt)

    @staticmethod
    def _bad_fields(block: np.ndarray, limits) -> np.ndarray:
        # Every value was written with digits only (parse_int_rows), so none is
        # negative: only the upper bounds need a pass (every lower bound is 0).
        bad = np.zeros(len(block), dtype=bool)
        for j, (lo, hi) in enumerate(limits):
            col = block[:, j]
            if len(col) and int(col.max()) > hi:
                bad |= (col > hi) | (col < lo)
        return bad

    def _parse_batch(self, cuts: list[_Cut]):
        pi = parse_int_rows([c.instr for c in cuts], 5, self.parser)
        if pi is None:
            return None
        pt = parse_int_rows([c.timeline for c in cuts], 2, self.parser)
        if pt is None:
            return None
        if check_waitcnt_segs([c.waitcnt for c in cuts], self.parser) is None:
            return None
        for c, r in zip(cuts, pi[1]):
            n = c.scalars["num_insts"]
            if n is not None and n != r:
                return None
        return pi[0], pi[1], pt[0], pt[1]

    def _fail(self, cut: _Cut) -> None:
        """Name what is wrong with one file that failed the bulk checks."""
        try:
            for name, seg, width, limits, names in (
                ("instructions", cut.instr, 5, _INSTR_LIMITS, INSTR_FIELDS),
                ("timeline", cut.timeline, 2, _TIMELINE_LIMITS, TIMELINE_FIELDS),
            ):
                try:
                    value = orjson.loads(seg)
                except orjson.JSONDecodeError:
                    raise WaveFileError(f"'{name}' is not valid JSON") from None
                msg = _bad_row(value, width, limits, names)
                if msg:
                    raise WaveFileError(f"'{name}' {msg}")
                if parse_int_rows([seg], width, self.parser) is None:
                    raise WaveFileError(f"'{name}' is not written as plain JSON integers")
            try:
                msg = _bad_waitcnt(orjson.loads(cut.waitcnt))
            except orjson.JSONDecodeError:
                msg = "is not valid JSON"
            if msg or check_waitcnt_segs([cut.waitcnt], self.parser) is None:
                raise WaveFileError(f"'waitcnt' {msg or 'is not written as plain JSON integers'}")
            n = cut.scalars["num_insts"]
            rows = len(orjson.loads(cut.instr))
            if n is not None and n != rows:
                raise WaveFileError(f"num_insts says {n} but {rows} instructions are stored (truncated file?)")
            raise WaveFileError("malformed arrays")
        except WaveFileError as exc:
            self.problems.append((cut.entry, str(exc)))

    def _put(self, instr: np.ndarray, tl: np.ndarray) -> None:
        a, b = self.n_rec, self.n_rec + len(instr)
        for j, k in enumerate(("time", "category", "stall", "duration", "pc")):
            self.rec[k][a:b] = instr[:, j]
        self.n_rec = b
        a, b = self.n_tl, self.n_tl + len(tl)
        self.tl["state"][a:b] = tl[:, 0]
        self.tl["duration"][a:b] = tl[:, 1]
        self.n_tl = b


def _read_files(root_real: str, entries: list[WaveEntry], sink: _Sink, n_pc, valid_pc, sizes: list[int]) -> None:
    """Parse ``entries`` into ``sink``. ``sizes``: the bytes each file had
    when the columns were sized (:func:`_file_sizes`); a file that has more
    (it grew since) is refused, so the rows always fit."""
    from attlens.io.confine import RefusedPath, read_inside

    batch: list[_Cut] = []
    size = 0
    for entry, listed in zip(entries, sizes):
        try:
            data = read_inside(root_real, entry.filename, limit=MAX_JSON_BYTES)
        except FileNotFoundError:
            sink.problems.append((entry, "file listed in filenames.json is missing"))
            continue
        except RefusedPath as exc:
            sink.problems.append((entry, str(exc)))
            continue
        except OSError as exc:
            sink.problems.append((entry, f"cannot read ({exc.strerror or exc})"))
            continue
        if len(data) > listed:
            sink.problems.append((entry, "the file grew while the capture was read"))
            continue
        try:
            cut = _cut_file(data, entry)
        except WaveFileError as exc:
            sink.problems.append((entry, str(exc)))
            continue
        batch.append(cut)
        size += len(data)
        if size >= BATCH_BYTES:
            sink.add_batch(batch, n_pc, valid_pc)
            batch, size = [], 0
    if batch:
        sink.add_batch(batch, n_pc, valid_pc)


def _file_sizes(root_real: str, entries: list[WaveEntry]) -> list[int]:
    """Each file's bytes: as the listing's check found them, or looked at now.
    A file that grew since is refused by the reader (it reads at most this)."""
    sizes = []
    for e in entries:
        if e.size is not None:
            sizes.append(min(e.size, MAX_JSON_BYTES))
            continue
        try:
            # capped as the reader caps a file: a file that grew past it since the listing was checked is refused, not allocated for
            sizes.append(min(os.stat(os.path.join(root_real, e.filename)).st_size, MAX_JSON_BYTES))
        except (OSError, ValueError):
            sizes.append(0)
    return sizes


def read_wave_files(directory: Path, entries: list[WaveEntry], n_pc: int | None = None,
                    valid_pc: np.ndarray | None = None, workers: int | None = None,
                    per_part=None, fold=list, extra_columns: dict | None = None, meanwhile=None) -> WaveTable:
    """Read every listed wave file into columns. Files that cannot be used are
    listed in ``problems``; with ``n_pc`` a file with a pc outside the listing
    is one of them, and with ``valid_pc`` records at label rows or absent pcs
    are dropped (``notes``). ``workers``: 1 or 2 processes (default: 2 when
    the files are large enough to gain from it).

    ``per_part(table)``, if given, runs on each part of the files as soon as
    it is parsed, in the process that parsed it (a :class:`WaveTable` of those
    waves, records numbered from 0); it may fill ``extra_columns`` (``{name:
    dtype}`` record columns the reader allocates beside its own, in the same
    shared memory). What it returned on each process' parts is combined with
    ``fold`` (a list of part results, in file order -> one value) here, the
    child's sent ahead part by part (attlens.forked.send_ahead: they must
    pickle); ``derived`` holds one folded value per process, in file order.
    A part is a run of whole (SE, SIMD) scopes of the listing (a scope is
    cut only when the capture has a single one).

    ``meanwhile()``, if given, is other work of the caller (the capture's
    other files): the parent runs it first, while the child already parses;
    its result is in ``meanwhile``.

    With two processes the parts are claimed from both ends of the listing,
    the parent from the front, the child from the back, until they meet, so
    both finish together whatever the parent's other work costs and however
    busy either core is (:class:`_Claims`)."""
    root_real = os.path.realpath(directory)
    sizes = _file_sizes(root_real, entries)
    total = sum(sizes)
    env = os.environ.get("ATTLENS_PARSE_WORKERS")
    if workers is None:
        workers = int(env) if env and env.isdigit() else (2 if total >= PARALLEL_MIN_BYTES else 1)
    if workers >= 2 and len(entries) >= 2 and forked.can_fork():
        claims = _Claims.new(_parts(entries, sizes))
        if claims is not None:
            return _read_two_processes(root_real, entries, sizes, claims, n_pc, valid_pc, per_part, fold, extra_columns, meanwhile)
    sink = _Sink(*_caps(sizes), shared=False, extra=extra_columns)
    _read_files(root_real, entries, sink, n_pc, valid_pc, sizes)
    table = _table([sink])
    if per_part is not None:
        table.derived = [fold([per_part(table)])]
    if meanwhile is not None:
        table.meanwhile = meanwhile()
    return table


PART_MIN_BYTES = 1 << 20  # parts of a capture this large or larger: smaller ones cost more in per-part calls than they balance
PARTS = 64  # about this many parts in a large capture: the last one claimed is ~1/64 of the work


def _parts(entries: list[WaveEntry], sizes: list[int]) -> list[tuple[int, int]]:
    """``entries`` cut into runs ``(first, stop)`` of about
    max(PART_MIN_BYTES, total / PARTS) bytes (a small capture, read by two
    processes on request: total / 8), each of whole (SE, SIMD) scopes of the
    listing (per-part work such as the hidden-latency model needs a scope
    whole), or by bytes alone when the listing has a single scope."""
    cum = np.cumsum(sizes)
    total = int(cum[-1])
    target = max(total // PARTS, min(PART_MIN_BYTES, total // 8), 1)
    scope = np.array([e.se * 64 + e.simd for e in entries], dtype=np.int64)
    cuts = np.flatnonzero(scope[1:] != scope[:-1]) + 1
    if not len(cuts):
        cuts = np.arange(1, len(entries))
    parts, first, before = [], 0, 0
    for c in cuts.tolist():
        if cum[c - 1] - before >= target:
            parts.append((first, c))
            first, before = c, int(cum[c - 1])
    parts.append((first, len(entries)))
    return parts


class _Claims:
    """Which process parses which part: the parent takes parts from the
    front, the child from the back, one at a time under a lock, until they
    meet. The lock is a POSIX record lock on a memfd: the kernel drops it when
    its holder dies, so a killed child cannot leave the parent waiting."""

    def __init__(self, parts, fd, cursor):
        self.parts, self.fd, self.cursor = parts, fd, cursor  # cursor: [next front part, first part the child took]

    @classmethod
    def new(cls, parts: list[tuple[int, int]]):
        """The claims of ``parts``, or None (one part, or no memfd: read in one process)."""
        if len(parts) < 2 or not hasattr(os, "memfd_create"):
            return None
        try:
            fd = os.memfd_create("attlens-claims", getattr(os, "MFD_CLOEXEC", 1))
        except OSError:
            return None
        cursor = np.frombuffer(mmap.mmap(-1, 16, flags=mmap.MAP_SHARED | getattr(mmap, "MAP_ANONYMOUS", 0x20)), dtype=np.int64)
        cursor[:] = 0, len(parts)
        return cls(parts, fd, cursor)

    def take(self, front: bool) -> int | None:
        import fcntl

        fcntl.lockf(self.fd, fcntl.LOCK_EX)
        try:
            lo, hi = self.cursor.tolist()
            if lo >= hi:
                return None
            if front:
                self.cursor[0] = lo + 1
                return lo
            self.cursor[1] = hi - 1
            return hi - 1
        finally:
            fcntl.lockf(self.fd, fcntl.LOCK_UN)

    def taken_by_child(self) -> range:
        return range(int(self.cursor[1]), len(self.parts))

    def close(self) -> None:
        os.close(self.fd)


def _read_part(root_real, entries, sizes, sink: _Sink, n_pc, valid_pc, per_part, at: int | None = None, t_at: int | None = None):
    """Parse ``entries`` (of ``sizes`` bytes) into ``sink``'s columns from row
    ``at``/``t_at`` (default: where it stands), into no more rows than their
    bytes can hold, and run ``per_part`` on them; returns (first row, first
    state row, the part's own sink, what per_part returned)."""
    at = sink.n_rec if at is None else at
    t_at = sink.n_tl if t_at is None else t_at
    r_cap, t_cap = _caps(sizes)
    part = _Sink.__new__(_Sink)
    part.rec = {k: v[at : at + r_cap] for k, v in sink.rec.items()}
    part.tl = {k: v[t_at : t_at + t_cap] for k, v in sink.tl.items()}
    part.n_rec = part.n_tl = 0
    part.meta, part.waitcnt, part.problems, part.notes = [], [], [], []
    part.parser = sink.parser
    _read_files(root_real, entries, part, n_pc, valid_pc, sizes)
    derived = per_part(_table([part])) if per_part is not None else None
    return at, t_at, part, derived


def _caps(sizes) -> tuple[int, int]:
    b = sum(sizes)
    return b // _MIN_RECORD_BYTES + 1, b // _MIN_STATE_BYTES + 1


def _read_two_processes(root_real, entries, sizes, claims: _Claims, n_pc, valid_pc, per_part=None, fold=list, extra=None,
                        meanwhile=None) -> WaveTable:
    """Parent and forked child parse parts (:class:`_Claims`) into one block
    of shared columns sized for every part: the parent's rows grow from the
    start, each of the child's parts is parsed below the one before it from
    the end, so they never meet. The child's parts are then moved down to
    follow the parent's, in file order, in place."""
    caps = [_caps(sizes[a:b]) for a, b in claims.parts]
    sink = _Sink(sum(c[0] for c in caps), sum(c[1] for c in caps), shared=True, extra=extra)

    def child_parts():  # in the child: its parts, last first, each below the one before
        got, r_top, t_top = [], len(sink.rec["time"]), len(sink.tl["state"])
        sink.parser = new_parser()
        while (k := claims.take(front=False)) is not None:
            r_top, t_top = r_top - caps[k][0], t_top - caps[k][1]
            a, b = claims.parts[k]
            at, t_at, part, derived = _read_part(root_real, entries[a:b], sizes[a:b], sink, n_pc, valid_pc, per_part, r_top, t_top)
            # each part's results go into the result's memory file as soon as they exist (a share of
            # the work the claims balance), not folded and copied there after the last part
            got.append((at, t_at, part.n_rec, part.n_tl, part.meta, part.waitcnt, part.problems, part.notes,
                        forked.send_ahead(derived)))
        got.reverse()
        return [g[:-1] for g in got], [g[-1] for g in got]  # folded by the parent

    def read_part(k: int):  # in the parent: part k after its rows so far
        a, b = claims.parts[k]
        return _read_part(root_real, entries[a:b], sizes[a:b], sink, n_pc, valid_pc, per_part)

    pid, rfd = forked.start(child_parts)
    try:
        forked.run_waiting()  # the caller's later work (forked.while_waiting): the child takes more parts meanwhile
        side = meanwhile() if meanwhile is not None else None
        mine = [_add_part(sink, read_part(k)) for k in iter(lambda: claims.take(front=True), None)]
        derived = [fold(mine)]  # before the join: the child may still be on its last part
    except BaseException:
        forked.end(pid, rfd)
        claims.close()
        raise
    ok, theirs = forked.join(pid, rfd)
    if ok:
        placed, their_parts = theirs
        moves = []  # (source, destination, rows) of each child part, records then states
        for at, t_at, n_rec, n_tl, meta, waitcnt, problems, notes in placed:
            moves.append(((at, sink.n_rec, n_rec), (t_at, sink.n_tl, n_tl)))
            sink.n_rec += n_rec
            sink.n_tl += n_tl
            sink.meta += meta
            sink.waitcnt += waitcnt
            sink.problems += problems
            sink.notes += notes
        _move_parts(sink, moves)
        derived.append(fold(their_parts))
    else:  # the child failed (killed, out of memory): parse what it took here, after the parent's rows
        again = [_add_part(sink, read_part(k)) for k in claims.taken_by_child()]
        derived.append(fold(again))
    claims.close()
    _release_tail(sink.rec, sink.n_rec)
    _release_tail(sink.tl, sink.n_tl)
    table = _table([sink])
    table.derived = derived if per_part is not None else []
    table.meanwhile = side
    return table


def _add_part(sink: _Sink, read) -> object:
    """Count a part :func:`_read_part` parsed at ``sink``'s end as the sink's own; returns what per_part returned."""
    _at, _t_at, part, derived = read
    sink.n_rec += part.n_rec
    sink.n_tl += part.n_tl
    sink.meta += part.meta
    sink.waitcnt += part.waitcnt
    sink.problems += part.problems
    sink.notes += part.notes
    return derived


def _release_tail(cols: dict, used: int) -> None:
    """Give the pages of rows ``used:`` of shared columns back to the system
    (the child's copy of its rows, once moved down, would stay resident)."""
    page = mmap.PAGESIZE
    for col in cols.values():
        buf = col.base.obj if isinstance(col.base, memoryview) else None
        if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_REMOVE"):
            continue
        start = -(-used * col.itemsize // page) * page
        if start < len(buf):
            try:
                buf.madvise(mmap.MADV_REMOVE, start, len(buf) - start)
            except OSError:
                pass


MOVE_THREADS_MIN_BYTES = 8 << 20  # below this the child's rows move in this thread alone (a thread costs more than it saves)


def _move_parts(sink: _Sink, moves: list) -> None:
    """Move the child's parts down to follow the parent's rows, in file order
    (a part's destination may overlap the source of the part before it, so
    each column's parts go in order, whichever thread moves the column: the
    columns are shared out over two threads, attlens.twothreads)."""
    from attlens import twothreads

    cols = [(col, 0) for col in sink.rec.values()] + [(col, 1) for col in sink.tl.values()]
    moved = [sum(m[kind][2] for m in moves) * col.itemsize for col, kind in cols]

    def mover(col, kind):
        def move() -> None:
            for m in moves:
                _move_down({"col": col}, *m[kind])

        return move

    twothreads.run([mover(col, kind) for col, kind in cols], moved, MOVE_THREADS_MIN_BYTES)


def _move_down(cols: dict, src: int, dst: int, n: int, step: int = 1 << 20) -> None:
    """Move rows [src, src+n) to [dst, dst+n) (dst <= src) in bounded steps that
    never overlap, so no full-size temporary exists."""
    if n == 0 or src == dst:
        return
    # a step whose source and destination overlap is copied through a temporary of the step's size by NumPy;
    # the steps go upwards, so none writes over source rows a later step has still to move
    for a in range(0, n, step):
        b = min(a + step, n)
        for col in cols.values():
            col[dst + a : dst + b] = col[src + a : src + b]


def _table(sinks: list[_Sink]) -> WaveTable:
    if len(sinks) == 1:
        s = sinks[0]
        rec = {k: v[: s.n_rec] for k, v in s.rec.items()}
        tl = {k: v[: s.n_tl] for k, v in s.tl.items()}
    else:  # rare fallback: concatenate the two halves
        rec = {k: np.concatenate([s.rec[k][: s.n_rec] for s in sinks]) for k in sinks[0].rec}
        tl = {k: np.concatenate([s.tl[k][: s.n_tl] for s in sinks]) for k in STATE_DTYPES}
    meta = [m for s in sinks for m in s.meta]
    waitcnt = [w for s in sinks for w in s.waitcnt]
    n = len(meta)

    def col(key, default, dtype):
        return np.array([m[1].get(key, default(m[0])) for m in meta], dtype=dtype)

    blob = b"".join(waitcnt)
    off = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum([len(w) for w in waitcnt], out=off[1:])
    return WaveTable(
        entries=[m[0] for m in meta],
        cu=col("cu", lambda e: -1, np.int32),
        wave_id=col("id", lambda e: e.instance, np.int32),
        simd=col("simd", lambda e: e.simd, np.int32),
        slot=col("slot", lambda e: e.slot, np.int32),
        begin=col("begin", lambda e: e.begin, np.int64),
        end=col("end", lambda e: e.end, np.int64),
        rec_count=np.array([m[2] for m in meta], dtype=np.int64),
        tl_count=np.array([m[3] for m in meta], dtype=np.int64),
        records=rec,
        states=tl,
        waitcnt_blob=np.frombuffer(blob, dtype=np.uint8) if blob else np.zeros(0, dtype=np.uint8),
        waitcnt_off=off,
        problems=[p for s in sinks for p in s.problems],
        notes=[p for s in sinks for p in s.notes],
    )


@dataclass
class ParsedWave:
    """One wave file parsed on its own (tests, tools): arrays as int64 blocks."""

    scalars: dict
    instructions: np.ndarray  # (n, 5) int64
    timeline: np.ndarray  # (m, 2) int64
    waitcnt: list


def parse_wave_bytes(data: bytes, entry: WaveEntry) -> ParsedWave:
    """Parse one wave file by the fast path (raises :class:`WaveFileError`)."""
    cut = _cut_file(data, entry)
    sink = _Sink(len(data) // _MIN_RECORD_BYTES + 1, len(data) // _MIN_STATE_BYTES + 1, shared=False)
    sink.add_batch([cut], None, None)
    if sink.problems:
        raise WaveFileError(sink.problems[0][1])
    t = _table([sink])
    instr = np.stack([t.records[k].astype(np.int64) for k in ("time", "category", "stall", "duration", "pc")], axis=1)
    tl = np.stack([t.states[k].astype(np.int64) for k in ("state", "duration")], axis=1)
    return ParsedWave(sink.meta[0][1], instr, tl, orjson.loads(cut.waitcnt))
