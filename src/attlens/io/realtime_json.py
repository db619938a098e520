"""``realtime.json``: per-SE ``[gfx_clock, realtime_clock]`` samples
(att-format.md §2.6)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from attlens.io.jsonfile import expect, int64, read_json
from attlens.results import brief_repr

_SE_KEY = re.compile(r"[0-9]{1,4}")
# The realtime counter's frequency: rocprofv3 writes 100 MHz (every shared
# capture). A value outside these bounds (1e-300 gave a "0.0 MHz" shader
# clock) is not used.
MIN_FREQUENCY_HZ = 1e3
MAX_FREQUENCY_HZ = 1e11


@brief_repr("frequency_hz", ("shader_engines", lambda r: len(r.samples)), ("samples", lambda r: sum(len(v) for v in r.samples.values())))
@dataclass
class Realtime:
    samples: dict[int, list[tuple[int, int]]]  # SE -> [(shader clock, realtime clock)]
    frequency_hz: float | None
    warnings: list[str] = field(default_factory=list)  # samples dropped, each "...; dropped"

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


def _clock(x) -> int | None:
    """A clock sample: a non-negative integer below 2**53 (exact as a float;
    real values are below 2**50), else None."""
    v = int64(x)
    return v if v is not None and 0 <= v < (1 << 53) else None


def read_realtime_json(path: Path) -> Realtime:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    samples: dict[int, list[tuple[int, int]]] = {}
    warnings = []
    for key, val in doc.items():
        if key.startswith("SE") and _SE_KEY.fullmatch(key[2:]) and isinstance(val, list):
            pts = []
            for p in val:
                pair = (_clock(p[0]), _clock(p[1])) if isinstance(p, list) and len(p) >= 2 else (None, None)
                if None not in pair:
                    pts.append(pair)
            if len(pts) < len(val):
                warnings.append(f"{path.name}: {key}: {len(val) - len(pts)} of {len(val)} samples are not "
                                "[gfx_clock, realtime_clock] integers in [0, 2**53); dropped")
            samples[int(key[2:])] = pts
    if not samples:
        keys = ", ".join(repr(k)[:20] for k in list(doc)[:5])
        warnings.append(f"{path.name}: no 'SE<n>' sample list (keys: {keys or 'none'}); the shader clock is unavailable; ignored")
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    freq = meta.get("frequency")
    ok = isinstance(freq, (int, float)) and not isinstance(freq, bool) and MIN_FREQUENCY_HZ <= freq <= MAX_FREQUENCY_HZ
    if not ok and "frequency" in meta:
        warnings.append(f"{path.name}: metadata.frequency {str(freq)[:40]} is not a clock in [{MIN_FREQUENCY_HZ:g}, {MAX_FREQUENCY_HZ:g}] Hz "
                        "(rocprofv3 writes 100 MHz); the shader clock is unavailable; ignored")
    elif not ok and samples:
        warnings.append(f"{path.name}: no metadata.frequency; the shader clock is unavailable")
    return Realtime(samples=samples, frequency_hz=float(freq) if ok else None, warnings=warnings)
