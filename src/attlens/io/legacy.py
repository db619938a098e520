"""Outputs of the legacy rocprof (v1) that carry rocprofv3's file names.

rocprof v1 (``rocprof --stats --hip-trace``) writes a ``results.db`` holding a
``KERN`` table and a ``results.json`` that is a Chrome trace
(``{"traceEvents": [...]}``); rocprofv3 writes a rocpd database and a
``{"rocprofiler-sdk-tool": [...]}`` document under the same names. attlens
reads rocprofv3's; these are named for what they are, with the command that
writes what attlens reads (docs/formats.md).
"""

from __future__ import annotations

from pathlib import Path

ROCPROFV3_COMMAND = "rocprofv3 --kernel-trace --stats -f csv json -d OUT -- <app>"


def legacy_message(path: Path, what: str) -> str:
    return (f"{path.name}: a legacy rocprof (v1) {what}, not rocprofv3 output; attlens reads rocprofv3's kernel_trace.csv / "
            f"results.json / rocpd results.db: run `{ROCPROFV3_COMMAND}` and pass OUT")


def is_v1_results_json(path: Path) -> bool:
    """A Chrome trace (``{"traceEvents": ...``) rather than rocprofv3's document:
    told from its first bytes, without reading the whole file."""
    from attlens.io.confine import RefusedPath, read_head, resolve_inside

    try:
        head = read_head(resolve_inside(Path(path).parent, Path(path).name), 4096)
    except (OSError, RefusedPath):
        return False
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return text.startswith(b"{") and text[1:].lstrip().startswith(b'"traceEvents"')


def is_v1_tables(table_names) -> bool:
    """A database whose tables are rocprof v1's (``KERN``, no rocpd table)."""
    names = {str(n) for n in table_names}
    return "KERN" in names and not any(n.startswith("rocpd_") for n in names)
