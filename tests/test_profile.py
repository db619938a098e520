"""attlens profile / capture end to end against the fake rocprofv3
(tests/fake_rocprofv3), which honours the documented CLI contract and replays
the real files of ../shared."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attlens.capture.jobfile import parse_iteration_range, validate_job_file
from conftest import REPO, require_shared

FAKE = REPO / "tests" / "fake_rocprofv3"
APP = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('ran')"


@pytest.fixture()
def env(tmp_path):
    shared = require_shared()
    vec = shared / "traces/vec_add"
    rocm = tmp_path / "rocm"
    (rocm / "lib").mkdir(parents=True)
    (rocm / "lib" / "librocprof-trace-decoder.so").write_bytes(b"")
    scen = {
        "version": "1.1.0",
        "discovery_dir": str(vec / "rocprofv3"),
        "discovery_prefix": "discover_",
        "captures": [str(vec / "big/ui_output_agent_14705_dispatch_25")],
        "results_json": str(vec / "rocprofv3/big_results.json"),
        "agent_info": str(vec / "rocprofv3/big_agent_info.csv"),
        "shells": 2,
    }
    e = dict(os.environ)
    e.update(PATH=f"{FAKE}{os.pathsep}{e['PATH']}", ROCM_PATH=str(rocm), LD_LIBRARY_PATH="", FAKE_ROCPROF_LOG=str(tmp_path / "calls.jsonl"))
    e.pop("ROCPROF_ATT_LIBRARY_PATH", None)

    def write(**over):
        s = {**scen, **over}
        p = tmp_path / "scenario.json"
        p.write_text(json.dumps(s))
        e["FAKE_ROCPROF_SCENARIO"] = str(p)
        return e

    write()
    return {"env": e, "write": write, "tmp": tmp_path, "rocm": rocm, "shared": shared}


def attlens(e, *args, code=0):
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, env=e["env"], timeout=300, cwd=e["tmp"])
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == code, p.stdout[-2000:] + p.stderr
    return p


def app_args(e):
    return ["--", sys.executable, "-c", APP, str(e["tmp"] / "marker.txt")]


def test_profile_success(env):
    out = env["tmp"] / "prof"
    doc = json.loads(attlens(env, "profile", "--out", out, "--json", *app_args(env)).stdout)
    assert (env["tmp"] / "marker.txt").read_text() == "ran"  # the program ran under rocprofv3
    assert doc["schema"] == "attlens.profile"
    assert doc["rocprofv3_version"] == "1.1.0" and doc["target"] == "gfx950"
    assert doc["kernel"]["name"] == "vecAddKernel_0"
    assert doc["dispatches_per_kernel_id"] == 24
    assert doc["iterations"] == [12, 13] and "steady state" in doc["iteration_reason"]
    # job file: only `jobs`, anchored regex, iteration set
    job_doc = yaml.safe_load(Path(doc["job_file"]).read_text())
    validate_job_file(job_doc)
    job = job_doc["jobs"][0]
    assert job["kernel_include_regex"] == "^vecAddKernel_0$"
    assert parse_iteration_range(job["kernel_iteration_range"]) == {12, 13}
    assert job["output_format"] == ["json", "csv"] and job["advanced_thread_trace"] is True
    # two dispatches kept, shells moved aside, best capture analyzed
    assert len(doc["captures"]) == 2 and all(c["waves"] == 632 for c in doc["captures"])
    assert len(doc["empty_shells_moved_to"]) == 4
    assert all("empty_shells" in p and Path(p).is_dir() for p in doc["empty_shells_moved_to"])
    assert doc["noise_check"]["max_class_share_difference"] == 0.0
    assert doc["analysis"]["capture"]["waves"] == 632
    assert doc["environment"]["FLYDSL_DEBUG_ENABLE_DEBUG_INFO"] == "1"
    # every rocprofv3 run: an argument list, logs kept
    calls = [json.loads(x) for x in (env["tmp"] / "calls.jsonl").read_text().splitlines()]
    disc = next(c for c in calls if "--kernel-trace" in c)
    assert disc[disc.index("-f") + 1 : disc.index("-f") + 3] == ["csv", "json"] and "-d" in disc and "-o" in disc
    assert any("--echo" in c and "--att" in c for c in calls)
    for name in ("discovery", "decoder_check", "capture"):
        assert (out / "logs" / f"{name}.stderr.txt").is_file()


def test_profile_terminal_and_second_run_keeps_the_first(env):
    out = env["tmp"] / "prof"
    p = attlens(env, "profile", "--out", out, *app_args(env))
    assert "vecAddKernel_0" in p.stdout and "next: attlens report" in p.stdout
    first = sorted((out / "att").glob("ui_output_*"))
    p2 = json.loads(attlens(env, "profile", "--out", out, "--json", *app_args(env)).stdout)
    assert p2["out_dir"].endswith("prof-2")
    assert sorted((out / "att").glob("ui_output_*")) == first  # untouched


def test_no_rocprofv3(env):
    env["env"]["PATH"] = os.pathsep.join(p for p in env["env"]["PATH"].split(os.pathsep) if "fake_rocprofv3" not in p)
    if subprocess.run(["which", "rocprofv3"], env=env["env"], capture_output=True).returncode == 0:
        pytest.skip("a real rocprofv3 is installed here")
    p = attlens(env, "profile", "--out", env["tmp"] / "o", *app_args(env), code=10)
    assert p.stderr.startswith("attlens: error: rocprofv3 not found")


def test_no_decoder(env):
    (env["rocm"] / "lib" / "librocprof-trace-decoder.so").unlink()
    p = attlens(env, "profile", "--out", env["tmp"] / "o", *app_args(env), code=11)
    assert "decoder" in p.stderr and "--att-library-path" in p.stderr
    # the flag is honoured: point it at a directory that has the library
    lib = env["tmp"] / "mylib"
    lib.mkdir()
    (lib / "librocprof-trace-decoder.so").write_bytes(b"")
    attlens(env, "profile", "--out", env["tmp"] / "o2", "--att-library-path", lib, *app_args(env))


def test_kernel_not_found(env):
    p = attlens(env, "profile", "--out", env["tmp"] / "o", "--kernel", "no_such_kernel", *app_args(env), code=12)
    assert "no_such_kernel" in p.stderr
    p = attlens(env, "profile", "--out", env["tmp"] / "o3", "--iteration", "99", *app_args(env), code=12)
    assert "iteration 99" in p.stderr


def test_no_waves_on_traced_cu(env):
    env["write"](no_waves=True)
    out = env["tmp"] / "o"
    p = attlens(env, "profile", "--out", out, *app_args(env), code=13)
    assert "no wave ran on the traced CU" in p.stderr and "--se-mask" in p.stderr
    assert len(list((out / "att" / "empty_shells").iterdir())) == 4


def test_consumer_rdna_gets_timing_only(env):
    shared = env["shared"]
    disc = env["tmp"] / "rdna"
    disc.mkdir()
    src = shared / "rocprofv3-samples/gfx1151-sys-trace"
    (disc / "decode_kernel_trace.csv").write_text((src / "decode_kernel_trace.csv").read_text())
    real_agents = (shared / "traces/vec_add/rocprofv3/discover_agent_info.csv").read_text()
    (disc / "decode_agent_info.csv").write_text(real_agents.replace("gfx950", "gfx1151"))
    env["write"](discovery_dir=str(disc), discovery_prefix="decode_")
    doc = json.loads(attlens(env, "profile", "--out", env["tmp"] / "o", "--json", *app_args(env)).stdout)
    assert doc["att_available"] is False and "gfx1151" in doc["att_unavailable_reason"]
    assert doc["kernels"]["rows"] and doc["captures"] == []
    # the kernel is still named (the largest by total time), and the sweep row of such a job keeps its timing and shape
    import csv

    from attlens.sweep.summary import summarize_without_capture

    rows = list(csv.DictReader((src / "decode_kernel_trace.csv").open()))
    total: dict[str, int] = {}
    for r in rows:
        total[r["Kernel_Name"]] = total.get(r["Kernel_Name"], 0) + int(r["End_Timestamp"]) - int(r["Start_Timestamp"])
    picked = next(r for r in doc["kernels"]["rows"] if not r["excluded"])  # largest total time, runtime helpers left out
    assert doc["kernel"]["name"] == picked["name"] and round(picked["total_us"] * 1000) == total[picked["name"]]
    row = summarize_without_capture(doc, "s")
    mine = [r for r in rows if r["Kernel_Name"] == row["kernel"]]
    assert row["duration_us"] == pytest.approx(total[row["kernel"]] / len(mine) / 1000, abs=1e-3)
    grids = {tuple(int(r[f"Grid_Size_{a}"]) for a in "XYZ") for r in mine}
    groups = {tuple(int(r[f"Workgroup_Size_{a}"]) for a in "XYZ") for r in mine}
    assert row["grid"] == (list(grids.pop()) if len(grids) == 1 else None)
    assert row["workgroup"] == (list(groups.pop()) if len(groups) == 1 else None)
    assert row["grid"] is not None or row["workgroup"] is not None  # one of them known: the keys are really read


def test_capture_known_kernel(env):
    doc = json.loads(attlens(env, "capture", "--kernel", "vecAddKernel_0", "--iteration", "6", "--no-noise-check", "--out", env["tmp"] / "c", "--json", *app_args(env)).stdout)
    assert doc["iterations"] == [6] and len(doc["captures"]) == 1
    assert Path(doc["best_capture"]).name == "ui_output_agent_14705_dispatch_25"  # the 6th vecAddKernel_0 launch


def test_pmc_runs_passes_and_merges_them(env):
    out = env["tmp"] / "pmc"
    doc = json.loads(attlens(env, "pmc", "--target", "gfx950", "--kernel", "vecAddKernel_0", "--out", out, "--json", *app_args(env)).stdout)
    job_doc = yaml.safe_load((out / "pmc_input.yaml").read_text())
    validate_job_file(job_doc)
    jobs = job_doc["jobs"]
    assert len(jobs) > 1 and all(sum(1 for c in j["pmc"] if c.startswith("TCC")) <= 4 for j in jobs)
    assert all(j["kernel_include_regex"] == "^vecAddKernel_0$" for j in jobs)
    passes = sorted((out / "pmc").glob("pass_*/*counter_collection.csv"))
    assert len(passes) == len(jobs)
    wanted = {c for j in jobs for c in j["pmc"]}
    assert len(doc["dispatches"]) == 3  # the first three vecAddKernel_0 dispatches, every pass merged by dispatch id
    import zlib

    for d in doc["dispatches"]:
        # every counter of every pass arrived with the value the fake wrote for this dispatch
        got = {k.removesuffix("_sum"): v for k, v in d["counters"].items()}
        for c in wanted:
            assert got[c.removesuffix("_sum")] == zlib.crc32(f"{d['dispatch_id']}:{c}".encode()) % 100000, c


def test_capture_defaults_to_a_steady_state_iteration(env, shared):
    """Without --iteration, capture counts the kernel's dispatches in a
    kernel-trace run and traces iteration n/2 (not the warm-up dispatch 1),
    as profile does; the count is recomputed here from the discovery CSV."""
    import csv

    with open(shared / "traces/vec_add/rocprofv3/discover_kernel_trace.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["Kernel_Name"] == "vecAddKernel_0"]
    per_id: dict[str, int] = {}
    for r in rows:
        per_id[r["Kernel_Id"]] = per_id.get(r["Kernel_Id"], 0) + 1
    n = max(per_id.values())
    doc = json.loads(attlens(env, "capture", "--kernel", "vecAddKernel_0", "--no-noise-check", "-o", env["tmp"] / "c", "--json", *app_args(env)).stdout)
    assert doc["iterations"] == [max(2, n // 2)] and "steady state" in doc["iteration_reason"]
    assert any(s["step"] == "discovery" for s in doc["steps"])
    # a name the program never dispatched: exit 12, not a capture of nothing
    attlens(env, "capture", "--kernel", "noSuchKernel", "-o", env["tmp"] / "d", *app_args(env), code=12)
