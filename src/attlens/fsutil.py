"""Writing files so that a reader never sees half a file and an interrupted
write never replaces a good one: temporary file in the same folder, then
``os.replace``. A path that cannot be written (a directory, a parent that is
a file, read-only, disk full) is an :class:`attlens.errors.OutputRefused`
naming the path, not an internal error."""

from __future__ import annotations

import os
from pathlib import Path


def write_atomic(path: str | os.PathLike, data: bytes | str) -> int:
    """Write ``data`` to ``path`` atomically; returns the bytes written."""
    out = Path(path)
    raw = data.encode("utf-8", errors="backslashreplace") if isinstance(data, str) else data
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        if out.is_dir():
            raise IsADirectoryError(21, "is a directory")
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_bytes(raw)
        os.replace(tmp, out)
    except OSError as exc:
        from attlens.errors import OutputRefused

        raise OutputRefused(f"cannot write {out}: {_why(exc)}", hint="choose another output path") from None
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass
    return len(raw)


def _why(exc: OSError) -> str:
    if isinstance(exc, IsADirectoryError):
        return "it is a directory"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return "a part of its folder path is a file, not a directory"
    return exc.strerror or str(exc)
