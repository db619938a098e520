"""Which PC samples belong with a capture, and reading them through the cache
(docs/pcsampling.md). No NumPy at module level: the answer keys use
:func:`sources_state`.

Found beside a capture (the folders the context lookup searches: the capture,
its parent and grandparent, a ``rocprofv3/`` folder in each, ``--rocprof-dir``)
by name: ``*results.json`` that hold PC samples, then
``*pc_sampling_stochastic.csv`` / ``*pc_sampling_host_trap.csv``. Preferred,
in order: the traced run's own results.json (the one the context lookup
read), a results.json, a CSV; within a rank the first by path, the others
named in a note.
"""

from __future__ import annotations

import os
from pathlib import Path

from attlens.model.rundirs import search_dirs

CSV_SUFFIXES = ("pc_sampling_stochastic.csv", "pc_sampling_host_trap.csv")
JSON_SUFFIX = "results.json"


def candidate_files(capture, rocprof_dir=None) -> list[str]:
    """Files beside ``capture`` whose names say they may hold PC samples."""
    out, seen = [], set()
    for d in search_dirs(Path(capture), rocprof_dir):
        try:
            with os.scandir(d) as it:
                names = sorted(e.name for e in it if e.name.endswith((JSON_SUFFIX, *CSV_SUFFIXES)) and e.is_file())
        except OSError:
            continue
        for n in names:
            real = os.path.realpath(os.path.join(d, n))
            if real not in seen:
                seen.add(real)
                out.append(os.path.join(d, n))
    return out


def sources_state(capture, rocprof_dir=None, source=None) -> list:
    """The state (name, size, times, inode) of every file the PC-sample
    lookup may read for ``capture``: part of a stored answer's key."""
    from attlens.cache.pcsamples import source_state

    paths = [source] if source not in (None, False) else ([] if source is False else candidate_files(capture, rocprof_dir))
    out = []
    for p in paths:
        try:
            out.append(source_state(p))
        except OSError:
            out.append([str(p), None])
    return out


# The last few tables (or refusals) read in this process, by the source's
# state: the loader reads the capture's candidates while its wave files are
# parsed (prefetch_samples), the analysis then finds them here.
_RECENT: dict = {}
_RECENT_MAX = 4


def read_samples(path, cache=None):
    """A :class:`~attlens.io.pcsampling.PcSampleTable` of ``path`` (any format),
    kept in the digest store between commands and, for the same state of the
    file, in this process."""
    from attlens.cache.pcsamples import cached_samples, source_state
    from attlens.errors import AttlensError
    from attlens.io.pcsampling import read_pc_sampling

    try:
        key = repr(source_state(path))
    except OSError:
        return cached_samples(path, read_pc_sampling, cache)  # the reader says what is wrong with it
    got = _RECENT.get(key)
    if got is None:
        try:
            got = cached_samples(path, read_pc_sampling, cache)
        except AttlensError as exc:
            # kept without its frames: they hold the reader's parsed document (a whole
            # results.json without samples) for as long as the refusal is kept
            got = exc.with_traceback(None)
            got.__context__ = got.__cause__ = None
        while len(_RECENT) >= _RECENT_MAX:
            _RECENT.pop(next(iter(_RECENT)), None)
        _RECENT[key] = got
    if isinstance(got, AttlensError):
        raise got.with_traceback(None)  # the same refusal again, without the frames of every earlier raise
    return got


def prefetch_samples(capture) -> None:
    """Read every PC-sample candidate :func:`find_samples` will look at for
    ``capture`` (into this process' recent tables, and the digest store), so
    that the lookup itself is quick. Errors are the lookup's to report."""
    from attlens.errors import AttlensError

    for f in candidate_files(capture):
        try:
            read_samples(f)
        except AttlensError:
            pass


def find_samples(dispatch, rocprof_dir=None, cache=None) -> tuple[object | None, list[str]]:
    """(the PC-sample table that goes with ``dispatch``, or None; notes on
    what was found and left aside)."""
    from attlens.errors import AttlensError, EmptyCapture

    own = {os.path.realpath(f) for f in dispatch.rocprof_files}
    ranked = []
    notes: list[str] = []
    for f in candidate_files(dispatch.path, rocprof_dir):
        is_csv = f.endswith(CSV_SUFFIXES)
        try:
            table = read_samples(f, cache)
        except EmptyCapture:
            continue  # a results.json without samples: the usual case
        except AttlensError as exc:
            notes.append(f"PC samples in {f} not read: {exc}")
            continue
        rank = 2 if is_csv else (0 if os.path.realpath(f) in own or _names_capture(table, dispatch) else 1)
        ranked.append((rank, f, table))
    if not ranked:
        return None, notes
    ranked.sort(key=lambda x: (x[0], x[1]))
    chosen = ranked[0][1]
    # the same run's CSV holds the same samples as its results.json: not an alternative worth naming
    rest = [f for _r, f, _t in ranked[1:] if not (f.endswith(CSV_SUFFIXES) and _same_prefix(f, chosen))]
    if rest:
        notes.append(f"PC samples taken from {chosen}; also found {', '.join(rest)} (pass --pc-sampling FILE to choose)")
    return ranked[0][2], notes


def _names_capture(table, dispatch) -> bool:
    import re

    h, d = dispatch.resources.agent_handle, dispatch.resources.dispatch_id
    if h is None or d is None:
        return False
    pat = re.compile(rf"_{h}_shader_engine_\d+_{d}\.att$")
    return any(pat.search(n) for n in table.att_filenames)


def _prefix(path: str) -> tuple[str, str]:
    name = os.path.basename(path)
    for suffix in (JSON_SUFFIX, *CSV_SUFFIXES):
        if name.endswith(suffix):
            name = name[: -len(suffix)].rstrip("_")
            break
    return os.path.realpath(os.path.dirname(path)), name


def _same_prefix(a: str, b: str) -> bool:
    return _prefix(a) == _prefix(b)
