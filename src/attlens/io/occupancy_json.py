"""``occupancy.json``: wave start/end events on every CU of each traced SE
(att-format.md §2.5). Events are ``[time, cu, simd, slot, start, kernel_id]``.

Keys that are not ASCII decimal SE numbers (``"dispatches"``, ``"version"``,
fields of a later format) are not event lists. An event that is not a list of
at least six 64-bit integers is dropped, and ``warnings`` says how many were
(RCV ignores rows with fewer than six columns; attlens says so).
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


@brief_repr(("events", lambda o: len(o.events)), ("dispatches", lambda o: len(o.dispatches)), "version")
@dataclass
class Occupancy:
    events: np.ndarray  # (n, 7) int64: se, time, cu, simd, slot, start, kernel_id
    dispatches: dict[int, str]
    version: str | None
    warnings: list[str] = field(default_factory=list)  # events dropped, each "...; dropped"


def _events(events: list) -> tuple[np.ndarray, int]:
    """(n, 6) int64 array of the well-formed events, and how many were dropped."""
    try:
        arr = np.asarray(events)
        if arr.dtype == np.int64 and arr.ndim == 2 and arr.shape[1] >= 6:
            return arr[:, :6], 0
    except (TypeError, ValueError, OverflowError):
        pass  # ragged, mixed types or out of range: check row by row
    good = [e[:6] for e in events if isinstance(e, list) and len(e) >= 6 and all(int64(x) is not None for x in e[:6])]
    return np.asarray(good, dtype=np.int64).reshape(-1, 6), len(events) - len(good)


def read_occupancy_json(path: Path) -> Occupancy:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    blocks, warnings = [], []
    for key, events in doc.items():
        if not _SE_KEY.fullmatch(key):
            continue
        expect(isinstance(events, list), path, f"SE {key} events are not a list")
        if not events:
            continue
        arr, dropped = _events(events)
        if dropped:
            warnings.append(f"{path.name}: SE {key}: {dropped} of {len(events)} events are not [time, cu, simd, slot, start, kernel_id] integers; dropped")
        blocks.append(np.column_stack([np.full(len(arr), int(key), dtype=np.int64), arr]))
    if not any(_SE_KEY.fullmatch(k) for k in doc):
        keys = ", ".join(repr(k)[:20] for k in list(doc)[:5])
        warnings.append(f"{path.name}: no shader-engine event list (an SE key is a decimal number; keys: {keys or 'none'}); "
                        "observed occupancy unavailable; ignored")
    events = np.concatenate(blocks) if blocks else np.zeros((0, 7), dtype=np.int64)
    raw = doc.get("dispatches") or {}
    dispatches = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            if _DISPATCH_KEY.fullmatch(k) and isinstance(v, str):
                dispatches[int(k)] = v
    return Occupancy(events=events, dispatches=dispatches, version=json_safe_str(doc.get("version")), warnings=warnings)
