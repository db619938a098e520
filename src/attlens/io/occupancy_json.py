"""``occupancy.json``: wave start/end events on every CU of each traced SE
(att-format.md §2.5; the generations in docs/formats.md).

Three event encodings, told apart by what the file holds:

* **lists** (att-tool 3.0.0): ``[time, cu, simd, slot, start, kernel_id]``;
* **lists with ``occupancy_fields``** (3.1.0): the columns are named (``time``,
  ``cu``, ``simd``, ``wave_id``, ``start``, ``kernel_id``, then ``me_id`` ...),
  and an ``events`` object holds per-SE dispatch records (``kind``
  ``"dispatch"``: ``vgprs``, ``sgprs``, ``lds_size``, ``thread_dim_x/y/z`` ...),
  kept in :attr:`Occupancy.dispatch_events` as a source of kernel resources;
* **packed integers** (early rocprofv3 and the rocprofv2 plugin, before 2025):
  one integer per event, decoded by :func:`unpack_event`; its times have a
  resolution of 8 cycles (:attr:`Occupancy.time_resolution`).

Keys that are not ASCII decimal SE numbers (``"dispatches"``, ``"version"``,
``"names"``, ``"events"``) are not event lists. An event that is not well formed
is dropped, and ``warnings`` says how many were (RCV ignores rows with fewer
than six columns; attlens says so).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.io.jsonfile import expect, int64, json_safe_str, read_json
from attlens.results import brief_repr

_SE_KEY = re.compile(r"[0-9]{1,4}")
_DISPATCH_KEY = re.compile(r"[0-9]{1,18}")
# event columns of the array, after the SE (3.1.0 names in brackets where they differ)
_COLUMNS = ("time", "cu", "simd", "slot", "start", "kernel_id")
_FIELD_NAMES = {"time": "time", "cu": "cu", "simd": "simd", "wave_id": "slot", "slot": "slot", "start": "start",
                "kernel_id": "kernel_id"}
# resource fields of a 3.1.0 dispatch record (decoder dispatch struct)
_DISPATCH_FIELDS = ("time", "kernel_id", "vgprs", "sgprs", "user_sgprs", "lds_size", "thread_dim_x", "thread_dim_y",
                    "thread_dim_z")
_MAX_DISPATCH_EVENTS = 100_000

# Packed event (docs/formats.md "Packed occupancy events", verified on the
# shared early-rocprofv3 and rocprofv2 captures): bits 0-11 kernel id,
# 12-13 SIMD, 14-17 wave slot, 18 start (1) / end (0), 19-22 CU,
# 23 and up the time divided by 8.
PACKED_TIME_RESOLUTION = 8


def unpack_event(value: int) -> tuple[int, int, int, int, int, int]:
    """(time, cu, simd, slot, start, kernel_id) of one packed occupancy integer."""
    return ((value >> 23) * PACKED_TIME_RESOLUTION, (value >> 19) & 0xF, (value >> 12) & 0x3, (value >> 14) & 0xF,
            (value >> 18) & 0x1, value & 0xFFF)


def _unpack(values: np.ndarray) -> np.ndarray:
    u = values.astype(np.int64)
    return np.column_stack([(u >> 23) * PACKED_TIME_RESOLUTION, (u >> 19) & 0xF, (u >> 12) & 0x3, (u >> 14) & 0xF,
                            (u >> 18) & 0x1, u & 0xFFF])


@brief_repr(("events", lambda o: len(o.events)), ("dispatches", lambda o: len(o.dispatches)), "version", "encoding")
@dataclass
class Occupancy:
    events: np.ndarray  # (n, 7) int64: se, time, cu, simd, slot, start, kernel_id
    dispatches: dict[int, str]
    version: str | None
    warnings: list[str] = field(default_factory=list)  # events dropped, each "...; dropped"
    encoding: str = "lists"  # lists | fields (3.1.0) | packed (before 2025)
    time_resolution: int = 1  # cycles; 8 for packed events (their times are rounded down to it)
    # 3.1.0 dispatch records: {"se", "time", "kernel_id", "kernel_name", "vgprs", "sgprs", "lds_size", "thread_dim_x", ...}
    dispatch_events: list[dict] = field(default_factory=list)


def _list_events(events: list, cols: list[int]) -> tuple[np.ndarray, int]:
    """(n, 6) int64 array of the well-formed list events (columns ``cols`` of
    each row, in _COLUMNS order), and how many were dropped."""
    width = max(cols) + 1
    try:
        arr = np.asarray(events)
        if arr.dtype == np.int64 and arr.ndim == 2 and arr.shape[1] >= width:
            return arr[:, cols], 0
    except (TypeError, ValueError, OverflowError):
        pass  # ragged, mixed types or out of range: check row by row
    good = [[e[c] for c in cols] for e in events
            if isinstance(e, list) and len(e) >= width and all(int64(e[c]) is not None for c in cols)]
    return np.asarray(good, dtype=np.int64).reshape(-1, 6), len(events) - len(good)


def _packed_events(events: list) -> tuple[np.ndarray, int]:
    good = [e for e in events if int64(e) is not None and e >= 0]
    return _unpack(np.asarray(good, dtype=np.int64)).reshape(-1, 6), len(events) - len(good)


def _field_columns(doc: dict, path: Path) -> list[int]:
    names = doc.get("occupancy_fields")
    if names is None:
        return list(range(6))
    expect(isinstance(names, list) and all(isinstance(n, str) for n in names), path, "'occupancy_fields' is not a list of names")
    where = {}
    for i, n in enumerate(names):
        key = _FIELD_NAMES.get(n)
        if key is not None and key not in where:
            where[key] = i
    missing = [c for c in _COLUMNS if c not in where]
    expect(not missing, path, f"'occupancy_fields' lacks {', '.join(missing)}")
    return [where[c] for c in _COLUMNS]


def _dispatch_events(doc: dict) -> list[dict]:
    """The 3.1.0 per-SE dispatch records that carry integer resource fields."""
    out = []
    events = doc.get("events")
    if not isinstance(events, dict):
        return out
    for se, items in events.items():
        if not _SE_KEY.fullmatch(se) or not isinstance(items, list):
            continue
        for e in items:
            if len(out) >= _MAX_DISPATCH_EVENTS:
                return out
            if not isinstance(e, dict) or e.get("kind") != "dispatch":
                continue
            rec = {"se": int(se)}
            for k in _DISPATCH_FIELDS:
                v = int64(e.get(k))
                rec[k] = v if v is not None and v >= 0 else None
            name = e.get("kernel_name")
            rec["kernel_name"] = json_safe_str(name) if isinstance(name, str) else None
            out.append(rec)
    return out


def read_occupancy_json(path: Path) -> Occupancy:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    cols = _field_columns(doc, path)
    blocks, warnings = [], []
    encodings = set()
    for key, events in doc.items():
        if not _SE_KEY.fullmatch(key):
            continue
        expect(isinstance(events, list), path, f"SE {key} events are not a list")
        if not events:
            continue
        packed = all(not isinstance(e, list) for e in events[:64]) and any(int64(e) is not None for e in events[:64])
        encodings.add("packed" if packed else "lists")
        arr, dropped = _packed_events(events) if packed else _list_events(events, cols)
        if dropped:
            shape = "non-negative packed integers" if packed else "[time, cu, simd, slot, start, kernel_id] integers"
            warnings.append(f"{path.name}: SE {key}: {dropped} of {len(events)} events are not {shape}; dropped")
        blocks.append(np.column_stack([np.full(len(arr), int(key), dtype=np.int64), arr]))
    if not any(_SE_KEY.fullmatch(k) for k in doc):
        keys = ", ".join(repr(k)[:20] for k in list(doc)[:5])
        warnings.append(f"{path.name}: no shader-engine event list (an SE key is a decimal number; keys: {keys or 'none'}); "
                        "observed occupancy unavailable; ignored")
    events = np.concatenate(blocks) if blocks else np.zeros((0, 7), dtype=np.int64)
    if len(encodings) > 1:
        warnings.append(f"{path.name}: some SEs hold packed events and others lists; both decoded")
    raw = doc.get("dispatches") or {}
    dispatches = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            if _DISPATCH_KEY.fullmatch(k) and isinstance(v, str):
                dispatches[int(k)] = v
    packed = encodings == {"packed"}
    encoding = "packed" if packed else ("fields" if "occupancy_fields" in doc else "lists")
    return Occupancy(events=events, dispatches=dispatches, version=json_safe_str(doc.get("version")), warnings=warnings,
                     encoding=encoding, time_resolution=PACKED_TIME_RESOLUTION if packed else 1,
                     dispatch_events=_dispatch_events(doc))
