"""The machine form every result shares (docs/json-schema.md).

Each result object builds its own ``--json`` object with ``to_dict()``; this
module holds what they have in common: the header every object starts with
(:func:`header`), the ``--all`` wrapper (:func:`many`), the capture block of
the one-capture answers (:func:`capture_ref`) and the serializer
(:func:`dumps`). No third-party import at module level.

Rules: the schema id and version are in every object; keys never change
meaning within a major version; a value that could not be determined is
``null`` (unavailable), never 0.
"""

from __future__ import annotations


def header(schema: str, version: int = 1) -> dict:
    """The three keys every ``--json`` object starts with."""
    from attlens import __version__

    return {"schema": schema, "schema_version": version, "attlens_version": __version__}


def many(schema: str, objects: list[dict]) -> dict:
    """The ``attlens.*_many`` wrapper of ``--all``: ``{..., "captures": [...]}``."""
    return {**header(schema), "captures": objects}


def capture_ref(dispatch) -> dict:
    """Which capture an answer is about: path, kernel, dispatch id, target."""
    return {"path": str(dispatch.path), "kernel": dispatch.kernel_name, "dispatch_id": dispatch.resources.dispatch_id,
            "target": dispatch.arch.target}


def rows(items: list, top: int | None) -> list:
    """The first ``top`` items; every item when ``top`` is None or <= 0 (``--top 0``)."""
    top = top_or_none(top)
    return items if top is None else items[:top]


def top_or_none(top: int | None) -> int | None:
    """``top`` as the ``topk`` key shows it: None for every row. Not an
    integer, or above :data:`attlens.limits.MAX_COUNT`: a UsageError."""
    import numbers

    from attlens.limits import MAX_COUNT

    if top is not None and (isinstance(top, bool) or not isinstance(top, numbers.Integral)):
        from attlens.errors import UsageError

        raise UsageError(f"top={top!r}: expected an integer (0 or None = every row)")
    if top is not None and top > MAX_COUNT:
        from attlens.errors import UsageError

        raise UsageError(f"top={top}: at most {MAX_COUNT:,} rows (0 or None = every row)")
    return int(top) if top and top > 0 else None


def dumps(obj) -> str:
    """``obj`` as indented JSON, the text ``--json`` prints (non-UTF-8 path
    bytes as ``\\xNN``: :func:`attlens.textsafe.dumps_json`)."""
    import orjson

    from attlens.textsafe import dumps_json

    return dumps_json(obj, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()
