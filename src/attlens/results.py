"""What every result object shares (docs/api.md): a one-line ``repr()`` with
its key numbers, and DataFrames of its rows.

A result can hold a whole capture (arrays of a million records, every
instruction, every wave); its ``repr()`` shows what it is and its headline
numbers on one line, never its contents. :func:`brief_repr` gives a class
that ``repr()``; :func:`dataframe` builds the DataFrames of ``to_pandas()``
(pandas is the optional extra ``attlens[pandas]``, imported only then).
No third-party import here.
"""

from __future__ import annotations

from pathlib import PurePath

PANDAS_EXTRA = "pip install 'pandas>=2.0' (in the attlens clone: pip install -e '.[pandas]')"
TEXT_WIDTH = 40  # a string longer than this is shortened in a repr
SHOWN_ITEMS = 4  # a list, tuple or dict of at most this many short values is shown; a longer one as its length


def shorten(text: str, width: int = TEXT_WIDTH, keep_end: bool = False) -> str:
    """``text`` on one line, at most ``width`` characters (an ellipsis marks the cut)."""
    text = " ".join(str(text).split())
    if len(text) <= width:
        return text
    return "…" + text[-(width - 1):] if keep_end else text[: width - 1] + "…"


def _value(v) -> str:
    if isinstance(v, (str, PurePath)):  # a path keeps its end: file.py:123
        return repr(shorten(str(v), keep_end=isinstance(v, PurePath) or "/" in v))
    if isinstance(v, bool) or v is None or isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        short = repr(round(v, 4))
        return short if len(short) <= 10 else f"{v:.4g}"
    if isinstance(v, (list, tuple, dict)) and len(v) <= SHOWN_ITEMS and all(_scalar(x) for x in (v.values() if isinstance(v, dict) else v)):
        if isinstance(v, dict):
            return "{" + ", ".join(f"{k!r}: {_value(x)}" for k, x in v.items()) + "}"
        inner = ", ".join(_value(x) for x in v)
        return f"({inner}{',' if len(v) == 1 else ''})" if isinstance(v, tuple) else f"[{inner}]"
    if hasattr(v, "__len__"):
        return f"<{len(v)} item{'' if len(v) == 1 else 's'}>"
    return f"<{type(v).__name__}>"


def _scalar(x) -> bool:
    return x is None or isinstance(x, (bool, int, float)) or (isinstance(x, str) and len(x) <= 16)


def brief(obj, fields) -> str:
    """``Name(key=value, ...)`` on one line; ``fields``: (key, value) pairs."""
    return f"{type(obj).__name__}({', '.join(f'{k}={_value(v)}' for k, v in fields)})"


def brief_repr(*fields):
    """Class decorator (outside ``@dataclass``): a one-line ``repr()`` showing
    ``fields``, each an attribute name or a ``(label, function of the object)`` pair."""

    def deco(cls):
        def __repr__(self) -> str:
            return brief(self, [(f, getattr(self, f)) if isinstance(f, str) else (f[0], f[1](self)) for f in fields])

        cls.__repr__ = __repr__
        return cls

    return deco


def dataframe(rows: list[dict], columns: list[str] | None = None):
    """A pandas DataFrame of ``rows`` (dicts, one per row, their keys the
    columns); ``columns``: the columns when there is no row. Without pandas:
    an ImportError naming the extra that installs it."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(f"to_pandas() needs pandas, an optional dependency of attlens: {PANDAS_EXTRA}", name="pandas") from exc
    return pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=columns)


def flat(row: dict, key: str) -> dict:
    """``row`` with the object under ``key`` spread into ``key.name`` columns
    (a wave's ``states`` become ``states.EXEC``, ...)."""
    out = {}
    for k, v in row.items():
        if k == key:
            out.update({f"{key}.{kk}": vv for kk, vv in (v or {}).items()})
        else:
            out[k] = v
    return out
