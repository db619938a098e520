"""Finding capture directories without loading them (no NumPy): the
directory rules every command applies to the path it is given."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from attlens.errors import InputNotFound, NotACapture, SeveralCaptures
from attlens.io.filenames_json import read_filenames_json
from attlens.io.jsonfile import read_json


@dataclass
class CaptureSummary:
    """What a capture directory holds, without loading it."""

    path: Path
    waves: int | None
    instructions: int | None
    error: str | None = None


def summarize_capture(path: Path) -> CaptureSummary:
    waves = instructions = None
    err = None
    try:
        idx = read_filenames_json(path / "filenames.json")
        waves = len(idx.waves)
    except Exception as exc:  # listing must never fail on one bad directory
        err = str(exc)
    code = path / "code.json"
    if code.is_file():
        try:
            rows = read_json(code).get("code") or []
            instructions = sum(1 for r in rows if r and isinstance(r[0], str) and not r[0].startswith(";"))
        except Exception as exc:
            err = err or str(exc)
    else:
        instructions = 0
    return CaptureSummary(path, waves, instructions, err)


def find_captures(path: Path, max_depth: int = 4) -> list[Path]:
    """Capture directories (holding ``filenames.json``) at or below ``path``.
    A symlinked folder leading outside ``path`` is not searched: a bundle must
    not make attlens analyze a capture elsewhere (docs/security.md)."""
    if (path / "filenames.json").is_file():
        return [path]
    base = os.path.realpath(path).rstrip(os.sep) + os.sep
    found = []
    frontier = [path]
    for _ in range(max_depth):
        nxt = []
        for d in frontier:
            try:
                children = sorted(p for p in d.iterdir() if p.is_dir() and os.path.realpath(p).startswith(base))
            except OSError:
                continue
            for c in children:
                if (c / "filenames.json").is_file():
                    found.append(c)
                else:
                    nxt.append(c)
        frontier = nxt
    return found


def resolve_capture_dirs(path: str | Path, all_captures: bool = False) -> list[Path]:
    """Apply the directory rules: a capture, or a folder of captures."""
    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p}: no such file or directory")
    if not p.is_dir():
        raise InputNotFound(f"{p}: not a directory (pass a ui_output_agent_*_dispatch_* directory)")
    caps = find_captures(p)
    if not caps:
        raise NotACapture(
            f"{p}: not an ATT capture (no filenames.json here or in any subdirectory)",
            hint="pass the ui_output_agent_<handle>_dispatch_<N> directory rocprofv3 wrote",
        )
    if len(caps) > 1 and not all_captures:
        summaries = [summarize_capture(c) for c in caps]
        raise SeveralCaptures(
            f"{p}: holds {len(caps)} captures; pass one of them",
            candidates=summaries,
        )
    return caps
