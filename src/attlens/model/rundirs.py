"""Where the rocprofv3 outputs of a capture's run may be: the folders the
context lookup searches (no heavy imports: the digest keys use it too)."""

from __future__ import annotations

import os
from pathlib import Path


def search_dirs(capture: Path, rocprof_dir) -> list[Path]:
    """``--rocprof-dir``, then the capture folder, its parent and grandparent,
    each with a ``rocprofv3/`` folder inside, that exist (each once). A
    relative capture path is made absolute first: ``capture`` in the current
    folder still has a parent and a grandparent."""
    dirs: list[Path] = []
    if rocprof_dir is not None:
        dirs.append(Path(rocprof_dir))
    capture = Path(os.path.abspath(capture))
    for base in (capture, capture.parent, capture.parent.parent):
        dirs.append(base)
        dirs.append(base / "rocprofv3")
    seen, out = set(), []
    for d in dirs:
        try:
            key = d.resolve()
        except OSError:
            continue
        if key not in seen and d.is_dir():
            seen.add(key)
            out.append(d)
    return out
