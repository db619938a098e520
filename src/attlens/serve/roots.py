"""Paths a client may name: only inside the roots the server was started with.

Every path is made absolute (relative paths are taken from the first root),
then resolved — symlinks followed — before the check, so neither ``..`` nor a
link pointing out of a root escapes it.
"""

from __future__ import annotations

import os
from pathlib import Path

from attlens.errors import AttlensError, EXIT_USAGE


class OutsideRoots(AttlensError):
    """A tool was given a path outside the server's roots."""

    exit_code = EXIT_USAGE


class Roots:
    def __init__(self, roots: list[str | Path]):
        resolved = []
        for r in roots or [os.getcwd()]:
            p = Path(r).expanduser().resolve()
            if not p.is_dir():
                from attlens.errors import InputNotFound

                raise InputNotFound(f"--root {r}: not a directory")
            resolved.append(p)
        self.paths: list[Path] = resolved

    def check(self, path: str | Path) -> Path:
        """The resolved path, or :class:`OutsideRoots`; a path that cannot name
        a file (not text, a NUL byte, longer than the system allows) is a
        UsageError before anything looks at it."""
        from attlens.errors import UsageError
        from attlens.limits import MAX_NAME_BYTES, MAX_PATH_CHARS

        if not isinstance(path, (str, Path)):
            raise UsageError(f"expected a path (text), not {type(path).__name__}")
        text = str(path)
        if text.strip() == "":
            raise UsageError("empty path")
        if "\0" in text:
            raise UsageError("a path cannot hold a NUL byte")
        if len(text) > MAX_PATH_CHARS or any(len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES for part in text.split("/")):
            raise UsageError(f"path too long ({len(text):,} characters; at most {MAX_PATH_CHARS:,}, {MAX_NAME_BYTES} bytes per name)")
        p = Path(text).expanduser()
        if not p.is_absolute():
            p = self.paths[0] / p
        try:
            real = p.resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a name the system refuses
            raise OutsideRoots(f"{path}: cannot be resolved ({exc})") from None
        for root in self.paths:
            if real == root or root in real.parents:
                return real
        raise OutsideRoots(
            f"{path}: outside the server's roots ({', '.join(str(r) for r in self.paths)})",
            hint="start the server with --root DIR for each folder it may read",
        )
