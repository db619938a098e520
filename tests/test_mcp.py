"""`attlens mcp` as an agent's client sees it: one server subprocess for the
module, driven with the official SDK's stdio client. Every tool's result must
equal the CLI's `--json` for the same question (both parsed); paths outside
the roots are refused; a broken capture is a tool error and the server keeps
serving; a re-captured directory is not served stale."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from attlens.cli import main
from conftest import REPO, require_shared

if os.environ.get("CI", "").lower() not in ("1", "true", "yes"):
    pytest.importorskip("mcp", reason="the mcp SDK (pip install 'attlens[mcp]') is not installed")

LAYERNORM = "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
FLASH_BEFORE = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
FLASH_AFTER = "traces/flash_attn_func/small/ui_output_agent_58550_dispatch_44_after_loc_fix"


def questions(shared: Path, tmp: Path) -> list[tuple[str, str, dict, list | None]]:
    """(key, tool, arguments, CLI arguments of the same question or None)."""
    lay, fb, fa = (str((shared / p).resolve()) for p in (LAYERNORM, FLASH_BEFORE, FLASH_AFTER))
    folder = str((shared / "traces/layernorm").resolve())
    return [
        ("list_captures", "list_captures", {"path": folder}, ["captures", folder]),
        ("summary", "summary", {"capture": lay}, ["analyze", lay]),
        ("hotspots_opcode", "hotspots", {"capture": lay, "by": "opcode", "sort": "latency", "top": 5}, ["analyze", lay, "--by", "opcode", "--sort", "latency", "--topk", "5"]),
        ("hotspots_line", "hotspots", {"capture": lay, "by": "line", "sort": "exposed", "top": 3}, ["analyze", lay, "--by", "line", "--sort", "exposed", "--topk", "3"]),
        ("hotspots_instr", "hotspots", {"capture": lay, "sort": "idle", "top": 0}, ["analyze", lay, "--by", "instruction", "--sort", "idle", "--topk", "0"]),
        ("plan", "plan", {"capture": lay}, ["plan", lay]),
        ("asm", "asm", {"capture": lay, "pc": 392, "around": 4}, ["asm", lay, "--pc", "392", "--around", "4"]),
        ("deps_pc", "deps", {"capture": lay, "pc": 392}, ["deps", lay, "--pc", "392"]),
        ("deps_line", "deps", {"capture": lay, "line": "layernorm_kernel.py:151", "top": 0}, ["deps", lay, "--line", "layernorm_kernel.py:151", "--topk", "0"]),
        ("waits", "waits", {"capture": fb, "steady": True, "top": 5}, ["waits", fb, "--steady", "--topk", "5"]),
        ("waits_all", "waits", {"capture": lay}, ["waits", lay]),
        ("waves", "waves", {"capture": lay}, ["waves", lay, "--no-per-wave"]),
        ("waves_per_wave", "waves", {"capture": lay, "top": 3, "per_wave": True}, ["waves", lay, "--topk", "3"]),
        ("occupancy", "occupancy", {"capture": lay}, ["occupancy", lay]),
        ("diff", "diff", {"before": fb, "after": fa}, ["diff", fb, fa]),
        ("check", "check", {"capture": fa, "baseline": fb, "max_regression": 1.0}, ["check", fa, "--baseline", fb, "--max-regression", "1.0"]),
        ("kernels", "kernels", {"path": str((shared / "traces/layernorm/rocprofv3").resolve())}, ["kernels", str((shared / "traces/layernorm/rocprofv3").resolve())]),
        ("schema", "schema", {"name": "attlens.waits"}, None),
        # PC samples: the viewer's PC-sampling folder (a copy under a root)
        ("pc_sampling", "pc_sampling", {"path": str(tmp / "rcv"), "top": 5}, ["pcsampling", str(tmp / "rcv"), "--top", "5"]),
        ("summary_pcs", "summary", {"capture": str(tmp / "rcv"), "top": 3}, ["analyze", str(tmp / "rcv"), "--top", "3"]),
        # refusals and errors
        ("outside", "summary", {"capture": "/etc"}, None),
        ("dotdot", "summary", {"capture": str(tmp / ".." / "..")}, None),
        ("symlink_out", "summary", {"capture": str(tmp / "link-out")}, None),
        ("broken", "summary", {"capture": str(tmp / "broken")}, None),
        ("after_broken", "occupancy", {"capture": lay}, None),
        ("bad_pc", "asm", {"capture": lay, "pc": 0}, None),
        ("pc_and_line", "deps", {"capture": lay, "pc": 392, "line": "layernorm_kernel.py:151"}, None),
        ("several", "summary", {"capture": str((shared / "traces/flash_attn_func").resolve())}, None),
        ("unknown_schema", "schema", {"name": "nope"}, None),
        ("stale_1", "summary", {"capture": str(tmp / "copy")}, None),
        ("stale_2", "summary", {"capture": str(tmp / "copy")}, None),  # after the copy's filenames.json is rewritten
    ]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """Start `attlens mcp`, ask every question, and keep the answers."""
    import anyio
    from mcp import ClientSession, StdioServerParameters, stdio_client

    shared = require_shared()
    tmp = tmp_path_factory.mktemp("root").resolve()
    (tmp / "broken").mkdir()
    (tmp / "broken" / "filenames.json").write_text('{"wave_filenames": [1, 2')
    os.symlink("/", tmp / "link-out")
    shutil.copytree(shared / LAYERNORM, tmp / "copy")
    shutil.copytree(shared / "outside/rcv-pcsampling", tmp / "rcv")
    qs = questions(shared, tmp)
    env = {"PYTHONPATH": str(REPO / "src"), "ATTLENS_SHARED": str(shared)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "attlens", "mcp", "--root", str(shared / "traces"), "--root", str(tmp)], env=env)
    out: dict = {}

    async def run():
        async with stdio_client(params, errlog=open(os.devnull, "w")) as (r, w):
            async with ClientSession(r, w) as s:
                out["init"] = await s.initialize()
                out["tools"] = (await s.list_tools()).tools
                for key, tool, arguments, _cli in qs:
                    if key == "stale_2":
                        fn = tmp / "copy" / "filenames.json"
                        doc = json.loads(fn.read_text())
                        del doc["wave_filenames"]["0"]  # drop shader engine 0's waves
                        fn.write_text(json.dumps(doc))
                    out[key] = await s.call_tool(tool, arguments)

    # In a thread of its own: another test's event loop (Playwright's sync API) may still run in this one.
    errors: list = []

    def target():
        try:
            anyio.run(run)
        except BaseException as exc:  # noqa: BLE001 - re-raised below in the test's thread
            errors.append(exc)

    t = threading.Thread(target=target)
    t.start()
    t.join(timeout=300)
    assert not t.is_alive(), "the MCP session did not finish in 300 s"
    if errors:
        raise errors[0]
    return {"answers": out, "questions": {q[0]: q for q in qs}}


def cli_json(args: list[str], capsys) -> tuple[int, dict]:
    capsys.readouterr()
    rc = main(args + ["--json"])
    return rc, json.loads(capsys.readouterr().out)


def result_object(res) -> dict:
    """The tool's object; the text content and structuredContent must agree."""
    text = json.loads(res.content[0].text)
    assert res.structured_content == text
    return text


def test_initialize_and_list_tools(session):
    a = session["answers"]
    assert a["init"].server_info.name == "attlens"
    names = {t.name for t in a["tools"]}
    assert names >= {"list_captures", "summary", "hotspots", "plan", "asm", "deps", "waits", "waves", "occupancy", "diff", "check", "kernels", "schema",
                     "pc_sampling"}
    hot = next(t for t in a["tools"] if t.name == "hotspots")
    props = hot.input_schema["properties"]
    assert props["by"]["enum"] == ["instruction", "line", "opcode"]
    assert props["sort"]["enum"] == ["stall", "latency", "exposed", "idle"]
    assert hot.input_schema["required"] == ["capture"]


@pytest.mark.parametrize("key", ["list_captures", "summary", "hotspots_opcode", "hotspots_line", "hotspots_instr", "plan", "asm", "deps_pc",
                                 "deps_line", "waits", "waits_all", "waves", "waves_per_wave", "occupancy", "diff", "check", "kernels",
                                 "pc_sampling", "summary_pcs"])
def test_tool_equals_cli_json(session, key, capsys):
    _k, tool, _args, cli = session["questions"][key]
    res = session["answers"][key]
    assert not res.is_error, res.content[0].text
    got = result_object(res)
    rc, want = cli_json(cli, capsys)
    assert rc in (0, 20)  # check exits 20 when the gate fails; the tool reports passed=false
    assert got == want
    assert got["schema"].startswith("attlens.") and got["schema"] != "attlens.error"
    if key == "check":
        assert (rc == 0) is got["passed"]


def test_schema_tool_returns_the_shipped_file(session):
    got = result_object(session["answers"]["schema"])
    from attlens import schemas

    shipped = schemas.bundle("waits")
    assert got == shipped and got["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("key", ["outside", "dotdot", "symlink_out"])
def test_paths_outside_the_roots_are_refused(session, key):
    res = session["answers"][key]
    assert res.is_error
    err = result_object(res)
    assert err["schema"] == "attlens.error" and err["error"]["kind"] == "OutsideRoots" and err["error"]["exit_code"] == 2


@pytest.mark.parametrize("key,kind,code", [("broken", "CorruptCapture", 7), ("bad_pc", "UsageError", 2), ("pc_and_line", "UsageError", 2),
                                           ("several", "SeveralCaptures", 5), ("unknown_schema", "UsageError", 2)])
def test_errors_are_tool_errors_carrying_attlens_error(session, key, kind, code):
    res = session["answers"][key]
    assert res.is_error
    err = result_object(res)
    assert err["schema"] == "attlens.error"
    assert (err["error"]["kind"], err["error"]["exit_code"]) == (kind, code)
    if key == "several":
        assert len(err["error"]["candidates"]) == 4


def test_server_keeps_serving_after_an_error(session, capsys):
    res = session["answers"]["after_broken"]
    assert not res.is_error
    _k, _t, _a, _c = session["questions"]["after_broken"]
    lay = session["questions"]["occupancy"][3]
    assert result_object(res) == cli_json(lay, capsys)[1]


def test_a_recaptured_directory_is_not_served_stale(session):
    first = result_object(session["answers"]["stale_1"])
    second = result_object(session["answers"]["stale_2"])
    assert first["capture"]["waves"] == 16
    assert second["capture"]["waves"] == 12  # shader engine 0's four waves were dropped from filenames.json


def test_missing_sdk_is_a_clear_usage_error():
    code = "import sys; sys.modules['mcp'] = None; from attlens.cli import main; raise SystemExit(main(['mcp']))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert p.returncode == 2
    assert "pip install 'attlens[mcp]'" in p.stderr and "Traceback" not in p.stderr
