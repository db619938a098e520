"""attlens sweep with the local engine, end to end against the fake rocprofv3
(replaying the real vec_add capture of ../shared) on four fake GPUs: pinning
is exclusive, a hanging job is ended with its children, transient failures
are retried then recorded, permanent ones are not retried, a killed sweep
resumes without redoing finished jobs; the dashboard and FINDINGS.md carry
the manifest's numbers, which are the capture's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attlens import __version__ as attlens_version

from sweep_helpers import (
    KERNEL,
    alive,
    assert_exclusive,
    attempt_intervals,
    attlens,
    fake_runs,
    manifest_rows,
    sweep_env,
    vec_median_us,
    vec_waves,
    wait_dead,
    write_sweep,
)

GPUS = "0,1,2,3"
HANG_TIMEOUT = 6


def _main_jobs(tmp: Path) -> list[dict]:
    return [
        {"name": "g1", "shape": "n=2560000", "tags": ["vec"]},
        {"name": "g2"},
        {"name": "g3"},
        {"name": "g4", "command": "python3 -c pass"},
        {"name": "nokernel", "kernel": "no_such_kernel"},
        {"name": "flaky", "env": {"FAKE_ROCPROF_FAIL_TIMES": "1", "FAKE_ROCPROF_FAIL_STATE": str(tmp / "flaky.state")}},
        {"name": "broken", "env": {"FAKE_ROCPROF_FAIL_TIMES": "99", "FAKE_ROCPROF_FAIL_STATE": str(tmp / "broken.state")}},
        {"name": "hang", "timeout": HANG_TIMEOUT, "retries": 0, "env": {"FAKE_ROCPROF_HANG_PIDS": str(tmp / "hang.pids")}},
        {"name": "nocwd", "cwd": "no/such/dir"},
    ]


DEFAULTS = {"argv": ["true"], "kernel": "vecAdd", "retries": 1, "backoff": 0.2, "timeout": 120, "env": {"FAKE_ROCPROF_SLEEP": "0.4"},
            "tags": ["test"]}


@pytest.fixture(scope="module")
def main_sweep(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    env = sweep_env(tmp)
    sweep = write_sweep(tmp / "sweep.toml", _main_jobs(tmp), DEFAULTS)
    out = tmp / "out"
    t0 = time.monotonic()
    p = attlens(env, "sweep", "run", sweep, "--out", out, "--gpus", GPUS, "--json", code=31)
    seconds = time.monotonic() - t0
    return {"tmp": tmp, "env": env, "sweep": sweep, "out": out, "doc": json.loads(p.stdout), "stderr": p.stderr, "seconds": seconds,
            "runs": fake_runs(tmp)}


def _jobs(doc) -> dict:
    return {j["job"]: j for j in doc["jobs"]}


def test_states_attempts_and_failure_classes(main_sweep):
    doc = main_sweep["doc"]
    assert doc["schema"] == "attlens.sweep_status" and doc["engine"] == "local"
    assert doc["counts"] == {"pending": 0, "running": 0, "done": 5, "failed": 4}
    j = _jobs(doc)
    for name in ("g1", "g2", "g3", "g4"):
        assert j[name]["state"] == "done" and j[name]["attempts"] == 1 and j[name]["exit_code"] == 0
        assert [a["outcome"] for a in j[name]["attempt_history"]] == ["done"]
    # permanent: kernel not found (exit 12) is not retried
    assert j["nokernel"]["state"] == "failed" and j["nokernel"]["attempts"] == 1 and j["nokernel"]["exit_code"] == 12
    assert "no_such_kernel" in j["nokernel"]["error"]
    # a program that cannot start is permanent too
    assert j["nocwd"]["state"] == "failed" and j["nocwd"]["attempts"] == 1 and j["nocwd"]["exit_code"] is None
    assert j["nocwd"]["error"].startswith("cannot start the job") and "no/such/dir" in j["nocwd"]["error"]
    # transient (rocprofv3 failed, exit 14): retried once, then done
    assert j["flaky"]["state"] == "done" and [(a["outcome"], a["exit_code"]) for a in j["flaky"]["attempt_history"]] == [("retry", 14), ("done", 0)]
    assert j["flaky"]["attempt_dir"] == "jobs/flaky/attempt-2"
    # transient every time: retries exhausted, recorded as failed with its error
    assert j["broken"]["state"] == "failed" and [(a["outcome"], a["exit_code"]) for a in j["broken"]["attempt_history"]] == [("retry", 14), ("failed", 14)]
    assert "HSA_STATUS_ERROR_OUT_OF_RESOURCES" in j["broken"]["error"]
    # the backoff was honoured: the retry started at least `backoff` after the failure
    h = j["broken"]["attempt_history"]
    assert h[1]["started_at"] - h[0]["ended_at"] >= DEFAULTS["backoff"]
    # one folder per job, a log per job with every attempt
    log = (main_sweep["out"] / "jobs/flaky/job.log").read_text()
    assert "=== attempt 1" in log and "=== attempt 2" in log and "planted failure 1" in log
    assert "4 job(s) failed" in main_sweep["stderr"]


def test_gpu_pinning_is_exclusive(main_sweep):
    runs = main_sweep["runs"]
    # every rocprofv3 run was pinned: ROCR_VISIBLE_DEVICES = a sweep GPU, HIP sees exactly that one as device 0
    assert runs and all(r["ROCR_VISIBLE_DEVICES"] in GPUS.split(",") and r["HIP_VISIBLE_DEVICES"] == "0" for r in runs)
    iv = attempt_intervals(runs)
    by_gpu = assert_exclusive(iv)
    assert len(by_gpu) == 4, "the jobs spread over the four GPUs"
    # the manifest records the GPU each attempt really saw
    for j in main_sweep["doc"]["jobs"]:
        for a in j["attempt_history"]:
            seen = iv.get((j["job"], f"attempt-{a['attempt']}"))
            if seen is not None:
                assert seen["gpus"] == {a["gpu"]}, (j["job"], a)


def test_hanging_job_is_ended_with_its_children(main_sweep):
    j = _jobs(main_sweep["doc"])["hang"]
    assert j["state"] == "failed" and j["attempts"] == 1
    assert j["error"].startswith(f"timed out after {HANG_TIMEOUT} s")
    h = j["attempt_history"][0]
    assert HANG_TIMEOUT <= h["seconds"] < HANG_TIMEOUT + 15
    rocprof, grandchild = map(int, (main_sweep["tmp"] / "hang.pids").read_text().split())
    # the grandchild started its own session: ending the job's process group alone would have missed it
    assert wait_dead([rocprof, grandchild], 5) == []


def test_headline_figures_are_the_captures(main_sweep, shared):
    out = main_sweep["out"]
    j = _jobs(main_sweep["doc"])["g1"]
    s = j["summary"]
    assert (out / j["report"]).is_file() and (out / j["capture"] / "filenames.json").is_file()
    # recomputed independently from the shared capture and its discovery trace
    assert s["kernel"] == KERNEL and s["target"] == "gfx950"
    assert s["waves"] == vec_waves(shared)
    # the plan's duration: the median of the run's same-grid dispatches (the traced dispatch's own row is one of them)
    assert s["duration_us"] == pytest.approx(vec_median_us(shared, s["dispatch_id"]), abs=5e-4)
    assert s["shape"] == "n=2560000" and s["grid"] == [2560000, 1, 1] and s["workgroup"] == [256, 1, 1]
    # the same numbers as attlens analyze --json of the job's capture
    a = json.loads(attlens(main_sweep["env"], "analyze", out / j["capture"], "--rocprof-dir", out / j["attempt_dir"] / "profile/discovery",
                           "--json", code=None).stdout)
    t = a["totals"]
    assert (s["total_cycles"], s["latency"], s["stall"], s["idle"]) == (t["latency"] + t["idle"], t["latency"], t["stall"], t["idle"])
    top = max(a["stall_by_class"], key=lambda c: c["stall"])
    assert s["dominant_class"] == top["class"] and s["dominant_class_share"] == pytest.approx(top["stall"] / t["stall"], abs=1e-6)
    assert sum(s["stall_mix"].values()) == pytest.approx(1.0, abs=1e-4)
    assert s["occupancy"]["theoretical"] == a["occupancy"]["theoretical_waves_per_simd"]
    assert s["occupancy"]["observed"] == a["occupancy"]["observed_max_waves_per_simd_traced_cu"]
    plan = json.loads(attlens(main_sweep["env"], "plan", out / j["capture"], "--rocprof-dir", out / j["attempt_dir"] / "profile/discovery",
                              "--json", code=None).stdout)
    lead = [f for f in plan["findings"] if f["kind"] in ("dispatch", "performance")] or [f for f in plan["findings"] if f["kind"] == "note"]
    assert s["top_finding"]["rule"] == lead[0]["rule"] and s["top_finding"]["title"] == lead[0]["title"]
    # the plan's bandwidth estimate (recomputed from the raw trace in test_plan_real): known here, so never blank
    assert plan["bandwidth"]["available"] and s["bandwidth_fraction"] == pytest.approx(plan["bandwidth"]["fraction_of_peak"], abs=1e-4)


def test_status_terminal(main_sweep):
    p = attlens(main_sweep["env"], "sweep", "status", main_sweep["out"])
    assert "9 job(s): 5 done, 4 failed" in p.stdout and "broken" in p.stdout and "job.log" in p.stdout


def test_dashboard_rows_equal_the_manifest(main_sweep, tmp_path):
    out = main_sweep["out"]
    doc = json.loads(attlens(main_sweep["env"], "sweep", "report", out, "--json").stdout)
    assert Path(doc["dashboard"]) == out / "dashboard.html" and Path(doc["findings_md"]) == out / "FINDINGS.md"
    m = _jobs(main_sweep["doc"])
    assert [r["job"] for r in doc["rows"]] == [j["job"] for j in main_sweep["doc"]["jobs"]]
    for r in doc["rows"]:
        assert r["summary"] == m[r["job"]]["summary"] and r["state"] == m[r["job"]]["state"]
        if r["href"]:
            assert (out / r["href"]).resolve() == (out / m[r["job"]]["report"]).resolve()
    page = (out / "dashboard.html").read_text()
    assert "Content-Security-Policy" in page and "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page
    md = (out / "FINDINGS.md").read_text()
    for title in ("## Grid-starved", "## Bandwidth-bound", "## Issue-bound", "## Top finding of each job", "## Failed"):
        assert title in md
    from attlens.report.markdown import _text  # FINDINGS.md escapes Markdown like every report

    top = m["g1"]["summary"]["top_finding"]
    assert _text(top["title"]) in md and "broken" in md and "HSA\\_STATUS\\_ERROR\\_OUT\\_OF\\_RESOURCES" in md
    # elsewhere: links are relative to the dashboard
    d2 = json.loads(attlens(main_sweep["env"], "sweep", "report", out, "-o", tmp_path / "x" / "d.html", "--json").stdout)
    r = next(r for r in d2["rows"] if r["job"] == "g1")
    assert (tmp_path / "x" / r["href"]).resolve() == (out / m["g1"]["report"]).resolve()


def test_categories_follow_the_rule_registry(main_sweep, monkeypatch):
    """A rule whose id names a category fills it, without a change to the sweep code."""
    from attlens.analysis import plan as plan_mod
    from attlens.sweep.dashboard import categorize, findings_markdown

    rows = [{"job": j["job"], "state": j["state"], "attempts": j["attempts"], "exit_code": j["exit_code"], "error": j["error"],
             "summary": j["summary"]} for j in main_sweep["doc"]["jobs"]]
    from attlens.sweep.dashboard import CATEGORIES

    cats = {c["id"]: c for c in categorize(rows)}
    registered = sorted(plan_mod.load_rules())
    md = findings_markdown(rows, list(cats.values()), {"source": "sweep", "dir": "D", "counts": {}})
    for cid, _title, _meaning, rx in CATEGORIES:
        assert cats[cid]["rules"] == [r for r in registered if rx.search(r)]
        if not cats[cid]["rules"]:  # said honestly, not shown as "no kernel is"
            assert not cats[cid]["jobs"] and "No rule of this attlens detects this yet" in md
    # plant a finding of a (future) rule id in one row: it lands in its category
    monkeypatch.setitem(plan_mod.REGISTRY, "grid-starvation", plan_mod.REGISTRY[next(iter(registered))])
    planted = json.loads(json.dumps(rows))
    s = next(r for r in planted if r["job"] == "g2")["summary"]
    s["findings"].append({"rule": "grid-starvation", "kind": "performance", "severity": "HIGH", "title": "Grid leaves CUs idle", "share": 0.3,
                          "confidence": 0.9})
    got = {c["id"]: c for c in categorize(planted)}
    assert [h["job"] for h in got["grid-starved"]["jobs"]] == ["g2"] and "grid-starvation" in got["grid-starved"]["rules"]
    assert "Grid leaves CUs idle" in findings_markdown(planted, list(got.values()), {"source": "sweep", "dir": "D", "counts": {}})


def test_rerun_skips_done_and_retries_failed(main_sweep):
    env, out, tmp = main_sweep["env"], main_sweep["out"], main_sweep["tmp"]
    before = {j["job"]: j for j in main_sweep["doc"]["jobs"]}
    n_runs = len(fake_runs(tmp))
    env = {**env}
    p = attlens(env, "sweep", "run", main_sweep["sweep"], "--out", out, "--gpus", GPUS, "--only", "g1,g2,nokernel,broken", "--json", code=31)
    doc = json.loads(p.stdout)
    j = _jobs(doc)
    for name in ("g1", "g2"):  # done: not run again
        assert j[name]["attempts"] == 1 and j[name]["attempt_dir"] == before[name]["attempt_dir"]
        assert not (out / "jobs" / name / "attempt-2").exists()
    assert j["nokernel"]["attempts"] == 2 and j["nokernel"]["state"] == "failed"  # failed: retried
    assert j["broken"]["attempts"] == 4 and j["broken"]["state"] == "failed"
    runs = fake_runs(tmp)[n_runs:]
    assert {r["job"] for r in runs} == {"nokernel", "broken"}


def test_result_written_but_not_recorded_is_not_redone(main_sweep, tmp_path):
    """A sweep killed after a job's result.json was written but before the
    manifest said so: the next run records it from disk, no new attempt."""
    out = tmp_path / "out"
    shutil.copytree(main_sweep["out"], out)
    con = sqlite3.connect(str(out / "manifest.sqlite"))
    with con:
        con.execute("UPDATE jobs SET state = 'running', summary = NULL, report = NULL WHERE job_id = 'g3'")
        con.execute("UPDATE attempts SET outcome = 'analyzing', ended_at = NULL WHERE job_id = 'g3'")
    con.close()
    (out / "jobs/g3/attempt-1/attempt.json").unlink()
    doc = json.loads(attlens(main_sweep["env"], "sweep", "run", main_sweep["sweep"], "--out", out, "--gpus", GPUS, "--only", "g3",
                             "--json").stdout)
    g3 = _jobs(doc)["g3"]
    assert g3["state"] == "done" and g3["attempts"] == 1 and g3["report"] == "jobs/g3/attempt-1/report.html"
    assert g3["summary"] == _jobs(main_sweep["doc"])["g3"]["summary"]
    assert not (out / "jobs/g3/attempt-2").exists()


def _wait_for(pred, seconds: float):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("condition not reached in time")


def _done(out: Path) -> set[str]:
    try:
        return {r[0] for r in manifest_rows(out, "SELECT job_id FROM jobs WHERE state = 'done'")}
    except sqlite3.Error:
        return set()


def test_killed_sweep_resumes_without_redoing_finished_jobs(tmp_path):
    env = sweep_env(tmp_path)
    jobs = [{"name": f"k{i}"} for i in range(5)]
    sweep = write_sweep(tmp_path / "sweep.toml", jobs, {"argv": ["true"], "kernel": "vecAdd", "env": {"FAKE_ROCPROF_SLEEP": "0.7"}})
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "attlens", "sweep", "run", str(sweep), "--out", str(out), "--gpus", "0,1"]

    # 1. SIGKILL: no cleanup at all
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    first = _wait_for(lambda: _done(out), 120)
    p.send_signal(signal.SIGKILL)
    p.wait()
    done1 = _done(out)
    assert first <= done1
    attempts1 = {r[0]: r[1] for r in manifest_rows(out, "SELECT job_id, attempts FROM jobs")}
    left = [r for r in manifest_rows(out, "SELECT job_id, attempt, pid FROM attempts WHERE outcome IN ('running', 'analyzing')")]

    # 2. SIGTERM: the sweep ends its jobs' trees and records them as interrupted
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _wait_for(lambda: len(_done(out)) > len(done1) and manifest_rows(out, "SELECT COUNT(*) FROM attempts WHERE outcome = 'running'")[0][0], 120)
    running = manifest_rows(out, "SELECT job_id, attempt, pid FROM attempts WHERE outcome = 'running' AND engine = 'local'")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err
    for job, n, pid in running:
        assert wait_dead([pid], 5) == [], f"{job} attempt {n} still running after SIGTERM"
        outcome = manifest_rows(out, "SELECT outcome FROM attempts WHERE job_id = ? AND attempt = ?", (job, n))[0][0]
        assert outcome in ("interrupted", "done", "retry"), outcome
    # what the SIGKILLed sweep left running was ended by the next run and recorded as lost (or, had it
    # finished its result in between, as done from its result.json), then run again
    assert left, "the sweep was killed while jobs ran"
    assert all(not alive(pid) for _, _, pid in left if pid)
    settled = {(r[0], r[1]): r[2] for r in manifest_rows(out, "SELECT job_id, attempt, outcome FROM attempts")}
    assert all(settled[(j, n)] in ("lost", "done") for j, n, _ in left), settled
    assert "left running by a stopped sweep" in err
    done2 = _done(out)

    # 3. to the end: nothing finished before is redone
    doc = json.loads(attlens(env, "sweep", "run", sweep, "--out", out, "--gpus", "0,1", "--json").stdout)
    j = _jobs(doc)
    assert doc["counts"]["done"] == 5
    for name in done1:
        assert j[name]["attempts"] == attempts1[name], f"{name} was done before the kill and ran again"
    for name in done2:
        assert len([a for a in j[name]["attempt_history"] if a["outcome"] == "done"]) == 1
    for name, info in j.items():
        assert (out / info["report"]).is_file()
        dirs = sorted(p.name for p in (out / "jobs" / name).iterdir() if p.name.startswith("attempt-"))
        assert len(dirs) == info["attempts"]


# --------------------------------------------------------------------------- sweep file, init, GPUs


def test_init_writes_examples_that_validate(tmp_path):
    from attlens.sweep.spec import load_sweep

    env = dict(os.environ)
    attlens(env, "sweep", "init", tmp_path / "s.toml")
    doc = json.loads(attlens(env, "sweep", "init", tmp_path / "s.yaml", "--json").stdout)
    assert doc == {"schema": "attlens.sweep_init", "schema_version": 1, "attlens_version": attlens_version, "path": str(tmp_path / "s.yaml"), "format": "yaml"}
    t, y = load_sweep(tmp_path / "s.toml"), load_sweep(tmp_path / "s.yaml")
    assert [j.to_dict() for j in t.jobs] == [j.to_dict() for j in y.jobs] and len(t.jobs) == 3
    assert t.jobs[1].argv == ["python3", "bench_gemm.py", "--m", "8192", "--n", "8192", "--k", "8192"]  # command split, no shell
    assert t.jobs[0].tags == ["flydsl", "gemm"] and t.jobs[2].env == {"PYTHONUNBUFFERED": "1", "HIP_FORCE_DEV_KERNARG": "1"}
    assert "--target-cu" in t.jobs[0].profile_args() and "#" in (tmp_path / "s.toml").read_text()
    p = attlens(env, "sweep", "init", tmp_path / "s.toml", code=2)
    assert "exists" in p.stderr and "--force" in p.stderr


@pytest.mark.parametrize(
    "text, message",
    [
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nbogus = 1\n', "jobs[0]: unknown key(s): 'bogus'"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\ncommand = "x"\n', "give argv or command, not both"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\n[[jobs]]\nname = "a"\nargv = ["y"]\n', "job name 'a' is used twice"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nkernel = "(("\n', "kernel is not a valid regular expression"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\ntimeout = -1\n', "jobs[0].timeout"),
        ('[[jobs]]\nname = "../up"\nargv = ["x"]\n', "jobs[0].name"),
        ('[[jobs]]\nname = "a"\n', "no program"),
        ('jobs = 3\n', "jobs: 3 is not of type 'array'"),
        ('[defaults]\nretries = "two"\n[[jobs]]\nname = "a"\nargv = ["x"]\n', "defaults.retries"),
        ('[[jobs]\n', "not valid TOML"),
    ],
)
def test_bad_sweep_files_get_one_line(tmp_path, text, message):
    f = tmp_path / "s.toml"
    f.write_text(text)
    p = attlens(dict(os.environ), "sweep", "run", f, "--out", tmp_path / "o", "--gpus", "0", code=30)
    assert message in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "o").exists()


def test_bad_input_and_options(tmp_path):
    env = dict(os.environ)
    (tmp_path / "s.txt").write_text("x")
    assert "unknown sweep file type" in attlens(env, "sweep", "run", tmp_path / "s.txt", "--out", tmp_path / "o", code=30).stderr
    (tmp_path / "s.yaml").write_bytes(b"\xff\xfe jobs")
    assert "not valid YAML" in attlens(env, "sweep", "run", tmp_path / "s.yaml", "--out", tmp_path / "o", code=30).stderr
    assert "no such sweep file" in attlens(env, "sweep", "run", tmp_path / "none.toml", "--out", tmp_path / "o", code=30).stderr
    good = write_sweep(tmp_path / "g.toml", [{"name": "a", "argv": ["true"]}])
    assert "--gpus" in attlens(env, "sweep", "run", good, "--out", tmp_path / "o", "--gpus", "0,x", code=2).stderr
    assert "--max-parallel" in attlens(env, "sweep", "run", good, "--out", tmp_path / "o", "--gpus", "0", "--max-parallel", "2", code=2).stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep")
    assert "holds no sweep" in attlens(env, "sweep", "run", good, "--out", tmp_path / "full", "--gpus", "0", code=2).stderr
    assert "not a sweep folder" in attlens(env, "sweep", "status", tmp_path / "full", code=3).stderr
    (tmp_path / "badm").mkdir()
    (tmp_path / "badm" / "manifest.sqlite").write_text("not sqlite")
    assert "not a usable SQLite manifest" in attlens(env, "sweep", "status", tmp_path / "badm", code=7).stderr  # damaged: issue 23
    assert "no such file" in attlens(env, "sweep", "report", tmp_path / "nope", code=3).stderr
    p = attlens(env, "sweep", "run", good, "--out", tmp_path / "o", "--gpus", "0", "--only", "zz", code=2)
    assert "no job named zz" in p.stderr


def test_folder_is_locked_while_a_sweep_runs(tmp_path):
    from attlens.sweep.run import FolderLock

    env = dict(os.environ)
    good = write_sweep(tmp_path / "g.toml", [{"name": "a", "argv": ["true"]}])
    out = tmp_path / "o"
    lock = FolderLock(out)
    assert lock.acquire()
    try:
        p = attlens(env, "sweep", "run", good, "--out", out, "--gpus", "0", code=32)
        assert f"pid {os.getpid()}" in p.stderr
    finally:
        lock.release()


def test_gpu_discovery(tmp_path):
    from attlens.sweep.gpus import from_environment, from_kfd, parse_gpu_list, pin_env

    nodes = tmp_path / "nodes"
    for i, simd in enumerate([0, 1216, 0, 1216, 1216]):  # node 0 and 2: CPUs; three GPUs
        (nodes / str(i)).mkdir(parents=True)
        (nodes / str(i) / "properties").write_text(f"cpu_cores_count 0\nsimd_count {simd}\nmem_banks_count 1\n")
    (nodes / "10").mkdir()
    (nodes / "10" / "properties").write_text("simd_count 304\n")
    assert from_kfd(nodes) == ["0", "1", "2", "3"]
    assert from_kfd(tmp_path / "absent") == []
    assert parse_gpu_list("0-2,5") == ["0", "1", "2", "5"] and parse_gpu_list("GPU-ab12,3") == ["GPU-ab12", "3"]
    for bad in ("1,1", "a", "3-1"):
        with pytest.raises(ValueError):
            parse_gpu_list(bad)
    assert from_environment({"ROCR_VISIBLE_DEVICES": "4,5,6,7", "HIP_VISIBLE_DEVICES": "1,3"})[0] == ["5", "7"]
    assert from_environment({"HIP_VISIBLE_DEVICES": "2,3"})[0] == ["2", "3"]
    assert from_environment({}) is None
    env = pin_env({"CUDA_VISIBLE_DEVICES": "0,1", "X": "y"}, "3")
    assert env == {"X": "y", "ROCR_VISIBLE_DEVICES": "3", "HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "0", "GPU_DEVICE_ORDINAL": "0"}
    assert pin_env({"ROCR_VISIBLE_DEVICES": "2"}, None) == {"ROCR_VISIBLE_DEVICES": "2"}


def test_report_of_a_folder_of_captures(tmp_path, shared):
    from sweep_helpers import VEC

    env = dict(os.environ)
    folder = shared / VEC
    out = tmp_path / "dash" / "dashboard.html"
    doc = json.loads(attlens(env, "sweep", "report", folder, "-o", out, "--json").stdout)
    assert [r["job"] for r in doc["rows"]] == ["big/ui_output_agent_14705_dispatch_25"]
    r = doc["rows"][0]
    s = r["summary"]
    assert r["state"] == "done" and (out.parent / r["href"]).is_file() and r["href"].startswith("dashboard-reports/")
    assert s["waves"] == vec_waves(shared)
    # the plan's duration: the median of the run's same-grid dispatches (the traced dispatch's own row is one of them)
    assert s["duration_us"] == pytest.approx(vec_median_us(shared, s["dispatch_id"]), abs=5e-4)
    assert "discover_kernel_trace.csv" in s["duration_source"]
    assert (out.parent / "FINDINGS.md").is_file()
    # outputs never land in an input
    p = attlens(env, "sweep", "report", folder, "-o", folder / "big" / "d.html", code=9)  # exit 9: an output refused (docs/exit-codes.md)
    assert "inside the input folder" in p.stderr
    assert "an HTML file" in attlens(env, "sweep", "report", folder, "-o", tmp_path / "d.txt", code=2).stderr
    # the dashboard outside the input but its reports folder (NAME-reports beside it) being the input
    x = tmp_path / "x"
    shutil.copytree(folder / "big", x / "dashboard-reports" / "big")
    before = sorted(p.name for p in (x / "dashboard-reports").rglob("*"))
    p = attlens(env, "sweep", "report", x / "dashboard-reports", "-o", x / "dashboard.html", code=9)
    assert "inside the input folder" in p.stderr and sorted(p.name for p in (x / "dashboard-reports").rglob("*")) == before


# --------------------------------------------------------------------------- sweeps survive what the capture parser survives (issue 23)


@pytest.mark.parametrize(
    "text, message",
    [
        # row 5: TOML allows nan and inf, and a JSON Schema comparison lets nan through
        ('[[jobs]]\nname = "a"\nargv = ["x"]\ntimeout = nan\n', "jobs[0].timeout: nan is not a finite number"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nbackoff = nan\n', "jobs[0].backoff: nan is not a finite number"),
        ('[defaults]\ntimeout = inf\n[[jobs]]\nname = "a"\nargv = ["x"]\n', "defaults.timeout: inf is not a finite number"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\ntimeout = 1e30\n', "jobs[0].timeout: 1e+30 is greater than the maximum of 2592000"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nbackoff = -0.5\n', "jobs[0].backoff"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nprofile = { target_cu = 99 }\n', "jobs[0].profile.target_cu"),
        # row 8: a NUL byte cannot be passed to a program, its environment or a path
        ('[[jobs]]\nname = "a"\nargv = ["x", "a\\u0000b"]\n', "jobs[0].argv[1]"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\nenv = { K = "v\\u0000" }\n', "jobs[0].env.K"),
        ('[[jobs]]\nname = "a"\nargv = ["x"]\ncwd = "d\\u0000"\n', "jobs[0].cwd"),
        ('[[jobs]]\nname = "a"\ncommand = "x \\u0000"\n', "jobs[0].command"),
    ],
)
def test_sweep_numbers_are_finite_and_bounded_and_text_has_no_nul(tmp_path, text, message):
    f = tmp_path / "s.toml"
    f.write_text(text)
    p = attlens(dict(os.environ), "sweep", "run", f, "--out", tmp_path / "o", "--gpus", "0", code=30)
    assert message in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert not (tmp_path / "o").exists()


def test_sweep_policy_is_checked_in_code_too():
    """What the schema refuses, the normalized job refuses as well (a job may
    come from elsewhere than a file); the clean twin passes."""
    from attlens.sweep.spec import Job, policy_problem

    ok = Job(name="a", argv=["x"], cwd="/tmp", timeout=60.0, backoff=0.0, retries=0)
    assert policy_problem(ok) is None
    for bad in (dict(timeout=float("nan")), dict(timeout=0.0), dict(timeout=1e12), dict(backoff=float("inf")), dict(retries=101),
                dict(argv=["x", "a\0b"]), dict(cwd="/t\0"), dict(env={"K": "\0"})):
        assert policy_problem(Job(**{**ok.to_dict(), **bad})) is not None, bad


def test_cli_sweep_options_are_bounded(tmp_path):
    good = write_sweep(tmp_path / "g.toml", [{"name": "a", "argv": ["true"]}])
    env = dict(os.environ)
    for opt, value in (("--timeout", "nan"), ("--timeout", "1e30"), ("--backoff", "inf"), ("--retries", "101"),
                       ("--analysis-workers", str(2**64)), ("--max-parallel", str(2**64))):
        p = attlens(env, "sweep", "run", good, "--out", tmp_path / "o", "--gpus", "0", opt, value, code=2)
        assert opt in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
jobs: [{name: x, argv: *i}]
"""


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    """Row 6: ten lines that expand to 387 million strings: refused while
    parsing (no alias is accepted), one line, in a second or two."""
    from attlens.errors import SweepFileError
    from attlens.sweep.spec import load_sweep

    f = tmp_path / "bomb.yaml"
    f.write_text(BOMB)
    t0 = time.monotonic()
    with pytest.raises(SweepFileError) as exc:
        load_sweep(f)
    assert time.monotonic() - t0 < 5
    assert "alias (*a) is not accepted" in str(exc.value) and "\n" not in str(exc.value)
    # the twin: the same document written out, without aliases, is a sweep
    plain = tmp_path / "plain.yaml"
    plain.write_text("defaults: {argv: [\"true\"]}\njobs:\n  - {name: x, argv: [lol, lol]}\n  - {name: y}\n")
    assert [j.argv for j in load_sweep(plain).jobs] == [["lol", "lol"], ["true"]]


def test_too_many_jobs_are_refused_before_they_are_checked(tmp_path):
    """Row 6: 100,001 jobs: one short line, in seconds (0.2: 77 s and a 3.8 MB line)."""
    from attlens.errors import SweepFileError
    from attlens.sweep.spec import MAX_JOBS, load_sweep

    f = tmp_path / "many.toml"
    f.write_text("".join(f'[[jobs]]\nname = "j{i}"\nargv = ["true"]\n' for i in range(MAX_JOBS + 1)))
    t0 = time.monotonic()
    with pytest.raises(SweepFileError) as exc:
        load_sweep(f)
    assert time.monotonic() - t0 < 30
    assert "100,001 jobs; a sweep file holds at most 100,000" in str(exc.value) and len(str(exc.value)) < 300


def test_schema_messages_are_short(tmp_path):
    """A schema violation that quotes its value (a 5,000-element tags list) stays one short line."""
    from attlens.errors import SweepFileError
    from attlens.sweep.spec import load_sweep

    f = tmp_path / "s.toml"
    f.write_text('[[jobs]]\nname = "a"\nargv = ["x"]\ntags = ' + json.dumps([f"t{i}" for i in range(5000)]) + "\n")
    with pytest.raises(SweepFileError) as exc:
        load_sweep(f)
    assert "jobs[0].tags" in str(exc.value) and len(str(exc.value)) < 400


@pytest.fixture
def finished(main_sweep, tmp_path):
    """A copy of the main sweep's folder (5 jobs done, 4 failed)."""
    out = tmp_path / "out"
    shutil.copytree(main_sweep["out"], out)
    return out


def _done_attempts(doc) -> dict:
    return {j["job"]: j["attempts"] for j in doc["jobs"] if j["state"] == "done"}


@pytest.mark.parametrize("damage", ["truncated", "empty", "not_sqlite", "jobs_table_dropped"])
def test_a_damaged_manifest_never_reruns_finished_jobs(main_sweep, finished, damage):
    """Row 7/8: sweep status and sweep run refuse a damaged manifest (exit 7,
    one line, a repair hint) — run never started a new manifest over it —
    and following the hint (move it aside, run again) takes the finished
    jobs from their folders: none is profiled again."""
    env, tmp = main_sweep["env"], main_sweep["tmp"]
    m = finished / "manifest.sqlite"
    for side in ("manifest.sqlite-wal", "manifest.sqlite-shm"):
        (finished / side).unlink(missing_ok=True)
    if damage == "truncated":
        m.write_bytes(m.read_bytes()[: m.stat().st_size // 2])
    elif damage == "empty":
        m.write_bytes(b"")
    elif damage == "not_sqlite":
        m.write_text("{}")
    else:
        con = sqlite3.connect(str(m))
        con.execute("PRAGMA foreign_keys = OFF")
        con.execute("DROP TABLE jobs")
        con.commit()
        con.close()
    raw = m.read_bytes()
    n_runs = len(fake_runs(tmp))
    for args in (("status", finished), ("run", main_sweep["sweep"], "--out", finished, "--gpus", GPUS), ("report", finished)):
        p = attlens(env, "sweep", *args, code=7)
        assert "the sweep manifest is damaged" in p.stderr and "move it aside" in p.stderr and p.stderr.count("\n") == 1, p.stderr
    assert m.read_bytes() == raw and len(fake_runs(tmp)) == n_runs
    # the repair the hint gives
    m.rename(m.with_name("manifest.sqlite.damaged"))
    p = attlens(env, "sweep", "run", main_sweep["sweep"], "--out", finished, "--gpus", GPUS, "--only", "g1,g2,g3,g4,flaky", "--json")
    doc = json.loads(p.stdout)
    assert _done_attempts(doc) == _done_attempts(main_sweep["doc"]) and "taken from their folders" in p.stderr
    assert len(fake_runs(tmp)) == n_runs, "a finished job was profiled again"
    assert _jobs(doc)["g1"]["summary"] == _jobs(main_sweep["doc"])["g1"]["summary"]


def test_a_damaged_summary_or_lock_is_a_clean_error(main_sweep, finished):
    """Row 8: a summary that is not JSON, a lock file that is a folder: exit 7 with the way out; the twin reads."""
    env = main_sweep["env"]
    assert attlens(env, "sweep", "status", finished, "--json").returncode == 0  # the clean twin
    con = sqlite3.connect(str(finished / "manifest.sqlite"))
    with con:
        con.execute("UPDATE jobs SET summary = '{not json' WHERE job_id = 'g2'")
    con.close()
    for args in (("status", finished), ("report", finished)):
        p = attlens(env, "sweep", *args, code=7)
        assert "job 'g2': its summary is not the JSON object attlens wrote" in p.stderr and "move it aside" in p.stderr
    lock_dir = finished / ".sweep.lock"
    lock_dir.unlink(missing_ok=True)
    lock_dir.mkdir()
    p = attlens(env, "sweep", "run", main_sweep["sweep"], "--out", finished, "--gpus", GPUS, code=7)
    assert ".sweep.lock" in p.stderr and "remove it" in p.stderr and p.stderr.count("\n") == 1
