"""Where the rocprofv3 outputs of a capture's run may be: the folders the
context lookup searches (no heavy imports: the digest keys use it too)."""

from __future__ import annotations

import os
from pathlib import Path

# the file names the context lookup reads in each search folder (model/context.py)
RUN_OUTPUT_SUFFIXES = ("agent_info.csv", "kernel_trace.csv", "results.json")


def search_dirs(capture: Path, rocprof_dir) -> list[Path]:
    """``--rocprof-dir``, then the capture folder, its parent and grandparent,
    each with a ``rocprofv3/`` folder inside, that exist (each once). The
    capture path is resolved first (symlinks too): a capture in the current
    folder still has a parent and a grandparent, a symlink to a capture finds
    the outputs beside the capture itself, and the files are named the same
    however the capture was reached (the capture's ``path`` is resolved too)."""
    dirs: list[Path] = []
    if rocprof_dir is not None:
        dirs.append(Path(rocprof_dir))
    capture = Path(os.path.realpath(capture))
    dirs.append(capture)
    inner = capture / "rocprofv3"
    # the capture's own rocprofv3/ is part of the capture: a symlink out of it is not followed
    if os.path.realpath(inner).startswith(str(capture) + os.sep):
        dirs.append(inner)
    for base in (capture.parent, capture.parent.parent):
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


def run_output_files(capture, rocprof_dir=None) -> list[str]:
    """Every file of the search folders the context lookup may read (by the
    names of :data:`RUN_OUTPUT_SUFFIXES`, without reading them): what an output
    must never replace and what the digest's context key covers."""
    out = []
    for d in search_dirs(capture, rocprof_dir):
        try:
            with os.scandir(d) as it:
                out += sorted(os.path.join(d, e.name) for e in it if e.name.endswith(RUN_OUTPUT_SUFFIXES))
        except OSError:
            continue
    return out
