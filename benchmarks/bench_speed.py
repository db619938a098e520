"""Issue 12 and 24 targets, each printed as a ratio measured in this same run.

Run by hand (not in CI):

    python benchmarks/bench_speed.py [CAPTURE_DIR] [--runs N] [--scales 1,5,10,30] [--work /tmp]

Every figure is a whole process run the way a user runs the CLI
(``python -m attlens``, the package as installed: byte-compile an editable
install first, ``python -m compileall -q src``, as the README says; the
benchmark warns when it is not), best of N runs (the median too), peak RSS
from ``wait4``. The machine is shared, so only ratios between figures of one
run mean anything; the load average is printed before and after.

At each scale (softmax's waves duplicated k times under new SE ids, code.json
sums, occupancy and realtime scaled to match: :func:`make_scaled`, built under
``--work`` and deleted afterwards):

- floor: one process reads every ``*.json`` file and parses it with orjson;
- ``analyze --json --no-cache`` and the first ``analyze --json`` (digest
  written) <= 1.5x floor; peak RSS < 4 GiB; the 1 GB capture (30x) < 20 s;
- repeats: ``analyze --json`` and ``analyze`` (text) <= 0.4x floor;
- digest bytes on disk <= capture bytes;
- at 1x also ``plan``/``waves``/``deps`` repeats, ``report`` (cold and
  repeat) and ``attlens --help`` <= 3x ``python -c pass``.
"""

from __future__ import annotations

import argparse
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


def make_scaled(src: Path, dst: Path, k: int = 10) -> Path:
    """softmax x k: every wave file again under SE ids se + j*n_se; code.json
    sums x k; occupancy and realtime SE blocks duplicated the same way."""
    if k == 1:
        return src
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


make_10x = make_scaled  # the name of issue 12


def du_tree(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure_scale(cap: Path, k: int, at: list, py: list, env: dict, cache: Path, runs: int, out: Path) -> dict:
    """Every figure of one scale, floor first and the candidates back to back."""
    clear = lambda: shutil.rmtree(cache, ignore_errors=True)  # noqa: E731
    row = {"k": k, "bytes": du(cap), "load_before": loadavg()}
    row["floor"] = best(py + ["-c", FLOOR, str(cap)], env, runs)
    row["nocache"] = best(at + ["analyze", str(cap), "--json", "--no-cache"], env, runs)
    colds = []
    for _ in range(runs):
        clear()
        colds.append(measure(at + ["analyze", str(cap), "--json"], env))
    row["cold"] = {"best": min(c[0] for c in colds), "median": statistics.median(c[0] for c in colds), "rss": max(c[1] for c in colds)}
    row["digest_bytes"] = du_tree(cache)
    row["warm_json"] = best(at + ["analyze", str(cap), "--json"], env, runs)
    row["warm_text"] = best(at + ["analyze", str(cap)], env, runs, prime=True)
    if k in (1, 30):
        clear()
        row["report_cold"] = best(at + ["report", str(cap), "-o", str(out / "r.html")], env, 1)
        row["report_warm"] = best(at + ["report", str(cap), "-o", str(out / "r.html")], env, runs)
    if k == 1:
        for c in ("plan", "waves", "deps"):
            row[f"{c}_json"] = best(at + [c, str(cap), "--json"], env, runs, prime=True)
            row[f"{c}_text"] = best(at + [c, str(cap)], env, runs, prime=True)
        row["export_warm"] = best(at + ["export", str(cap), "-o", str(out / "t.json")], env, runs, prime=True)
    row["total_bytes_cache"] = du_tree(cache)
    row["load_after"] = loadavg()
    clear()
    return row


def report_scale(row: dict, targets: list) -> None:
    f = row["floor"]["best"]
    k = row["k"]
    print(f"\n{k}x softmax: {row['bytes'] / 2**20:.0f} MiB, load {row['load_before']} -> {row['load_after']}")
    for name in ("floor", "nocache", "cold", "warm_json", "warm_text", "report_cold", "report_warm", "plan_json", "plan_text",
                 "waves_json", "waves_text", "deps_json", "deps_text", "export_warm"):
        if name in row:
            r = row[name]
            print(f"  {name:<12} {r['best']:8.3f} s [{r['median']:.3f}]  {r['best'] / f:5.2f}x floor  {r['rss']:7.0f} MiB")
    print(f"  digest {row['digest_bytes'] / 2**20:.1f} MiB = {row['digest_bytes'] / row['bytes']:.2f}x the capture"
          f" (with every stored answer {row['total_bytes_cache'] / row['bytes']:.2f}x)")
    targets.append((f"{k}x analyze --no-cache / floor", row["nocache"]["best"] / f, 1.5))
    targets.append((f"{k}x first analyze (digest written) / floor", row["cold"]["best"] / f, 1.5))
    targets.append((f"{k}x repeat analyze --json / floor", row["warm_json"]["best"] / f, 0.4))
    targets.append((f"{k}x repeat analyze (text) / floor", row["warm_text"]["best"] / f, 0.4))
    targets.append((f"{k}x digest bytes / capture bytes", row["digest_bytes"] / row["bytes"], 1.0))
    targets.append((f"{k}x peak RSS / 4 GiB", max(row["nocache"]["rss"], row["cold"]["rss"]) / 4096, 1.0))
    if "report_warm" in row:
        targets.append((f"{k}x report cold / first analyze", row["report_cold"]["best"] / row["cold"]["best"], 1.3))
        targets.append((f"{k}x report repeat / first analyze", row["report_warm"]["best"] / row["cold"]["best"], 0.3))
    if k == 30:
        targets.append(("30x first analyze / 20 s", row["cold"]["best"] / 20.0, 1.0))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("capture", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scales", default="1,5,10,30", help="comma-separated multiples of the capture (1 = as it is)")
    ap.add_argument("--work", default=tempfile.gettempdir(), help="where the scaled captures and the cache go (deleted after)")
    ap.add_argument("--json", metavar="FILE", help="also write every figure to FILE")
    a = ap.parse_args()
    cap = Path(a.capture)
    if not any((REPO / "src" / "attlens").glob("__pycache__/*.pyc")):
        print("warning: attlens is not byte-compiled (python -m compileall -q src); with PYTHONDONTWRITEBYTECODE every run compiles it")
    work = Path(tempfile.mkdtemp(prefix="attlens-bench-", dir=a.work))
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"), ATTLENS_CACHE_DIR=str(work / "cache"))
    py = [sys.executable]
    at = py + ["-m", "attlens"]
    targets: list[tuple[str, float, float]] = []
    rows = []
    try:
        passr = best(py + ["-c", "pass"], env, a.runs)
        helpr = best(at + ["--help"], env, a.runs)
        targets.append(("attlens --help / python -c pass", helpr["best"] / passr["best"], 3.0))
        for k in [int(x) for x in a.scales.split(",")]:
            t = time.perf_counter()
            scaled = make_scaled(cap, work / f"x{k}", k)
            if k > 1:
                print(f"{k}x capture built in {time.perf_counter() - t:.1f} s")
            runs = a.runs if k < 30 else max(2, a.runs - 1)
            rows.append(measure_scale(scaled, k, at, py, env, work / "cache", runs, work))
            report_scale(rows[-1], targets)
            if k > 1:
                shutil.rmtree(work / f"x{k}", ignore_errors=True)
        if len(rows) > 1:
            base = rows[0]
            print("\nscaling (time and RSS of the first analyze, relative to the first scale):")
            for r in rows:
                print(f"  {r['k']:>3}x  time {r['cold']['best'] / base['cold']['best']:6.2f}  RSS {r['cold']['rss'] / base['cold']['rss']:6.2f}"
                      f"  floor {r['floor']['best'] / base['floor']['best']:6.2f}")
        print("\ntarget                                          ratio  limit")
        for name, ratio, limit in targets:
            print(f"  {name:<44} {ratio:6.2f}  {limit:4.1f}  {'ok' if ratio <= limit else 'MISSED'}")
        if a.json:
            import json

            Path(a.json).write_text(json.dumps({"rows": rows, "targets": targets}, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
