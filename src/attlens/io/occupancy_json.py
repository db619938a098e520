"""``occupancy.json``: wave start/end events on every CU of each traced SE
(att-format.md §2.5). Events are ``[time, cu, simd, slot, start, kernel_id]``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from attlens.io.jsonfile import expect, read_json


@dataclass
class Occupancy:
    events: np.ndarray  # (n, 7) int64: se, time, cu, simd, slot, start, kernel_id
    dispatches: dict[int, str]
    version: str | None


def read_occupancy_json(path: Path) -> Occupancy:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    blocks = []
    for key, events in doc.items():
        if not key.isdigit():
            continue
        expect(isinstance(events, list), path, f"SE {key} events are not a list")
        if not events:
            continue
        try:
            arr = np.asarray(events, dtype=np.int64)
            if arr.ndim != 2 or arr.shape[1] < 6:
                raise ValueError
            arr = arr[:, :6]
        except (TypeError, ValueError):
            # Ragged rows: RCV ignores events with fewer than 6 columns.
            rows = [e[:6] for e in events if isinstance(e, list) and len(e) >= 6]
            try:
                arr = np.asarray(rows, dtype=np.int64).reshape(-1, 6)
            except (TypeError, ValueError):
                expect(False, path, f"SE {key} events are not integer tuples")
        blocks.append(np.column_stack([np.full(len(arr), int(key), dtype=np.int64), arr]))
    events = np.concatenate(blocks) if blocks else np.zeros((0, 7), dtype=np.int64)
    raw = doc.get("dispatches") or {}
    dispatches = {}
    if isinstance(raw, dict):
        for k, v in raw.items():
            try:
                dispatches[int(k)] = str(v)
            except ValueError:
                continue
    return Occupancy(events=events, dispatches=dispatches, version=doc.get("version"))
