"""docs/commands.md is the argparse definitions: every command and option is
documented there (generated option tables), and no command line written in
the docs names an option the command does not have."""

from __future__ import annotations

import re
import shlex

import pytest

from attlens.cli.docs import BLOCK, commands, render
from conftest import REPO

DOC = REPO / "docs" / "commands.md"


def test_option_tables_are_the_parser():
    committed = DOC.read_text(encoding="utf-8")
    assert committed == render(committed), "docs/commands.md is stale: python -m attlens.cli.docs --write docs/commands.md"


def test_every_command_has_its_table_once():
    blocks = [m.group("cmd") for m in BLOCK.finditer(DOC.read_text(encoding="utf-8"))]
    assert sorted(blocks) == sorted(commands()), "a command without an options block, or a block of a command that does not exist"


def test_every_option_has_help():
    for name, p in commands().items():
        for a in p._actions:
            if a.dest != "help" and not getattr(a, "help", None) and a.__class__.__name__ != "_SubParsersAction":
                pytest.fail(f"attlens {name} {a.option_strings or a.dest}: no help text")


def _command_lines(text: str):
    """``attlens ...`` command lines in code spans and code blocks."""
    for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in m.group(1).splitlines():
            line = line.split(" #")[0].strip().lstrip("$ ")
            if line.startswith("attlens "):
                yield line
    for m in re.finditer(r"`(attlens [^`\n]+)`", text):
        yield m.group(1)


DOCS = [DOC, REPO / "README.md", REPO / "skills/attlens/SKILL.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_documented_command_lines_name_real_options(path):
    cmds = commands()
    bad = []
    for line in _command_lines(path.read_text(encoding="utf-8")):
        try:
            words = shlex.split(line.replace("…", "").replace("|", " "))
        except ValueError:
            words = line.split()
        words = words[1:]
        if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
            continue  # "attlens [--version] ...", "attlens <version>": not a command line
        name = " ".join(words[:2]) if " ".join(words[:2]) in cmds else words[0]
        parser = cmds.get(name)
        if parser is None:
            if words[0] in {n.split()[0] for n in cmds}:
                continue  # "attlens sweep init|run|status|report": a group heading
            bad.append(f"{line!r}: no command {words[0]!r}")
            continue
        known = {o for a in parser._actions for o in a.option_strings}
        for w in words[len(name.split()):]:
            if w == "--":
                break  # the program and its arguments follow
            opt = w.split("=")[0]
            if opt.startswith("--") and opt.strip("-[]") and opt.rstrip("]") not in known and opt.rstrip(",.;:)") not in known:
                bad.append(f"{line!r}: attlens {name} has no option {opt}")
    assert not bad, "\n".join(bad)
