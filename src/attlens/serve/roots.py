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
        """The resolved path, or :class:`OutsideRoots`."""
        if path is None or str(path).strip() == "":
            from attlens.errors import UsageError

            raise UsageError("empty path")
        p = Path(str(path)).expanduser()
        if not p.is_absolute():
            p = self.paths[0] / p
        try:
            real = p.resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop
            raise OutsideRoots(f"{path}: cannot be resolved ({exc})") from None
        for root in self.paths:
            if real == root or root in real.parents:
                return real
        raise OutsideRoots(
            f"{path}: outside the server's roots ({', '.join(str(r) for r in self.paths)})",
            hint="start the server with --root DIR for each folder it may read",
        )
