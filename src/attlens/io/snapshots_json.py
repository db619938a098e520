"""``snapshots.json``: original source path → local ``source_<n>_<name>`` copy
(att-format.md §2.7). A listed copy that is absent is not an error: users often
copy only the JSON files.

The local names come from the capture, so each is resolved inside the capture
directory (after symlinks) and must be a regular file: ``../../x``, an
absolute path, a symlink leading outside, a FIFO or a device is refused with a
warning and never read (docs/security.md). Source copies are read later, on
demand, through :func:`read_source`, at most :data:`MAX_SOURCE_FILE_BYTES`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attlens.io.confine import RefusedPath, read_regular, resolve_inside
from attlens.io.jsonfile import expect, read_json

# Deepest nesting of path components read (a real tree mirrors a source path:
# about 10 levels in ../shared); deeper entries are ignored with a warning.
MAX_SNAPSHOT_DEPTH = 64
# Largest source copy attlens reads (for snippets, and embedded in reports).
# Real kernel sources are tens of KB; a file above this is not shown.
MAX_SOURCE_FILE_BYTES = 4 << 20


def _local_copy(root: Path, name: str) -> tuple[Path | None, str | None]:
    """(resolved path or None when absent, reason it is refused or None)."""
    try:
        local = resolve_inside(root, name)
        st = os.stat(local)
    except RefusedPath as exc:
        return None, str(exc)
    except OSError:
        return None, None  # absent (or unreadable): shown as "not in the capture"
    if not stat.S_ISREG(st.st_mode):
        return None, f"{name}: not a regular file (a FIFO, device or directory)"
    return local, None


def read_snapshots_json(path: Path, warnings: list[str] | None = None) -> dict[str, Path | None]:
    """Map each original absolute path to its local copy, or None when the copy
    is missing or refused (each refusal appended to ``warnings``)."""
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    out: dict[str, Path | None] = {}
    notes = warnings if warnings is not None else []
    too_deep = False
    # Depth-first in file order, without recursion (a hostile file nests deeply).
    stack = [(iter(doc.items()), [])]
    while stack:
        items, parts = stack[-1]
        step = next(items, None)
        if step is None:
            stack.pop()
            continue
        key, val = step
        if isinstance(val, dict):
            if len(parts) >= MAX_SNAPSHOT_DEPTH:
                too_deep = True
                continue
            stack.append((iter(val.items()), parts + [key]))
        elif isinstance(val, str):
            joined = "/".join(parts + [key])
            original = "/" + joined.lstrip("/") if parts and parts[0] == "/" else joined
            local, why = _local_copy(path.parent, val)
            if why is not None:
                notes.append(f"{path.name}: the copy of {original} is refused ({why}); ignored")
            out[original] = local
    if too_deep:
        notes.append(f"{path.name}: entries nested deeper than {MAX_SNAPSHOT_DEPTH} levels; ignored")
    return out


def read_source(root: Path, local: Path) -> bytes:
    """The bytes of a source copy ``local`` (a path :func:`read_snapshots_json`
    returned), checked again to lie inside ``root`` and be a regular file of
    at most MAX_SOURCE_FILE_BYTES. Raises RefusedPath or OSError."""
    base = os.path.realpath(root)
    return read_regular(resolve_inside(base, os.path.relpath(local, base)), MAX_SOURCE_FILE_BYTES)
