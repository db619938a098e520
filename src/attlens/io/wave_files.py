"""Per-wave ``se*_sm*_sl*_wv*.json`` files, read into flat NumPy arrays.

Format: att-format.md §2.3. A capture holds up to thousands of these files and
millions of ``[time, type, stall, duration, pc]`` records; building a Python
list per record costs ~1 µs each, so the two big integer arrays
(``instructions`` and ``timeline``) are cut out of the raw bytes and parsed in
one ``np.fromstring`` call for all waves together. The rest of each file
(scalars and the nested ``waitcnt`` list) is parsed by orjson, which also
validates the JSON structure. Any file whose arrays do not look exactly like
the writer's output falls back to a full orjson parse.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import orjson

from attlens.io.filenames_json import WaveEntry

_INSTR_KEY = b'"instructions":['
_TIMELINE_KEY = b'"timeline":['
_WAITCNT_KEY = b'"waitcnt":['
_ALLOWED_DELETE = b"0123456789,[]- \t\r\n"
_BRACKETS_TO_SPACE = bytes.maketrans(b"[]", b"  ")


class LazyJson:
    """A JSON value kept as bytes until first used (the stored ``waitcnt``
    arrays are only needed to cross-check the counter simulation)."""

    __slots__ = ("_raw", "_value")

    def __init__(self, raw: bytes):
        self._raw = raw
        self._value = None

    def get(self):
        if self._value is None:
            try:
                self._value = orjson.loads(self._raw)
            except orjson.JSONDecodeError:
                self._value = []
            self._raw = b""
        return self._value


class WaveFileError(Exception):
    """One wave file is unreadable; the loader drops that wave with a warning."""


@dataclass
class RawWave:
    entry: WaveEntry
    cu: int
    wave_id: int
    simd: int
    slot: int
    begin: int
    end: int
    instructions: np.ndarray  # (n, 5) int64
    timeline: np.ndarray  # (m, 2) int64
    waitcnt: "list | LazyJson"  # [[waitcnt_pc, [[mem_pc, 0], ...]], ...] as stored
    extra: dict = field(default_factory=dict)


def _cut_array(data: bytes, key: bytes) -> tuple[int, int] | None:
    """Byte span of the list of int lists following ``key`` (including the
    brackets), or None when the key is absent or the list is not flat ints."""
    i = data.find(key)
    if i < 0:
        return None
    start = i + len(key) - 1  # at '['
    if data[start + 1 : start + 2] == b"]":
        return start, start + 2
    end = data.find(b"]]", start)
    if end < 0:
        return None
    end += 2
    if data[start:end].translate(None, _ALLOWED_DELETE):
        return None  # floats, strings or nesting: not the writer's layout
    return start, end


def _to_int_array(seg: bytes, width: int, name: str) -> np.ndarray:
    text = seg.translate(_BRACKETS_TO_SPACE).decode("ascii").strip()
    if not text:
        return np.zeros((0, width), dtype=np.int64)
    arr = np.fromstring(text, dtype=np.int64, sep=",")  # noqa: NPY201 (text mode is supported)
    if arr.size % width:
        raise WaveFileError(f"'{name}' entries do not have {width} fields")
    return arr.reshape(-1, width)


def _full_parse(data: bytes, entry: WaveEntry) -> RawWave:
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise WaveFileError(f"invalid or truncated JSON ({str(exc).splitlines()[0]})") from None
    return _from_doc(doc, entry, None, None)


def _as_matrix(values, width: int, name: str) -> np.ndarray:
    if values is None:
        return np.zeros((0, width), dtype=np.int64)
    try:
        arr = np.asarray(values, dtype=np.int64)
    except (TypeError, ValueError):
        raise WaveFileError(f"'{name}' is not a list of integer tuples") from None
    if arr.size == 0:
        return np.zeros((0, width), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] < width:
        raise WaveFileError(f"'{name}' entries do not have {width} fields")
    return arr[:, :width]


def _from_doc(doc, entry: WaveEntry, instructions, timeline) -> RawWave:
    if not isinstance(doc, dict) or not isinstance(doc.get("wave"), dict):
        raise WaveFileError("no 'wave' object")
    w = doc["wave"]
    try:
        begin, end = int(w["begin"]), int(w["end"])
    except (KeyError, TypeError, ValueError):
        raise WaveFileError("'wave' lacks integer 'begin'/'end'") from None
    if instructions is None:
        instructions = _as_matrix(w.get("instructions"), 5, "instructions")
    if timeline is None:
        timeline = _as_matrix(w.get("timeline"), 2, "timeline")
    waitcnt = w.get("waitcnt") or []
    if not isinstance(waitcnt, list):
        raise WaveFileError("'waitcnt' is not a list")
    n_decl = doc.get("num_insts")
    if isinstance(n_decl, int) and n_decl != len(instructions):
        raise WaveFileError(f"num_insts says {n_decl} but {len(instructions)} instructions are stored (truncated file?)")
    extra = {k: w[k] for k in ("dispatcher", "me_id", "pipe_id", "workgroup_id", "cluster_id") if k in w}
    return RawWave(
        entry=entry,
        cu=int(w.get("cu", -1)),
        wave_id=int(w.get("id", entry.instance)),
        simd=int(w.get("simd", entry.simd)),
        slot=int(w.get("slot", entry.slot)),
        begin=begin,
        end=end,
        instructions=instructions,
        timeline=timeline,
        waitcnt=waitcnt,
        extra=extra,
    )


def parse_wave_bytes(data: bytes, entry: WaveEntry) -> RawWave:
    """Parse one wave file (fast path with a full-parse fallback)."""
    span_i = _cut_array(data, _INSTR_KEY)
    span_t = _cut_array(data, _TIMELINE_KEY)
    if span_i is None or span_t is None:
        return _full_parse(data, entry)
    # Replace both arrays by [] and let orjson check everything else.
    spans = [span_i, span_t]
    # The writer puts "waitcnt" last in "wave" (keys in sorted order), so when
    # the file ends right after it the array can be cut out and parsed lazily.
    lazy = None
    end = len(data.rstrip())
    k = data.find(_WAITCNT_KEY)
    if k > max(span_i[1], span_t[1]) and data[end - 2 : end] == b"}}":
        seg = data[k + len(_WAITCNT_KEY) - 1 : end - 2]
        if seg.endswith(b"]") and not seg.translate(None, _ALLOWED_DELETE):
            spans.append((k + len(_WAITCNT_KEY) - 1, end - 2))
            lazy = LazyJson(seg)
    spans.sort()
    parts, prev = [], 0
    for a, b in spans:
        parts.append(data[prev:a])
        parts.append(b"[]")
        prev = b
    parts.append(data[prev:])
    try:
        doc = orjson.loads(b"".join(parts))
    except orjson.JSONDecodeError:
        return _full_parse(data, entry)
    instr = _to_int_array(data[span_i[0] : span_i[1]], 5, "instructions")
    tl = _to_int_array(data[span_t[0] : span_t[1]], 2, "timeline")
    wave = _from_doc(doc, entry, instr, tl)
    if lazy is not None:
        wave.waitcnt = lazy
    return wave


def read_wave_files(directory: Path, entries: list[WaveEntry], workers: int = 1):
    """Read every listed wave file. Returns (waves, problems) where problems is
    a list of (entry, message) for files that could not be used."""

    def read_one(entry: WaveEntry):
        path = directory / entry.filename
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return entry, None, "file listed in filenames.json is missing"
        except OSError as exc:
            return entry, None, f"cannot read ({exc.strerror or exc})"
        try:
            return entry, parse_wave_bytes(data, entry), None
        except WaveFileError as exc:
            return entry, None, str(exc)

    # Parsing holds the GIL, so threads only pay off when the files are on a
    # slow (network) disk; measured slower on local disks, hence workers=1.
    if len(entries) > 64 and workers > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(read_one, entries, chunksize=32))
    else:
        results = [read_one(e) for e in entries]
    waves, problems = [], []
    for entry, wave, err in results:
        if wave is None:
            problems.append((entry, err))
        else:
            waves.append(wave)
    return waves, problems
