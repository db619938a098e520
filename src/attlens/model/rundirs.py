"""Where the rocprofv3 outputs of a capture's run may be: the folders the
context lookup searches (no heavy imports: the digest keys use it too).

Layouts covered (docs/formats.md "Files beside a capture"):

* ``--rocprof-dir DIR`` given by the user;
* the capture folder itself, its parent and grandparent, each with a
  ``rocprofv3/`` folder inside (FlyDSL's ``<kernel>/rocprofv3`` beside
  ``<kernel>/big/ui_output_*``);
* the default ``-d DIR`` layout of rocprofv3: ``DIR/ui_output_agent_*`` beside
  ``DIR/<hostname>/<pid>_agent_info.csv`` (and the ``.att`` files), i.e. a
  child folder of the parent that holds run outputs;
* the folders of ``attlens profile``: ``OUT/att/ui_output_*`` beside
  ``OUT/discovery/discover_kernel_trace.csv``, i.e. the grandparent's
  ``discovery/`` folder (only that name: the grandparent can be a folder of
  unrelated runs).

At most :data:`MAX_CHILD_FOLDERS` child folders of the parent are looked at.
"""

from __future__ import annotations

import os
from pathlib import Path

# the file names the context lookup reads in each search folder (model/context.py),
# and the raw .att files whose names tie a run's pid prefix to a capture
RUN_OUTPUT_SUFFIXES = ("agent_info.csv", "kernel_trace.csv", "results.json", "sysinfo.csv", ".att")
MAX_CHILD_FOLDERS = 64


def _holds_run_outputs(d: str) -> bool:
    try:
        with os.scandir(d) as it:
            for i, e in enumerate(it):
                if i >= 4096:
                    return False
                if e.name.endswith(RUN_OUTPUT_SUFFIXES) and e.is_file():
                    return True
    except OSError:
        return False
    return False


def _run_children(base: Path, skip: str) -> list[Path]:
    """Child folders of ``base`` (not ``skip``, not a capture) holding run outputs."""
    out = []
    try:
        with os.scandir(base) as it:
            kids = sorted(e.name for e in it if e.is_dir(follow_symlinks=False) and not e.name.startswith("ui_output_"))
    except OSError:
        return out
    for name in kids[:MAX_CHILD_FOLDERS]:
        p = base / name
        if str(p) != skip and name != "rocprofv3" and _holds_run_outputs(str(p)):
            out.append(p)
    return out


def search_dirs(capture: Path, rocprof_dir) -> list[Path]:
    """``--rocprof-dir``, then the capture folder, its parent and grandparent,
    each with a ``rocprofv3/`` folder inside, then the child folders of the
    parent that hold run outputs and the grandparent's ``discovery/`` (module
    doc), that exist
    (each once). The capture path is resolved first (symlinks too): a capture
    in the current folder still has a parent and a grandparent, a symlink to a
    capture finds the outputs beside the capture itself, and the files are
    named the same however the capture was reached (the capture's ``path`` is
    resolved too)."""
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
    dirs.extend(_run_children(capture.parent, str(capture)))  # DIR/<hostname>/ (rocprofv3 -d DIR)
    dirs.append(capture.parent.parent / "discovery")  # attlens profile: OUT/att/<capture> beside OUT/discovery/
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
