"""Command line: parse arguments, call one function, render.

The commands live in one module per group (``analysis_cmds``: one capture;
``whatif_cmds``: the what-if replay; ``report_cmds``: reports and the demo; ``compare_cmds``: diff and check;
``capture_cmds``: rocprofv3 runs and their outputs; ``query_cmds``: asm,
waits, occupancy, captures; ``agent_cmds``: the MCP server and the agent
skill; ``sweep_cmds``: sweeps over many kernels and GPUs; ``meta_cmds``: the
JSON schemas). Each group's ``register(sub)`` adds its subparsers with
``set_defaults(func=...)``; this module only assembles them and turns errors
into exit codes.

Only argparse is imported at start-up, and only the named command's group
is imported and built (:data:`COMMANDS`; all of them for ``--help``, ``--version``
or a name that is none); everything else is imported inside the command that
needs it, so ``attlens --help`` stays instant.
"""

from __future__ import annotations

import argparse
import gc
import os
import signal
import sys

from attlens import __version__
from attlens.cli.common import EPILOG, configure_cache, say
from attlens.interrupts import deferred  # the handler's: no import while a Ctrl-C is handled

# The command groups (modules of attlens.cli, each with its register(sub)) in
# the order `attlens --help` lists them, and each command's group: a command
# line naming a command builds only its group's parser (importing and building
# all ten took 10-20 ms of every command's start-up). tests/test_cli.py checks
# the table against what each group registers.
GROUP_NAMES = ("analysis_cmds", "whatif_cmds", "query_cmds", "report_cmds", "compare_cmds", "capture_cmds", "sweep_cmds",
               "agent_cmds", "cache_cmds", "meta_cmds")
COMMANDS = {
    "analyze": "analysis_cmds", "plan": "analysis_cmds", "rules": "analysis_cmds", "waves": "analysis_cmds",
    "deps": "analysis_cmds", "export": "analysis_cmds", "whatif": "whatif_cmds", "asm": "query_cmds",
    "waits": "query_cmds", "occupancy": "query_cmds", "pcsampling": "query_cmds", "captures": "query_cmds",
    "report": "report_cmds", "demo": "report_cmds", "diff": "compare_cmds", "check": "compare_cmds",
    "profile": "capture_cmds", "capture": "capture_cmds", "kernels": "capture_cmds", "pmc": "capture_cmds",
    "sweep": "sweep_cmds", "mcp": "agent_cmds", "skill": "agent_cmds", "cache": "cache_cmds", "schema": "meta_cmds",
}


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors also as an ``attlens.error`` object on
    stdout when ``--json`` was asked for (scripts read stdout only)."""

    json_errors = False  # set by main() for this invocation

    def error(self, message: str):
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        if _Parser.json_errors:
            from attlens.cli.common import emit_json
            from attlens.errors import UsageError

            emit_json(UsageError(f"{self.prog}: {message}", hint=f"{self.prog} --help").to_dict())
        raise SystemExit(2)


def command_groups(names=GROUP_NAMES) -> list:
    """The command group modules named (all by default), imported."""
    import importlib

    return [importlib.import_module(f"attlens.cli.{name}") for name in names]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser: every command's, or with ``command`` (a key
    of :data:`COMMANDS`) only its group's (the same subparsers)."""
    parser = _Parser(
        prog="attlens",
        description="Turn AMD GPU Advanced Thread Trace captures (rocprofv3 --att) into answers.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"attlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in command_groups((COMMANDS[command],) if command in COMMANDS else GROUP_NAMES):
        group.register(sub)
    return parser


def _safe_text_streams() -> None:
    # A path that is not valid UTF-8 arrives as surrogate escapes; printing it
    # must show \xNN, not raise UnicodeEncodeError in the middle of a table.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


class _Interrupt:
    """SIGINT raises KeyboardInterrupt as usual, and is remembered: an
    exception that a Ctrl-C caused indirectly (NumPy turns an interrupted
    import into an ImportError) is reported as the interrupt, not a bug."""

    seen = False

    @classmethod
    def handler(cls, signum, frame):
        cls.seen = True
        if not deferred(frame):
            raise KeyboardInterrupt

    @classmethod
    def install(cls):
        cls.seen = False
        try:
            return signal.signal(signal.SIGINT, cls.handler)
        except ValueError:  # not the main thread: leave signals alone
            return None


def _interrupted() -> int:
    print("attlens: interrupted", file=sys.stderr)
    return 130


# The cyclic collector's young-generation threshold in a command (Python's is
# 700 allocations). A command makes its containers in large batches (JSON
# documents, per-wave lists, result rows) that live until it ends and form no
# cycles; with 700 the collector ran 62 times in a first softmax `analyze`
# (15-20 ms in the parent) and 598 times in a x30 `report` (0.26 s, four full
# passes over every object). Cycles are still collected, every 100,000
# allocations. Commands only: the Python API leaves the caller's setting alone.
COMMAND_GC_YOUNG = 100_000


# Whether the command line's command read captures (analyze, plan, report, ...): those write their
# files in with-blocks and keep no thread, server or connection open, so their process may end
# without Python's teardown (attlens.__main__.run); the others (sweeps, the server, captures) end as usual.
_LAST_COMMAND = {"reads_captures": False}


def ended_reading_captures() -> bool:
    """The last command :func:`main` ran read captures (see ``_LAST_COMMAND``)."""
    return _LAST_COMMAND["reads_captures"]


def main(argv: list[str] | None = None) -> int:
    previous = _Interrupt.install()
    threshold = gc.get_threshold()
    try:
        gc.set_threshold(COMMAND_GC_YOUNG, *threshold[1:])
        return _main(argv)
    except KeyboardInterrupt:  # while parsing or importing, before a command runs
        return _interrupted()
    finally:
        gc.set_threshold(*threshold)  # a caller in Python (a test, a script) keeps its own
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _main(argv: list[str] | None) -> int:
    _LAST_COMMAND["reads_captures"] = False
    _safe_text_streams()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)  # a command's own group, else all (--help, --version, a typo)
    # Everything after "--" is the program to run (profile, capture, pmc).
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    _Parser.json_errors = "--json" in argv
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error (already printed)
        return exc.code if isinstance(exc.code, int) else 2
    args.cmd = cmd
    if not args.command:
        parser.print_help()
        return 2
    from attlens.cli import common
    from attlens.errors import AttlensError, InternalError

    as_json = bool(getattr(args, "json", False))
    if as_json:
        common.begin_json_mode()
    try:
        configure_cache(args)
        if getattr(args, "key_scope", False):  # a command that reads captures
            from attlens.cache import behind
            from attlens.cache.keys import command_scope

            common.arrange_numpy_import()

            _LAST_COMMAND["reads_captures"] = True
            with command_scope(), behind.scope():
                return args.func(args)
        return args.func(args)
    except AttlensError as exc:
        from attlens.errors import SeveralCaptures

        if isinstance(exc, SeveralCaptures) and exc.hint is None and hasattr(args, "all"):
            exc.hint = "or use --all for every one"  # the command line's own way; the API and the MCP tools have theirs
        common.print_error(exc, as_json)
        return exc.exit_code
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # never show a traceback to users
        if _Interrupt.seen:
            return _interrupted()
        if os.environ.get("ATTLENS_DEBUG"):
            raise
        err = InternalError(f"internal error: {type(exc).__name__}: {exc}", hint="please report it; set ATTLENS_DEBUG=1 for the traceback")
        say(f"attlens: {err.message} ({err.hint})")
        if as_json and not common.json_emitted():
            common.emit_json(err.to_dict())
        return err.exit_code
    finally:
        if as_json:
            common.end_json_mode()


if __name__ == "__main__":
    raise SystemExit(main())
