"""``attlens pmc``: plan counter passes, run them with rocprofv3, or read the
outputs of a previous run, and analyze L2/HBM traffic per dispatch."""

from __future__ import annotations

from pathlib import Path

from attlens.capture.jobfile import anchored_regex, write_job_file
from attlens.capture.runner import find_rocprofv3, last_error_line, run
from attlens.errors import NotACapture, ProfilerFailed, UsageError


def detect_target(path: Path) -> str | None:
    """gfx name from an agent_info.csv or rocprofiler-compute sysinfo.csv near ``path``."""
    from attlens.io.rocprof_csv import read_agent_info

    root = path if path.is_dir() else path.parent
    for f in list(root.rglob("*agent_info.csv"))[:5]:
        names = {a["name"] for a in read_agent_info(f) if a["type"] == "GPU" and a["name"]}
        if len(names) == 1:
            return names.pop()
    machine = detect_machine(path)
    return machine["target"] if machine else None


def detect_machine(path: Path) -> dict | None:
    """rocprofiler-compute's sysinfo.csv beside the counters (the profiled GPU:
    product, XCDs, CUs, peak bandwidth), or None."""
    from attlens.errors import AttlensError
    from attlens.io.sysinfo_csv import read_sysinfo

    root = path if path.is_dir() else path.parent
    for f in sorted(root.rglob("sysinfo.csv"))[:2]:
        try:
            return read_sysinfo(f)
        except AttlensError:
            continue
    return None


def read_counter_run(path: Path) -> tuple[dict, str, dict | None]:
    """(pivot, source, machine) of one run's counters: a counter_collection.csv,
    a pmc_perf.csv (wide or long form), a rocprofiler-compute workload folder
    (its pmc_perf.csv, else its per-pass pmc_perf_N.csv merged), or a folder of
    rocprofv3 outputs (pass_N/ folders of one run are merged by dispatch id)."""
    from attlens.analysis.pmc import merge_passes
    from attlens.io.pmc_perf import pass_files, read_counter_collection, read_pmc_perf, read_workload

    if not path.exists():
        from attlens.errors import InputNotFound

        raise InputNotFound(f"{path}: no such file or directory")
    machine = detect_machine(path)
    if path.is_file():
        if path.name.endswith("counter_collection.csv"):
            return read_counter_collection(path), str(path), machine
        if path.name.startswith("pmc_perf") and path.suffix == ".csv":
            return read_pmc_perf(path), str(path), machine
        raise NotACapture(f"{path}: not a counter_collection.csv or pmc_perf.csv")
    cc = sorted(path.rglob("*counter_collection.csv"))
    if cc:
        passes = [read_counter_collection(f) for f in cc]
        # All files under one output folder come from one collection run.
        pivot = passes[0] if len(passes) == 1 else merge_passes(passes, run_ids=[str(path)] * len(passes))
        return pivot, f"{len(cc)} counter_collection.csv file(s) under {path}", machine
    workloads = sorted({f.parent for f in path.rglob("pmc_perf*.csv")})
    if len(workloads) > 1:
        from attlens.errors import SeveralCaptures

        raise SeveralCaptures(f"{path}: holds {len(workloads)} rocprofiler-compute workloads; pass one of them", candidates=workloads)
    if workloads and ((workloads[0] / "pmc_perf.csv").is_file() or pass_files(workloads[0])):
        pivot, source, sysinfo = read_workload(workloads[0])
        return pivot, source, sysinfo or machine
    raise NotACapture(f"{path}: no counter_collection.csv, pmc_perf.csv or pmc_perf_N.csv found")


def read_pmc_outputs(path: Path) -> tuple[dict, str]:
    """(pivot, source) of :func:`read_counter_run`."""
    pivot, source, _machine = read_counter_run(path)
    return pivot, source


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
