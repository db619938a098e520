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


HTML_ROWS = 10  # rows of to_pandas() a notebook shows under a result


def brief_repr(*fields):
    """Class decorator (outside ``@dataclass``): a one-line ``repr()`` showing
    ``fields``, each an attribute name or a ``(label, function of the object)``
    pair, and the same as a small table in a notebook (``_repr_html_``), with
    the first rows of ``to_pandas()`` when the class has one and pandas is
    installed."""

    def deco(cls):
        def values(self):
            return [(f, getattr(self, f)) if isinstance(f, str) else (f[0], f[1](self)) for f in fields]

        def __repr__(self) -> str:
            return brief(self, values(self))

        def _repr_html_(self) -> str:
            return html_brief(self, values(self))

        cls.__repr__ = __repr__
        cls._repr_html_ = _repr_html_
        return cls

    return deco


def html_brief(obj, fields) -> str:
    """A result in a notebook: its class, its headline fields, then the first
    :data:`HTML_ROWS` rows of ``to_pandas()`` (when it has one and pandas is
    installed). Every string is escaped: trace strings are data."""
    from html import escape

    rows = "".join(f"<tr><th style='text-align:left'>{escape(str(k))}</th><td style='text-align:left'>{escape(_value(v))}</td></tr>"
                   for k, v in fields)
    out = f"<div class='attlens-result'><b>{escape(type(obj).__name__)}</b><table>{rows}</table>"
    to_pandas = getattr(obj, "to_pandas", None)
    if to_pandas is not None:
        try:
            import pandas  # noqa: F401  (optional: without it, the headline alone)

            df = to_pandas()
        except Exception:  # noqa: BLE001 - a notebook view never raises
            df = None
        if df is not None and len(df):
            more = f"first {HTML_ROWS} of {len(df):,} rows; " if len(df) > HTML_ROWS else ""
            out += df.head(HTML_ROWS).to_html(max_cols=30, escape=True)
            out += f"<p><small>{more}.to_pandas() has every row, .to_dict() the --json object</small></p>"
    return out + "</div>"


def dataframe(rows: list[dict], columns: list[str] | None = None):
    """A pandas DataFrame of ``rows`` (dicts, one per row, their keys the
    columns); ``columns``: the columns when there is no row. Without pandas:
    an ImportError naming the extra that installs it."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(f"to_pandas() needs pandas, an optional dependency of attlens: {PANDAS_EXTRA}", name="pandas") from exc
    return pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=columns)


def flat(row: dict, *keys: str) -> dict:
    """``row`` with the objects under ``keys`` spread into ``key.name`` columns
    (a wave's ``states`` become ``states.EXEC``, ...)."""
    out = {}
    for k, v in row.items():
        if k in keys and (v is None or isinstance(v, dict)):
            out.update({f"{k}.{kk}": vv for kk, vv in (v or {}).items()})
        else:
            out[k] = v
    return out


def spread_zero(df, prefix: str):
    """Columns ``prefix.*`` of cycle counts spread from per-row dicts: a key a
    row did not have is 0 cycles there (not unknown), as integers."""
    cols = [c for c in df.columns if c.startswith(prefix + ".")]
    if cols:
        df[cols] = df[cols].fillna(0).astype("int64")
    return df
