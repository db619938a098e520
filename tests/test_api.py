"""The Python API (docs/api.md): one function per question whose result's
to_dict() is the command's --json, one short repr line per result, DataFrames
whose numbers are the raw capture's (checked with plain json), one naming
rule, and a clear message without pandas."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import attlens
from attlens import api
from attlens.cli import main
from attlens.jsondoc import dumps
from conftest import REPO, loaded, require_shared

LAYERNORM = "traces/layernorm/big/ui_output_agent_22257_dispatch_23"
FLASH_BEFORE = "traces/flash_attn_func/small/ui_output_agent_32235_dispatch_44"
FLASH_AFTER = "traces/flash_attn_func/small/ui_output_agent_58550_dispatch_44_after_loc_fix"
VCOPY = "rocprofv3-samples/rocprof-compute-vcopy/MI350/pmc_perf.csv"
REPR_MAX = 200


@pytest.fixture(scope="module")
def lay():
    path = require_shared() / LAYERNORM
    return path, loaded(path)[1]


def cli_json(capsys, *args) -> dict:
    capsys.readouterr()
    code = main([str(a) for a in args])
    out = capsys.readouterr().out
    assert code in (0, 20), (args, code)
    return json.loads(out)


def as_json(doc: dict) -> dict:
    """``doc`` as --json prints it, parsed (int keys become strings, tuples lists)."""
    return json.loads(dumps(doc))


# --------------------------------------------------------------------------- the module


def test_import_attlens_stays_cheap_and_exports_the_api_lazily():
    code = ("import sys, attlens; heavy = [m for m in ('numpy', 'rich', 'orjson', 'pandas', 'attlens.api') if m in sys.modules]; "
            "print(heavy); attlens.plan; print('attlens.api' in sys.modules, 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"}).stdout.split("\n")
    assert out[0] == "[]", out  # nothing heavy, not even the API module, until it is used
    assert out[1] == "True False", out  # the API module is light too
    assert set(attlens._API) == set(api.__all__)
    for name in api.__all__:
        assert getattr(attlens, name) is getattr(api, name) and name in dir(attlens)
    with pytest.raises(AttributeError):
        attlens.no_such_function  # noqa: B018


# --------------------------------------------------------------------------- to_dict == --json


def test_to_dict_is_the_json_of_every_capture_command(lay, capsys):
    path, r = lay
    w = api.waves(r, top=4)
    pc = r.hotspots.instructions[r.hotspots.by_stall[0]].pc
    line = next(x.source for x in (r.hotspots.lines[i] for i in r.hotspots.lines_by_stall) if x.file)
    cases = [
        (r.to_dict(10), ["analyze", path]),
        (r.to_dict(), ["analyze", path, "--top", "0"]),
        (r.to_dict(3), ["analyze", path, "--top", "3"]),
        (api.hotspots(r, "line", "exposed").to_dict(5), ["analyze", path, "--by", "line", "--sort", "exposed", "--top", "5"]),
        (api.hotspots(r, "opcode", "idle").to_dict(), ["analyze", path, "--by", "opcode", "--sort", "idle", "--top", "0"]),
        (api.hotspots(r).to_dict(10), ["analyze", path, "--by", "instruction"]),
        (api.plan(r).to_dict(), ["plan", path]),
        (api.plan(r, disable={"stall-class"}).to_dict(), ["plan", path, "--disable", "stall-class"]),
        (w.to_dict(), ["waves", path, "--top", "4"]),
        (api.waves(r).to_dict(per_wave=False), ["waves", path, "--no-per-wave"]),
        (api.deps(r).to_dict(10), ["deps", path]),
        (api.deps(r).to_dict(), ["deps", path, "--top", "0"]),
        (api.deps(r, pc=pc).to_dict(10), ["deps", path, "--pc", pc]),
        (api.deps(r, line=line.rsplit("/", 1)[-1]).to_dict(2), ["deps", path, "--line", line.rsplit("/", 1)[-1], "--top", "2"]),
        (api.asm(r, pc, 5).to_dict(), ["asm", path, "--pc", pc, "--around", "5"]),
        (api.waits(r).to_dict(10), ["waits", path]),
        (api.waits(r, steady=True).to_dict(), ["waits", path, "--steady", "--top", "0"]),
        (api.occupancy(r).to_dict(), ["occupancy", path]),
        (api.captures(path.parent).to_dict(), ["captures", path.parent]),
    ]
    for obj, args in cases:
        assert as_json(obj) == cli_json(capsys, *args, "--json"), args


def test_to_dict_is_the_json_of_the_other_commands(capsys):
    shared = require_shared()
    before, after, rocprof = shared / FLASH_BEFORE, shared / FLASH_AFTER, shared / "traces/layernorm/rocprofv3"
    cases = [
        (api.diff(before, after).to_dict(10), ["diff", before, after]),
        (api.diff(str(before), loaded(after)[1], noise_floor=0.02, noise_source="--noise-floor").to_dict(),
         ["diff", before, after, "--noise-floor", "2", "--top", "0"]),
        (api.check(after, before, max_regression=1.0).to_dict(), ["check", after, "--baseline", before, "--max-regression", "1"]),
        (api.check(after, before, metric="stall").to_dict(), ["check", after, "--baseline", before, "--metric", "stall"]),
        (api.kernels(rocprof).to_dict(), ["kernels", rocprof]),
        (api.kernels([rocprof], exclude="").to_dict(), ["kernels", rocprof, "--exclude", ""]),
        (api.pmc(shared / VCOPY, target="gfx950").to_dict(), ["pmc", shared / VCOPY, "--target", "gfx950"]),
        (__import__("attlens.analysis.plan", fromlist=["rules_to_dict"]).rules_to_dict(api.rules()), ["rules"]),
    ]
    for obj, args in cases:
        assert as_json(obj) == cli_json(capsys, *args, "--json"), args


def test_an_error_is_the_json_of_a_failing_command(tmp_path, capsys):
    from attlens.errors import InputNotFound

    with pytest.raises(InputNotFound) as exc:
        api.analyze(tmp_path / "nope")
    capsys.readouterr()
    assert main(["analyze", str(tmp_path / "nope"), "--json"]) == exc.value.exit_code
    assert as_json(exc.value.to_dict()) == json.loads(capsys.readouterr().out)


def test_a_capture_named_from_its_own_folder_finds_its_run_outputs(monkeypatch):
    """``attlens.analyze("ui_output_...")`` in the folder holding the capture
    finds ``../rocprofv3/`` like the absolute path does (a relative path has no
    parent of its own: the lookup makes it absolute first)."""
    folder = require_shared() / "traces/flash_attn_func/big"
    cap = "ui_output_agent_55287_dispatch_44_after_loc_fix"
    whole = api.plan(api.analyze(folder / cap))
    monkeypatch.chdir(folder)
    here = api.plan(api.analyze(cap))
    import csv

    rows = [r for r in csv.DictReader((folder.parent / "rocprofv3/discover_kernel_trace.csv").open()) if r["Kernel_Name"] == "flash_attn_func_kernel_0"]
    ns = sorted(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows)  # 9 dispatches, one grid: the median
    assert here.dispatch["duration_ns"] == whole.dispatch["duration_ns"] == ns[len(ns) // 2] == 92041
    assert here.dispatch["grid_source"] == whole.dispatch["grid_source"] is not None


# --------------------------------------------------------------------------- repr


def _objects(lay) -> dict:
    """Every result type the API returns, and the objects inside them a user reaches."""
    shared = require_shared()
    path, r = lay
    d = r.dispatch
    w = api.waves(r)
    plan = api.plan(r, waves=w)
    deps = api.deps(r, attribution=w.attribution)
    win = api.asm(r, r.hotspots.instructions[r.hotspots.by_stall[0]].pc)
    waits = api.waits(r, attribution=w.attribution)
    diff = api.diff(shared / FLASH_BEFORE, shared / FLASH_AFTER)
    table = api.kernels(shared / "traces/layernorm/rocprofv3")
    counters = api.pmc(shared / VCOPY, target="gfx950")
    caps = api.captures(shared / "traces/flash_attn_func")
    from attlens.analysis.pmc_attach import attach_pmc
    from attlens.capture.profile import ProfileResult

    profile = ProfileResult(out_dir=Path("attlens-profile"), target="gfx950", kernels=table, kernel={"name": table.rows[0].name},
                            iterations=[3], analysis=r, best=path)
    return {
        "Dispatch": d, "ArchInfo": d.arch, "Resources": d.resources, "CodeListing": d.code, "FilenamesIndex": d.index,
        "Occupancy": d.occupancy, "Realtime": d.realtime, "Records": d.records, "Waves": d.waves, "Timeline": d.timeline,
        "StaticCode": d.static,
        "AnalysisResult": r, "PcSums": r.sums, "StallBreakdown": r.breakdown, "WaitDeps": r.deps, "Hotspots": r.hotspots,
        "OccupancyResult": r.occupancy, "Quality": r.quality, "CaptureFacts": r.quality.facts, "WaitPairs": r.pairs, "HiddenLatency": r.hidden,
        "InstructionHotspot": r.hotspots.instructions[0], "LineHotspot": r.hotspots.lines[0],
        "HotspotTable": api.hotspots(r, "line"), "OpcodeHotspot": api.hotspots(r, "opcode").rows[0],
        "Plan": plan, "Finding": plan.findings[0], "LoopStructure": plan.loops, "Bandwidth": plan.bandwidth, "RuleInfo": api.rules()["few-waves"],
        "WaveAnalysis": w, "WaveStates": w.states, "ClockInfo": w.clock, "PipeUtilization": w.pipes, "Phases": w.phases,
        "InstructionDistribution": w.phases.instructions[0], "WaitAttribution": w.attribution, "ProducerStats": w.attribution.producers[0],
        "DepsResult": deps, "AsmWindow": win, "AsmRow": win.rows[0], "WaitStats": waits, "WaitSite": waits.sites[0],
        "DiffResult": diff, "Side": diff.before, "LineChange": diff.lines[0], "SiteChange": diff.sites[0],
        "CheckResult": api.check(shared / FLASH_AFTER, shared / FLASH_BEFORE), "WhatIf": api.whatif(r, plan=plan),
        "KernelTable": table, "KernelRow": table.rows[0], "CaptureList": caps, "CaptureInfo": caps.captures[0],
        "PmcCounters": counters, "PmcResult": counters.results[0], "Decision": counters.results[0].decisions[0],
        "PmcAttachment": attach_pmc(counters, "x", "gfx950", None, force=True), "ProfileResult": profile,
    }


def test_repr_of_every_result_is_one_short_line(lay):
    objs = _objects(lay)
    for name, obj in objs.items():
        text = repr(obj)
        assert type(obj).__name__ == name and text.startswith(name + "("), (name, text[:100])
        assert len(text) <= REPR_MAX and "\n" not in text, (name, len(text), text[:300])
    # and it carries the key numbers
    r = lay[1]
    assert f"stall={r.breakdown.total_stall}" in repr(r) and f"waves={r.dispatch.waves.count}" in repr(r)
    plan = objs["Plan"]
    assert f"findings={len(plan.findings)}" in repr(plan) and repr(plan.findings[0].rule) in repr(plan)


# --------------------------------------------------------------------------- DataFrames against the raw capture


def _raw(cap: Path):
    """code.json rows and the wave files, read with plain json."""
    code = json.loads((cap / "code.json").read_text())["code"]
    waves = {}
    for f in sorted(cap.glob("se*_sm*_sl*_wv*.json")):
        waves[f.name] = json.loads(f.read_text())["wave"]
    return code, waves


def test_dataframes_hold_the_captures_numbers(lay):
    pytest.importorskip("pandas")
    path, r = lay
    code, raw_waves = _raw(path)
    by_pc = {row[2]: row for row in code}
    own = {row[2]: (row[3].split(" -> ")[0] or "(no source)") for row in code}

    df = r.to_pandas("instructions")
    assert len(df) == sum(1 for row in code if row[6] > 0 and not row[0].startswith(";"))
    for col, i in (("hit", 6), ("latency", 7), ("stall", 8), ("idle", 9)):
        assert int(df[col].sum()) == sum(row[i] for row in code), col
    for pc, stall, latency, isa in zip(df.pc, df.stall, df.latency, df.isa):
        assert (stall, latency, isa) == (by_pc[pc][8], by_pc[pc][7], by_pc[pc][0])
    assert list(df.stall) == sorted(df.stall, reverse=True) and df.stall.iloc[0] == max(row[8] for row in code)
    assert "class" in set(df.columns) and "class_" not in df.columns
    # the stall per class is columns, not a dict per cell; a class a pc does not stall on is 0 there
    split = [c for c in df.columns if c.startswith("class_stall.")]
    assert "class_stall" not in df.columns and split
    assert (df[split].sum(axis=1) == df.stall).all()
    assert not any(isinstance(v, dict) for c in df.columns for v in df[c].head(50))

    lines = r.to_pandas("lines")
    want = defaultdict(int)
    for row in code:
        if not row[0].startswith(";"):
            want[own[row[2]]] += row[8]
    assert dict(zip(lines.source, lines.stall.astype(int))) == {k: v for k, v in want.items() if k in set(lines.source)}
    assert int(lines.stall.sum()) == sum(want.values())

    classes = r.to_pandas("classes")
    assert int(classes.stall.sum()) == sum(row[8] for row in code) and int(classes.records.sum()) == sum(row[6] for row in code)

    waves = api.waves(r).to_pandas()
    assert sorted(waves.file) == sorted(raw_waves)
    for f, rec, begin, end, *states in zip(waves.file, waves.records, waves.begin, waves.end,
                                          *(waves[f"states.{s}"] for s in ("IDLE", "EXEC", "WAIT", "STALL"))):
        wv = raw_waves[f]
        assert (rec, begin, end) == (len(wv["instructions"]), wv["begin"], wv["end"])
        assert states == [sum(d for s, d in wv["timeline"] if s == k) for k in (1, 2, 3, 4)]

    deps = api.deps(r)
    producers, waits = deps.to_pandas(), deps.to_pandas("waits")
    assert int(producers.waited_cycles.sum()) == int(waits.charged_cycles.sum()) == deps.attribution.total_charged
    for wpc, isa, stall, charged in zip(waits.wait_pc, waits.isa, waits.stall, waits.charged_cycles):
        assert (isa, stall) == (by_pc[wpc][0], by_pc[wpc][8]) and 0 < charged <= stall
    for pc, isa, hit in zip(producers.pc, producers.isa, producers.executions):
        assert (isa, hit) == (by_pc[pc][0], by_pc[pc][6])

    plan = api.plan(r)
    findings = plan.to_pandas()
    assert list(findings.rule) == [f.rule for f in plan.findings] and len(findings) == len(plan.findings) > 0
    total = sum(row[7] + row[9] for row in code)  # latency + idle: every kernel cycle
    assert plan.total_cycles == total and 0 < int(findings.cycles_at_stake.sum()) <= total
    for claims in findings.claims:
        for c in claims:  # a claim never exceeds what the pc spent stalled or idle
            assert 0 < c["cycles"] <= by_pc[c["pc"]][8] + by_pc[c["pc"]][9]


def test_rankings_waits_diff_and_kernels_as_dataframes(lay):
    pytest.importorskip("pandas")
    shared = require_shared()
    path, r = lay
    code, _ = _raw(path)
    stall_of = {row[2]: row[8] for row in code}
    for by, key in (("instruction", "pc"), ("line", "source"), ("opcode", "opcode")):
        t = api.hotspots(r, by, "latency")
        df = t.to_pandas()
        assert len(df) == len(t.rows) and list(df[key]) == [getattr(x, key) for x in t.rows]
        assert list(df.latency) == sorted(df.latency, reverse=True) and int(df.stall.sum()) == sum(stall_of.values())
    ws = api.waits(r)
    sites = ws.to_pandas()
    assert int(sites.total.sum()) == ws.total_wait and all(stall_of[pc] >= t for pc, t in zip(sites.pc, sites.total))
    lines = api.diff(shared / FLASH_BEFORE, shared / FLASH_AFTER).to_pandas()
    assert (lines.delta.abs().diff().dropna() <= 1e-9).all()  # largest change first
    import csv

    trace = shared / "traces/layernorm/rocprofv3/discover_kernel_trace.csv"
    rows = list(csv.DictReader(trace.open()))
    kernels = api.kernels(trace).to_pandas()
    assert sorted(kernels.name) == sorted({r["Kernel_Name"] for r in rows}) and int(kernels.calls.sum()) == len(rows)
    ns = defaultdict(int)
    for r in rows:
        ns[r["Kernel_Name"]] += int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
    assert list(kernels.name) == sorted(ns, key=lambda k: (-ns[k], k))  # ranked by total time
    assert [round(t * 1000) for t in kernels.total_us] == [ns[k] for k in kernels.name]
    vgprs = {r["Kernel_Name"]: int(r["VGPR_Count"]) for r in rows}
    assert {"resources.vgpr", "resources.lds_bytes"} <= set(kernels.columns)
    assert all(v is None or v != v or int(v) == vgprs[k] for k, v in zip(kernels.name, kernels["resources.vgpr"]))


def test_empty_tables_keep_their_columns(lay):
    pytest.importorskip("pandas")
    from attlens.analysis.deps import _PRODUCER_COLUMNS, _WAIT_COLUMNS
    from attlens.analysis.diff import LINE_COLUMNS
    from attlens.analysis.plan import FINDING_COLUMNS
    from attlens.analysis.waitstats import SITE_COLUMNS

    path, r = lay
    full_deps = api.deps(r)
    plan = api.plan(r)
    # the fixed column lists are the JSON rows' keys
    assert FINDING_COLUMNS == list(plan.to_pandas().columns)  # the JSON keys, the ledger spread into ledger.* columns
    assert [c.split(".")[0] for c in FINDING_COLUMNS if not c.startswith("ledger.")] + ["ledger"] == [k for k in plan.findings[0].to_dict() if k != "ledger"] + ["ledger"]
    assert _PRODUCER_COLUMNS == list(full_deps.to_dict(1)["producers"][0]) and _WAIT_COLUMNS == list(full_deps.to_dict(1)["waits"][0])
    assert SITE_COLUMNS == list(api.waits(r).to_dict(1)["sites"][0])
    assert LINE_COLUMNS == list(api.diff(r, r).to_dict(1)["lines"][0])
    empty = api.plan(r, only={"prologue-only"})
    assert empty.findings == [] and list(empty.to_pandas().columns) == FINDING_COLUMNS
    steady = api.waits(r, steady=True)
    if not steady.sites:
        assert list(steady.to_pandas().columns) == SITE_COLUMNS


def test_to_pandas_without_pandas_names_the_extra(lay, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # `import pandas` now raises ImportError
    r = lay[1]
    for call in (r.to_pandas, api.plan(r).to_pandas, api.deps(r).to_pandas):
        with pytest.raises(ImportError, match=r"pip install -e '\.\[pandas\]'") as exc:
            call()
        assert exc.value.name == "pandas"
    from attlens.errors import UsageError

    with pytest.raises(UsageError, match="instructions, lines, classes"):
        r.to_pandas("rows")


def test_pandas_is_the_extra_and_in_the_test_extras():
    text = (REPO / "pyproject.toml").read_text()
    assert 'pandas = ["pandas>=' in text and text.count('"pandas>=') == 2


# --------------------------------------------------------------------------- one naming rule


def _json_name(attr: str) -> str:
    return "class" if attr == "class_" else attr


def test_attributes_have_the_names_of_their_json_keys(lay):
    path, r = lay
    h = r.hotspots
    w = api.waves(r)
    ws = api.waits(r)
    plan = api.plan(r, waves=w)
    opcode = api.hotspots(r, "opcode").rows[0]
    d = api.deps(r, attribution=w.attribution).to_dict()
    # rows whose every key is an attribute (class spelled class_)
    for obj, row in ((h.instructions[0], h.instructions[0].to_dict()), (h.lines[0], h.lines[0].to_dict()), (opcode, opcode.to_dict())):
        # pc_samples: a key only when PC samples were joined (docs/pcsampling.md); none beside layernorm
        absent = {"pc_samples"} if getattr(obj, "pc_samples", 0) is None else set()
        # stall_recorded: the one attribute that is no key; it says whether stall, issue and their shares are null
        absent.add("stall_recorded")
        assert {_json_name(f.name) for f in dataclasses.fields(obj)} == set(row) | absent, type(obj).__name__
    assert hasattr(h.instructions[0], "class_") and not hasattr(h.instructions[0], "cls")
    site = ws.to_dict(1)["sites"][0]
    assert {f.name for f in dataclasses.fields(ws.sites[0])} == set(site)
    prod = w.attribution.producers[0]
    assert set(d["producers"][0]) <= {f.name for f in dataclasses.fields(prod)}
    occ = r.occupancy.to_dict()["occupancy"]
    assert set(occ) <= {f.name for f in dataclasses.fields(r.occupancy)}
    finding = plan.findings[0].to_dict()
    assert all(hasattr(plan.findings[0], k) for k in finding if k != "ledger")  # ledger: a group (requested_cycles, shared)
    doc = plan.to_dict()
    derived = {"schema", "schema_version", "attlens_version", "capture", "totals", "stall_summary", "priorities"}
    assert all(hasattr(plan, k) for k in doc if k not in derived), [k for k in doc if k not in derived and not hasattr(plan, k)]
    wd = w.to_dict(per_wave=False)
    assert set(wd["states"]) - {"total_lifetime", "overhang_cycles_max"} <= {f.name for f in dataclasses.fields(w.states)}
    assert set(wd["phases"]) - {"static_loops"} <= {f.name for f in dataclasses.fields(w.phases)}
    assert "total_window_cycles" in {f.name for f in dataclasses.fields(w.pipes)} and hasattr(w.clock, "se_offsets_cycles")
    shared = require_shared()
    row = api.kernels(shared / "traces/layernorm/rocprofv3").rows[0]
    assert set(row.to_dict()["resources"]) <= {f.name for f in dataclasses.fields(row)}


# --------------------------------------------------------------------------- arguments

def test_wrong_arguments_are_usage_errors_not_tracebacks(lay):
    """What the CLI checks in argparse the API checks itself: a wrong value is a
    UsageError (exit 2 on the CLI), never a TypeError or a silently wrong answer."""
    from attlens.errors import UsageError

    shared = require_shared()
    path, r = lay
    before, after = shared / FLASH_BEFORE, shared / FLASH_AFTER
    bad = [
        lambda: api.hotspots(123),
        lambda: api.analyze(3.5),
        lambda: api.asm(r, "three"),  # text is an index ("392") or an address ("0x200c")
        lambda: api.asm(r, 3, around=-1),
        lambda: api.deps(r, pc=True),
        lambda: api.deps(r, line=42),
        lambda: api.waves(r, top="5"),
        lambda: r.to_dict("5"),
        lambda: api.plan(r, disable=[1]),
        lambda: api.plan(r, only=5),
        lambda: api.diff(before, after, force=True, noise_floor=float("nan")),
        lambda: api.diff(before, after, force=True, noise_floor=-0.1),
        lambda: api.check(after, before, max_regression=float("nan"), force=True),
        lambda: api.diff(before, 7),
        lambda: api.check(after, before, metric=5, force=True),
        lambda: api.pmc(None),
        lambda: api.captures(5),
    ]
    for call in bad:
        with pytest.raises(UsageError):
            call()
    # the conveniences: a path where an analysis is wanted, one rule id as text, top=None
    assert api.hotspots(path).to_dict(5) == api.hotspots(r).to_dict(5)
    assert "grid-starvation" in [f.rule for f in api.plan(r).findings]  # it fires on layernorm (14 % of the slots)
    one = api.plan(r, disable="grid-starvation")
    assert one.to_dict() == api.plan(r, disable=["grid-starvation"]).to_dict()
    assert "grid-starvation" not in [f.rule for f in one.findings]
    assert api.waves(r, top=None).to_dict() == api.waves(r).to_dict()
    import numpy as np

    assert r.to_dict(np.int64(3)) == r.to_dict(3)


def test_plan_takes_counters_only_of_its_own_dispatch(lay):
    """attlens.plan(r, pmc=attlens.pmc(...)) checks the counters against the
    capture like report --pmc (MI350X vecCopy counters are not layernorm's);
    an attachment forced over a mismatch never feeds the bandwidth rule."""
    from attlens.analysis.bandwidth import _pmc_for
    from attlens.analysis.pmc_attach import attach_pmc
    from attlens.errors import Incomparable

    shared = require_shared()
    _, r = lay
    counters = api.pmc(shared / VCOPY)
    with pytest.raises(Incomparable):
        api.plan(r, pmc=counters)
    d = r.dispatch
    forced = attach_pmc(counters, d.kernel_name, d.arch.target, d.resources.dispatch_id, force=True)
    assert forced.mismatches and _pmc_for(d, forced) is None
    # matched by kernel name when the dispatch ids differ (another run), only when one result has that name
    one = dataclasses.replace(counters.results[0], kernel=d.kernel_name, dispatch_id=-1)
    assert _pmc_for(d, [one]) is one and _pmc_for(d, [one, one]) is None
    assert _pmc_for(d, dataclasses.replace(counters, results=[one])) is one


def test_notebook_views_and_the_new_dataframes(lay):
    """_repr_html_ on results (escaped, with the first rows of to_pandas());
    to_pandas for asm (waits_on as two aligned list columns) and occupancy
    (one row per resource); the plan's ledger as columns."""
    pd = pytest.importorskip("pandas")
    path, r = lay
    html = r._repr_html_()
    assert html.startswith("<div class='attlens-result'><b>AnalysisResult</b>") and "<table" in html and "first 10 of" in html
    assert "<script" not in html
    win = attlens.asm(r, 392, 3)
    df = win.to_pandas()
    assert list(df.pc) == [a.pc for a in win.rows] and int(df.center.sum()) == 1
    for row, a in zip(df.itertuples(), win.rows):
        assert list(row.waits_on_pcs) == [p for p, _c in a.waits_on] and list(row.waits_on_cycles) == [c for _p, c in a.waits_on]
    assert "waits_on" not in df.columns and "<b>AsmWindow</b>" in win._repr_html_()
    occ = attlens.occupancy(r)
    odf = occ.to_pandas()
    assert list(odf.name) == [l.name for l in occ.limits]
    assert set(odf[odf.limiter].name) == set(occ.limiters)
    assert (odf.waves_per_simd.dropna() >= occ.theoretical_waves_per_simd).all()
    pdf = attlens.plan(r).to_pandas()
    assert {"ledger.requested_cycles", "ledger.granted_cycles"} <= set(pdf.columns) and "ledger" not in pdf.columns
    assert list(pdf["ledger.granted_cycles"]) == list(pdf.cycles_at_stake)
    assert isinstance(pd.DataFrame, type)


def test_wrong_types_and_huge_values_are_usage_errors(lay, tmp_path):
    """Row 16 (and row 9 through the API): load(None), kernels(5), a flag given
    as text (analyze(exposed="no") analyzed *with* the model), waits(steady=
    "yes"), plan(pmc="x"), to_dict(2**70), around=2**70: UsageError, never a
    raw TypeError or a silently wrong answer. The twins: bytes paths, numpy
    booleans and the bound itself are taken."""
    import numpy as np

    from attlens.errors import UsageError

    path, r = lay
    bad = [
        lambda: api.load(None), lambda: api.load(3), lambda: api.load("a\0b"), lambda: api.load(path, cache=5),
        lambda: api.kernels(5), lambda: api.kernels([]), lambda: api.kernels([path, 7]), lambda: api.kernels(path, exclude=3),
        lambda: api.analyze(path, exposed="no"), lambda: api.waits(r, steady="yes"), lambda: api.plan(r, pmc="x"),
        lambda: api.plan(r, pmc=[1]), lambda: r.to_dict(2**70), lambda: api.hotspots(r).to_dict(2**64),
        lambda: api.deps(r).to_dict(2**64), lambda: api.waits(r).to_dict(2**70), lambda: api.asm(r, 392, around=2**70),
        lambda: api.asm(r, 2**70), lambda: api.waves(r, top=2**64), lambda: api.diff(path, path, force="yes"),
        lambda: api.check(path, path, force=1), lambda: api.captures(b"x\0y"), lambda: api.pmc(path, target=5),
        lambda: api.pmc(path, ideal_bytes=float("nan")),
    ]
    for i, call in enumerate(bad):
        with pytest.raises(UsageError):
            call()
    # twins
    assert api.load(os.fsencode(path)).kernel_name == r.dispatch.kernel_name
    assert api.analyze(path, exposed=np.bool_(False)).hidden is None
    assert api.waits(r, steady=np.bool_(True)).steady is True
    assert r.to_dict(1_000_000_000)["hotspots"]["instructions_by_stall"] == r.to_dict(0)["hotspots"]["instructions_by_stall"]
