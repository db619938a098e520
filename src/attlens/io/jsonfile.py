"""Reading one JSON file with errors that name the file.

Every file is read through :mod:`attlens.io.confine`: confined to its own
directory (a symlink leading elsewhere is refused), regular files only (a
FIFO or a device is refused instead of hanging or never ending), at most
:data:`MAX_JSON_BYTES`. Refusals become :class:`CorruptCapture` naming the
file, which the loader turns into a warning for optional files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from attlens.errors import CorruptCapture
from attlens.io.confine import read_input_file

# Largest JSON file attlens reads (docs/security.md). The largest decoded file
# in ../shared is a 3.5 MB results.json; one wave file of a long kernel can
# reach hundreds of MB, so the cap only stops what cannot be a real output
# (a sparse or runaway file) before it is held in memory.
MAX_JSON_BYTES = 2 << 30


def read_bytes(path: Path, limit: int = MAX_JSON_BYTES) -> bytes:
    return read_input_file(path, limit)


def parse_json(data: bytes, path: Path) -> Any:
    if not data.strip():
        raise CorruptCapture(f"{path.name}: file is empty")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # orjson's message carries line/column; keep it to one line.
        detail = str(exc).splitlines()[0]
        raise CorruptCapture(f"{path.name}: invalid or truncated JSON ({detail})") from None


def read_json(path: Path) -> Any:
    path = Path(path)
    return parse_json(read_bytes(path), path)


def expect(cond: bool, path: Path, what: str) -> None:
    """Raise a CorruptCapture naming the file when a structural check fails."""
    if not cond:
        raise CorruptCapture(f"{path.name}: {what}")


def int64(value) -> int | None:
    """``value`` if it is an integer (not a bool) that fits a signed 64-bit
    array, else None. orjson gives ints up to 2**64 - 1, so a value that
    parsed as an int can still overflow NumPy's int64."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if -(1 << 63) <= value < (1 << 63) else None


def json_safe_str(value) -> str | None:
    """A string field copied to attlens' own output: str or None, never a
    number orjson could not write back or a nested object."""
    return value if isinstance(value, str) else None
