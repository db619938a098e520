"""``filenames.json``: the index of wave files and the GFX IP (att-format.md §2.1).

The rocprofv2 ATT plugin's index has no ``gfxip`` or ``version`` and lists its
per-SE ``se<N>_info.json`` files under ``se_filenames`` (docs/formats.md).

Every wave file it names is resolved inside the capture directory (after
symlinks) before anything reads it. An entry naming a path outside the
capture (``../x``, ``/abs``, a symlink leading out), a file that is not a
regular file (a FIFO would block a reader, a device never ends), or the
same file as an earlier entry (it would count one wave twice) is listed in
``refused`` with a message saying what was done, and left out of
``readable``; the loader reads only ``readable`` and reports each refusal as
a warning (docs/security.md).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from attlens.io.confine import RefusedPath, resolve_inside
from attlens.io.jsonfile import MAX_JSON_BYTES, expect, int64, json_safe_str, read_json
from attlens.results import brief_repr

_DECIMAL = re.compile(r"[0-9]{1,9}")  # ASCII digits: int() would also take "٣", " 3" or "+3"


@dataclass(frozen=True)
class WaveEntry:
    se: int
    simd: int
    slot: int
    instance: int  # the K of wv<K>
    filename: str
    begin: int
    end: int
    # bytes of the file when the listing was checked (None: not looked at, or not there); the wave
    # reader sizes its columns by it instead of looking at every file again (61,000 stats at softmax x30)
    size: int | None = field(default=None, compare=False, repr=False)


@brief_repr("gfxip", "gfxv", "version", ("waves", lambda f: len(f.waves)), ("refused", lambda f: len(f.refused)))
@dataclass
class FilenamesIndex:
    gfxip: int | None
    gfxv: str | None
    version: str | None
    counter_names: list[str]
    waves: list[WaveEntry]  # every listed entry, sorted by (se, simd, slot, instance)
    pc_sampling: bool = False
    other_simd: dict = field(default_factory=dict)
    refused: list[tuple[WaveEntry, str]] = field(default_factory=list)  # (entry, what was done and why)
    # the rocprofv2 ATT plugin's per-SE file list (its filenames.json has no gfxip or version)
    se_filenames: list[str] = field(default_factory=list)

    @property
    def readable(self) -> list[WaveEntry]:
        """The entries whose files may be read (``waves`` minus ``refused``)."""
        if not self.refused:
            return self.waves
        out = {id(w) for w, _ in self.refused}
        return [w for w in self.waves if id(w) not in out]


# The checks below build their message only when they fail (tens of thousands of entries).
def _key(text, path: Path) -> int:
    if isinstance(text, str) and _DECIMAL.fullmatch(text) is not None:
        return int(text)
    expect(False, path, f"'wave_filenames' key {text!r} is not a decimal index")


def _leaf(se: int, simd: int, slot: int, k: int, leaf, path: Path) -> WaveEntry:
    ok = isinstance(leaf, list) and len(leaf) >= 3 and isinstance(leaf[0], str)
    begin, end = (int64(leaf[1]), int64(leaf[2])) if ok else (None, None)
    if ok and begin is not None and end is not None:
        return WaveEntry(se, simd, slot, k, leaf[0], begin, end)
    expect(False, path, f"wave SE {se} SIMD {simd} slot {slot} K {k}: expected [file name, begin, end] with 64-bit integer times, "
                        f"got {str(leaf)[:80]}")


def _walk_waves(nested, path: Path) -> list[WaveEntry]:
    waves: list[WaveEntry] = []
    shape = "'wave_filenames' does not nest SE -> SIMD -> slot -> K -> [file, begin, end]"
    expect(isinstance(nested, dict), path, shape)
    for se, simds in nested.items():
        expect(isinstance(simds, dict), path, shape)
        se_i = None  # each key checked once, at its first leaf (as often as before: never without one)
        for simd, slots in simds.items():
            expect(isinstance(slots, dict), path, shape)
            simd_i = None
            for slot, instances in slots.items():
                expect(isinstance(instances, dict), path, shape)
                slot_i = None
                for k, leaf in instances.items():
                    if slot_i is None:
                        se_i = _key(se, path) if se_i is None else se_i
                        simd_i = _key(simd, path) if simd_i is None else simd_i
                        slot_i = _key(slot, path)
                    waves.append(_leaf(se_i, simd_i, slot_i, _key(k, path), leaf, path))
    return waves


def _refusal(root: Path, name: str, seen: dict, root_text: str | None = None) -> tuple[str | None, tuple | None, int | None]:
    """Why ``name`` must not be read (None if it may), the file identity
    used to find a second entry for the same file, and its size. A missing
    file is not refused here: the wave reader reports it."""
    plain = name not in ("", ".", "..") and "/" not in name and "\x00" not in name
    try:
        st = os.lstat(os.path.join(root_text or str(root), name)) if plain else None
        if st is None or stat.S_ISLNK(st.st_mode):
            st = os.stat(resolve_inside(root, name))
    except RefusedPath as exc:
        return f"{exc.reason}; not read, wave skipped", None, None
    except (FileNotFoundError, NotADirectoryError):
        return None, None, None
    except OSError as exc:
        return f"cannot be inspected ({exc.strerror or exc}); wave skipped", None, None
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file (a FIFO, device or directory); not read, wave skipped", None, None
    if st.st_size > MAX_JSON_BYTES:
        return f"{st.st_size:,} bytes, more than the {MAX_JSON_BYTES:,}-byte limit of a capture file; not read, wave skipped", None, None
    ident = (st.st_dev, st.st_ino)
    if ident in seen:
        return f"listed again in filenames.json (the same file as {seen[ident]}); the wave is counted once", ident, None
    return None, ident, st.st_size


def read_filenames_json(path: Path) -> FilenamesIndex:
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    nested = doc.get("wave_filenames")
    waves = _walk_waves(nested, path) if nested is not None else []
    waves.sort(key=lambda w: (w.se, w.simd, w.slot, w.instance))
    refused, seen = [], {}
    root, root_text = path.parent, str(path.parent)
    for w in waves:
        why, ident, size = _refusal(root, w.filename, seen, root_text)
        if why is not None:
            refused.append((w, why))
        elif ident is not None:
            seen[ident] = f"the entry of SE {w.se} SIMD {w.simd} slot {w.slot} K {w.instance}"
            object.__setattr__(w, "size", size)  # made here, not yet shared: set in place (a replace() each was 0.1 s at 61,000 waves)
    counters = doc.get("counter_names")
    other = doc.get("other_simd_filenames")
    se_files = doc.get("se_filenames")
    return FilenamesIndex(
        gfxip=int64(doc.get("gfxip")),
        gfxv=json_safe_str(doc.get("gfxv")),
        version=json_safe_str(doc.get("version")),
        counter_names=[c for c in counters if isinstance(c, str)] if isinstance(counters, list) else [],
        waves=waves,
        pc_sampling=bool(doc.get("pc_sampling", False)),
        other_simd=other if isinstance(other, dict) else {},
        refused=refused,
        se_filenames=[f for f in se_files if isinstance(f, str)][:4096] if isinstance(se_files, list) else [],
    )
