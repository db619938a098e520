"""``snapshots.json``: original source path → local ``source_<n>_<name>`` copy
(att-format.md §2.7). A listed copy that is absent is not an error: users often
copy only the JSON files."""

from __future__ import annotations

from pathlib import Path

from attlens.io.jsonfile import expect, read_json


def read_snapshots_json(path: Path) -> dict[str, Path | None]:
    """Map each original absolute path to its local copy, or None when missing."""
    doc = read_json(path)
    expect(isinstance(doc, dict), path, "top level is not an object")
    out: dict[str, Path | None] = {}

    def walk(node, parts):
        for key, val in node.items():
            if isinstance(val, dict):
                walk(val, parts + [key])
            elif isinstance(val, str):
                joined = "/".join(parts + [key])
                original = "/" + joined.lstrip("/") if parts and parts[0] == "/" else joined
                local = path.parent / val
                out[original] = local if local.is_file() else None

    walk(doc, [])
    return out
