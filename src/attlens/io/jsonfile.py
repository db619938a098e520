"""Reading one JSON file with errors that name the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from attlens.errors import CorruptCapture, InputNotFound


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InputNotFound(f"{path}: file not found") from None
    except OSError as exc:
        raise CorruptCapture(f"{path}: cannot read ({exc.strerror or exc})") from None


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
    return parse_json(read_bytes(path), path)


def expect(cond: bool, path: Path, what: str) -> None:
    """Raise a CorruptCapture naming the file when a structural check fails."""
    if not cond:
        raise CorruptCapture(f"{path.name}: {what}")
