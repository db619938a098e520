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
    pytest.importorskip("mcp", reason="the mcp SDK (pip install -e '.[mcp]') is not installed")

LAYERNORM = "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
FLASH_BEFORE = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
FLASH_AFTER = "traces/flash_attn_func/small/ui_output_agent_58550_dispatch_44_after_loc_fix"


def questions(shared: Path, tmp: Path) -> list[tuple[str, str, dict, list | None]]:
    """(key, tool, arguments, CLI arguments of the same question or None)."""
    lay, fb, fa = (str((shared / p).resolve()) for p in (LAYERNORM, FLASH_BEFORE, FLASH_AFTER))
    folder = str((shared / "traces/layernorm").resolve())
    return [
        ("list_captures", "list_captures", {"path": folder}, ["captures", folder]),
        ("summary", "summary", {"capture": lay}, ["analyze", lay, "--summary"]),
        ("summary_full", "summary", {"capture": lay, "top": 3, "detail": "full"}, None),
        ("asm_addr", "asm", {"capture": lay, "pc": "0x200c", "around": 1}, None),
        ("rules", "rules", {}, ["rules"]),
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
        # issue 20: the what-if replay (pc 6 is layernorm's longest s_waitcnt; its plan's first two findings, together)
        ("whatif_addr", "whatif", {"capture": lay, "hide_wait": ["0x1720"], "waves_per_simd": 2}, None),
        ("whatif_pc", "whatif", {"capture": lay, "hide_wait": [6], "waves_per_simd": 2}, ["whatif", lay, "--hide-wait", "6", "--waves-per-simd", "2"]),
        ("whatif_rules", "whatif", {"capture": lay, "apply": ["grid-starvation", "smem-wait"]}, ["whatif", lay, "--apply", "grid-starvation,smem-wait"]),
        ("whatif_calibration", "whatif", {"capture": lay}, ["whatif", lay]),
        ("whatif_unknown_rule", "whatif", {"capture": lay, "apply": ["no-such-rule"]}, None),
        ("whatif_not_a_wait", "whatif", {"capture": lay, "hide_wait": [7]}, None),
        ("whatif_bad_move", "whatif", {"capture": lay, "move": ["6"]}, None),
        ("whatif_huge", "whatif", {"capture": lay, "waves_per_simd": 2**64}, None),
        # PC samples: the viewer's PC-sampling folder (a copy under a root)
        ("pc_sampling", "pc_sampling", {"path": str(tmp / "rcv"), "top": 5}, ["pcsampling", str(tmp / "rcv"), "--top", "5"]),
        ("summary_pcs", "summary", {"capture": str(tmp / "rcv"), "top": 3}, ["analyze", str(tmp / "rcv"), "--summary", "--top", "3"]),
        # the rocprofv2 plugin records no stall cycles: null, never 0; ranked by latency (a copy under a root)
        ("summary_v2", "summary", {"capture": str(tmp / "v2"), "top": 3}, ["analyze", str(tmp / "v2"), "--summary", "--top", "3"]),
        ("hotspots_v2", "hotspots", {"capture": str(tmp / "v2"), "top": 3}, ["analyze", str(tmp / "v2"), "--by", "instruction", "--sort", "stall", "--topk", "3"]),
        ("waits_v2", "waits", {"capture": str(tmp / "v2")}, ["waits", str(tmp / "v2")]),
        ("deps_v2", "deps", {"capture": str(tmp / "v2")}, ["deps", str(tmp / "v2")]),
        ("waves_v2", "waves", {"capture": str(tmp / "v2"), "top": 3}, ["waves", str(tmp / "v2"), "--topk", "3", "--no-per-wave"]),
        ("diff_v2", "diff", {"before": lay, "after": str(tmp / "v2"), "force": True}, ["diff", lay, str(tmp / "v2"), "--force"]),
        ("check_v2", "check", {"capture": str(tmp / "v2"), "baseline": str(tmp / "v2"), "metric": "stall"}, None),
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
        # issue 23: a wave file rewritten in place, same size and mtime, under the running server
        ("inplace_1", "summary", {"capture": str(tmp / "copy2")}, None),
        ("inplace_same", "summary", {"capture": str(tmp / "copy2")}, None),  # the clean twin: nothing changed
        ("inplace_2", "summary", {"capture": str(tmp / "copy2")}, None),
        # issue 23: bounds and paths checked before use: a usage error, never an internal one
        ("top_huge", "summary", {"capture": lay, "top": 2**64}, None),
        ("around_huge", "asm", {"capture": lay, "pc": 392, "around": 2**70}, None),
        ("waves_huge", "waves", {"capture": lay, "top": 2**64}, None),
        ("deps_huge", "deps", {"capture": lay, "top": 2**64}, None),
        ("diff_huge", "diff", {"before": fb, "after": fa, "top": 2**64}, None),
        ("path_nul", "summary", {"capture": lay + "\x00x"}, None),
        ("path_long", "summary", {"capture": "/" + "a" * 5000}, None),
        ("path_long_name", "list_captures", {"path": str(tmp / ("n" * 300))}, None),
        ("after_bad_args", "occupancy", {"capture": lay}, None),
        # issue 23: a partly read capture: every tool's result carries analyze's warnings
        ("partial_summary", "summary", {"capture": str(tmp / "partial")}, None),
        ("partial_plan", "plan", {"capture": str(tmp / "partial")}, None),
        ("partial_deps", "deps", {"capture": str(tmp / "partial")}, None),
        ("partial_asm", "asm", {"capture": str(tmp / "partial"), "pc": 392}, None),
        ("partial_check", "check", {"capture": str(tmp / "partial"), "baseline": str(tmp / "copy2"), "max_regression": 1000.0}, None),
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
    shutil.copytree(shared / LAYERNORM, tmp / "copy2")
    shutil.copytree(shared / LAYERNORM, tmp / "partial")
    victim = sorted((tmp / "partial").glob("se*_wv*.json"))[0]
    victim.write_bytes(victim.read_bytes()[: victim.stat().st_size // 2])
    shutil.copytree(shared / "outside/rcv-pcsampling", tmp / "rcv")
    shutil.copytree(shared / "outside/rocprofv2-elementwise/vectorized_elementwise_kernel_v0_ui", tmp / "v2")
    qs = questions(shared, tmp)
    env = {"PYTHONPATH": str(REPO / "src"), "ATTLENS_SHARED": str(shared), "ATTLENS_CACHE_DIR": os.environ["ATTLENS_CACHE_DIR"]}
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
                    if key == "inplace_2":
                        rewrite_in_place(sorted((tmp / "copy2").glob("se*_wv*.json"))[0])
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


def rewrite_in_place(wave: Path) -> None:
    """Raise the first record's stall by changing one digit: same size, same
    mtime (restored), same inode."""
    st = wave.stat()
    data = bytearray(wave.read_bytes())
    i = data.index(b'"instructions":[[') + len(b'"instructions":[[')
    i = data.index(b",", data.index(b",", i) + 1) + 1  # the stall field
    assert chr(data[i]).isdigit()
    data[i] = ord("9") if data[i] != ord("9") else ord("8")
    with open(wave, "r+b") as f:
        f.write(bytes(data))
    os.utime(wave, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert wave.stat().st_size == st.st_size and wave.stat().st_mtime_ns == st.st_mtime_ns and wave.stat().st_ino == st.st_ino


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
                     "pc_sampling", "whatif"}
    hot = next(t for t in a["tools"] if t.name == "hotspots")
    props = hot.input_schema["properties"]
    assert props["by"]["enum"] == ["instruction", "line", "opcode"]
    assert props["sort"]["enum"] == ["stall", "latency", "exposed", "idle"]
    assert hot.input_schema["required"] == ["capture"]
    # every tool: read-only annotations and a compact outputSchema: the shipped schema's top-level keys, their types and
    # which are required (the full schemas made tools/list ~170 KB; they stay available through the schema tool)
    from attlens import schemas
    from attlens.serve.server import OUTPUT_SCHEMAS, output_schema

    assert names == set(OUTPUT_SCHEMAS) and "rules" in names
    for t in a["tools"]:
        ann = t.annotations
        assert ann.read_only_hint is True and ann.destructive_hint is False and ann.idempotent_hint is True and ann.open_world_hint is False, t.name
        assert t.output_schema["type"] == "object"
        assert t.output_schema == output_schema(t.name), t.name
        assert "$ref" not in json.dumps(t.output_schema) and "$defs" not in t.output_schema, t.name
        shipped_names = OUTPUT_SCHEMAS[t.name]
        if shipped_names is None:
            continue
        bodies = [t.output_schema] if isinstance(shipped_names, str) else t.output_schema["anyOf"]
        for body, shipped_name in zip(bodies, [shipped_names] if isinstance(shipped_names, str) else shipped_names):
            shipped = schemas.load(shipped_name)
            assert list(body["properties"]) == list(shipped["properties"]), t.name
            assert body.get("required") == shipped.get("required"), t.name
            assert body["properties"]["schema"] == {"const": f"attlens.{shipped_name}"}
    hot_out = hot.output_schema["properties"]
    # types resolved through the shared definitions: attlens_version is a $ref in the shipped schema
    assert hot_out["attlens_version"] == {"type": "string"} and hot_out["topk"] == {"type": ["integer", "null"]}
    assert hot_out["rows"] == {"type": "array"} and hot_out["sort"] == {"enum": ["stall", "latency", "exposed", "idle"]}
    summ_out = next(t for t in a["tools"] if t.name == "summary").output_schema
    assert [b["properties"]["schema"]["const"] for b in summ_out["anyOf"]] == ["attlens.summary", "attlens.pc_sampling"]
    summ = next(t for t in a["tools"] if t.name == "summary")
    assert summ.input_schema["properties"]["detail"]["enum"] == ["brief", "full"]


def test_tools_list_fits_an_agents_budget(session):
    """tools/list is sent once per session: under 25,000 bytes as JSON (it
    was ~170 KB with every tool's full schema as outputSchema)."""
    listed = [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in session["answers"]["tools"]]
    assert len(json.dumps(listed)) < 25_000


def test_every_result_validates_against_the_full_shipped_schema(session):
    """The compact outputSchema checks top-level keys only; the full shipped
    schema still holds for every successful answer (and attlens.error for errors)."""
    from attlens import schemas

    for key, res in session["answers"].items():
        if key in ("init", "tools", "schema"):
            continue
        schemas.validate(result_object(res))


def test_summary_fits_an_agents_budget(session):
    """~4k tokens at most (bytes / 4) with the default arguments, where the old
    summary (attlens.analyze) cost ~20k on softmax; one ranking of each kind,
    not three; detail='full' adds the attlens.analyze object."""
    from attlens import schemas

    res = session["answers"]["summary"]
    text = res.content[0].text
    assert len(text.encode()) / 4 <= 4000
    doc = json.loads(text)
    schemas.validate(doc)
    assert doc["schema"] == "attlens.summary" and doc["analysis"] is None and doc["verdict"]["sentence"]
    assert {"instructions", "lines"} <= set(doc) and not any(k.startswith("instructions_by") for k in doc)
    full = result_object(session["answers"]["summary_full"])
    schemas.validate(full)
    assert full["detail"] == "full" and full["analysis"]["schema"] == "attlens.analyze" and len(full["instructions"]) == 3
    assert full["analysis"]["hotspots"]["topk"] == 3


def test_rocprofv2_stall_is_null_through_mcp(session):
    """summary and hotspots on a rocprofv2 capture: stall null, never 0; the
    rows ranked by latency (Σ durations of the wave files), and said."""
    from attlens.analysis.hotspots import STALL_UNRECORDED_RANKING

    lat: dict[int, int] = {}
    cap = Path(session["questions"]["summary_v2"][2]["capture"])
    for f in cap.glob("se*_sm*_sl*_wv*.json"):
        for _t, _ty, _stall, dur, pc in json.loads(f.read_text())["wave"]["instructions"]:
            lat[pc] = lat.get(pc, 0) + dur
    order = sorted(lat, key=lambda pc: (-lat[pc], pc))[:3]
    sm = result_object(session["answers"]["summary_v2"])
    assert sm["stall_by_class"] is None and sm["totals"]["stall"] is None and STALL_UNRECORDED_RANKING in sm["notes"]
    assert [(x["pc"], x["latency"], x["stall"], x["stall_share"]) for x in sm["instructions"]] == [(pc, lat[pc], None, None) for pc in order]
    hot = result_object(session["answers"]["hotspots_v2"])
    assert hot["sort"] == "latency" and STALL_UNRECORDED_RANKING in hot["warnings"]
    assert [(x["pc"], x["stall"], x["class_stall"]) for x in hot["rows"]] == [(pc, None, None) for pc in order]


def test_rocprofv2_waits_deps_waves_diff_check_through_mcp(session):
    """waits, deps, waves and diff on a rocprofv2 capture: the wait and stall
    figures null, never 0 (the wait executions counted from the wave files);
    check refuses a stall metric on it, naming why."""
    cap = Path(session["questions"]["waits_v2"][2]["capture"])
    execs = sum(1 for f in cap.glob("se*_sm*_sl*_wv*.json") for x in json.loads(f.read_text())["wave"]["instructions"] if x[4] == 5)
    ws = result_object(session["answers"]["waits_v2"])
    assert (ws["executions"], ws["total_wait"], ws["share_of_stall"]) == (execs, None, None) and ws["sites"][0]["p90"] is None
    dp = result_object(session["answers"]["deps_v2"])
    assert dp["total_charged_cycles"] is None and dp["wait_executions_resolved"] == execs and dp["producers"][0]["waited_cycles"] is None
    wv = result_object(session["answers"]["waves_v2"])
    assert all(v["stall"] is None for v in wv["phases"]["kernel"].values()) and wv["states"]["cycles"]["STALL"] > 0
    df = result_object(session["answers"]["diff_v2"])
    assert all(c["stall_delta"] is None and c["stall_after"] is None for c in df["classes"]) and "no stall delta" in df["warnings"][-1]
    ck = session["answers"]["check_v2"]
    assert ck.is_error and "stall is not recorded by this profiler (rocprofv2)" in ck.content[0].text


def test_asm_takes_an_address(session):
    got = result_object(session["answers"]["asm_addr"])
    center = [r for r in got["rows"] if r["center"]]
    assert len(center) == 1 and center[0]["vaddr"] == 0x200C and got["pc"] == center[0]["pc"] == 392


@pytest.mark.parametrize("key", ["list_captures", "summary", "rules", "hotspots_opcode", "hotspots_line", "hotspots_instr", "plan", "asm", "deps_pc",
                                 "deps_line", "waits", "waits_all", "waves", "waves_per_wave", "occupancy", "diff", "check", "kernels",
                                 "pc_sampling", "summary_pcs", "summary_v2", "hotspots_v2", "waits_v2", "deps_v2", "waves_v2", "diff_v2",
                                 "whatif_pc", "whatif_rules", "whatif_calibration"])
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


def test_whatif_takes_an_address_and_is_read_only(session):
    """pc 6 of layernorm is its s_waitcnt at 0x1720: the same replay by address as by index."""
    assert result_object(session["answers"]["whatif_addr"]) == result_object(session["answers"]["whatif_pc"])
    tool = next(t for t in session["answers"]["tools"] if t.name == "whatif")
    assert tool.annotations.read_only_hint is True and tool.input_schema["required"] == ["capture"]
    assert len(tool.description) <= 300  # tools/list is large already


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
                                           ("several", "SeveralCaptures", 5), ("unknown_schema", "UsageError", 2),
                                           ("whatif_unknown_rule", "UsageError", 2), ("whatif_not_a_wait", "UsageError", 2),
                                           ("whatif_bad_move", "UsageError", 2), ("whatif_huge", "UsageError", 2)])
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
    assert "pip install 'mcp>=2.0'" in p.stderr and "Traceback" not in p.stderr


def test_a_capture_rewritten_in_place_under_the_server_is_read_again(session):
    """Row 2: one digit of a wave file changed, its size and mtime restored,
    while the server runs: the next call gives the fresh totals; unchanged,
    the same answer."""
    a = session["answers"]
    first, same, second = (result_object(a[k]) for k in ("inplace_1", "inplace_same", "inplace_2"))
    assert same == first
    assert second["totals"]["stall"] != first["totals"]["stall"]


@pytest.mark.parametrize("key", ["top_huge", "around_huge", "waves_huge", "deps_huge", "diff_huge", "path_nul", "path_long", "path_long_name"])
def test_out_of_range_arguments_and_bad_paths_are_usage_errors(session, key):
    """Row 9: a top or around of 2**64 and more, a path with a NUL byte or of
    5,000 characters: a tool error of kind UsageError (exit 2), not an
    internal error; the server keeps serving."""
    res = session["answers"][key]
    assert res.is_error
    err = result_object(res)["error"]
    assert (err["kind"], err["exit_code"]) == ("UsageError", 2), err
    assert "internal" not in err["message"]
    assert not session["answers"]["after_bad_args"].is_error


@pytest.mark.parametrize("key", ["partial_summary", "partial_plan", "partial_deps", "partial_asm", "partial_check"])
def test_tool_results_carry_the_warnings_of_a_partly_read_capture(session, key):
    """Row 3 through MCP: the skipped wave file is named in every result's
    warnings; check does not pass (partial); the whole capture's results
    name no skipped file (the twin: summary of copy2)."""
    got = result_object(session["answers"][key])
    assert any("se" in w and "_wv" in w for w in got["warnings"]), got["warnings"]
    if key == "partial_check":
        assert got["passed"] is False and got["partial"] is True
    twin = result_object(session["answers"]["inplace_1"])
    assert not any("_wv" in w for w in twin["warnings"])
