"""Time and memory of `attlens analyze` on the largest shared capture.

Run by hand (not in CI):  python benchmarks/bench_analyze.py [CAPTURE_DIR]
Targets: load of every wave file + core analysis < 1.0 s and < 400 MB peak
RSS on a 2-core machine; `attlens --help` < 0.2 s (issue #2); all wave-level
analysis (states, clock, pipes, phases, wait attribution, hidden latency)
including the load < 2.0 s (issue #3).

Each measurement runs in a fresh interpreter so imports and caches count the
way they do for a user; the best of N runs is reported with the median.
Every run parses the capture (no digest); benchmarks/bench_speed.py measures
the issue-12 targets, digests included.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO.parent / "shared/traces/softmax/big/ui_output_agent_47920_dispatch_13"

CHILD = r"""
import resource, sys, time, json
t0 = time.perf_counter()
import attlens
d = attlens.load(sys.argv[1], cache=False); t1 = time.perf_counter()
r = attlens.analyze(d, exposed=False); t2 = time.perf_counter()
r.to_dict(20); t3 = time.perf_counter()
from attlens.analysis.hidden import compute_hidden
from attlens.analysis.waves import analyze_waves
compute_hidden(d, r.sums); t4 = time.perf_counter()
analyze_waves(r); t5 = time.perf_counter()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"load": t1 - t0, "analyze": t2 - t1, "render_json": t3 - t2, "core_total": t3 - t0,
                  "hidden_latency": t4 - t3, "wave_level": t5 - t4, "all_total": t5 - t0,
                  "peak_rss_mb": rss, "waves": d.waves.count, "records": d.records.count}))
"""


def main() -> None:
    cap = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT
    runs = []
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", CHILD, str(cap)], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    helps = []
    for _ in range(5):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "attlens", "--help"], capture_output=True, check=True)
        helps.append(time.perf_counter() - t)
    cli = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "attlens", "analyze", str(cap), "--json", "--no-exposed", "--no-cache"], capture_output=True, check=True)
        cli.append(time.perf_counter() - t)
    cli_exp = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "attlens", "analyze", str(cap), "--json", "--no-cache"], capture_output=True, check=True)
        cli_exp.append(time.perf_counter() - t)
    r0 = runs[0]
    print(f"capture: {cap} ({r0['waves']} waves, {r0['records']:,} records)")
    for key in ("load", "analyze", "render_json", "core_total", "hidden_latency", "wave_level", "all_total"):
        vals = [r[key] for r in runs]
        print(f"  {key:<12} best {min(vals):.3f} s   median {statistics.median(vals):.3f} s")
    print(f"  peak RSS     max {max(r['peak_rss_mb'] for r in runs):.0f} MB")
    print(f"  attlens analyze --json --no-exposed (whole process): best {min(cli):.3f} s, median {statistics.median(cli):.3f} s")
    print(f"  attlens analyze --json (with exposed column):        best {min(cli_exp):.3f} s, median {statistics.median(cli_exp):.3f} s")
    print(f"  attlens --help: best {min(helps):.3f} s, median {statistics.median(helps):.3f} s")


if __name__ == "__main__":
    main()
