"""``attlens pmc``: plan counter passes, run them with rocprofv3, or read the
outputs of a previous run, and analyze L2/HBM traffic per dispatch."""

from __future__ import annotations

from pathlib import Path

from attlens.capture.jobfile import anchored_regex, write_job_file
from attlens.capture.runner import find_rocprofv3, last_error_line, run
from attlens.errors import NotACapture, ProfilerFailed, UsageError


def detect_target(path: Path) -> str | None:
    """gfx name from an agent_info.csv or rocprofiler-compute sysinfo.csv near ``path``."""
    from attlens.io.rocprof_csv import read_agent_info, read_rows

    root = path if path.is_dir() else path.parent
    for f in list(root.rglob("*agent_info.csv"))[:5]:
        names = {a["name"] for a in read_agent_info(f) if a["type"] == "GPU" and a["name"]}
        if len(names) == 1:
            return names.pop()
    for f in list(root.rglob("sysinfo.csv"))[:2]:
        for row in read_rows(f):  # confined, regular files only
            if row.get("gpu_arch"):
                return row["gpu_arch"].strip()
    return None


def read_pmc_outputs(path: Path) -> tuple[dict, str]:
    """Pivot of one run's counters: a counter_collection.csv, a pmc_perf.csv, or
    a folder holding them (pass_N/ folders of one run are merged by dispatch id)."""
    from attlens.analysis.pmc import merge_passes
    from attlens.io.pmc_perf import read_counter_collection, read_pmc_perf

    if not path.exists():
        from attlens.errors import InputNotFound

        raise InputNotFound(f"{path}: no such file or directory")
    if path.is_file():
        if path.name.endswith("counter_collection.csv"):
            return read_counter_collection(path), str(path)
        if path.name.startswith("pmc_perf") and path.suffix == ".csv":
            return read_pmc_perf(path), str(path)
        raise NotACapture(f"{path}: not a counter_collection.csv or pmc_perf.csv")
    cc = sorted(path.rglob("*counter_collection.csv"))
    if cc:
        passes = [read_counter_collection(f) for f in cc]
        # All files under one output folder come from one collection run.
        return (passes[0] if len(passes) == 1 else merge_passes(passes, run_ids=[str(path)] * len(passes))), f"{len(cc)} counter_collection.csv file(s) under {path}"
    perf = sorted(path.rglob("pmc_perf.csv"))
    if perf:
        return read_pmc_perf(perf[0]), str(perf[0])
    raise NotACapture(f"{path}: no counter_collection.csv or pmc_perf.csv found")


def run_passes(cmd: list[str], out: Path, target: str, kernel: str | None, exact: bool, rocprofv3: str | None, timeout: float) -> Path:
    """One job per pass in one input file; rocprofv3 writes pass_N/ folders."""
    from attlens.analysis.pmc import job_pmc_lists

    if not cmd:
        raise UsageError("no program to run: give it after --")
    exe = find_rocprofv3(rocprofv3)
    base = {"output_directory": str(out / "pmc"), "output_file": "pmc", "output_format": ["csv"]}
    if kernel:
        base["kernel_include_regex"] = anchored_regex(kernel) if exact else kernel
    jobs = job_pmc_lists(target, base_job=base)
    job_file = write_job_file(out / "pmc_input.yaml", jobs)
    r = run([exe, "-i", str(job_file), "--", *cmd], out / "logs", "pmc", timeout=timeout)
    if r.returncode != 0:
        raise ProfilerFailed(f"counter run exited with {r.returncode}: {last_error_line(r.stderr)} (logs in {out / 'logs'})")
    return out / "pmc"
