"""The Ray engine on a real local Ray instance (started by attlens, with two
fake GPUs declared as Ray GPU resources, and stopped at the end) gives the
same manifest as the local engine for the same sweep: states, attempts and
their outcomes, exit codes, errors, paths and headline figures."""

from __future__ import annotations

import json
import os

import pytest

from sweep_helpers import assert_exclusive, attempt_intervals, attlens, fake_runs, normalized, sweep_env, write_sweep


def _require_ray():
    try:
        import ray  # noqa: F401
    except ImportError:
        msg = "Ray is not installed (pip install -e '.[ray]')"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(msg + ": CI must run the Ray engine test")
        pytest.skip(msg)


def _sweep(tmp, name: str):
    jobs = [{"name": f"g{i}"} for i in range(1, 5)] + [
        {"name": "flaky", "env": {"FAKE_ROCPROF_FAIL_TIMES": "1", "FAKE_ROCPROF_FAIL_STATE": str(tmp / f"{name}.flaky.state")}},
        {"name": "nokernel", "kernel": "no_such_kernel"},
    ]
    return write_sweep(tmp / f"{name}.toml", jobs, {"argv": ["true"], "kernel": "vecAdd", "retries": 1, "backoff": 0.2,
                                                    "env": {"FAKE_ROCPROF_SLEEP": "0.3"}})


def test_ray_engine_gives_the_local_engines_manifest(tmp_path):
    _require_ray()
    env = sweep_env(tmp_path)
    local_out, ray_out = tmp_path / "local", tmp_path / "ray"
    local = json.loads(attlens(env, "sweep", "run", _sweep(tmp_path, "local"), "--out", local_out, "--gpus", "0,1", "--json", code=31).stdout)
    local_runs = len(fake_runs(tmp_path))
    p = attlens(env, "sweep", "run", _sweep(tmp_path, "ray"), "--out", ray_out, "--engine", "ray", "--gpus", "0,1", "--json", code=31)
    ray = json.loads(p.stdout)
    assert ray["engine"] == "ray" and all(a["engine"] == "ray" for j in ray["jobs"] for a in j["attempt_history"])
    assert normalized(ray, ray_out) == normalized(local, local_out)
    assert ray["counts"] == {"pending": 0, "running": 0, "done": 5, "failed": 1}
    # the profile tasks held one Ray GPU each: pinned, never two on one GPU at a time
    runs = [r for r in fake_runs(tmp_path)[local_runs:]]
    assert runs and all(r["ROCR_VISIBLE_DEVICES"] in ("0", "1") and r["HIP_VISIBLE_DEVICES"] == "0" for r in runs)
    assert_exclusive(attempt_intervals(runs))
    for j in ray["jobs"]:
        if j["report"]:
            assert (ray_out / j["report"]).is_file()
