"""Commands for AI agents: the MCP server and the agent skill (docs/agents.md)."""

from __future__ import annotations

from attlens.cli.common import CACHED_CAPTURES, EPILOG


def register(sub) -> None:
    p = sub.add_parser("mcp", help="serve attlens to AI agents: a Model Context Protocol server on stdio (needs the mcp extra)", epilog=EPILOG)
    p.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="a folder the tools may read (repeatable; default: the current directory). Paths outside every root are refused")
    p.add_argument("--cache", type=CACHED_CAPTURES, default=4, metavar="N", help="analyzed captures kept in memory (default 4, at most 1024; least recently used out)")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("skill", help="print the attlens agent skill (SKILL.md): workflow, commands, traps, MCP setup", epilog=EPILOG)
    p.add_argument("--path", action="store_true", help="print where the installed SKILL.md is instead of its text")
    p.set_defaults(func=cmd_skill)


def cmd_mcp(args) -> int:
    from attlens.errors import UsageError

    if args.cache < 1:
        raise UsageError("--cache must be at least 1")
    from attlens.serve.server import serve

    serve(args.root, cache_size=args.cache)
    return 0


def skill_file():
    """The SKILL.md shipped in the package (``skills/attlens/SKILL.md`` of the repository)."""
    from importlib.resources import files

    return files("attlens") / "skill" / "SKILL.md"


def cmd_skill(args) -> int:
    import sys

    f = skill_file()
    if args.path:
        print(f)
    else:
        sys.stdout.write(f.read_text(encoding="utf-8"))
    return 0
