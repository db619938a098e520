"""Analyzed captures kept between tool calls, least recently used first out.

The key is the resolved capture directory plus the digest keys
(:mod:`attlens.cache.keys`): the state of every file of the capture at any
depth (size, mtime, ctime, inode) and of the rocprofv3 files beside it that
the target lookup may read. It is computed again on every call, so a
capture rewritten under the running server (even with its sizes and mtimes
restored) is analyzed again instead of served stale. Values are the full
analysis (with the hidden-latency model) and whatever the tools derived from
it (wait attribution, wave-level analysis), computed once per capture.
"""

from __future__ import annotations

import gc
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable


def fingerprint(directory: Path) -> tuple:
    """The state the analysis of ``directory`` depends on (the digest's keys);
    None when it cannot be looked at (the loader then says why)."""
    from attlens.cache.keys import capture_key, context_key

    try:
        return capture_key(directory, fresh=True), context_key(directory, None)
    except OSError:
        return None


class Entry:
    """One analyzed capture and the things derived from it."""

    def __init__(self, result):
        self.result = result
        self._memo: dict = {}
        self._lock = threading.RLock()  # a memo may build on another (the plan's JSON on the plan)

    def memo(self, name: str, make: Callable):
        with self._lock:
            if name not in self._memo:
                self._memo[name] = make()
            return self._memo[name]


class CaptureCache:
    def __init__(self, size: int = 4, loader: Callable | None = None):
        self.size = max(int(size), 1)
        self._loader = loader or _analyze
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict = {}  # key -> lock, so two calls for one capture load it once
        self.hits = 0
        self.misses = 0

    def get(self, directory: Path) -> Entry:
        from attlens.model.pcsampling import sources_state

        state = fingerprint(directory)
        if state is None:  # not even stat-able: never cached (the loader says what is wrong)
            return Entry(self._loader(directory))
        # the PC samples beside a capture are part of its answers (docs/pcsampling.md)
        key = (str(directory), state, repr(sources_state(directory)))
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key]
            load_lock = self._loading.setdefault(key, threading.Lock())
        with load_lock:
            with self._lock:
                if key in self._items:
                    self.hits += 1
                    return self._items[key]
            try:
                from attlens.cache.keys import command_scope

                # the loader's digest lookup takes the key just computed, not a second scan
                real = os.path.realpath(directory)
                with command_scope({("capture", real): state[0], ("context", real, None): state[1]}):
                    entry = Entry(self._loader(directory))
            finally:
                with self._lock:
                    self._loading.pop(key, None)
            # The analyzed capture lives as long as it stays cached: collect
            # once now and move what survives out of the collector's sight, so
            # the next calls do not pay a full collection over it (an evicted
            # capture is still freed by reference counting).
            gc.collect()
            gc.freeze()
            with self._lock:
                self.misses += 1
                # A re-captured directory replaces its stale entry.
                for k in [k for k in self._items if k[0] == key[0]]:
                    del self._items[k]
                self._items[key] = entry
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
            return entry

    def __len__(self) -> int:
        return len(self._items)


def _analyze(directory: Path):
    import attlens

    return attlens.analyze(attlens.load(directory))
