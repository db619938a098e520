"""Shared by the sweep tests: an environment where `attlens profile` runs the
fake rocprofv3 (tests/fake_rocprofv3) replaying the real vec_add capture of
../shared, sweep files written for a test folder, and independent readers of
what the fake saw (which GPU each run was pinned to, and when)."""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from conftest import REPO, require_shared

FAKE = REPO / "tests" / "fake_rocprofv3"
VEC = "traces/vec_add"
KERNEL = "vecAddKernel_0"


def sweep_env(tmp: Path) -> dict:
    """Environment for `attlens sweep run` with the fake rocprofv3 on PATH."""
    shared = require_shared()
    vec = shared / VEC
    rocm = tmp / "rocm"
    (rocm / "lib").mkdir(parents=True, exist_ok=True)
    (rocm / "lib" / "librocprof-trace-decoder.so").write_bytes(b"")
    scen = {
        "version": "1.1.0",
        "discovery_dir": str(vec / "rocprofv3"),
        "discovery_prefix": "discover_",
        "captures": [str(vec / "big/ui_output_agent_14705_dispatch_25")],
        "results_json": str(vec / "rocprofv3/big_results.json"),
        "agent_info": str(vec / "rocprofv3/big_agent_info.csv"),
        "shells": 1,
    }
    (tmp / "scenario.json").write_text(json.dumps(scen))
    e = dict(os.environ)
    e.update(PATH=f"{FAKE}{os.pathsep}{e['PATH']}", ROCM_PATH=str(rocm), LD_LIBRARY_PATH="", FAKE_ROCPROF_SCENARIO=str(tmp / "scenario.json"),
             FAKE_ROCPROF_GPU_LOG=str(tmp / "gpu.jsonl"), PYTHONPATH=os.pathsep.join([str(REPO / "src"), e.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    for var in ("ROCPROF_ATT_LIBRARY_PATH", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL",
                "FAKE_ROCPROF_SLEEP", "FAKE_ROCPROF_HANG_PIDS", "FAKE_ROCPROF_HANG", "FAKE_ROCPROF_FAIL_TIMES", "FAKE_ROCPROF_LOG"):
        e.pop(var, None)
    return e


def toml_value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)


def write_sweep(path: Path, jobs: list[dict], defaults: dict | None = None) -> Path:
    """A TOML sweep file (values written as JSON literals, which TOML reads alike)."""
    lines = ["version = 1", ""]
    if defaults:
        lines.append("[defaults]")
        lines += [f"{k} = {toml_value(v)}" for k, v in defaults.items()]
        lines.append("")
    for j in jobs:
        lines.append("[[jobs]]")
        lines += [f"{k} = {toml_value(v)}" for k, v in j.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


def attlens(env: dict, *args, code: int | None = 0, timeout: float = 300, cwd=None) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "attlens", *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    assert "Traceback" not in p.stdout + p.stderr, p.stderr[-3000:]
    if code is not None:
        assert p.returncode == code, f"exit {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    if "--json" in map(str, args) and p.stdout.strip():
        from attlens import schemas

        schemas.validate(json.loads(p.stdout))  # every --json document against its shipped schema
    return p


def status(env: dict, out: Path) -> dict:
    return json.loads(attlens(env, "sweep", "status", out, "--json").stdout)


def fake_runs(tmp: Path) -> list[dict]:
    """Every rocprofv3 run the fake saw (discovery and capture), with the job
    and attempt it belonged to (from its output path) and its pinning."""
    runs = []
    p = tmp / "gpu.jsonl"
    if not p.is_file():
        return runs
    for line in p.read_text().splitlines():
        r = json.loads(line)
        parts = Path(r["out"] or "").parts
        if "jobs" in parts:
            i = parts.index("jobs")
            r["job"], r["attempt"] = parts[i + 1], parts[i + 2]
            runs.append(r)
    return runs


def attempt_intervals(runs: list[dict]) -> dict[tuple[str, str], dict]:
    """Per (job, attempt): the GPU its rocprofv3 runs saw and [first start, last end]."""
    out: dict[tuple[str, str], dict] = {}
    for r in runs:
        k = (r["job"], r["attempt"])
        cur = out.setdefault(k, {"gpus": set(), "start": r["start"], "end": r["end"], "env": []})
        cur["gpus"].add(r["ROCR_VISIBLE_DEVICES"])
        cur["start"], cur["end"] = min(cur["start"], r["start"]), max(cur["end"], r["end"])
        cur["env"].append(r)
    return out


def assert_exclusive(intervals: dict) -> None:
    """No two attempts overlap in time on the same GPU, and each attempt saw one GPU."""
    by_gpu: dict[str, list] = {}
    for k, v in intervals.items():
        assert len(v["gpus"]) == 1 and None not in v["gpus"], (k, v["gpus"])
        by_gpu.setdefault(next(iter(v["gpus"])), []).append((v["start"], v["end"], k))
    for gpu, iv in by_gpu.items():
        iv.sort()
        for (s0, e0, k0), (s1, e1, k1) in zip(iv, iv[1:]):
            assert s1 >= e0, f"GPU {gpu}: {k0} [{s0:.3f}, {e0:.3f}] overlaps {k1} [{s1:.3f}, {e1:.3f}]"
    return by_gpu


def vec_duration_us(shared: Path) -> float:
    """Mean duration of vecAddKernel_0 in the discovery kernel trace, read with csv only."""
    with open(shared / VEC / "rocprofv3/discover_kernel_trace.csv", newline="") as fh:
        ds = [int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in csv.DictReader(fh) if r["Kernel_Name"] == KERNEL]
    return sum(ds) / len(ds) / 1000.0


def vec_dispatch_us(shared: Path, dispatch_id: int) -> float:
    """Duration of one dispatch in the discovery kernel trace, read with csv only."""
    with open(shared / VEC / "rocprofv3/discover_kernel_trace.csv", newline="") as fh:
        (d,) = [int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in csv.DictReader(fh) if int(r["Dispatch_Id"]) == dispatch_id]
    return d / 1000.0


def vec_median_us(shared: Path, dispatch_id: int) -> float:
    """The plan's duration: the median End - Start of the discovery trace's dispatches
    with the same kernel name and grid as ``dispatch_id``, read with csv only."""
    with open(shared / VEC / "rocprofv3/discover_kernel_trace.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    me = next(r for r in rows if int(r["Dispatch_Id"]) == dispatch_id)
    shape = ("Kernel_Name", "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z")
    ns = sorted(int(r["End_Timestamp"]) - int(r["Start_Timestamp"]) for r in rows if all(r[k] == me[k] for k in shape))
    n = len(ns)
    return (ns[n // 2] if n % 2 else round((ns[n // 2 - 1] + ns[n // 2]) / 2)) / 1000.0


def vec_waves(shared: Path) -> int:
    """Wave files listed in filenames.json (se → cu → slot → wave → [file, begin, end])."""
    def leaves(x):
        return 1 if isinstance(x, list) else sum(leaves(v) for v in x.values())

    doc = json.loads((shared / VEC / "big/ui_output_agent_14705_dispatch_25/filenames.json").read_text())
    return leaves(doc["wave_filenames"])


def manifest_rows(out: Path, sql: str, args=()) -> list[tuple]:
    con = sqlite3.connect(str(out / "manifest.sqlite"))
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def wait_dead(pids, seconds: float = 10.0) -> list[int]:
    deadline = time.monotonic() + seconds
    left = [p for p in pids if alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if alive(p)]
    return left


def normalized(doc: dict, out: Path) -> dict:
    """A sweep status reduced to what must not depend on the engine: states,
    attempts and their outcomes, exit codes, errors, paths and headline figures."""
    def fix(x):
        return None if x is None else str(x).replace(str(out), "DIR")

    jobs = {}
    for j in doc["jobs"]:
        jobs[j["job"]] = {
            "state": j["state"], "attempts": j["attempts"], "exit_code": j["exit_code"], "error": fix(j["error"]),
            "attempt_dir": j["attempt_dir"], "capture": j["capture"], "report": j["report"], "summary": j["summary"],
            "history": [(a["attempt"], a["outcome"], a["exit_code"], fix(a["error"])) for a in j["attempt_history"]],
        }
    return {"counts": doc["counts"], "jobs": jobs}
