"""``attlens profile``: preflight → discovery → kernel and iteration choice →
job file → capture → output discovery → analysis. ``attlens capture`` runs
the job-file and capture steps alone for a known kernel.

Every rocprofv3 run is an argument list (no shell) with a timeout, its
stdout/stderr kept under ``<out>/logs/``. Nothing that holds waves is ever
moved or deleted; empty shell directories are moved to ``empty_shells/``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from attlens.capture import outputs
from attlens.capture.jobfile import add_pc_sampling, att_job, write_job_file
from attlens.capture.runner import Run, find_rocprofv3, last_error_line, run
from attlens.errors import KernelNotFound, NoDecoder, NoWaves, ProfilerFailed, UsageError
from attlens.results import brief_repr

# Targets where ATT and hardware counters are not available through rocprofv3
# (consumer RDNA parts such as the gfx1151 APU): timing-only fallback.
NO_ATT_TARGETS = re.compile(r"^gfx1(0|1|2)\d\d")


@dataclass
class ProfileOptions:
    command: list[str]
    out_dir: Path
    kernel_regex: str | None = None
    kernel_name: str | None = None  # exact name (capture)
    iteration: int | None = None
    exclude: str | None = None  # None: the documented default of capture.kernels
    target_cu: int = 1
    se_mask: int | str = 0xF
    simd_select: int | str = 0xF
    buffer_size: int | str = 0x6000000
    att_library_path: str | None = None
    rocprofv3: str | None = None
    timeout: float = 3600.0
    noise_check: bool = True
    source_env: bool = True
    pc_sampling: bool = False  # add PC sampling to the ATT run (docs/pcsampling.md)
    pc_sampling_interval: int = 1 << 20  # cycles between stochastic samples (a power of two >= 256)
    pc_sampling_host_trap_us: int = 100  # microseconds between host-trap samples (HOST_TRAP_INTERVAL_US)


@brief_repr("target", "att_available", ("kernel", lambda r: (r.kernel or {}).get("name")), "iterations",
            ("captures", lambda r: len(r.captures)), "best")
@dataclass
class ProfileResult:
    out_dir: Path
    rocprofv3: str | None = None
    version: str | None = None
    target: str | None = None
    att_available: bool = True
    att_unavailable_reason: str | None = None
    kernels: object = None  # the kernel table
    kernel: dict | None = None
    kernel_reason: str = ""
    dispatches: int | None = None
    iterations: list[int] = field(default_factory=list)
    iteration_reason: str = ""
    job_file: Path | None = None
    environment: dict[str, str] = field(default_factory=dict)
    captures: list = field(default_factory=list)  # CaptureDir of real captures
    shells_moved: list[Path] = field(default_factory=list)
    best: Path | None = None
    noise: dict | None = None
    analysis: object = None
    steps: list[dict] = field(default_factory=list)
    next_commands: list[str] = field(default_factory=list)
    pc_sampling: dict | None = None  # asked for: method, unit, interval, why, the files written

    def step(self, name: str, status: str, detail: str) -> None:
        self.steps.append({"step": name, "status": status, "detail": detail})

    def to_dict(self) -> dict:
        """The ``attlens.profile`` object (``attlens profile --json``, ``attlens capture --json``)."""
        from attlens.jsondoc import header

        kernels, kernel = None, self.kernel
        if self.kernels is not None:
            try:
                kernels = self.kernels.to_dict()
                row = self.kernels.row(self.kernel["name"]) if self.kernel else None
                if row is not None:  # the same row shape as attlens.kernels
                    kernel = row.to_dict()
            except Exception:  # the kernel table is informational here
                kernels = None
        return {
            **header("attlens.profile"),
            "out_dir": str(self.out_dir),
            "rocprofv3": self.rocprofv3,
            "rocprofv3_version": self.version,
            "target": self.target,
            "att_available": self.att_available,
            "att_unavailable_reason": self.att_unavailable_reason,
            "kernel": kernel,
            "kernel_reason": self.kernel_reason,
            "dispatches_per_kernel_id": self.dispatches,
            "iterations": self.iterations,
            "iteration_reason": self.iteration_reason,
            "job_file": str(self.job_file) if self.job_file else None,
            "environment": self.environment,
            "captures": [{"path": str(c.path), "agent_handle": c.agent_handle, "dispatch_id": c.dispatch_id, "waves": c.waves,
                          "instructions": c.instructions, "instructions_with_source": c.mapped_lines} for c in self.captures],
            "empty_shells_moved_to": [str(p) for p in self.shells_moved],
            "best_capture": str(self.best) if self.best else None,
            "noise_check": self.noise,
            "steps": self.steps,
            "next_commands": self.next_commands,
            "kernels": kernels,
            "pc_sampling": self.pc_sampling,
            "analysis": None if self.analysis is None else self.analysis.to_dict(10),
        }


def fresh_out_dir(out: Path) -> tuple[Path, str | None]:
    """``out`` if absent or empty, else the first free ``out-2``, ``out-3`` …:
    a previous run's captures are never overwritten."""
    out = Path(out)
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return out, None
    n = 2
    while True:
        cand = out.with_name(f"{out.name}-{n}")
        if not cand.exists():
            return cand, f"{out} already holds results: writing to {cand}"
        n += 1


# Preflight runs take seconds; each waits at most this long (the decoder check
# loads the ATT library, hence more), or --timeout if that is shorter.
PREFLIGHT_TIMEOUT = {"version": 60.0, "decoder_check": 120.0}


def _preflight_timeout(opts: ProfileOptions, name: str) -> float:
    return min(PREFLIGHT_TIMEOUT[name], opts.timeout)


def _version(exe: str, opts: ProfileOptions, res: ProfileResult) -> None:
    r = run([exe, "--version"], res.out_dir / "logs", "version", timeout=_preflight_timeout(opts, "version"))
    text = r.stdout + "\n" + r.stderr
    m = re.search(r"version:\s*([0-9][\w.\-]*)", text)
    res.version = m.group(1) if m else None
    res.step("preflight", "ok", f"{exe} version {res.version or 'unknown'}")


def check_decoder(exe: str, opts: ProfileOptions, res: ProfileResult) -> None:
    argv = [exe, "--att"]
    if opts.att_library_path:
        argv += ["--att-library-path", opts.att_library_path]
    argv += ["--echo", "--", "true"]
    r = run(argv, res.out_dir / "logs", "decoder_check", timeout=_preflight_timeout(opts, "decoder_check"))
    if r.returncode != 0:
        raise NoDecoder(
            f"rocprofv3 cannot find the thread-trace decoder: {last_error_line(r.stderr)}",
            hint="install rocprof-trace-decoder (ROCm ≥ 7.13 bundles it) and pass --att-library-path DIR (the directory holding librocprof-trace-decoder.so)",
        )
    res.step("preflight", "ok", "trace decoder found (rocprofv3 --att --echo)")


def _discovered(r: Run, disc: Path) -> dict[str, Path]:
    """The discovery run's outputs: files it names in "Opened result file"
    lines, and files found under ``disc``; only those inside ``disc`` count
    (a line naming a file elsewhere is not this run's output)."""
    files: dict[str, Path] = {}
    for f in outputs.inside(disc, r.opened_files()) + sorted(disc.rglob("*")):
        for key in ("kernel_trace.csv", "kernel_stats.csv", "agent_info.csv", "results.json"):
            if f.name.endswith(key) and f.is_file() and key not in files:
                files[key] = f
    return files


def _target(files: dict[str, Path]) -> str | None:
    from attlens.io.rocprof_csv import read_agent_info

    if "agent_info.csv" not in files:
        return None
    names = sorted({a["name"] for a in read_agent_info(files["agent_info.csv"]) if a["type"] == "GPU" and a["name"]})
    return names[0] if len(names) == 1 else (", ".join(names) if names else None)


def _choose_iterations(res: ProfileResult, opts: ProfileOptions, trace_rows: list[dict]) -> None:
    name = res.kernel["name"]
    per_id: dict[int, int] = {}
    for row in trace_rows:
        if row["kernel_name"] == name:
            per_id[row["kernel_id"]] = per_id.get(row["kernel_id"], 0) + 1
    n = max(per_id.values()) if per_id else 0
    res.dispatches = n
    ids = ", ".join(f"{k}: {v}" for k, v in sorted(per_id.items()))
    if opts.iteration is not None:
        if opts.iteration < 1:
            raise UsageError("--iteration counts from 1")
        k = opts.iteration
        res.iteration_reason = f"iteration {k} as requested (dispatches per Kernel_Id: {ids or 'unknown'})"
        if n and k > n:
            raise KernelNotFound(f"{name} ran only {n} time(s) per Kernel_Id in the discovery run; iteration {k} does not exist")
    elif n <= 1:
        k = 1
        res.iteration_reason = "the kernel ran once: iteration 1 (no warm-up to skip)"
    else:
        k = max(2, n // 2)
        res.iteration_reason = f"steady state: iteration {k} of {n} per Kernel_Id (warm-up dispatches skipped; per Kernel_Id: {ids})"
    iters = [k]
    if opts.noise_check and n >= k + 1:
        iters.append(k + 1)
        res.iteration_reason += f"; iteration {k + 1} too, as a noise-floor check"
    res.iterations = iters


def _source_env(opts: ProfileOptions, res: ProfileResult) -> dict:
    env = dict(os.environ)
    if opts.source_env:
        # Line info for JIT frameworks, with caches isolated so a binary built
        # without it is not reused (docs/capture.md).
        extra = {
            "FLYDSL_DEBUG_ENABLE_DEBUG_INFO": "1",
            "FLYDSL_RUNTIME_CACHE_DIR": str(res.out_dir / "jit_cache" / "flydsl"),
            "TRITON_CACHE_DIR": str(res.out_dir / "jit_cache" / "triton"),
        }
        env.update(extra)
        res.environment = extra
    return env


# Host-trap sampling counts time, not cycles: one sample per this many microseconds by default.
HOST_TRAP_INTERVAL_US = 100
# rocprofiler-sdk 1.0 (ROCm 7.0) runs thread trace and PC sampling on one agent in one run.
PC_SAMPLING_WITH_ATT_SDK = (1, 0)


def choose_pc_sampling(target: str | None, version: str | None, interval: int, host_trap_us: int = HOST_TRAP_INTERVAL_US) -> dict:
    """What PC sampling the ATT run gets on ``target``: ``{requested, method,
    unit, interval, reason, outputs}``; ``method`` None when it gets none
    (the reason says why). Stochastic (every ``interval`` cycles) where the
    target has it, else host-trap (every ``host_trap_us`` µs), else none
    (model/archdata.py ``pc_sampling``)."""
    from attlens.model.archdata import ARCH_TABLE, resolve_target

    out = {"requested": True, "method": None, "unit": None, "interval": None, "reason": "", "outputs": []}
    v = re.match(r"(\d+)\.(\d+)", version or "")
    if v and (int(v.group(1)), int(v.group(2))) < PC_SAMPLING_WITH_ATT_SDK:
        out["reason"] = (f"rocprofv3 {version} predates rocprofiler-sdk 1.0 (ROCm 7.0), the first to run PC sampling and thread trace "
                         "on one agent in one run: no PC sampling")
        return out
    key = resolve_target(target)
    if key is None:
        out["reason"] = (f"the GPU target is {'unknown' if not target else target + ', not one attlens knows'}: no PC sampling "
                         "(a discovery run names it: drop --iteration)")
        return out
    methods = ARCH_TABLE[key].get("pc_sampling") or []
    if "stochastic" in methods:
        out.update(method="stochastic", unit="cycles", interval=int(interval),
                   reason=f"stochastic (hardware) sampling on {target}, every {interval:,} cycles: stall reasons per sample")
    elif "host_trap" in methods:
        out.update(method="host_trap", unit="time", interval=int(host_trap_us),
                   reason=(f"{target} has no stochastic sampling: host-trap sampling every {int(host_trap_us):,} µs instead "
                           "(where waves are, with up to two instructions of skid; no issue bit or stall reason)"))
    else:
        out["reason"] = f"rocprofv3 offers no PC sampling on {target}: no PC sampling"
    return out


def _pc_sampling_outputs(att_dir: Path, r: Run) -> list[str]:
    """The PC-sampling files of the ATT run (results.json, the CSVs) inside its output folder."""
    names = ("results.json", "pc_sampling_stochastic.csv", "pc_sampling_host_trap.csv")
    found = {str(p) for p in outputs.inside(att_dir, r.opened_files()) if p.name.endswith(names) and p.is_file()}
    found |= {str(p) for p in att_dir.glob("*") if p.name.endswith(names) and p.is_file()}
    return sorted(found)


def capture_known_kernel(exe: str, opts: ProfileOptions, res: ProfileResult) -> None:
    """Steps 4-5: job file, capture, output discovery, shells, best capture, noise."""
    att_dir = res.out_dir / "att"
    job = att_job(
        res.kernel["name"], res.iterations, str(att_dir), "att", opts.target_cu, opts.se_mask, opts.simd_select, opts.buffer_size,
        opts.att_library_path,
    )
    if opts.pc_sampling:
        res.pc_sampling = choose_pc_sampling(res.target, res.version, opts.pc_sampling_interval, opts.pc_sampling_host_trap_us)
        if res.pc_sampling["method"]:
            job = add_pc_sampling(job, res.pc_sampling["method"], res.pc_sampling["interval"])
        res.step("pc sampling", "ok" if res.pc_sampling["method"] else "skipped", res.pc_sampling["reason"])
    res.job_file = write_job_file(res.out_dir / "input.yaml", [job])
    res.step("job file", "ok", f"{res.job_file} (regex {job['kernel_include_regex']}, iterations {job['kernel_iteration_range']})")
    env = _source_env(opts, res)
    r = run([exe, "-i", str(res.job_file), "--", *opts.command], res.out_dir / "logs", "capture", timeout=opts.timeout, env=env)
    if r.returncode != 0:
        err = last_error_line(r.stderr)
        if "trace-decoder" in err:
            raise NoDecoder(f"capture failed: {err}", hint="pass --att-library-path DIR")
        raise ProfilerFailed(f"capture run exited with {r.returncode}: {err} (logs in {res.out_dir / 'logs'})")
    found = [outputs.inspect(p) for p in outputs.find_capture_dirs(att_dir, r.opened_files())]
    res.shells_moved = outputs.set_aside_shells(found)
    real = [c for c in found if not c.is_shell]
    res.captures = real
    shells = f"; {len(res.shells_moved)} empty shell director{'y' if len(res.shells_moved) == 1 else 'ies'} moved to empty_shells/" if res.shells_moved else ""
    if not found:
        raise KernelNotFound(
            f"the capture run wrote no ui_output directory: no dispatch of {res.kernel['name']} matched iteration(s) {res.iterations}",
            hint="check the kernel name and --iteration against `attlens kernels` of the discovery run",
        )
    if not real:
        raise NoWaves(
            f"no wave ran on the traced CU (target CU {opts.target_cu}, SE mask {job['att_shader_engine_mask']}){shells}",
            hint="widen --se-mask, change --target-cu, or enlarge the grid so the traced CU receives work",
        )
    if res.pc_sampling and res.pc_sampling["method"]:
        res.pc_sampling["outputs"] = _pc_sampling_outputs(att_dir, r)
        if not res.pc_sampling["outputs"]:
            res.step("pc sampling", "skipped", "the capture run wrote no PC-sampling output (results.json or *_pc_sampling_*.csv)")
    best = outputs.best_capture(real)
    res.best = best.path
    res.step("capture", "ok", f"{len(real)} capture(s) with waves{shells}; best: {best.path.name} ({best.waves} waves, {best.instructions} instructions, {best.mapped_lines} with source lines)")


def noise_check(res: ProfileResult) -> None:
    """Two dispatches of the same kernel: compare their stall breakdowns."""
    import attlens
    from attlens.analysis.taxonomy import CLASSES

    by_dispatch = {}
    for c in res.captures:
        by_dispatch.setdefault(c.dispatch_id, c)
    if len(by_dispatch) < 2:
        return
    a, b = list(by_dispatch.values())[:2]
    ra, rb = (attlens.analyze(attlens.load(c.path), exposed=False) for c in (a, b))

    def shares(r):
        t = max(r.breakdown.total_stall, 1)
        return {c: r.breakdown.by_class_stall[c] / t for c in CLASSES}

    sa, sb = shares(ra), shares(rb)
    diff = {c: round(sb[c] - sa[c], 6) for c in CLASSES if sa[c] or sb[c]}
    per_wave = [r.breakdown.total_stall / max(r.dispatch.waves.count, 1) for r in (ra, rb)]
    res.noise = {
        "dispatches": [a.dispatch_id, b.dispatch_id],
        "max_class_share_difference": max((abs(v) for v in diff.values()), default=0.0),
        "class_share_difference": diff,
        "stall_per_wave": [round(x, 1) for x in per_wave],
        "stall_per_wave_relative_difference": round(abs(per_wave[1] - per_wave[0]) / max(per_wave[0], 1e-9), 6),
    }
    res.step("noise check", "ok", f"dispatches {a.dispatch_id} and {b.dispatch_id}: class shares differ by at most {res.noise['max_class_share_difference']:.1%}, stall per wave by {res.noise['stall_per_wave_relative_difference']:.1%}")


def _analyze_best(res: ProfileResult) -> None:
    import attlens

    res.analysis = attlens.analyze(attlens.load(res.best))
    res.next_commands = [f"attlens report {res.best} -o {res.out_dir / 'report.html'}", f"attlens plan {res.best}", f"attlens analyze {res.best} --detail"]
    join = res.analysis.pc_sampling
    pcs = ""
    if join is not None:
        pcs = (f"; PC samples: {join.joined:,} of {join.counts['in_file']:,} joined ({join.mode}, scope {join.scope})" if join.mode != "none"
               else f"; PC samples not joined: {join.reason}")
        if join.mode != "none" and join.scope == "traced" and join.joined < 100:
            res.next_commands.append(f"attlens analyze {res.best} --pc-sampling-scope kernel   # more samples: every CU and dispatch of the kernel")
    res.step("analysis", "ok", f"{res.analysis.dispatch.waves.count} waves, {res.analysis.hotspots.executed} instructions executed{pcs}")


def _start(opts: ProfileOptions) -> tuple[str, ProfileResult]:
    """rocprofv3 found, a fresh output folder made."""
    exe = find_rocprofv3(opts.rocprofv3)
    out, note = fresh_out_dir(opts.out_dir)
    res = ProfileResult(out_dir=out, rocprofv3=exe)
    from attlens.fsutil import make_dirs

    make_dirs(res.out_dir)
    if note:
        res.step("output", "ok", note)
    return exe, res


def _discovery(exe: str, opts: ProfileOptions, res: ProfileResult) -> tuple[Path, dict[str, Path]]:
    """The discovery run (kernel trace and stats of the whole program) and its outputs."""
    disc = res.out_dir / "discovery"
    argv = [exe, "--kernel-trace", "--stats", "-f", "csv", "json", "-d", str(disc), "-o", "discover", "--", *opts.command]
    r = run(argv, res.out_dir / "logs", "discovery", timeout=opts.timeout)
    if r.returncode != 0:
        raise ProfilerFailed(f"discovery run exited with {r.returncode}: {last_error_line(r.stderr)} (logs in {res.out_dir / 'logs'})")
    files = _discovered(r, disc)
    if "kernel_trace.csv" not in files and "kernel_stats.csv" not in files:
        raise KernelNotFound("the program ran no GPU kernel under rocprofv3 (no kernel_trace.csv was written)")
    return disc, files


def profile(opts: ProfileOptions) -> ProfileResult:
    from attlens.capture.kernels import kernel_table, pick_kernel
    from attlens.io.rocprof_csv import read_kernel_trace

    if not opts.command:
        raise UsageError("no program to profile: give it after --, e.g. attlens profile -- python app.py")
    exe, res = _start(opts)
    _version(exe, opts, res)

    disc, files = _discovery(exe, opts, res)
    res.target = _target(files)
    res.kernels = kernel_table(disc, **({} if opts.exclude is None else {"exclude": opts.exclude}))
    res.step("discovery", "ok", f"{len(res.kernels.rows) if hasattr(res.kernels, 'rows') else len(res.kernels)} kernels on {res.target or 'unknown target'}")

    # the kernel is picked on every target: a timing-only result still names the one asked for
    try:
        row, reason = pick_kernel(res.kernels, opts.kernel_regex)
    except LookupError as exc:
        raise KernelNotFound(str(exc)) from None
    res.kernel = row if isinstance(row, dict) else row.__dict__
    res.kernel_reason = reason
    res.step("kernel", "ok", reason)
    if res.target and NO_ATT_TARGETS.match(res.target):
        res.att_available = False
        res.att_unavailable_reason = (
            f"{res.target} is a consumer RDNA part: rocprofv3 offers no thread trace (ATT) or hardware counters on it; "
            "showing the kernel timing from the discovery run instead"
        )
        res.step("capture", "skipped", res.att_unavailable_reason)
        return res
    check_decoder(exe, opts, res)
    trace_rows = read_kernel_trace(files["kernel_trace.csv"]) if "kernel_trace.csv" in files else []
    _choose_iterations(res, opts, trace_rows)
    res.step("iteration", "ok", res.iteration_reason)
    capture_known_kernel(exe, opts, res)
    noise_check(res)
    _analyze_best(res)
    return res


def capture_only(opts: ProfileOptions) -> ProfileResult:
    if not opts.command:
        raise UsageError("no program: give it after --")
    if not opts.kernel_name:
        raise UsageError("attlens capture needs --kernel NAME (the exact kernel name; see attlens kernels)")
    exe, res = _start(opts)
    if opts.pc_sampling:
        _version(exe, opts, res)  # PC sampling with a thread trace needs rocprofiler-sdk 1.0
    check_decoder(exe, opts, res)
    res.kernel = {"name": opts.kernel_name}
    res.kernel_reason = "given with --kernel"
    if opts.iteration is None:
        # The first dispatches are warm-up / JIT ones: count the kernel's
        # dispatches in a kernel-trace run and take a steady-state one, as
        # profile does (--iteration K skips this run).
        from attlens.io.rocprof_csv import read_kernel_trace

        _disc, files = _discovery(exe, opts, res)
        res.target = _target(files)
        rows = read_kernel_trace(files["kernel_trace.csv"]) if "kernel_trace.csv" in files else []
        if not any(r["kernel_name"] == opts.kernel_name for r in rows):
            raise KernelNotFound(f"{opts.kernel_name}: no dispatch of that exact name in the discovery run",
                                 hint="see the names with attlens kernels " + str(_disc))
        res.step("discovery", "ok", f"{sum(r['kernel_name'] == opts.kernel_name for r in rows)} dispatches of {opts.kernel_name}")
        _choose_iterations(res, opts, rows)
    else:
        k = opts.iteration
        res.iterations = [k, k + 1] if opts.noise_check else [k]
        res.iteration_reason = f"iteration {k} as requested" + (f" and {k + 1} (noise check)" if opts.noise_check else "")
    res.step("iteration", "ok", res.iteration_reason)
    capture_known_kernel(exe, opts, res)
    noise_check(res)
    _analyze_best(res)
    return res
