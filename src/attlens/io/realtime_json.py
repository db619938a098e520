"""``realtime.json``: per-SE ``[gfx_clock, realtime_clock]`` samples
(att-format.md §2.6)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from attlens.io.jsonfile import expect, read_json


@dataclass
class Realtime:
    samples: dict[int, list[tuple[int, int]]]  # SE -> [(shader clock, realtime clock)]
    frequency_hz: float | None

    def shader_clock_hz(self) -> float | None:
        """GPU shader clock from the span of all SEs' samples (att-format.md §2.6)."""
        d_sc = d_rt = 0
        for pts in self.samples.values():
            if len(pts) < 2:
                continue
            lo, hi = min(pts), max(pts)
            if hi[0] > lo[0] and hi[1] > lo[1]:
                d_sc += hi[0] - lo[0]
                d_rt += hi[1] - lo[1]
        if not d_rt or not self.frequency_hz:
            return None
        return d_sc / (d_rt / self.frequency_hz)


def read_realtime_json(path: Path) -> Realtime:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    samples: dict[int, list[tuple[int, int]]] = {}
    for key, val in doc.items():
        if key.startswith("SE") and key[2:].isdigit() and isinstance(val, list):
            pts = []
            for p in val:
                if isinstance(p, list) and len(p) >= 2 and all(isinstance(x, int) for x in p[:2]):
                    pts.append((p[0], p[1]))
            samples[int(key[2:])] = pts
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    freq = meta.get("frequency")
    return Realtime(samples=samples, frequency_hz=float(freq) if isinstance(freq, (int, float)) and freq > 0 else None)
