"""The JSON contract: every --json object against its JSON Schema
(src/attlens/schemas), on every shared capture; the schemas are strict and
docs/json-schema.md is generated from them."""

from __future__ import annotations

import copy
import json
import sys

import pytest
from jsonschema import Draft202012Validator, ValidationError

import attlens
from attlens import __version__, schemas
from attlens.cli import main
from attlens.schemas.docs import render
from conftest import _LOADED, REPO, require_shared, trace_dirs, trace_id
from test_profile import APP, env  # noqa: F401  (the fake rocprofv3 fixture)
from test_profile import attlens as run_attlens

_CACHE: dict = {}


@pytest.fixture()
def cli(monkeypatch, capsys):
    """Run the real command line in-process; every capture is loaded and
    analyzed once per test session (the commands' own work still runs)."""
    import attlens.analysis.analyze as analyze_mod
    import attlens.model.loader as loader_mod

    real_load, real_analyze = loader_mod.load, analyze_mod.analyze

    def load(path, rocprof_dir=None, progress=None, **_kw):
        if rocprof_dir is not None:
            return real_load(path, rocprof_dir=rocprof_dir)
        key = str(path)  # conftest.loaded's cache, shared with the other real-capture tests
        if key not in _LOADED:
            d = real_load(path)
            _LOADED[key] = (d, real_analyze(d))
        d, r = _LOADED[key]
        _CACHE[id(d), True] = r
        return d

    def analyze(dispatch, exposed=True, **kw):
        key = (id(dispatch), exposed)
        if kw:
            return real_analyze(dispatch, exposed=exposed, **kw)
        if key not in _CACHE:
            _CACHE[key] = real_analyze(dispatch, exposed=exposed)
        return _CACHE[key]

    monkeypatch.setattr(loader_mod, "load", load)
    monkeypatch.setattr(analyze_mod, "analyze", analyze)

    def run(*args, code=0) -> dict:
        capsys.readouterr()
        rc = main([str(a) for a in args])
        out = capsys.readouterr().out
        assert rc == code, (args, out[-500:])
        doc = json.loads(out)
        schemas.validate(doc)
        assert doc["attlens_version"] == __version__ and isinstance(doc["schema_version"], int)
        return doc

    return run


def _walk(node, path="#"):
    if isinstance(node, dict):
        yield path, node
        for k, v in node.items():
            yield from _walk(v, f"{path}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _walk(v, f"{path}/{i}")


def test_schema_files_are_strict_2020_12_schemas():
    assert len(schemas.names()) >= 20
    for name in (*schemas.names(), schemas.DEFS):
        doc = schemas.load(name)
        Draft202012Validator.check_schema(doc)
        assert doc["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert doc["$id"] == schemas.PREFIX + name
        # every object of ours names its keys and allows no other
        for where, node in _walk(doc):
            if "properties" in node:
                assert node.get("additionalProperties") is False, f"{name} {where}: additionalProperties must be false"
                assert set(node["required"]) <= set(node["properties"]), f"{name} {where}"
        if name == schemas.DEFS:
            continue
        assert doc["title"] == f"attlens.{name}"
        assert {"schema", "schema_version", "attlens_version"} <= set(doc["required"])
        assert doc["properties"]["schema"] == {"const": f"attlens.{name}", "description": "the schema id"}
        assert doc.get("x-attlens-commands"), f"{name}: which command prints it?"
        for dep in schemas.dependencies(name):
            assert dep in schemas.names() or dep == schemas.DEFS


def test_docs_are_generated_from_the_schemas():
    committed = (REPO / "docs" / "json-schema.md").read_text(encoding="utf-8")
    assert committed == render(), "docs/json-schema.md is stale: python -m attlens.schemas.docs --write docs/json-schema.md"
    for name in schemas.names():
        assert f"## `attlens.{name}` v{schemas.load(name)['properties']['schema_version']['const']}" in committed


def _listed_waves(tree) -> int:
    """Wave files in filenames.json's nested {se: {sm: {slot: {wave: [file, begin, end]}}}}."""
    if isinstance(tree, dict):
        return sum(_listed_waves(v) for v in tree.values())
    return 1 if isinstance(tree, list) and tree and isinstance(tree[0], str) else 0


@pytest.mark.parametrize("cap", trace_dirs() or [None], ids=lambda p: trace_id(p) if p else "no-shared")
def test_every_capture_command_validates(cli, cap):
    """analyze (with and without the hidden-latency model, all rows), plan,
    waves, deps: the output on each shared capture matches its schema, and
    values computed independently from the capture's own files agree."""
    if cap is None:
        require_shared()
    doc = cli("analyze", cap, "--json")
    rows = json.loads((cap / "code.json").read_text())["code"]
    assert doc["totals"]["stall"] == sum(r[8] for r in rows) and doc["totals"]["latency"] == sum(r[7] for r in rows)
    assert doc["capture"]["waves_listed"] == _listed_waves(json.loads((cap / "filenames.json").read_text())["wave_filenames"])
    full = cli("analyze", cap, "--json", "--no-exposed", "--topk", "0")
    assert full["latency_hiding"] is None and full["hotspots"]["instructions_by_exposed"] is None
    assert len(full["hotspots"]["instructions_by_stall"]) == full["instructions"]["executed"]
    plan = cli("plan", cap, "--json")
    assert plan["capture"]["path"] == doc["capture"]["path"] and plan["totals"]["stall"] == doc["totals"]["stall"]
    waves = cli("waves", cap, "--json")
    assert len(waves["waves"]) == doc["capture"]["waves"]
    deps = cli("deps", cap, "--json", "--topk", "0")
    assert deps["total_charged_cycles"] == sum(p["waited_cycles"] for p in deps["producers"])


def _outside_captures() -> list:
    from conftest import shared_dir

    d = shared_dir()
    if d is None:
        return []
    return sorted(p.parent for p in (d / "outside").glob("*/*/*/filenames.json")) + sorted(
        p.parent for p in (d / "outside").glob("*/*/filenames.json") if "pc_sampling" not in p.read_text())


@pytest.mark.parametrize("cap", _outside_captures() or [None], ids=lambda p: f"{p.parent.parent.name}/{p.parent.name}" if p else "no-shared")
def test_outside_captures_validate(cli, cap):
    """The captures of other teams and generations (../shared/outside: early
    rocprofv3, rocprofv2): every command's JSON matches its schema."""
    if cap is None:
        require_shared()
    doc = cli("analyze", cap, "--json", "--topk", "0")
    assert doc["capture"]["layout"] in ("rocprofv3-early", "rocprofv2")
    plan = cli("plan", cap, "--json")
    assert plan["capture"]["path"] == doc["capture"]["path"]
    assert len(cli("waves", cap, "--json")["waves"]) == doc["capture"]["waves"]
    cli("deps", cap, "--json")
    # no stall recorded (rocprofv2): no ranking by stall (null); the latency ranking stands
    top = doc["hotspots"]["instructions_by_stall"] or doc["hotspots"]["instructions_by_latency"]
    assert (doc["hotspots"]["instructions_by_stall"] is None) == (not doc["capture"]["stall_recorded"])
    asm = cli("asm", cap, "--json", "--pc", top[0]["pc"])
    assert all((r["vaddr"] is None) == (doc["capture"]["layout"] == "rocprofv2") for r in asm["rows"])


def test_outside_folders_validate(cli):
    """captures (every layout, other outputs), pmc of every rocprofiler-compute
    generation, and the errors that name a layout, against their schemas."""
    outside = require_shared() / "outside"
    doc = cli("captures", outside, "--json")
    assert doc["others"] and doc["stopped"] is None
    for work in sorted((outside / "rocprof-compute").glob("*/sysinfo.csv")):
        if not (work.parent / "pmc_perf.csv").exists():
            continue
        p = cli("pmc", work.parent, "--json")
        assert p["dispatches"]
    assert cli("pmc", outside / "rocprof-compute/dispatch_6_8_MI200", "--json", code=6)["error"]["kind"] == "EmptyCapture"
    assert cli("kernels", outside / "legacy-rocprof-v1", "--json", code=4)["error"]["kind"] == "UnsupportedLayout"
    assert cli("analyze", outside / "rcv-pcsampling", "--json")["schema"] == "attlens.pc_sampling"


def test_other_commands_validate(cli, tmp_path):
    shared = require_shared()
    traces = shared / "traces"
    pa = traces / "pa"
    for cmd in ("analyze", "plan", "deps"):
        many = cli(cmd, pa, "--all", "--json")
        assert many["schema"] == f"attlens.{cmd}_many" and len(many["captures"]) == 1
    assert "waves" not in cli("waves", pa, "--all", "--json", "--no-per-wave")["captures"][0]
    vec = traces / "vec_add/big/ui_output_agent_14705_dispatch_25"
    exp = cli("export", vec, "--perfetto", tmp_path / "t.json", "--json", "--max-waves", "3")
    assert exp["bytes"] == (tmp_path / "t.json").stat().st_size and exp["waves_exported"] == 3
    assert cli("rules", "--json")["rules"]
    for run in sorted(traces.glob("*/rocprofv3")):
        k = cli("kernels", run, "--json")
        assert k["kernels"] == len(k["rows"]) > 0
    k = cli("kernels", shared / "rocprofv3-samples/mi350-kernel-trace-run", "--json")
    assert any(r["varying"] for r in k["rows"]) or all(r["varying"] is None for r in k["rows"])
    for gpu in ("MI300X_A1", "MI350"):
        p = cli("pmc", shared / f"rocprofv3-samples/rocprof-compute-vcopy/{gpu}", "--json", "--ideal-bytes", 8 << 20)
        assert len(p["dispatches"]) == 3
    assert cli("pmc", "--plan", "--target", "gfx942", "--json")["passes"]
    f1 = traces / "flash_attn_func/big/ui_output_agent_38430_dispatch_44"
    f2 = traces / "flash_attn_func/big/ui_output_agent_55287_dispatch_44_after_loc_fix"
    d = cli("diff", f1, f2, "--json", "--noise-floor", "1", "--top", "0")
    assert d["verdict"]["significant"] is not None and d["sites"]["moved"] > 0
    forced = cli("diff", pa / "big/ui_output_agent_10886_dispatch_209", f2, "--json", "--force")
    assert forced["forced"] and any(c["blocking"] for c in forced["comparability"])
    chk = cli("check", f2, "--baseline", f1, "--json", "--max-regression", "50")
    assert chk["passed"] and chk["change_percent"] == pytest.approx((chk["current"] - chk["baseline"]) / chk["baseline"] * 100)
    cli("check", f2, "--baseline", f1, "--json", "--max-regression", "0", code=20)
    rep = cli("report", vec, "-o", tmp_path / "r.html", "--json")
    assert rep["written"] == [{"path": str(tmp_path / "r.html"), "kind": "report", "bytes": (tmp_path / "r.html").stat().st_size}]
    md = cli("report", vec, "--format", "md", "-o", tmp_path / "md", "--json")
    assert [w["kind"] for w in md["written"]] == ["markdown", "analysis"]
    schemas.validate(json.loads((tmp_path / "md" / "analysis.json").read_text()))
    assert cli("report", "--diff", f1, f2, "-o", tmp_path / "d.html", "--json")["format"] == "diff"
    idx = cli("report", traces / "pa", traces / "rmsnorm", "-o", tmp_path / "site" / "index.html", "--json")
    assert [w["kind"] for w in idx["written"]] == ["report", "report", "index"] and len(idx["captures"]) == 2
    demo = cli("demo", "--out", tmp_path / "demo", "--json")
    assert demo["analysis"]["capture"]["path"] == demo["capture"]
    listing = cli("schema", "--json")
    assert sorted(s["name"] for s in listing["schemas"]) == sorted(f"attlens.{n}" for n in schemas.names())
    # failures print attlens.error
    assert cli("analyze", tmp_path / "nope", "--json", code=3)["error"]["kind"] == "InputNotFound"
    several = cli("analyze", traces / "flash_attn_func", "--json", code=5)["error"]
    assert len(several["candidates"]) == 4
    assert cli("diff", pa / "big/ui_output_agent_10886_dispatch_209", f2, "--json", code=21)["error"]["exit_code"] == 21


def test_profile_and_capture_validate(env):
    """profile / capture --json through the fake rocprofv3 (tests/fake_rocprofv3)."""
    app = ["--", sys.executable, "-c", APP, str(env["tmp"] / "marker.txt")]
    for args in (["profile", "--out", env["tmp"] / "p"], ["capture", "--kernel", "vecAddKernel_0", "--out", env["tmp"] / "c"]):
        doc = json.loads(run_attlens(env, *args, "--json", *app).stdout)
        schemas.validate(doc)
        assert doc["analysis"]["capture"]["waves"] == 632
        if args[0] == "profile":  # the chosen kernel is a row of the kernel table, as in attlens.kernels
            assert doc["kernel"] == next(r for r in doc["kernels"]["rows"] if r["name"] == "vecAddKernel_0")
        else:
            assert doc["kernel"] == {"name": "vecAddKernel_0"} and doc["kernels"] is None


def _analysis(cli):
    shared = require_shared()
    return cli("analyze", shared / "traces/pa/big/ui_output_agent_10886_dispatch_209", "--json")


@pytest.mark.parametrize("mutate, why", [
    (lambda d: d["hotspots"]["instructions_by_stall"][0].update(cls=d["hotspots"]["instructions_by_stall"][0].pop("class")), "renamed key"),
    (lambda d: d["totals"].update(stall=str(d["totals"]["stall"])), "number as a string"),
    (lambda d: d["totals"].update(latency=None), "null where a value is always known"),
    (lambda d: d["capture"].update(waves=-1), "negative count"),
    (lambda d: d.update(extra=1), "unknown top-level key"),
    (lambda d: d["occupancy"].pop("limiters"), "missing key"),
    (lambda d: d["stall_by_class"][0].update({"class": "wait_globl"}), "unknown stall class"),
    (lambda d: d.update(schema_version=2), "another major version"),
])
def test_schemas_catch_renamed_or_retyped_keys(cli, mutate, why):
    doc = _analysis(cli)
    bad = copy.deepcopy(doc)
    mutate(bad)
    with pytest.raises(ValidationError):
        schemas.validate(bad)


def test_bundle_is_self_contained(cli, capsys):
    """`attlens schema NAME` prints one document a validator needs nothing
    else for (the referenced schemas embedded by $id)."""
    doc = _analysis(cli)
    capsys.readouterr()
    assert main(["schema", "attlens.analyze"]) == 0
    bundled = json.loads(capsys.readouterr().out)
    assert bundled == schemas.bundle("analyze")
    Draft202012Validator(bundled).validate(doc)  # no registry
    demo = schemas.bundle("demo")
    assert set(demo["$defs"]) >= {schemas.PREFIX + "analyze", schemas.PREFIX + "defs"}
    assert main(["schema", "nope"]) == 2
    assert "no schema 'nope'" in capsys.readouterr().err


def test_kernels_json_nests_resources_and_varying_uses_their_keys():
    """docs and schema agree with the output: resources nested, `varying`
    keyed like `resources` (lds_bytes, not lds)."""
    from attlens.capture.kernels import KernelRow

    row = KernelRow(rank=1, name="k", calls=2, total_us=3.0, average_us=1.5, percent=100.0, lds_bytes=None, varying={"lds_bytes": [512, 1024], "grid": [(1, 1, 1), (2, 1, 1)]})
    d = row.to_dict()
    assert d["varying"] == {"lds_bytes": [512, 1024], "grid": [[1, 1, 1], [2, 1, 1]]} and d["resources"]["lds_bytes"] is None
    Draft202012Validator(schemas.load("kernels")["$defs"]["row"], registry=schemas.registry()).validate(d)
    assert attlens.__version__ == __version__
