"""The command line as a user (or an agent) runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from attlens import __version__
from attlens.synth import default_kernel, write_capture
from conftest import require_shared


def run(*args, check_code=0, env=None):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in p.stderr + p.stdout
    if check_code is not None:
        assert p.returncode == check_code, p.stderr
    return p


def test_version():
    assert run("--version").stdout.strip() == f"attlens {__version__}"


def test_help_does_not_import_heavy_modules():
    code = "import sys, attlens.cli as c; c.build_parser().format_help(); print(sorted(m for m in ('numpy','orjson','rich') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_command_prints_help_and_usage_code():
    p = run(check_code=2)
    assert "usage: attlens" in p.stdout


def test_demo_ranks_the_planted_hotspot_first(tmp_path):
    p = run("demo", "--json", "--out", tmp_path)
    manifest = json.loads(p.stdout)
    assert manifest["schema"] == "attlens.demo" and manifest["schema_version"] == 1
    assert manifest["written"] == [{"path": manifest["capture"], "kind": "capture",
                                    "bytes": sum(f.stat().st_size for f in (tmp_path / "ui_output_agent_1_dispatch_7").rglob("*") if f.is_file())}]
    doc = manifest["analysis"]
    assert doc["schema"] == "attlens.analyze" and doc["schema_version"] == 1
    top = doc["hotspots"]["instructions_by_stall"][0]
    assert top["source"].endswith("toy_kernel.py:24")
    assert top["class"] == "wait_global"
    assert top["class_stall"] == {"wait_global": top["stall"]}
    assert doc["hotspots"]["lines_by_stall"][0]["source"].endswith("toy_kernel.py:24")
    assert doc["target"]["name"] == "gfx950"
    assert (tmp_path / "ui_output_agent_1_dispatch_7" / "code.json").is_file()


def test_demo_terminal_output(tmp_path):
    p = run("demo", "--out", tmp_path)
    assert "toy_kernel.py:24" in p.stdout
    assert "wait_global()" in p.stdout  # source snippet of the planted line


def test_analyze_detail_shows_source(tmp_path):
    cap = write_capture(tmp_path)
    p = run("analyze", cap, "--mode", "src", "--detail", "--context", "1", "--topk", "3")
    assert "> " in p.stdout and "wait_global()" in p.stdout
    assert "Top 3 source lines by stall" in p.stdout
    assert "instructions by stall" not in p.stdout
    p = run("analyze", cap, "--mode", "asm")
    assert "source lines by stall" not in p.stdout and "instructions by stall" in p.stdout


def test_topk_zero_returns_every_executed_instruction(tmp_path):
    cap = write_capture(tmp_path)
    doc = json.loads(run("analyze", cap, "--json", "--topk", "0").stdout)
    assert len(doc["hotspots"]["instructions_by_stall"]) == doc["instructions"]["executed"]
    stalls = [h["stall"] for h in doc["hotspots"]["instructions_by_stall"]]
    assert stalls == sorted(stalls, reverse=True)
    assert sum(stalls) == doc["totals"]["stall"]


def test_unknown_target_is_null_not_zero(tmp_path):
    k = default_kernel()
    k.target = None  # no rocprofv3 side files, and the toy ISA has no target-unique instruction
    cap = write_capture(tmp_path, k)
    doc = json.loads(run("analyze", cap, "--json").stdout)
    assert doc["target"]["name"] is None
    assert "no instruction in the listing is unique" in doc["target"]["reason"]
    assert doc["occupancy"]["available"] is False
    assert doc["occupancy"]["theoretical_waves_per_simd"] is None
    assert doc["resources"]["grid"] is None
    assert doc["occupancy"]["observed_max_waves_per_simd_traced_cu"] == 2


def test_analyze_json_on_real_capture_matches_code_json(tmp_path):
    shared = require_shared()
    cap = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    doc = json.loads(run("analyze", cap, "--json").stdout)
    rows = json.loads((cap / "code.json").read_text())["code"]
    top = max(rows[1:], key=lambda r: r[8])
    got = doc["hotspots"]["instructions_by_stall"][0]
    assert (got["pc"], got["isa"], got["stall"], got["hit"]) == (top[2], top[0], top[8], top[6])
    assert doc["totals"]["stall"] == sum(r[8] for r in rows)
    assert doc["totals"]["latency"] == sum(r[7] for r in rows)
    assert doc["capture"]["waves"] == 632
    assert doc["target"]["name"] == "gfx950"
    assert sum(c["stall"] for c in doc["stall_by_class"]) == doc["totals"]["stall"]


@pytest.mark.parametrize("mode", ["asm", "src", "both"])
def test_terminal_modes_on_real_capture(mode):
    shared = require_shared()
    cap = shared / "traces/pa/big/ui_output_agent_10886_dispatch_209"
    p = run("analyze", cap, "--mode", mode, "--topk", "5", "--rocprof-dir", shared / "traces/pa/rocprofv3")
    assert "Instruction stall by class" in p.stdout and "Occupancy" in p.stdout


def test_sort_by_latency(tmp_path):
    cap = write_capture(tmp_path)
    doc = json.loads(run("analyze", cap, "--json", "--topk", "1").stdout)
    top = doc["hotspots"]["instructions_by_latency"][0]
    p = run("analyze", cap, "--sort", "latency", "--topk", "1", "--mode", "asm")
    assert "Top 1 instructions by latency" in p.stdout
    assert f"{top['latency']:,}" in p.stdout


def test_demo_reuses_one_folder(tmp_path):
    """Without --out the demo writes to one folder per user ($XDG_CACHE_HOME/attlens-demo),
    the same one every run, instead of a new temporary folder each time."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    first = json.loads(run("demo", "--json", env=env).stdout)
    home = tmp_path / "xdg" / "attlens-demo"
    files = sorted(p.relative_to(home) for p in home.rglob("*"))
    second = json.loads(run("demo", "--json", env=env).stdout)
    assert first["capture"] == second["capture"] == str(home / "ui_output_agent_1_dispatch_7")
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == files  # the same files, written again
    assert [p.name for p in (tmp_path / "xdg").iterdir()] == ["attlens-demo"]
    assert first["analysis"]["totals"] == second["analysis"]["totals"]


def test_each_command_builds_only_its_groups_parser_with_the_same_subparser():
    """attlens.cli.COMMANDS names each command's group as the groups register
    them (in attlens.cli.GROUP_NAMES' order), and the parser a command line
    naming one command builds has that command's subparser exactly as the
    whole parser has it (help text, defaults, the function it calls)."""
    import argparse

    from attlens import cli

    registered = {}
    for group in cli.command_groups():
        p = argparse.ArgumentParser()
        group.register(p.add_subparsers(dest="command"))
        sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
        registered.update({name: group.__name__.rsplit(".", 1)[1] for name in sub.choices})
    assert registered == cli.COMMANDS
    whole = cli.build_parser()
    subs = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert list(subs) == list(cli.COMMANDS)  # --help lists them in the groups' order
    for name in cli.COMMANDS:
        one = cli.build_parser(name)
        mine = next(a for a in one._actions if isinstance(a, argparse._SubParsersAction)).choices
        assert set(mine) == {c for c, g in cli.COMMANDS.items() if g == cli.COMMANDS[name]}
        assert mine[name].format_help() == subs[name].format_help(), name
        # functions and parsers are made afresh by each build: compared by name
        named = lambda d: {k: getattr(v, "__qualname__", None) or getattr(v, "prog", None) or v for k, v in d.items()}  # noqa: E731
        assert named(mine[name]._defaults) == named(subs[name]._defaults), name


def test_help_cites_nothing_a_pip_user_lacks():
    """--help of every command names no docs/ file (an installed attlens has
    none); the exit codes are listed, the schemas are one command away."""
    from attlens.cli import build_parser

    parser = build_parser()
    texts = [parser.format_help()]
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    for name, p in sub.choices.items():
        texts.append(p.format_help())
        for a in p._actions:
            if a.__class__.__name__ == "_SubParsersAction":
                texts += [q.format_help() for q in a.choices.values()]
    assert len(texts) > 20
    for t in texts:
        assert "docs/" not in t, t[:200]  # (report.md, FINDINGS.md, SKILL.md are files attlens writes or ships)
    assert "8 partial input" in sub.choices["analyze"].format_help() and "attlens schema NAME" in sub.choices["analyze"].format_help()


# --------------------------------------------------------------------------- every integer option is bounded (issue 23)

HUGE = str(2**64)


@pytest.mark.parametrize("argv", [
    ["analyze", "CAP", "--top", HUGE, "--json"], ["analyze", "CAP", "--context", HUGE], ["asm", "CAP", "--pc", "5", "--around", HUGE],
    ["asm", "CAP", "--pc", HUGE], ["deps", "CAP", "--pc", HUGE], ["waits", "CAP", "--top", HUGE, "--json"],
    ["waves", "CAP", "--top", HUGE], ["export", "CAP", "--max-waves", HUGE, "-o", "OUT"], ["export", "CAP", "--max-events", HUGE, "-o", "OUT"],
    ["diff", "CAP", "CAP", "--top", HUGE, "--json"], ["demo", "--top", HUGE, "-o", "OUT"],
    ["mcp", "--cache", HUGE], ["kernels", "CAP", "--top", HUGE], ["profile", "--iteration", HUGE, "--", "true"],
    ["capture", "--timeout", "1e300", "--", "true"], ["check", "CAP", "--baseline", "CAP", "--max-regression", "nan"],
])
def test_integer_options_past_their_bound_are_usage_errors(argv, tmp_path):
    """Row 9: --top, --around, --max-events (and every other count) of 2**64:
    exit 2 with one line naming the option (they reached the JSON writer and
    ended in exit 1); nothing is read or written."""
    from clirun import assert_clean, run_main

    shared = require_shared()
    cap = shared / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    args = [str(cap) if a == "CAP" else str(tmp_path / "out.x") if a == "OUT" else a for a in argv]
    o = run_main(*args)
    assert_clean(o)
    assert o.code == 2, o.describe()
    opt = next(a for a in argv if a.startswith("--") and a not in ("--json", "--"))
    assert opt in o.err and ("out of range" in o.err or "must be <=" in o.err or "is not a finite" in o.err), o.describe()
    assert not (tmp_path / "out.x").exists()


def test_integer_options_at_their_bound_are_taken():
    """The twin: the largest accepted value works (every row)."""
    from clirun import run_main

    shared = require_shared()
    cap = shared / "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
    big, every = run_main("waits", cap, "--top", "1000000000", "--json"), run_main("waits", cap, "--top", "0", "--json")
    assert big.code == every.code == 0 and big.json()["sites"] == every.json()["sites"] and big.json()["topk"] == 1000000000


def test_a_command_collects_cycles_rarely_and_gives_the_threshold_back():
    """attlens.cli.main runs a command with the cyclic collector's young
    threshold at COMMAND_GC_YOUNG (its containers live until it ends and
    form no cycles) and leaves the caller's threshold as it was."""
    import gc

    from attlens import cli

    seen = []
    before = gc.get_threshold()
    real = cli._main
    try:
        cli._main = lambda argv: seen.append(gc.get_threshold()) or real(argv)
        assert cli.main(["schema"]) == 0
    finally:
        cli._main = real
    assert seen == [(cli.COMMAND_GC_YOUNG, *before[1:])] and gc.get_threshold() == before


# --------------------------------------------------------------------------- the end of the process


def _buffered_env() -> dict:
    """The environment with Python's output buffered as usual (not -u: the buffer is what the exit flushes)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def _run_code(code: str, *args):
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, timeout=120,
                          env=_buffered_env())


def test_the_command_ends_without_the_teardown_but_runs_exit_handlers_and_flushes():
    """run() ends the process once the exit handlers ran and the output is
    flushed (a partial line still in the buffer included), with the command's
    code, skipping the interpreter's teardown. Into a reader that went away,
    the flush fails and the code stands (Python's own exit would end with
    120, an undocumented code)."""
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
            "sys.stdout.write('buffered, no newline')\n"
            "sys.argv = ['attlens', 'analyze', '/nonexistent/capture']\n"
            "from attlens.__main__ import run\n"
            "run()\n"
            "print('after run', file=sys.stderr)\n")
    p = _run_code(code)
    assert p.returncode == 3  # the command's code (input not found)
    assert p.stdout == "buffered, no newline"
    assert "handler ran" in p.stderr and "no such file or directory" in p.stderr and "after run" not in p.stderr

    def into_a_closed_reader(program: str) -> tuple[int, str]:
        child = subprocess.Popen([sys.executable, "-c", program], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=_buffered_env())
        child.stdout.close()  # before the child writes: its flush at the end fails
        err = child.stderr.read()
        return child.wait(timeout=120), err

    assert into_a_closed_reader(code)[0] == 3
    plain = into_a_closed_reader(code.replace("run()\n", "from attlens.__main__ import entry\nraise SystemExit(entry())\n"))
    assert plain[0] == 120 and "BrokenPipeError" in plain[1]  # the contrast: Python's own exit


def test_the_command_with_a_thread_still_running_ends_as_python_does():
    """A thread that outlives the command (an engine's, a server's) is waited
    for, as Python's own exit does."""
    code = ("import sys, threading, time\n"
            "def late():\n"
            "    time.sleep(0.3)\n"
            "    print('thread done', flush=True)\n"
            "threading.Thread(target=late).start()\n"
            "sys.argv = ['attlens', 'analyze', '/nonexistent/capture']\n"
            "from attlens.__main__ import run\n"
            "run()\n")
    p = _run_code(code)
    assert p.returncode == 3 and p.stdout == "thread done\n"


def test_only_a_command_that_read_captures_ends_without_the_teardown(capsys):
    """Sweeps, the server and captures keep connections, threads and engines:
    they end as Python does; analyze, plan, report and the like may not."""
    from attlens.cli import ended_reading_captures, main

    assert main(["analyze", "/nonexistent/capture"]) == 3 and ended_reading_captures()
    assert main(["--version"]) == 0 and not ended_reading_captures()
    assert main(["sweep", "status", "/nonexistent/sweep"]) != 0 and not ended_reading_captures()


def test_a_capture_answer_through_a_pipe_is_whole(shared):
    """The JSON of a capture, written by ``python -m attlens`` into a pipe, is
    complete (flushed before the process ends) and the one ``main`` gives."""
    from clirun import run_main

    cap = shared / "traces/vec_add/big/ui_output_agent_14705_dispatch_25"
    p = run("analyze", cap, "--json", "--no-cache")
    assert json.loads(p.stdout) == json.loads(run_main("analyze", cap, "--json", "--no-cache").out)
