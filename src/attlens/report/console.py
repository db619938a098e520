"""The terminal, once for every renderer: the console, the table policy, the
control-character filter and the progress line (docs/commands.md, "Terminal
output").

- **Width.** ``COLUMNS`` when set, else the terminal's width when stdout is a
  terminal, else :data:`DEFAULT_WIDTH` (120).
- **Colour.** Only on a terminal, and never with ``--no-color`` or
  ``NO_COLOR`` (https://no-color.org): then the console writes plain text, not
  one escape sequence.
- **Trace strings are inert.** Kernel names, ISA text and paths come from the
  capture. :class:`SafeConsole` turns every C0/C1 control character (ESC,
  BEL, CR, ...) and the bidirectional overrides into a visible ``\\x1b``-style
  escape in everything it renders, so no renderer can forget it.
- **Tables.** :class:`FitTable` lays its columns out for the width it is
  rendered at. Numbers are never cut or dropped: a numeric column is as wide
  as its widest value (its header wraps between words instead). Text columns
  give way first, in the order of their ``give_way`` rank (lowest first;
  instruction text last): ``text`` ellipsizes at the end, ``path`` at the
  start (the line number stays), ``wrap`` wraps, ``isa`` wraps between
  operands and is never narrower than its longest word, so a mnemonic is
  never split. A text column with no value in any row takes no width. When
  even the numbers do not fit, the table is printed wider than the terminal
  rather than cut.
- **Progress.** :func:`progress` shows a transient progress line on stderr
  when stderr is a terminal (and colour is allowed), and does nothing
  otherwise.
"""

from __future__ import annotations

import re
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from attlens.report.controls import CONTROL, safe_text
from attlens.report.tty import DEFAULT_WIDTH, MIN_WIDTH, color_allowed, terminal_width  # noqa: F401  (the policy, without rich)


class SafeConsole(Console):
    """A rich console that never lets a control character of the data through
    and never crops a line (an over-wide :class:`FitTable` stays whole)."""

    def render_str(self, text: str, **kwargs) -> Text:
        return super().render_str(safe_text(text), **kwargs)

    def render(self, renderable, options=None):
        # The safety net behind render_str: Text objects built elsewhere.
        for seg in super().render(renderable, options):
            if seg.control is None and seg.text and CONTROL.search(seg.text):
                seg = Segment(safe_text(seg.text), seg.style)
            yield seg

    def print(self, *objects, crop: bool = False, **kwargs) -> None:  # noqa: A003 - rich's name
        super().print(*objects, crop=crop, **kwargs)


_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)(?=\n|$)")


class _NoTrailingSpace:
    """The console's stream, minus the spaces rich pads a table's last
    column with at the end of each line (escape sequences after them stay)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(_TRAILING.sub(r"\1", text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


def make_console(no_color: bool = False, *, file=None, width: int | None = None, live: bool = False) -> Console:
    """The console of a command's output: ``file`` (default stdout) at
    ``width`` (default :func:`terminal_width`), coloured only when
    :func:`color_allowed`. A ``file`` that is not a terminal (``-o FILE``,
    a pipe, a StringIO) always gets plain text."""
    stream = sys.stdout if file is None else file
    color = color_allowed(no_color, stream)
    return SafeConsole(
        file=stream if live else _NoTrailingSpace(stream),  # a live progress line positions its cursor itself
        width=width or terminal_width(stream),
        color_system="auto" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        emoji=False,  # ":name:" inside a C++ kernel name is not an emoji
        soft_wrap=False,
        legacy_windows=False,
    )


# --------------------------------------------------------------------------- tables

_KINDS = ("num", "text", "path", "wrap", "isa")
_MIN_TEXT = {"text": 10, "path": 14, "wrap": 12, "isa": 12}
_EMPTY = ("", "-")


@dataclass(frozen=True)
class Col:
    """A column of a :class:`FitTable`.

    ``kind``: ``num`` (right-aligned, never cut; the header wraps between
    words), ``text`` (ellipsized at the end when space is short), ``path``
    (ellipsized at the start, so ``file.py:123`` keeps its line number) or
    ``wrap`` (wrapped onto more lines) or ``isa`` (instruction text: wrapped
    between operands, never narrower than its longest word). ``min_width``:
    the narrowest a text column gets (default 10 / 14 / 12 / 12; an ``isa``
    column is never narrower than its longest word whatever this says).
    ``justify`` overrides the kind's alignment. ``give_way``: when space is
    short, text columns are narrowed, then moved below their row, lowest
    rank first (ties: the rightmost first); the ranks used everywhere are in
    :mod:`attlens.report.terminal` (instruction text last)."""

    header: str
    kind: str = "num"
    min_width: int | None = None
    justify: str | None = None
    give_way: int = 5

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"column kind {self.kind!r} is not one of {_KINDS}")


def _cell(value) -> Text:
    if isinstance(value, Text):
        return value
    text = Text.from_markup(safe_text("-" if value is None else str(value)), emoji=False)
    return text


@dataclass
class Layout:
    """How a table is laid out at one render width: the width of each column
    shown in the table (``None`` for a text column moved onto a line of its
    own below each row), the gap between columns, and the total width
    (more than the render width only when the numbers alone do not fit)."""

    widths: list[int | None]
    gap: int
    total: int
    empty: set = field(default_factory=set)  # text columns with no value in any row: not shown at all

    @property
    def below(self) -> list[int]:
        return [i for i, w in enumerate(self.widths) if w is None and i not in self.empty]


_GAPS = (3, 2, 1)  # spaces between columns, loosest first


class FitTable:
    """A rich table whose columns are sized for the width it is rendered at
    (module docstring). Cells are rich markup strings (escape trace strings
    with :func:`rich.markup.escape`), :class:`rich.text.Text`, or None
    (shown as ``-``)."""

    def __init__(self, title: str | None, columns: list[Col] | tuple[Col, ...]):
        self.title = title
        self.columns = list(columns)
        self.rows: list[list[Text]] = []

    def add_row(self, *cells) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([_cell(c) for c in cells])

    def __len__(self) -> int:
        return len(self.rows)

    def layout(self, width: int) -> Layout:
        """Loosest first: natural widths; headers wrapped between words;
        narrower gaps; text columns narrowed down to their floor, lowest
        ``give_way`` rank first (widest first within a rank); text columns
        moved, lowest rank first, onto a line below each row; else the
        numbers at full width, wider than ``width``. A text column empty in
        every row is not shown (width 0)."""
        cols = self.columns
        cells = [[r[i].cell_len for r in self.rows] for i in range(len(cols))]
        empty = {i for i, c in enumerate(cols) if c.kind != "num" and self.rows and all(r[i].plain.strip() in _EMPTY for r in self.rows)}
        natural = [max([len(c.header)] + cells[i]) for i, c in enumerate(cols)]
        snug = [max([max((len(w) for w in c.header.split()), default=1)] + cells[i]) for i, c in enumerate(cols)]
        floor = {i: self._floor(i, snug[i]) for i, c in enumerate(cols) if c.kind != "num" and i not in empty}
        if empty:
            natural = [None if i in empty else w for i, w in enumerate(natural)]
            snug = [None if i in empty else w for i, w in enumerate(snug)]

        def total(widths, gap):
            shown = [w for w in widths if w is not None]
            return sum(shown) + gap * max(len(shown) - 1, 0)

        for widths, gaps in ((natural, _GAPS[:1]), (snug, _GAPS)):
            for gap in gaps:
                if total(widths, gap) <= width:
                    return Layout(list(widths), gap, total(widths, gap), empty)
        gap = _GAPS[-1]
        moved: set[int] = set()
        # the lowest give_way rank goes first; within a rank long text (wrap,
        # path) before short labels (text), the rightmost first
        movable = sorted(floor, key=lambda i: (cols[i].give_way, cols[i].kind == "text", -i))
        while True:
            trial: list[int | None] = [None if i in moved or i in empty else w for i, w in enumerate(snug)]
            kept = {i: f for i, f in floor.items() if i not in moved}
            budget = width - total([w if i not in kept else 0 for i, w in enumerate(trial)], gap) - gap * (len(kept) > 0)
            _shrink(trial, kept, budget, {i: cols[i].give_way for i in kept})
            if total(trial, gap) <= width or not movable:
                return Layout(trial, gap, total(trial, gap), empty)
            moved.add(movable.pop(0))

    def _floor(self, i: int, snug: int) -> int:
        c = self.columns[i]
        if c.kind == "isa":
            # never narrower than the longest word: a mnemonic (or an operand) is never split
            longest = max([max((len(w) for w in r[i].plain.split()), default=1) for r in self.rows] + [1])
            return min(snug, max(longest, c.min_width or 0))
        return min(snug, c.min_width or _MIN_TEXT[c.kind])

    @staticmethod
    def _fit_cell(col: Col, width: int, cell: Text) -> Text:
        if col.kind not in ("text", "path") or cell.cell_len <= width:
            return cell
        if col.kind == "path" and width >= 2:  # keep the end: file.py:123
            plain = cell.plain
            while len(plain) > 1 and Text(plain).cell_len > width - 1:
                plain = plain[1:]
            return Text("…" + plain, style=cell.style)
        cell = cell.copy()
        cell.truncate(width, overflow="ellipsis")
        return cell

    def _table(self, lay: Layout, rows: list[list[Text]], header: bool) -> Table:
        # the box's divider is one space; padding makes up the rest of the gap
        padding = (0, 1 if lay.gap >= 2 else 0, 0, 1 if lay.gap >= 3 else 0)
        t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=padding, expand=False, header_style="bold",
                  show_header=header)
        shown = [(c, w) for c, w in zip(self.columns, lay.widths) if w is not None]
        for c, w in shown:
            # headers always wrap between words; the cells of text columns do not
            t.add_column(c.header, justify=c.justify or ("right" if c.kind == "num" else "left"), width=w, overflow="fold")
        for r in rows:
            cells = [x for x, w in zip(r, lay.widths) if w is not None]
            t.add_row(*(self._fit_cell(c, w, x) for (c, w), x in zip(shown, cells)))
        return t

    def __rich_console__(self, console, options):
        lay = self.layout(options.max_width)
        below = lay.below
        title = self.title or ""
        if below:
            title += f"{' ' if title else ''}(below each row: {' · '.join(self.columns[i].header for i in below)})"
        if title:
            yield Text(title, style="bold")
        wide = options.update_width(max(lay.total, options.max_width))
        if not below:
            yield from console.render(self._table(lay, self.rows, True), wide)
            return
        # each row is its own table with the same fixed widths (so the columns
        # line up), followed by its moved text, wrapped, on lines of its own
        yield from console.render(self._table(lay, [], True), wide)
        for r in self.rows:
            yield from console.render(self._table(lay, [r], False), wide)
            # a moved text or path cell still takes at most one line
            room = max(options.max_width - 4, 8)
            extra = Text("  ·  ").join(self._fit_cell(self.columns[i], room, r[i]) for i in below if r[i].plain not in ("", "-"))
            if extra.plain:
                yield from console.render(Padding(extra, (0, 0, 0, 4)), options)


def _shrink(widths: list[int], floor: dict[int, int], budget: int, rank: dict[int, int] | None = None) -> None:
    """Narrow text columns until they fit ``budget`` (or are all at their
    floor): the lowest ``rank`` first, the widest first within a rank."""
    excess = sum(widths[i] for i in floor) - budget
    rank = rank or {}
    while excess > 0:
        i = max((i for i in floor if widths[i] > floor[i]), key=lambda i: (-rank.get(i, 0), widths[i]), default=None)
        if i is None:
            return
        widths[i] -= 1
        excess -= 1


# --------------------------------------------------------------------------- progress


def _no_progress(stage: str, done: int | None = None, total: int | None = None) -> None:
    return None


@contextmanager
def progress(no_color: bool = False, stream=None):
    """A progress callback ``cb(stage, done=None, total=None)`` for long
    operations. When ``stream`` (default stderr) is a terminal and colour is
    allowed, a transient rich progress line shows the stage (with a bar when
    ``total`` is known); otherwise the callback does nothing and nothing is
    written."""
    stream = sys.stderr if stream is None else stream
    if not color_allowed(no_color, stream):
        yield _no_progress
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    console = make_console(file=stream, live=True)
    # No refresh thread (auto_refresh=False): each stage is drawn when it starts,
    # and a process with a second thread never forks its parse (attlens.forked.can_fork).
    bar = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=console, transient=True, auto_refresh=False)
    task = bar.add_task("", total=None)

    def update(stage: str, done: int | None = None, total: int | None = None) -> None:
        # stages are few: draw each at once (the refresh thread may not get to it)
        bar.update(task, description=safe_text(stage), completed=done or 0, total=total, refresh=True)

    with bar:
        yield update
