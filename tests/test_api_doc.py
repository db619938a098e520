"""docs/api.md's notebook session runs as written, in the folder holding the
two shared flash_attn_func captures, and its tables hold the raw capture's
numbers (code.json and the plan read back with plain json)."""

from __future__ import annotations

import json
import re

import pytest

from attlens.cli import main
from conftest import REPO, require_shared

FOLDER = "traces/flash_attn_func/big"
AFTER = "ui_output_agent_55287_dispatch_44_after_loc_fix"


def blocks() -> list[str]:
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def test_the_notebook_session_runs_and_shows_the_capture(monkeypatch, capsys):
    pytest.importorskip("pandas")
    folder = require_shared() / FOLDER
    monkeypatch.chdir(folder)
    code = blocks()
    assert len(code) >= 6
    ns: dict = {}
    for i, block in enumerate(code):
        exec(compile(block, f"docs/api.md block {i + 1}", "exec"), ns)  # noqa: S102 - our own documentation
    printed = capsys.readouterr().out

    rows = json.loads((folder / AFTER / "code.json").read_text())["code"]
    stall = {row[2]: row[8] for row in rows}
    top_pc = max(stall, key=lambda pc: (stall[pc], -pc))
    # the top instruction and the totals are code.json's
    df = ns["instructions"]
    assert int(df.pc.iloc[0]) == top_pc and int(df.stall.iloc[0]) == stall[top_pc]
    assert int(df.stall.sum()) == sum(stall.values()) and int(ns["classes"].stall.sum()) == sum(stall.values())
    assert ns["top_row"]["pc"] == top_pc and ns["top_row"]["stall"] == stall[top_pc]
    assert int(ns["lines"].stall.sum()) == sum(stall.values())
    # the printed repr is the short line, with the real totals
    assert f"stall={sum(stall.values())}" in printed and "AnalysisResult(kernel='flash_attn_func_kernel_0'" in printed
    # the plan's findings are the CLI's
    capsys.readouterr()
    assert main(["plan", AFTER, "--json"]) == 0  # in the same folder, as the session
    plan_doc = json.loads(capsys.readouterr().out)
    assert list(ns["findings"].rule) == [f["rule"] for f in plan_doc["findings"]]
    assert json.loads(ns["text"]) == plan_doc
    assert ns["top"].change == plan_doc["findings"][0]["change"]
    # every traced wave, its cycles per state from its own file
    waves = ns["waves"]
    assert len(waves) == len(list((folder / AFTER).glob("se*_sm*_sl*_wv*.json"))) == 32
    exec_cycles = 0
    for f in (folder / AFTER).glob("se*_sm*_sl*_wv*.json"):
        exec_cycles += sum(d for s, d in json.loads(f.read_text())["wave"]["timeline"] if s == 2)
    assert int(ns["per_simd"]["states.EXEC"].sum()) == exec_cycles
    # one producer and the waits on it: the wait's stall is code.json's
    first = ns["first"]
    assert first.pc == int(ns["producers"].pc.iloc[0]) and all(int(w) in stall for w in first.waits)
    for wpc, s in zip(first.to_pandas("waits").wait_pc, first.to_pandas("waits").stall):
        assert s == stall[wpc]
    # the diff of the two captures
    d = ns["d"]
    assert d.before.label.endswith("dispatch_44") and d.after.label == AFTER and len(ns["changes"]) == len(d.lines)
