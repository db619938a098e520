"""The terminal policy without importing rich: the width to lay tables out
at and whether escape sequences may be written (docs/commands.md, "Terminal
output"). :mod:`attlens.report.console` builds the console on it; the CLI asks
here first so a command writing JSON or into a pipe never imports rich."""

from __future__ import annotations

import os
import sys

DEFAULT_WIDTH = 120
MIN_WIDTH = 20


def terminal_width(stream=None) -> int:
    """``COLUMNS`` if set to a number, else the terminal's width when
    ``stream`` (default stdout) is a terminal, else :data:`DEFAULT_WIDTH`."""
    cols = os.environ.get("COLUMNS", "").strip()
    if cols.isdigit() and int(cols) > 0:
        return max(int(cols), MIN_WIDTH)
    stream = sys.stdout if stream is None else stream
    try:
        if stream.isatty():
            return max(os.get_terminal_size(stream.fileno()).columns, MIN_WIDTH)
    except (AttributeError, OSError, ValueError):
        pass
    return DEFAULT_WIDTH


def color_allowed(no_color: bool = False, stream=None) -> bool:
    """Colour (and any other escape sequence) only on a terminal, without
    ``--no-color``, ``NO_COLOR`` or ``TERM=dumb``."""
    if no_color or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    stream = sys.stdout if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False
