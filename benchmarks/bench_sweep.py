"""Wall time of a 20-job sweep on 4 fake GPUs, local and Ray engines, against
the fake rocprofv3 (tests/fake_rocprofv3) replaying the shared vec_add capture.

Run by hand (not in CI):  python benchmarks/bench_sweep.py [N_JOBS] [N_GPUS]
Reports each engine's wall time and its ratio to N × one job run alone: with
the fake, a job is CPU work (attlens profile + analysis + report), so on a
2-core machine the ratio is bounded near 1/2 whatever the GPU count; on real
GPUs the profile run waits on the GPU and the ratio approaches 1/N_GPUS.
Ray's figure includes starting and stopping the local Ray instance.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from sweep_helpers import sweep_env, write_sweep  # noqa: E402


def _run(env, sweep: Path, out: Path, gpus: str, *extra) -> tuple[float, dict]:
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "attlens", "sweep", "run", str(sweep), "--out", str(out), "--gpus", gpus, "--json",
                        "--no-progress", *extra], capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"sweep failed ({p.returncode}): {p.stderr[-2000:]}")
    return seconds, json.loads(p.stdout)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    g = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    gpus = ",".join(str(i) for i in range(g))
    with tempfile.TemporaryDirectory(prefix="attlens-bench-sweep-") as tmpd:
        tmp = Path(tmpd)
        env = sweep_env(tmp)
        defaults = {"argv": ["true"], "kernel": "vecAdd"}
        one = write_sweep(tmp / "one.toml", [{"name": "j0"}], defaults)
        many = write_sweep(tmp / "many.toml", [{"name": f"j{i}"} for i in range(n)], defaults)
        single = min(_run(env, one, tmp / f"one-{k}", "0")[0] for k in range(2))
        local, doc = _run(env, many, tmp / "local", gpus)
        assert doc["counts"]["done"] == n
        ray_s = None
        try:
            import ray  # noqa: F401

            ray_s, doc = _run(env, many, tmp / "ray", gpus, "--engine", "ray")
            assert doc["counts"]["done"] == n
        except ImportError:
            pass
        print(f"one job alone: {single:.1f} s")
        print(f"{n} jobs on {g} fake GPUs, local engine: {local:.1f} s  ({local / (n * single):.2f} × {n} single runs)")
        if ray_s is not None:
            print(f"{n} jobs on {g} fake GPUs, Ray engine:   {ray_s:.1f} s  ({ray_s / (n * single):.2f} × {n} single runs, Ray start/stop included)")
        else:
            print("Ray engine: not installed (pip install 'attlens[ray]')")


if __name__ == "__main__":
    main()
