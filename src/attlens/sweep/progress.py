"""Progress of a running sweep, on stderr.

On a terminal: a live block (rich) with one line per GPU (the job on it, its
attempt, for how long) and a summary bar. Otherwise (a pipe, a log file, CI):
one plain line per event, nothing redrawn.
"""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, slots: list[str], live: bool | None = None, stream=None, quiet: bool = False):
        self.stream = stream or sys.stderr
        self.total = total
        self.slots: dict[str, tuple[str, float] | None] = {s: None for s in slots}
        self.counts = {"done": 0, "failed": 0, "analyzing": 0}
        self.quiet = quiet
        self.live = (not quiet) and (self.stream.isatty() if live is None else live)
        self._live = None
        self._last = 0.0

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self):
        if self.live:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self._render(), console=Console(file=self.stream), refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc):
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)
            self._live = None
        return False

    # ------------------------------------------------------------------ updates
    def slot(self, name: str, job: str | None) -> None:
        if name not in self.slots:
            self.slots[name] = None
        self.slots[name] = None if job is None else (job, time.monotonic())
        self.refresh()

    def set_counts(self, **counts) -> None:
        self.counts.update(counts)
        self.refresh()

    def event(self, text: str) -> None:
        if self.quiet:
            return
        if self._live is not None:
            self._live.console.print(text, markup=False, highlight=False)
        else:
            print(f"attlens sweep: {text}", file=self.stream, flush=True)

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._live is not None and (force or now - self._last > 0.25):
            self._last = now
            self._live.update(self._render())

    # ------------------------------------------------------------------ drawing
    def _render(self):
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        t = Table.grid(padding=(0, 2))
        now = time.monotonic()
        for name, cur in self.slots.items():
            if cur is None:
                t.add_row(Text(name, style="bold"), Text("idle", style="dim"))
            else:
                t.add_row(Text(name, style="bold"), Text(f"{cur[0]}  {now - cur[1]:.0f} s"))
        c = self.counts
        finished = c["done"] + c["failed"]
        bar = Table.grid(padding=(0, 1))
        bar.add_row(ProgressBar(total=max(self.total, 1), completed=finished, width=40),
                    Text(f"{finished}/{self.total}  done {c['done']}  failed {c['failed']}  analyzing {c['analyzing']}"))
        outer = Table.grid()
        outer.add_row(t)
        outer.add_row(bar)
        return outer
