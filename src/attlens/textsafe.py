"""Text from file names, made safe to write.

A path that is not valid UTF-8 (``/data/run\\xff``) reaches Python as a str
with surrogate escapes; orjson refuses such strings and a strict UTF-8 stream
cannot print them. attlens writes them with the undecodable bytes as
``\\xNN`` (readable, and still telling which byte it was). Every JSON writer
goes through :func:`dumps_json`.
"""

from __future__ import annotations


def utf8_safe_str(s: str) -> str:
    """``s`` with surrogate-escaped bytes as ``\\xNN`` (other strings unchanged)."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        pass
    try:
        return s.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that is not an escaped byte
        return s.encode("utf-8", "backslashreplace").decode("utf-8")


def utf8_safe(obj):
    """``obj`` (dicts, lists, tuples, strings, other scalars) with every string made safe."""
    if isinstance(obj, str):
        return utf8_safe_str(obj)
    if isinstance(obj, dict):
        return {utf8_safe(k): utf8_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [utf8_safe(v) for v in obj]
    return obj


def dumps_json(obj, option: int = 0) -> bytes:
    """``orjson.dumps(obj, option=option)``; when a string is not valid UTF-8
    (orjson raises TypeError), the same document with those strings made safe."""
    import orjson

    try:
        return orjson.dumps(obj, option=option)
    except TypeError as exc:
        if "surrogates" not in str(exc):
            raise
    return orjson.dumps(utf8_safe(obj), option=option)
