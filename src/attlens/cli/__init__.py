"""Command line: parse arguments, call one function, render.

The commands live in one module per group (``analysis_cmds``: one capture;
``report_cmds``: reports and the demo; ``compare_cmds``: diff and check;
``capture_cmds``: rocprofv3 runs and their outputs; ``query_cmds``: asm,
waits, occupancy, captures; ``agent_cmds``: the MCP server and the agent
skill; ``sweep_cmds``: sweeps over many kernels and GPUs; ``meta_cmds``: the
JSON schemas). Each group's ``register(sub)`` adds its subparsers with
``set_defaults(func=...)``; this module only assembles them and turns errors
into exit codes.

Only argparse is imported at start-up; everything else is imported inside the
command that needs it, so ``attlens --help`` stays instant.
"""

from __future__ import annotations

import argparse
import os
import sys

from attlens import __version__
from attlens.cli import agent_cmds, analysis_cmds, cache_cmds, capture_cmds, compare_cmds, meta_cmds, query_cmds, report_cmds, sweep_cmds
from attlens.cli.common import EPILOG, configure_cache, print_error, say

GROUPS = (analysis_cmds, query_cmds, report_cmds, compare_cmds, capture_cmds, sweep_cmds, agent_cmds, cache_cmds, meta_cmds)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attlens",
        description="Turn AMD GPU Advanced Thread Trace captures (rocprofv3 --att) into answers.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"attlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for group in GROUPS:
        group.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" is the program to run (profile, capture, pmc).
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    args = parser.parse_args(argv)
    args.cmd = cmd
    if not args.command:
        parser.print_help()
        return 2
    from attlens.errors import EXIT_INTERNAL, AttlensError

    try:
        configure_cache(args)
        return args.func(args)
    except AttlensError as exc:
        print_error(exc, getattr(args, "json", False))
        return exc.exit_code
    except KeyboardInterrupt:
        print("attlens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # never show a traceback to users
        if os.environ.get("ATTLENS_DEBUG"):
            raise
        say(f"attlens: internal error: {type(exc).__name__}: {exc} (please report it; set ATTLENS_DEBUG=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
