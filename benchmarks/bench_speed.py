"""Issue 12 targets, each printed as a ratio measured in this same run.

Run by hand (not in CI):  python benchmarks/bench_speed.py [CAPTURE_DIR] [--runs N] [--no-10x]

Every figure is a whole process (``sys.executable``), best of N runs (the
median is printed too), peak RSS from ``wait4``. The machine is shared, so
only ratios between figures of one run mean anything:

- floor: a process that reads every ``*.json`` file of the capture and
  parses it with orjson (no analysis at all);
- ``analyze --json`` without digest <= 1.5x floor; with its digest <= 0.4x
  floor, same for ``plan``, ``waves``, ``deps``;
- peak RSS of ``analyze`` <= 4x the capture's bytes on disk, ``report`` <=
  1.3x and ``export`` <= 1.0x of analyze's peak;
- a 10x synthetic capture (softmax's waves duplicated under new SE ids,
  code.json sums, occupancy and realtime scaled to match): time and RSS within
  11x of the 1x figures, ``report`` under 2 GiB;
- ``attlens --help`` <= 3x ``python -c pass``.

The package is byte-compiled first (an installed package is), so no run
pays for compiling attlens' sources.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("ATTLENS_SHARED") or REPO.parent / "shared")
DEFAULT = SHARED / "traces/softmax/big/ui_output_agent_47920_dispatch_13"
FLOOR = r"""
import os, sys, orjson
d = sys.argv[1]
for n in os.listdir(d):
    if n.endswith(".json"):
        with open(os.path.join(d, n), "rb") as f:
            orjson.loads(f.read())
"""


def measure(argv: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process."""
    t = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode(errors="replace") if p.stderr else ""
    p.stderr.close()
    if p.returncode not in (0, 8):
        raise SystemExit(f"{' '.join(argv)} failed ({p.returncode}): {err[-400:]}")
    return wall, ru.ru_maxrss / 1024


def best(argv, env, runs: int, prime: bool = False) -> dict:
    if prime:
        measure(argv, env)
    res = [measure(argv, env) for _ in range(runs)]
    walls = [r[0] for r in res]
    return {"best": min(walls), "median": statistics.median(walls), "rss": max(r[1] for r in res)}


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir() if p.is_file())


def make_10x(src: Path, dst: Path, k: int = 10) -> Path:
    """softmax x k: every wave file again under SE ids se + j*n_se; code.json
    sums x k; occupancy and realtime SE blocks duplicated the same way."""
    import orjson

    cap = dst / src.name
    cap.mkdir(parents=True)
    fn = orjson.loads((src / "filenames.json").read_bytes())
    ses = sorted(int(s) for s in fn["wave_filenames"])
    n_se = max(ses) + 1
    new_index = {}
    for j in range(k):
        for se, simds in fn["wave_filenames"].items():
            nse = int(se) + j * n_se
            out_simds = {}
            for simd, slots in simds.items():
                out_slots = {}
                for slot, insts in slots.items():
                    out_insts = {}
                    for inst, (name, b, e) in insts.items():
                        new_name = f"se{nse}" + name[name.index("_sm"):]
                        data = (src / name).read_bytes()
                        if j:
                            data = data.replace(f'"name":"SE{se}"'.encode(), f'"name":"SE{nse}"'.encode(), 1)
                        (cap / new_name).write_bytes(data)
                        out_insts[inst] = [new_name, b, e]
                    out_slots[slot] = out_insts
                out_simds[simd] = out_slots
            new_index[str(nse)] = out_simds
    fn["wave_filenames"] = new_index
    (cap / "filenames.json").write_bytes(orjson.dumps(fn))
    code = orjson.loads((src / "code.json").read_bytes())
    for row in code["code"]:
        for c in (6, 7, 8, 9):
            row[c] *= k
    (cap / "code.json").write_bytes(orjson.dumps(code))
    occ = orjson.loads((src / "occupancy.json").read_bytes())
    for se in [s for s in list(occ) if s.isdigit()]:
        for j in range(1, k):
            occ[str(int(se) + j * n_se)] = occ[se]
    (cap / "occupancy.json").write_bytes(orjson.dumps(occ))
    rt = orjson.loads((src / "realtime.json").read_bytes())
    for se in [s for s in list(rt) if s.startswith("SE")]:
        for j in range(1, k):
            rt[f"SE{int(se[2:]) + j * n_se}"] = rt[se]
    (cap / "realtime.json").write_bytes(orjson.dumps(rt))
    for extra in ("snapshots.json",):
        if (src / extra).is_file():
            shutil.copy(src / extra, cap / extra)
    return cap


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--no-10x", action="store_true")
    a = ap.parse_args()
    cap = Path(a.capture)
    compileall.compile_dir(str(REPO / "src" / "attlens"), quiet=1)
    work = Path(tempfile.mkdtemp(prefix="attlens-bench-"))
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), ATTLENS_CACHE_DIR=str(work / "cache"))
    py = [sys.executable]
    at = py + ["-m", "attlens"]
    rows: list[tuple[str, str, float, float, bool]] = []  # (target, measured, ratio, limit, ok)

    def target(name, num, den, limit, unit=""):
        ratio = num / den
        rows.append((name, f"{num:.3f}{unit} / {den:.3f}{unit}", ratio, limit, ratio <= limit))

    try:
        disk = du(cap)
        floor = best(py + ["-c", FLOOR, str(cap)], env, a.runs)
        passr = best(py + ["-c", "pass"], env, a.runs)
        helpr = best(at + ["--help"], env, a.runs)
        fresh = best(at + ["analyze", str(cap), "--json", "--no-cache"], env, a.runs)
        digest = {c: best(at + [c, str(cap), "--json"], env, a.runs, prime=True) for c in ("analyze", "plan", "waves", "deps")}
        report = best(at + ["report", str(cap), "-o", str(work / "r.html"), "--no-cache"], env, max(1, a.runs // 2))
        export = best(at + ["export", str(cap), "--perfetto", str(work / "t.json"), "--no-cache"], env, max(1, a.runs // 2))
        print(f"capture {cap} ({disk / 2**20:.1f} MiB on disk), best of {a.runs} runs (median in brackets)")
        print(f"  floor (orjson parse of every file)  {floor['best']:.3f} s [{floor['median']:.3f}]  {floor['rss']:.0f} MiB")
        print(f"  python -c pass                      {passr['best']:.3f} s")
        print(f"  attlens --help                      {helpr['best']:.3f} s")
        print(f"  analyze --json, no digest           {fresh['best']:.3f} s [{fresh['median']:.3f}]  {fresh['rss']:.0f} MiB")
        for c, r in digest.items():
            print(f"  {c + ' --json, digest':<36}{r['best']:.3f} s [{r['median']:.3f}]  {r['rss']:.0f} MiB")
        print(f"  report (HTML), no digest            {report['best']:.3f} s  {report['rss']:.0f} MiB")
        print(f"  export --perfetto, no digest        {export['best']:.3f} s  {export['rss']:.0f} MiB")
        target("analyze, no digest / floor", fresh["best"], floor["best"], 1.5, " s")
        for c, r in digest.items():
            target(f"{c}, digest / floor", r["best"], floor["best"], 0.4, " s")
        target("analyze peak RSS / bytes on disk", fresh["rss"], disk / 2**20, 4.0, " MiB")
        target("report peak RSS / analyze peak", report["rss"], fresh["rss"], 1.3, " MiB")
        target("export peak RSS / analyze peak", export["rss"], fresh["rss"], 1.0, " MiB")
        target("attlens --help / python -c pass", helpr["best"], passr["best"], 3.0, " s")
        if not a.no_10x:
            t = time.perf_counter()
            big = make_10x(cap, work / "x10")
            print(f"  10x capture built in {time.perf_counter() - t:.1f} s ({du(big) / 2**20:.0f} MiB)")
            runs10 = max(1, a.runs // 3)
            floor10 = best(py + ["-c", FLOOR, str(big)], env, runs10)
            fresh10 = best(at + ["analyze", str(big), "--json", "--no-cache"], env, runs10)
            digest10 = best(at + ["analyze", str(big), "--json"], env, runs10, prime=True)
            report10 = best(at + ["report", str(big), "-o", str(work / "r10.html"), "--no-cache"], env, 1)
            print(f"  10x floor                           {floor10['best']:.3f} s")
            print(f"  10x analyze --json, no digest       {fresh10['best']:.3f} s  {fresh10['rss']:.0f} MiB")
            print(f"  10x analyze --json, digest          {digest10['best']:.3f} s  {digest10['rss']:.0f} MiB")
            print(f"  10x report, no digest               {report10['best']:.3f} s  {report10['rss']:.0f} MiB")
            target("10x analyze time / 1x", fresh10["best"], fresh["best"], 11.0, " s")
            target("10x analyze RSS / 1x", fresh10["rss"], fresh["rss"], 11.0, " MiB")
            target("10x report time / 1x", report10["best"], report["best"], 11.0, " s")
            target("10x report RSS / 1x", report10["rss"], report["rss"], 11.0, " MiB")
            target("10x report RSS / 2 GiB", report10["rss"], 2048.0, 1.0, " MiB")
            target("10x analyze, no digest / 10x floor", fresh10["best"], floor10["best"], 1.5, " s")
        print("\ntarget                                       measured                       ratio  limit")
        for name, meas, ratio, limit, ok in rows:
            print(f"  {name:<42} {meas:<30} {ratio:5.2f}  {limit:4.1f}  {'ok' if ok else 'MISSED'}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
