"""docs/commands.md kept equal to the argparse definitions.

Every command (and sub-command: ``sweep run``, ``cache info``, ...) has a
block in docs/commands.md::

    <!-- options: sweep run -->
    ...the table of its options, generated here...
    <!-- /options -->

``python -m attlens.cli.docs --write docs/commands.md`` regenerates every
block from the parser (the prose around them is written by hand); a test
holds the committed file equal to that output, checks that every command has
a block, and that every ``attlens CMD --option`` written anywhere in the file
names an option CMD has.
"""

from __future__ import annotations

import argparse
import re
import sys

BLOCK = re.compile(r"<!-- options: (?P<cmd>[a-z ]+) -->\n.*?<!-- /options -->", re.S)


def commands(parser: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    """Every leaf command by its name (``analyze``, ``sweep run``, ...)."""
    from attlens.cli import build_parser

    out: dict[str, argparse.ArgumentParser] = {}

    def walk(p, prefix):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[prefix.strip()] = p
            return
        for name, sp in subs[0].choices.items():
            walk(sp, f"{prefix} {name}")

    walk(parser or build_parser(), "")
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def option_table(p: argparse.ArgumentParser) -> str:
    """The Markdown table of a command's arguments, in the parser's order."""
    rows = ["| argument | meaning |", "|---|---|"]
    for a in p._actions:
        if a.dest == "help" or isinstance(a, argparse._SubParsersAction):
            continue
        if a.option_strings:
            value = "" if a.nargs == 0 else " " + (a.metavar or a.dest.upper() if not isinstance(a.metavar, tuple) else " ".join(a.metavar))
            if a.choices and not a.metavar:
                value = " {" + ",".join(map(str, a.choices)) + "}"
            names = ", ".join(f"`{o}{value}`" for o in a.option_strings)
        else:
            names = f"`{a.metavar or a.dest.upper()}`" + (" …" if a.nargs in ("*", "+") else "") + (" (optional)" if a.nargs in ("?", "*") else "")
        meaning = (a.help or "").replace("%%", "%")
        if a.required and a.option_strings:
            meaning += " (required)"
        rows.append(f"| {names} | {_cell(meaning)} |")
    return "\n".join(rows)


def render(text: str) -> str:
    """``text`` with every options block regenerated (unknown command names kept as found)."""
    cmds = commands()

    def fill(m):
        p = cmds.get(m.group("cmd"))
        if p is None:
            return m.group(0)
        return f"<!-- options: {m.group('cmd')} -->\n{option_table(p)}\n<!-- /options -->"

    return BLOCK.sub(fill, text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m attlens.cli.docs", description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="PATH", help="regenerate the blocks of this file in place (default: print docs/commands.md's)")
    ap.add_argument("path", nargs="?", default="docs/commands.md")
    args = ap.parse_args(argv)
    path = args.write or args.path
    with open(path, encoding="utf-8") as fh:
        new = render(fh.read())
    if args.write:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    else:
        sys.stdout.write(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
