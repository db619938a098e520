"""The agent skill (skills/attlens/SKILL.md) must be accurate to the CLI:
every `attlens ...` command it shows is run against the shared captures
(placeholders mapped to real paths; the capture commands against the fake
rocprofv3) and must exit 0, or the code the skill writes beside it
(`# exit N`)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from attlens.cli import build_parser, main
from conftest import REPO, require_shared

SKILL = REPO / "skills" / "attlens" / "SKILL.md"
FAKE = REPO / "tests" / "fake_rocprofv3"


def shown_commands(text: str) -> tuple[list[str], list[str]]:
    """(command lines of fenced blocks, inline `attlens ...` spans outside them)."""
    fenced, inline, outside = [], [], []
    in_block = False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            if line.strip().startswith("attlens "):
                fenced.append(line.strip())
        else:
            outside.append(line)
    inline = re.findall(r"`(attlens [^`]+)`", "\n".join(outside))
    return fenced, inline


def test_skill_front_matter_and_sections():
    text = SKILL.read_text()
    head = text.split("---")[1]
    assert re.search(r"^name: attlens$", head, re.M) and re.search(r"^description: .{80,}", head, re.M)
    for needle in ("Empty shells", "Warm JIT caches", "Location collapse", "Grid-limited", "falsifier", "Claude Desktop",
                   "Cursor", "VS Code", "claude mcp add", "attlens mcp --root"):
        assert needle in text, needle


def test_attlens_skill_prints_the_shipped_file(capsys):
    assert main(["skill"]) == 0
    assert capsys.readouterr().out == SKILL.read_text()
    assert main(["skill", "--path"]) == 0
    assert open(capsys.readouterr().out.strip()).read() == SKILL.read_text()


@pytest.fixture()
def world(tmp_path, monkeypatch):
    """Placeholders -> real paths, and the fake rocprofv3 on PATH for the capture commands."""
    shared = require_shared().resolve()
    t = shared / "traces"
    rocm = tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "librocprof-trace-decoder.so").write_bytes(b"")
    vec = t / "vec_add"
    scen = {"version": "1.1.0", "discovery_dir": str(vec / "rocprofv3"), "discovery_prefix": "discover_",
            "captures": [str(vec / "big/ui_output_agent_14705_dispatch_25")], "results_json": str(vec / "rocprofv3/big_results.json"),
            "agent_info": str(vec / "rocprofv3/big_agent_info.csv"), "shells": 2}
    (tmp_path / "scenario.json").write_text(json.dumps(scen))
    (tmp_path / "app.py").write_text("pass\n")
    monkeypatch.setenv("PATH", f"{FAKE}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ROCM_PATH", str(rocm))
    monkeypatch.setenv("FAKE_ROCPROF_SCENARIO", str(tmp_path / "scenario.json"))
    monkeypatch.delenv("ROCPROF_ATT_LIBRARY_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    return {
        "<capture>": str(t / "layernorm/big/ui_output_agent_22257_dispatch_23"),
        "<before>": str(t / "flash_attn_func/small/ui_output_agent_32235_dispatch_44"),
        "<after>": str(t / "flash_attn_func/small/ui_output_agent_58550_dispatch_44_after_loc_fix"),
        "<folder>": str(t / "flash_attn_func"),
        "<rocprof-outputs>": str(vec / "rocprofv3"),
        "<out>": str(tmp_path / "out"),
        "<pc>": "392",
        "<file:line>": "layernorm_kernel.py:151",
        "<kernel>": "vecAddKernel_0",
        "<rule>": "smem-wait",  # a finding of layernorm's plan that the replay expresses
    }


def expand(cmd: str, world: dict) -> tuple[list[str], int]:
    code = 0
    m = re.search(r"#\s*exit (\d+)", cmd)
    if m:
        code = int(m.group(1))
    cmd = cmd.split("#")[0]
    args = shlex.split(cmd)[1:]
    out = []
    for a in args:
        for k, v in world.items():
            a = a.replace(k, v)
        assert "<" not in a, f"unmapped placeholder in {cmd!r}"
        out.append(a)
    return out, code


def test_every_command_the_skill_shows_runs(world, capsys):
    fenced, inline = shown_commands(SKILL.read_text())
    assert len(fenced) >= 20
    subcommands = set(build_parser()._subparsers._group_actions[0].choices)
    full = list(dict.fromkeys(fenced + [c for c in inline if len(c.split()) > 2]))
    bare = [c for c in inline if len(c.split()) == 2]
    for c in bare:  # a mention of a command by name: it must exist
        assert c.split()[1] in subcommands, c
    ran = set()
    for cmd in full:
        args, want = expand(cmd, world)
        assert args[0] in subcommands, cmd
        ran.add(args[0])
        if args[0] == "mcp":  # a server: it starts, and ends when its client (here: no stdin) goes away
            p = subprocess.run([sys.executable, "-m", "attlens", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                               env={**os.environ, "PYTHONPATH": str(REPO / "src")})
            assert p.returncode == want, (cmd, p.stderr)
            continue
        capsys.readouterr()
        rc = main(args)
        out = capsys.readouterr()
        assert rc == want, (cmd, out.err[-2000:])
        assert "Traceback" not in out.out + out.err
    # the workflow really is covered end to end
    assert ran >= {"profile", "capture", "kernels", "captures", "analyze", "plan", "asm", "deps", "waits", "waves", "occupancy", "diff", "check", "mcp", "skill"}
