"""Commands that run rocprofv3 or read its run outputs: profile, capture, kernels, pmc."""

from __future__ import annotations

from attlens.cli.common import (
    BUFFER_SIZE,
    COUNT,
    EPILOG,
    HOST_TRAP_US,
    PC_SAMPLING_INTERVAL,
    POSITIVE,
    POSITIVE_NUMBER,
    SECONDS,
    SE_MASK,
    SIMD_SELECT,
    TARGET_CU,
    add_json,
    add_no_color,
    emit_json,
    exit_code,
)


def _capture_opts(p) -> None:
    p.add_argument("-o", "--output", "--out", dest="out", default="attlens-profile", metavar="DIR", help="output folder (default ./attlens-profile; an existing one is never reused: -2, -3 ... is added); --out is the same")
    p.add_argument("--iteration", type=POSITIVE, metavar="K", help="trace the K-th dispatch per kernel id (default: a steady-state one, iteration n/2 of the n counted in a kernel-trace run of the program; K skips that run)")
    p.add_argument("--target-cu", type=TARGET_CU, default=1, metavar="N", help="CU traced in each selected SE (default 1)")
    p.add_argument("--se-mask", type=SE_MASK, default="0xf", metavar="MASK", help="shader engines to trace (default 0xf)")
    p.add_argument("--simd-select", type=SIMD_SELECT, default="0xf", metavar="MASK", help="SIMDs to trace (default 0xf)")
    p.add_argument("--buffer-size", type=BUFFER_SIZE, default="0x6000000", metavar="BYTES", help="ATT buffer (default 0x6000000 = 96 MiB)")
    p.add_argument("--att-library-path", metavar="DIR", help="directory holding librocprof-trace-decoder.so")
    p.add_argument("--rocprofv3", metavar="PATH", help="rocprofv3 executable (default: from PATH)")
    p.add_argument("--timeout", type=SECONDS, default=3600, metavar="S", help="per rocprofv3 run (default 3600 s)")
    p.add_argument("--no-noise-check", action="store_true", help="capture one dispatch, not two")
    p.add_argument("--no-source-env", action="store_true", help="do not set the line-info environment (FlyDSL debug info on, fresh FlyDSL and Triton JIT caches)")
    p.add_argument("--pc-sampling", action="store_true",
                   help="add PC sampling to the ATT run (stochastic on gfx942/gfx950, host-trap on gfx90a, none elsewhere; "
                        "needs rocprofv3 >= 1.0), so analyze shows why each instruction stalled")
    p.add_argument("--pc-sampling-interval", type=PC_SAMPLING_INTERVAL, default=1 << 20, metavar="CYCLES",
                   help="cycles between stochastic samples: a power of two, 256 to 2**31 (default 1048576; smaller = more samples "
                        "and a bigger results.json: sampling covers every kernel of the program)")
    # the default is capture.profile.HOST_TRAP_INTERVAL_US (not imported at start-up; a test keeps them equal)
    p.add_argument("--pc-sampling-host-trap-us", type=HOST_TRAP_US, default=100, metavar="US",
                   help="microseconds between host-trap samples, where the target has no stochastic sampling (gfx90a): "
                        "1 to 1000000 (default 100)")
    add_json(p, "attlens.profile")
    add_no_color(p)


def register(sub) -> None:
    p = sub.add_parser("profile", help="discover kernels, capture a steady-state dispatch with rocprofv3 --att, analyze it",
                       usage="attlens profile [options] -- PROGRAM [ARGS ...]", epilog=EPILOG)
    p.add_argument("--kernel", metavar="REGEX", help="kernel to trace (default: the largest total time, runtime helpers excluded)")
    p.add_argument("--exclude", metavar="REGEX", help="kernels never picked by default (default: HIP runtime blits and PyTorch elementwise/copy/fill/random/reduce kernels)")
    _capture_opts(p)
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("capture", help="capture one known kernel (job file + rocprofv3 --att + output discovery)",
                       usage="attlens capture --kernel NAME [options] -- PROGRAM [ARGS ...]", epilog=EPILOG)
    p.add_argument("--kernel", required=True, metavar="NAME", help="the exact kernel name (as in attlens kernels)")
    _capture_opts(p)
    p.set_defaults(func=cmd_profile)

    p = sub.add_parser("kernels", help="kernel table (time, calls, ids, resources) from rocprofv3 outputs", epilog=EPILOG)
    p.add_argument("path", nargs="+", help="kernel_stats.csv, kernel_trace.csv, results.json, results.db, or a folder holding them")
    p.add_argument("--exclude", metavar="REGEX", help="flag these kernels as runtime helpers (default: HIP runtime blits and PyTorch elementwise/copy/fill/random/reduce kernels; '' flags none)")
    p.add_argument("--top", type=COUNT, default=20, metavar="N", help="rows shown (default 20; --json has all)")
    add_json(p, "attlens.kernels")
    add_no_color(p)
    p.set_defaults(func=cmd_kernels)

    p = sub.add_parser("pmc", help="L2/HBM efficiency from hardware counters: plan passes, run them, or read outputs", epilog=EPILOG)
    p.add_argument("path", nargs="?", help="counter_collection.csv, pmc_perf.csv, or a folder holding them (omit to run -- CMD)")
    p.add_argument("--target", metavar="GFX", help="gfx942 / gfx950 / MI300X / MI350X ... (default: from agent_info.csv or sysinfo.csv)")
    p.add_argument("--plan", action="store_true", help="only print the counter passes (rocprofv3 jobs) for --target")
    p.add_argument("--ideal-bytes", type=POSITIVE_NUMBER, metavar="B", help="bytes the kernel must move per dispatch (for over-fetch)")
    p.add_argument("--duration-us", type=POSITIVE_NUMBER, metavar="US", help="kernel duration from a kernel-trace run (PMC runs serialize dispatches)")
    p.add_argument("--kernel", metavar="NAME", help="with -- CMD: count only this kernel (exact name)")
    p.add_argument("-o", "--output", "--out", dest="out", default="attlens-pmc", metavar="DIR", help="with -- PROGRAM: output folder (default ./attlens-pmc); --out is the same")
    p.add_argument("--rocprofv3", metavar="PATH", help="with -- PROGRAM: the rocprofv3 executable (default: from PATH)")
    p.add_argument("--timeout", type=SECONDS, default=3600, metavar="S", help="with -- PROGRAM: seconds per rocprofv3 run (default 3600)")
    p.add_argument("--json", action="store_true", help="print one JSON object (attlens.pmc; with --plan attlens.pmc_plan) instead of text")
    add_no_color(p)
    p.set_defaults(func=cmd_pmc)


def _profile_options(args):
    from attlens.capture.profile import ProfileOptions

    return ProfileOptions(
        command=list(args.cmd),
        out_dir=args.out,
        kernel_regex=getattr(args, "kernel", None) if args.command == "profile" else None,
        kernel_name=args.kernel if args.command == "capture" else None,
        iteration=args.iteration,
        exclude=getattr(args, "exclude", None),
        target_cu=args.target_cu,
        se_mask=args.se_mask,
        simd_select=args.simd_select,
        buffer_size=args.buffer_size,
        att_library_path=args.att_library_path,
        rocprofv3=args.rocprofv3,
        timeout=args.timeout,
        noise_check=not args.no_noise_check,
        source_env=not args.no_source_env,
        pc_sampling=args.pc_sampling,
        pc_sampling_interval=args.pc_sampling_interval,
        pc_sampling_host_trap_us=args.pc_sampling_host_trap_us,
    )


def cmd_profile(args) -> int:
    from attlens.capture.profile import capture_only, profile

    opts = _profile_options(args)
    res = profile(opts) if args.command == "profile" else capture_only(opts)
    if args.json:
        emit_json(res.to_dict())
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_profile

        render_profile(res, make_console(args.no_color))
    return 0 if res.analysis is None else exit_code([res.analysis])


def cmd_kernels(args) -> int:
    from attlens.api import kernels

    table = kernels(args.path, args.exclude)
    if args.json:
        emit_json(table.to_dict())
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_kernels

        render_kernels(table, make_console(args.no_color), top=args.top)
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    return EXIT_PARTIAL if table.warnings else EXIT_OK


def cmd_pmc(args) -> int:
    from pathlib import Path

    from attlens.capture.pmc_run import run_passes
    from attlens.errors import UsageError

    cmd = list(args.cmd)
    if args.plan:
        from attlens.analysis.pmc import job_pmc_lists

        if not args.target:
            raise UsageError("--plan needs --target")
        jobs = job_pmc_lists(args.target)
        if args.json:
            from attlens.jsondoc import header

            emit_json({**header("attlens.pmc_plan"), "target": args.target, "passes": [j["pmc"] for j in jobs]})
        else:
            for i, j in enumerate(jobs, 1):
                print(f"pass {i}: {' '.join(j['pmc'])}")
        return 0
    if cmd:
        if not args.target:
            raise UsageError("running counter passes needs --target (the counter set depends on it)")
        from attlens.capture.profile import fresh_out_dir

        out, _note = fresh_out_dir(Path(args.out))
        path = run_passes(cmd, out, args.target, args.kernel, True, args.rocprofv3, args.timeout)
    elif args.path:
        from attlens.io.confine import user_path

        path = user_path(args.path)
    else:
        raise UsageError("give a counter_collection.csv / pmc_perf.csv / folder, or a program after --")
    from attlens.api import pmc

    counters = pmc(path, target=args.target, ideal_bytes=args.ideal_bytes, duration_us=args.duration_us)
    if args.json:
        emit_json(counters.to_dict())
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_pmc

        render_pmc(counters, make_console(args.no_color))
    return 0
