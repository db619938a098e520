"""What every command group shares: common options, loading captures for a
command, exit codes from results, writing outputs, printing errors.

Only argparse-level code lives at module level; everything heavy is imported
inside the functions so ``attlens --help`` stays instant.
"""

from __future__ import annotations

import argparse
import sys

EPILOG = "Exit codes: docs/exit-codes.md. JSON schema: docs/json-schema.md."


def add_capture_args(p: argparse.ArgumentParser) -> None:
    """The options of every command that reads one capture (or a folder of them)."""
    p.add_argument("path", help="a ui_output_agent_*_dispatch_* directory, or a folder holding captures")
    p.add_argument("--all", action="store_true", help="analyze every capture found under PATH")
    p.add_argument("--rocprof-dir", metavar="DIR", help="rocprofv3 outputs of the same run (agent_info.csv, kernel_trace.csv, results.json)")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/json-schema.md) instead of tables")
    add_cache_args(p)


def add_cache_args(p: argparse.ArgumentParser) -> None:
    """--cache-dir / --no-cache of every command that reads captures (docs/cache.md)."""
    p.add_argument("--cache-dir", metavar="DIR", help="where capture digests are kept (default $XDG_CACHE_HOME/attlens)")
    p.add_argument("--no-cache", action="store_true", help="read the capture afresh; neither use nor write its digest")


def configure_cache(args) -> None:
    """Apply --cache-dir / --no-cache to every load of this command."""
    from attlens.cache import configure

    configure(getattr(args, "cache_dir", None), enabled=not getattr(args, "no_cache", False))


def progress(args):
    """The progress callback of a command: a transient line on stderr when it
    is a terminal (and colour is allowed), nothing otherwise
    (:func:`attlens.report.console.progress`)."""
    from attlens.report.console import progress as _progress

    return _progress(getattr(args, "no_color", False))


def load_analyzed(args, dirs, exposed: bool = True) -> list:
    """Load and analyze each capture directory, showing progress."""
    from attlens.analysis.analyze import analyze
    from attlens.model.loader import load

    out = []
    with progress(args) as step:
        for d in dirs:
            dispatch = load(d, rocprof_dir=getattr(args, "rocprof_dir", None), progress=step)
            step(f"analyzing {d.name}")
            out.append(analyze(dispatch, exposed=exposed))
    return out


def one_capture(args):
    """Load and analyze (without the hidden-latency model) the capture(s) of ``args.path``."""
    from attlens.model.loader import resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=getattr(args, "all", False))
    return load_analyzed(args, dirs, exposed=False)


def exit_code(results) -> int:
    """0, or 8 when some input of any result was skipped."""
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    return EXIT_PARTIAL if any(r.dispatch.partial for r in results) else EXIT_OK


def write_atomic(path: str, text: str) -> None:
    from attlens.fsutil import write_atomic as _write

    _write(path, text)


def say(text: str, file=None) -> None:
    """Print a message (default: to stderr) with the control characters of
    any path or name in it made visible (:func:`attlens.report.controls.safe_text`)."""
    from attlens.report.controls import safe_text

    print(safe_text(str(text)), file=sys.stderr if file is None else file)


def emit(text: str) -> None:
    """Write a text rendering (Markdown, plain text) to stdout, control
    characters made visible, ending with a newline."""
    from attlens.report.controls import safe_text

    text = safe_text(text)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def print_error(exc, as_json: bool) -> None:
    """One line on stderr (plus the candidates of a folder with several
    captures); with ``--json`` also the ``attlens.error`` object on stdout."""
    from attlens.errors import SeveralCaptures

    msg = f"attlens: error: {exc.message}"
    if exc.hint:
        msg += f" (hint: {exc.hint})"
    say(msg)
    if isinstance(exc, SeveralCaptures) and not as_json:
        say("captures found:")
        for c in exc.candidates:
            waves = "?" if c.waves is None else c.waves
            instr = "?" if c.instructions is None else c.instructions
            say(f"  {c.path}  waves={waves} instructions={instr}" + (f"  ({c.error})" if c.error else ""))
    if as_json:
        from attlens.report.json_out import dumps, error_to_dict

        print(dumps(error_to_dict(exc)))
