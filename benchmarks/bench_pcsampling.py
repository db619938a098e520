"""PC-sampling targets (issue 21), printed as ratios measured in this run.

Run by hand (not in CI):  python benchmarks/bench_pcsampling.py [--samples N]

A results.json of N stochastic samples (default 200,000; the documented record
layout, tests/pcs_fixtures.py's records repeated) on softmax's addresses:

- floor: parsing the file with orjson alone;
- first read into the columnar table (``attlens.pc_samples``, cache off)
  <= 2.5x floor;
- a read from the digest store <= 0.05x floor;
- the join to softmax's trace (code-object-id, scope traced) <= 0.5x floor.

In-process wall times, best of 3; the machine is shared, so only ratios of
one run mean anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ATTLENS_SHARED") or REPO.parent / "shared")
SOFTMAX = SHARED / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
sys.path[:0] = [str(REPO / "src"), str(REPO / "tests")]


def best(fn, runs: int = 3) -> float:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=200_000)
    args = ap.parse_args()
    import orjson

    import attlens
    import pcs_fixtures as F
    from attlens.analysis.pcsampling import join_samples
    from attlens.io.pcsampling import read_pc_sampling
    from attlens.model.pcsampling import read_samples

    tmp = Path(tempfile.mkdtemp(prefix="attlens-bench-pcs-"))
    small = tmp / "small_results.json"
    F.write_results_json(SOFTMAX, small)
    doc = orjson.loads(small.read_bytes())
    recs = doc["rocprofiler-sdk-tool"][0]["buffer_records"]["pc_sample_stochastic"]
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["pc_sample_stochastic"] = [recs[i % len(recs)] for i in range(args.samples)]
    path = tmp / "att_results.json"
    path.write_bytes(orjson.dumps(doc))
    del doc, recs
    print(f"{args.samples:,} samples, {path.stat().st_size / 1e6:.0f} MB")
    floor = best(lambda: orjson.loads(path.read_bytes()))
    first = best(lambda: read_pc_sampling(path), runs=1)
    cache = Path(tempfile.mkdtemp(prefix="attlens-bench-pcs-cache-"))  # never inside the samples' folder (not used there)
    read_samples(path, cache)
    cached = best(lambda: read_samples(path, cache))
    d = attlens.load(SOFTMAX)
    table = read_samples(path, cache)
    join = best(lambda: join_samples(d, table))
    for name, v, target in (("first read", first, 2.5), ("cached read", cached, 0.05), ("join", join, 0.5)):
        print(f"{name:12s} {v:8.3f} s = {v / floor:5.2f}x floor ({floor:.3f} s)  target <= {target}x  {'ok' if v <= target * floor else 'MISSED'}")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    shutil.rmtree(cache, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
