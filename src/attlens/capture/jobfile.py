"""The rocprofv3 job file (``input.yaml``) for an ATT capture.

Facts (rocprofv3-interfaces.md §2.5-2.8): only the top-level ``jobs`` list is
read (a top-level ``pmc:`` is silently ignored); keys inside a job are the
option names with ``-`` → ``_``; unknown keys are silently ignored, so attlens
validates its own job against the documented key set; the kernel regex is
ECMAScript ``regex_search`` (substring), so it is anchored; the iteration
range is a *set* built from integers and ``A-B`` ranges (``"[6, [8-8]]"`` is
{6, 8}, not a range).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from attlens.fsutil import write_atomic

from attlens.errors import UsageError

# Job keys attlens may write, with their types (the documented subset it uses).
JOB_KEYS: dict[str, type | tuple] = {
    "kernel_include_regex": str,
    "kernel_exclude_regex": str,
    "kernel_iteration_range": str,
    "truncate_kernels": bool,
    "mangled_kernels": bool,
    "output_file": str,
    "output_directory": str,
    "output_format": list,
    "advanced_thread_trace": bool,
    "att_target_cu": int,
    "att_shader_engine_mask": str,
    "att_simd_select": str,
    "att_buffer_size": str,
    "att_library_path": (str, list),
    "kernel_trace": bool,
    "stats": bool,
    "pmc": list,
    # PC sampling beside the thread trace (rocprofv3-interfaces.md §9; docs/pcsampling.md)
    "pc_sampling_beta_enabled": bool,
    "pc_sampling_method": str,
    "pc_sampling_unit": str,
    "pc_sampling_interval": int,
}
PC_SAMPLING_UNITS = {"stochastic": "cycles", "host_trap": "time"}
_ECMA_SPECIAL = set("\\^$.|?*+()[]{}")
_RANGE_TOKEN = re.compile(r"^\d+(-\d+)?$")


def ecma_escape(text: str) -> str:
    """Escape a literal for a C++ std::regex (ECMAScript) pattern."""
    return "".join("\\" + c if c in _ECMA_SPECIAL else c for c in text)


def anchored_regex(kernel_name: str) -> str:
    return "^" + ecma_escape(kernel_name) + "$"


def parse_iteration_range(text: str) -> set[int]:
    """The set rocprofv3 builds from a kernel_iteration_range string (§2.6)."""
    out: set[int] = set()
    for tok in re.split(r"[\[\],\s]+", text):
        if not tok:
            continue
        if not _RANGE_TOKEN.match(tok):
            raise UsageError(f"iteration range {text!r}: {tok!r} is neither an integer nor A-B (no spaces around '-')")
        if "-" in tok:
            a, b = (int(x) for x in tok.split("-"))
            if b < a:
                raise UsageError(f"iteration range {text!r}: {tok} is empty")
            out.update(range(a, b + 1))
        else:
            out.add(int(tok))
    if not out:
        raise UsageError(f"iteration range {text!r} is empty")
    return out


def format_iterations(iterations: list[int]) -> str:
    return "[" + ", ".join(str(i) for i in sorted(set(iterations))) + "]"


def hexstr(value: int | str) -> str:
    try:
        v = int(value, 0) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{value!r} is not an integer (decimal or 0x hex)") from None
    if v < 0:
        raise UsageError(f"{value!r} is negative")
    return hex(v)


def att_job(
    kernel_name: str,
    iterations: list[int],
    output_directory: str,
    output_file: str = "att",
    target_cu: int = 1,
    se_mask: int | str = 0xF,
    simd_select: int | str = 0xF,
    buffer_size: int | str = 0x6000000,
    library_path: str | None = None,
) -> dict:
    job = {
        "kernel_include_regex": anchored_regex(kernel_name),
        "kernel_iteration_range": format_iterations(iterations),
        "truncate_kernels": False,
        "output_file": output_file,
        "output_directory": str(output_directory),
        "output_format": ["json", "csv"],
        "advanced_thread_trace": True,
        "att_target_cu": int(target_cu),
        "att_shader_engine_mask": hexstr(se_mask),
        "att_simd_select": hexstr(simd_select),
        "att_buffer_size": hexstr(buffer_size),
    }
    if library_path:
        job["att_library_path"] = str(library_path)
    validate_job_file({"jobs": [job]})
    return job


def add_pc_sampling(job: dict, method: str, interval: int) -> dict:
    """``job`` with PC sampling of ``method`` every ``interval`` (cycles for
    stochastic, microseconds for host-trap) and a kernel trace, whose
    dispatch records name each sample's kernel in results.json."""
    if method not in PC_SAMPLING_UNITS:
        raise UsageError(f"PC-sampling method {method!r}: expected stochastic or host_trap")
    job = {**job, "kernel_trace": True, "pc_sampling_beta_enabled": True, "pc_sampling_method": method,
           "pc_sampling_unit": PC_SAMPLING_UNITS[method], "pc_sampling_interval": int(interval)}
    validate_job_file({"jobs": [job]})
    return job


def validate_job_file(doc: dict) -> None:
    """Check a job file against the documented schema; raise UsageError."""
    if not isinstance(doc, dict) or set(doc) != {"jobs"}:
        raise UsageError("job file: the top level must hold only 'jobs' (other top-level keys, e.g. 'pmc', are ignored by rocprofv3)")
    jobs = doc["jobs"]
    if not isinstance(jobs, list) or not jobs:
        raise UsageError("job file: 'jobs' must be a non-empty list")
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise UsageError(f"job file: job {i} is not a mapping")
        for key, value in job.items():
            if "-" in key:
                raise UsageError(f"job file: key {key!r} uses '-', rocprofv3 only reads '_' spellings")
            if key not in JOB_KEYS:
                raise UsageError(f"job file: unknown key {key!r} (rocprofv3 would silently ignore it)")
            want = JOB_KEYS[key]
            if not isinstance(value, want) or (want is int and isinstance(value, bool)):
                raise UsageError(f"job file: {key} must be {want}, got {type(value).__name__}")
        if "kernel_iteration_range" in job:
            parse_iteration_range(job["kernel_iteration_range"])
        if "pmc" in job and "pmc_groups" in job:
            raise UsageError("job file: pmc and pmc_groups together are fatal in rocprofv3")
        if job.get("advanced_thread_trace") and "pmc" in job and job.get("att_perfcounters"):
            raise UsageError("job file: att_perfcounters with pmc is fatal in rocprofv3")
        if job.get("pc_sampling_beta_enabled"):
            _check_pc_sampling(job)


def write_job_file(path: Path, jobs: list[dict]) -> Path:
    doc = {"jobs": jobs}
    validate_job_file(doc)
    path = Path(path)
    write_atomic(path, yaml.safe_dump(doc, sort_keys=False))
    return path


def _check_pc_sampling(job: dict) -> None:
    """The documented constraints (rocprofv3-interfaces.md §9): a method and
    its unit, a positive interval, a power of two of at least 256 cycles for
    stochastic sampling."""
    method, unit, interval = job.get("pc_sampling_method"), job.get("pc_sampling_unit"), job.get("pc_sampling_interval")
    if method not in PC_SAMPLING_UNITS or unit != PC_SAMPLING_UNITS[method]:
        raise UsageError(f"job file: PC sampling needs method stochastic (unit cycles) or host_trap (unit time), got {method}/{unit}")
    if not isinstance(interval, int) or interval <= 0:
        raise UsageError("job file: pc_sampling_interval must be a positive integer")
    if method == "stochastic" and (interval < 256 or interval & (interval - 1)):
        raise UsageError(f"job file: a stochastic pc_sampling_interval is a power of two of at least 256 cycles, got {interval}")
