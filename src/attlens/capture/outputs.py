"""Finding the outputs of a capture run, and the empty-shell trap.

rocprofv3 writes a ``ui_output_agent_<h>_dispatch_<n>/`` directory per traced
dispatch per agent, and directories for agents/dispatches where no wave ran
on the traced CU hold no wave file ("shells"). Shells are reported and moved
into ``empty_shells/`` beside them; a directory holding waves is never moved
or deleted.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

_UI = re.compile(r"ui_output_agent_(\d+)_dispatch_(\d+)")


@dataclass
class CaptureDir:
    path: Path
    agent_handle: int | None
    dispatch_id: int | None
    waves: int
    instructions: int  # listed instructions in code.json (0 if absent)
    mapped_lines: int  # listed instructions with a source line

    @property
    def is_shell(self) -> bool:
        return self.waves == 0


def inspect(path: Path) -> CaptureDir:
    from attlens.io.jsonfile import read_json

    m = _UI.search(path.name)
    waves = instr = mapped = 0
    try:
        fn = read_json(path / "filenames.json")
        nested = fn.get("wave_filenames") or {}
        waves = sum(len(k) for simd in nested.values() for slot in simd.values() for k in slot.values())
    except Exception:
        waves = 0
    if waves == 0:
        waves = len(list(path.glob("se*_sm*_sl*_wv*.json")))
    code = path / "code.json"
    if code.is_file():
        try:
            rows = read_json(code).get("code") or []
            instr = sum(1 for r in rows if r and isinstance(r[0], str) and not r[0].startswith(";"))
            mapped = sum(1 for r in rows if r and isinstance(r[0], str) and not r[0].startswith(";") and len(r) > 3 and r[3])
        except Exception:
            pass
    return CaptureDir(path, int(m.group(1)) if m else None, int(m.group(2)) if m else None, waves, instr, mapped)


def inside(folder: Path, paths: list[Path]) -> list[Path]:
    """The entries of ``paths`` that lie inside ``folder`` after symlinks.
    rocprofv3's "Opened result file" lines may name files anywhere (another
    job's output directory, an older run); a run only considers its own."""
    base = os.path.realpath(folder)
    out = []
    for p in paths:
        real = os.path.realpath(p)
        if real != base and real.startswith(base.rstrip(os.sep) + os.sep):
            out.append(Path(p))
    return out


def find_capture_dirs(out_dir: Path, opened: list[Path] | None = None) -> list[Path]:
    """UI directories under ``out_dir`` (also next to any file rocprofv3 said
    it opened, if that file is under ``out_dir`` too). Symlinked directories
    and anything outside ``out_dir`` are never considered: another capture
    must neither be counted nor moved."""
    roots = {Path(out_dir)} | {f.parent for f in inside(out_dir, opened or [])}
    found = set()
    for root in roots:
        if not root.is_dir():
            continue
        for p in root.rglob("ui_output_agent_*_dispatch_*"):
            if p.is_dir() and not p.is_symlink() and "empty_shells" not in p.parts and inside(out_dir, [p]):
                found.add(p.resolve())
    return sorted(found)


def set_aside_shells(caps: list[CaptureDir]) -> list[Path]:
    """Move shell directories into ``empty_shells/`` next to them; returns new paths."""
    moved = []
    for c in caps:
        if not c.is_shell:
            continue
        dest_dir = c.path.parent / "empty_shells"
        dest_dir.mkdir(exist_ok=True)
        dest = dest_dir / c.path.name
        n = 1
        while dest.exists():
            dest = dest_dir / f"{c.path.name}.{n}"
            n += 1
        shutil.move(str(c.path), str(dest))
        moved.append(dest)
    return moved


def best_capture(caps: list[CaptureDir]) -> CaptureDir | None:
    real = [c for c in caps if not c.is_shell]
    if not real:
        return None
    return max(real, key=lambda c: (c.waves, c.mapped_lines, c.instructions, -(c.dispatch_id or 0)))
