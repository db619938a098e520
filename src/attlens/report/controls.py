"""Control characters of trace strings, made visible.

Kernel names, ISA text, source paths and file names come from the capture
and may hold anything: ``ESC ]0;title BEL`` retitles a terminal, ``ESC [2J``
clears it, a C1 ``CSI`` (U+009B) does the same on some terminals, a
bidirectional override reorders what is shown. Every text renderer passes
trace text through :func:`safe_text` at one choke point (the terminal
console, the CLI's messages, the Markdown escapes), so none is written raw.
No third-party import here: the CLI's error path uses it too.
"""

from __future__ import annotations

import re

# C0 controls except TAB and LF (line breaks are layout), DEL, C1 controls, and
# the Unicode bidirectional embeddings/overrides/isolates ("Trojan source").
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def safe_text(text: str) -> str:
    """``text`` with every control character shown as a visible escape
    (``ESC`` → ``\\x1b``, U+202E → ``\\u202e``); TAB and LF are kept."""
    return CONTROL.sub(_escape, text) if CONTROL.search(text) else text
