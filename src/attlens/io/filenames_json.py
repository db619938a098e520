"""``filenames.json``: the index of wave files and the GFX IP (att-format.md §2.1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attlens.io.jsonfile import expect, read_json


@dataclass(frozen=True)
class WaveEntry:
    se: int
    simd: int
    slot: int
    instance: int  # the K of wv<K>
    filename: str
    begin: int
    end: int


@dataclass
class FilenamesIndex:
    gfxip: int | None
    gfxv: str | None
    version: str | None
    counter_names: list[str]
    waves: list[WaveEntry]  # sorted by (se, simd, slot, instance)
    pc_sampling: bool = False
    other_simd: dict = field(default_factory=dict)


def read_filenames_json(path: Path) -> FilenamesIndex:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    nested = doc.get("wave_filenames")
    waves: list[WaveEntry] = []
    if nested is not None:
        expect(isinstance(nested, dict), path, "'wave_filenames' is not an object")
        try:
            for se, simds in nested.items():
                for simd, slots in simds.items():
                    for slot, instances in slots.items():
                        for k, leaf in instances.items():
                            name, begin, end = leaf[0], leaf[1], leaf[2]
                            waves.append(
                                WaveEntry(int(se), int(simd), int(slot), int(k), str(name), int(begin), int(end))
                            )
        except (AttributeError, TypeError, ValueError, IndexError, KeyError):
            expect(False, path, "'wave_filenames' does not nest SE -> SIMD -> slot -> K -> [file, begin, end]")
    waves.sort(key=lambda w: (w.se, w.simd, w.slot, w.instance))
    gfxip = doc.get("gfxip")
    return FilenamesIndex(
        gfxip=int(gfxip) if isinstance(gfxip, int) else None,
        gfxv=doc.get("gfxv") if isinstance(doc.get("gfxv"), str) else None,
        version=doc.get("version") if isinstance(doc.get("version"), str) else None,
        counter_names=[str(c) for c in doc.get("counter_names") or []],
        waves=waves,
        pc_sampling=bool(doc.get("pc_sampling", False)),
        other_simd=doc.get("other_simd_filenames") or {},
    )
