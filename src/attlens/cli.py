"""Command line: parse arguments, call one function, render.

Only argparse is imported at start-up; everything else is imported inside the
command that needs it, so ``attlens --help`` stays instant.
"""

from __future__ import annotations

import argparse
import os
import sys

from attlens import __version__

EPILOG = "Exit codes: docs/exit-codes.md. JSON schema: docs/json-schema.md."


def _add_capture_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a ui_output_agent_*_dispatch_* directory, or a folder holding captures")
    p.add_argument("--all", action="store_true", help="analyze every capture found under PATH")
    p.add_argument("--rocprof-dir", metavar="DIR", help="rocprofv3 outputs of the same run (agent_info.csv, kernel_trace.csv, results.json)")
    p.add_argument("--json", action="store_true", help="print one JSON object (docs/json-schema.md) instead of tables")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="attlens",
        description="Turn AMD GPU Advanced Thread Trace captures (rocprofv3 --att) into answers.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"attlens {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("analyze", help="stall hotspots, stall classes and occupancy of a capture", epilog=EPILOG)
    _add_capture_args(p)
    p.add_argument("--topk", type=int, default=10, metavar="N", help="rows per ranking (default 10; 0 = all in --json)")
    p.add_argument("--mode", choices=("asm", "src", "both"), default="both", help="rank instructions, source lines, or both")
    p.add_argument("--sort", choices=("stall", "latency", "exposed"), default="stall", help="rank by stall (default), latency, or exposed cycles (not hidden by other waves)")
    p.add_argument("--no-exposed", action="store_true", help="skip the hidden-latency model (faster; no exposed column)")
    p.add_argument("--detail", action="store_true", help="show source snippets and instructions of the top lines")
    p.add_argument("--context", type=int, default=2, metavar="N", help="source lines of context with --detail (default 2)")
    p.add_argument("--no-plan", action="store_true", help="skip the short 'top findings' block")
    p.add_argument("--no-color", action="store_true", help="plain text output")

    p = sub.add_parser("plan", help="an evidence-backed, prioritized optimization plan", epilog=EPILOG)
    _add_capture_args(p)
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or Markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically) instead of stdout")
    p.add_argument("--disable", metavar="RULE[,RULE]", default="", help="rules to skip (ids from `attlens rules`)")
    p.add_argument("--only", metavar="RULE[,RULE]", default="", help="run only these rules")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("rules", help="list the plan's rules with their triggers, evidence and limits", epilog=EPILOG)
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("waves", help="wave states, clock alignment, pipe utilization, phases and per-execution stalls", epilog=EPILOG)
    _add_capture_args(p)
    p.add_argument("--topk", type=int, default=10, metavar="N", help="instructions in the per-execution table (default 10)")
    p.add_argument("--no-per-wave", action="store_true", help="omit the per-wave list from --json")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("deps", help="memory -> wait dependencies: who waits on whom, top producers", epilog=EPILOG)
    _add_capture_args(p)
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--line", metavar="FILE:LINE", help="only producers and waits on this source line (path suffix is enough)")
    sel.add_argument("--pc", type=int, metavar="N", help="only this instruction (a wait or a memory op) and its partners")
    p.add_argument("--topk", type=int, default=10, metavar="N", help="rows per table (default 10; 0 = all in --json)")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("export", help="export a capture as a Chrome/Perfetto trace (ui.perfetto.dev)", epilog=EPILOG)
    p.add_argument("path", help="a capture directory")
    p.add_argument("--perfetto", required=True, metavar="OUT.json", help="output file (written atomically)")
    p.add_argument("--rocprof-dir", metavar="DIR")
    p.add_argument("--max-waves", type=int, metavar="N", help="export only the first N waves (by start time)")
    p.add_argument("--window", metavar="A:B", help="only waves alive between cycles A and B after the first wave starts")
    p.add_argument("--json", action="store_true", help="print a summary object")

    def capture_opts(p):
        p.add_argument("--out", default="attlens-profile", metavar="DIR", help="output folder (default ./attlens-profile)")
        p.add_argument("--iteration", type=int, metavar="K", help="trace the K-th dispatch per kernel id (default: a steady-state one)")
        p.add_argument("--target-cu", type=int, default=1, metavar="N", help="CU traced in each selected SE (default 1)")
        p.add_argument("--se-mask", default="0xf", metavar="MASK", help="shader engines to trace (default 0xf)")
        p.add_argument("--simd-select", default="0xf", metavar="MASK", help="SIMDs to trace (default 0xf)")
        p.add_argument("--buffer-size", default="0x6000000", metavar="BYTES", help="ATT buffer (default 0x6000000 = 96 MiB)")
        p.add_argument("--att-library-path", metavar="DIR", help="directory holding librocprof-trace-decoder.so")
        p.add_argument("--rocprofv3", metavar="PATH", help="rocprofv3 executable (default: from PATH)")
        p.add_argument("--timeout", type=float, default=3600, metavar="S", help="per rocprofv3 run (default 3600 s)")
        p.add_argument("--no-noise-check", action="store_true", help="capture one dispatch, not two")
        p.add_argument("--no-source-env", action="store_true", help="do not set the line-info/JIT-cache environment (docs/capture.md)")
        p.add_argument("--json", action="store_true")
        p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("profile", help="discover kernels, capture a steady-state dispatch with rocprofv3 --att, analyze it",
                       usage="attlens profile [options] -- PROGRAM [ARGS ...]", epilog=EPILOG)
    p.add_argument("--kernel", metavar="REGEX", help="kernel to trace (default: the largest total time, runtime helpers excluded)")
    p.add_argument("--exclude", metavar="REGEX", help="kernels never picked by default (default: docs/capture.md)")
    capture_opts(p)

    p = sub.add_parser("capture", help="capture one known kernel (job file + rocprofv3 --att + output discovery)",
                       usage="attlens capture --kernel NAME [options] -- PROGRAM [ARGS ...]", epilog=EPILOG)
    p.add_argument("--kernel", required=True, metavar="NAME", help="the exact kernel name (as in attlens kernels)")
    capture_opts(p)

    p = sub.add_parser("report", help="single-file offline HTML report (or a Markdown bundle); an index for several captures", epilog=EPILOG)
    p.add_argument("path", nargs="*", help="capture directories (or one folder holding several)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="report.html; with --format md a directory; with several captures the index page")
    p.add_argument("--format", choices=("html", "md"), default="html")
    p.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="an HTML diff of two captures instead")
    p.add_argument("--rocprof-dir", metavar="DIR")
    p.add_argument("--pmc", metavar="PATH", help="counter_collection.csv / pmc_perf.csv of the same kernel to add the L2/HBM block")

    p = sub.add_parser("diff", help="compare two captures of a kernel (by source line and aligned instruction sites)", epilog=EPILOG)
    p.add_argument("before", help="capture directory, or an attlens analyze --json --topk 0 file")
    p.add_argument("after", help="capture directory, or an attlens analyze --json --topk 0 file")
    p.add_argument("--force", action="store_true", help="diff even when kernel or target differ")
    p.add_argument("--noise-floor", type=float, metavar="PCT", help="relative change (%%) below which a change is noise")
    p.add_argument("--noise", nargs=2, metavar=("A", "B"), help="two captures of the same dispatch range: their difference is the noise floor")
    p.add_argument("--top", type=int, default=10, metavar="N")
    p.add_argument("--format", choices=("text", "md"), default="text")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("check", help="gate a capture against a baseline: exit 0 within bounds, 20 on regression", epilog=EPILOG)
    p.add_argument("capture", help="capture directory or attlens analyze --json --topk 0 file")
    p.add_argument("--baseline", required=True, metavar="BASELINE")
    p.add_argument("--max-regression", type=float, default=5.0, metavar="PCT", help="allowed increase in %% (default 5)")
    p.add_argument("--metric", default="total", metavar="M", help="total | stall | class:NAME | line:FILE:LINE (per traced wave; default total latency)")
    p.add_argument("--force", action="store_true", help="compare even when kernel or target differ")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML result")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("kernels", help="kernel table (time, calls, ids, resources) from rocprofv3 outputs", epilog=EPILOG)
    p.add_argument("path", nargs="+", help="kernel_stats.csv, kernel_trace.csv, results.json, results.db, or a folder holding them")
    p.add_argument("--exclude", metavar="REGEX", help="flag these kernels as runtime helpers (default: docs/capture.md; '' flags none)")
    p.add_argument("--top", type=int, default=20, metavar="N", help="rows shown (default 20; --json has all)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("pmc", help="L2/HBM efficiency from hardware counters: plan passes, run them, or read outputs", epilog=EPILOG)
    p.add_argument("path", nargs="?", help="counter_collection.csv, pmc_perf.csv, or a folder holding them (omit to run -- CMD)")
    p.add_argument("--target", metavar="GFX", help="gfx942 / gfx950 / MI300X / MI350X ... (default: from agent_info.csv or sysinfo.csv)")
    p.add_argument("--plan", action="store_true", help="only print the counter passes (rocprofv3 jobs) for --target")
    p.add_argument("--ideal-bytes", type=float, metavar="B", help="bytes the kernel must move per dispatch (for over-fetch)")
    p.add_argument("--duration-us", type=float, metavar="US", help="kernel duration from a kernel-trace run (PMC runs serialize dispatches)")
    p.add_argument("--kernel", metavar="NAME", help="with -- CMD: count only this kernel (exact name)")
    p.add_argument("--out", default="attlens-pmc", metavar="DIR", help="with -- CMD: output folder")
    p.add_argument("--rocprofv3", metavar="PATH")
    p.add_argument("--timeout", type=float, default=3600, metavar="S")
    p.add_argument("--json", action="store_true")
    p.add_argument("--no-color", action="store_true")

    p = sub.add_parser("demo", help="build a synthetic capture with a planted hotspot and analyze it", epilog=EPILOG)
    p.add_argument("--out", metavar="DIR", help="write the capture here (default: a new temporary directory)")
    p.add_argument("--json", action="store_true", help="print the analysis as JSON")
    p.add_argument("--topk", type=int, default=8, metavar="N")
    p.add_argument("--no-color", action="store_true")
    return parser


def _print_error(exc, as_json: bool) -> None:
    from attlens.errors import SeveralCaptures

    msg = f"attlens: error: {exc.message}"
    if exc.hint:
        msg += f" (hint: {exc.hint})"
    print(msg, file=sys.stderr)
    if isinstance(exc, SeveralCaptures) and not as_json:
        print("captures found:", file=sys.stderr)
        for c in exc.candidates:
            waves = "?" if c.waves is None else c.waves
            instr = "?" if c.instructions is None else c.instructions
            print(f"  {c.path}  waves={waves} instructions={instr}" + (f"  ({c.error})" if c.error else ""), file=sys.stderr)
    if as_json:
        from attlens.report.json_out import dumps, error_to_dict

        print(dumps(error_to_dict(exc)))


def cmd_analyze(args) -> int:
    from attlens.analysis.analyze import analyze
    from attlens.errors import EXIT_OK, EXIT_PARTIAL
    from attlens.model.loader import load, resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    if args.no_exposed and args.sort == "exposed":
        from attlens.errors import UsageError

        raise UsageError("--sort exposed needs the hidden-latency model: drop --no-exposed")
    results = [analyze(load(d, rocprof_dir=args.rocprof_dir), exposed=not args.no_exposed) for d in dirs]
    if args.json:
        from attlens.report.json_out import analysis_to_dict, dumps

        topk = None if args.topk == 0 else args.topk
        if args.all:
            objs = [analysis_to_dict(r, topk) for r in results]
            print(dumps({"schema": "attlens.analyze_many", "schema_version": 1, "captures": objs}))
        else:
            print(dumps(analysis_to_dict(results[0], topk)))
    else:
        from attlens.report.terminal import make_console, render_analysis

        console = make_console(args.no_color)
        for i, r in enumerate(results):
            if i:
                console.rule()
            findings = None
            if not args.no_plan:
                from attlens.analysis.plan import make_plan
                from attlens.report.plan_out import top_findings_lines

                findings = top_findings_lines(make_plan(r)) or ["no rule fired"]
                findings.append(f"(attlens plan {r.dispatch.path} for the evidence and changes)")
            render_analysis(r, console, topk=max(args.topk, 1), mode=args.mode, detail=args.detail, context=args.context, sort=args.sort, findings=findings)
    return EXIT_PARTIAL if any(r.dispatch.partial for r in results) else EXIT_OK


def cmd_demo(args) -> int:
    import tempfile

    from attlens.analysis.analyze import analyze
    from attlens.model.loader import load
    from attlens.synth import write_capture

    out = args.out or tempfile.mkdtemp(prefix="attlens-demo-")
    path = write_capture(out)
    result = analyze(load(path))
    if args.json:
        from attlens.report.json_out import analysis_to_dict, dumps

        print(dumps(analysis_to_dict(result, args.topk)))
        return 0
    from attlens.report.terminal import make_console, render_analysis

    console = make_console(args.no_color)
    console.print(f"[bold]attlens demo[/bold]: a synthetic capture of a toy kernel (docs/demo.md) written to {path}")
    console.print("The planted hotspot is the global-memory wait at toy_kernel.py:24; the analysis below should rank it first.\n")
    from attlens.analysis.plan import make_plan
    from attlens.report.plan_out import top_findings_lines

    findings = top_findings_lines(make_plan(result)) + [f"(attlens plan {path} for the evidence and changes)"]
    render_analysis(result, console, topk=args.topk, mode="both", detail=True, context=1, detail_k=2, findings=findings)
    console.print(f"\nNext: attlens analyze {path} --json")
    return 0


def _one_capture(args):
    from attlens.analysis.analyze import analyze
    from attlens.model.loader import load, resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=getattr(args, "all", False))
    return [analyze(load(d, rocprof_dir=args.rocprof_dir), exposed=False) for d in dirs]


def _exit_code(results) -> int:
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    return EXIT_PARTIAL if any(r.dispatch.partial for r in results) else EXIT_OK


def cmd_waves(args) -> int:
    from attlens.analysis.waves import analyze_waves
    from attlens.report.waves_out import render_waves, waves_to_dict

    results = _one_capture(args)
    objs = []
    for i, r in enumerate(results):
        wa = analyze_waves(r, top=max(args.topk, 1))
        if args.json:
            objs.append(waves_to_dict(r, wa, per_wave=not args.no_per_wave))
        else:
            from attlens.report.terminal import make_console

            console = make_console(args.no_color)
            if i:
                console.rule()
            render_waves(r, wa, console, topk=max(args.topk, 1))
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps(objs[0] if not args.all else {"schema": "attlens.waves_many", "schema_version": 1, "captures": objs}))
    return _exit_code(results)


def cmd_deps(args) -> int:
    from attlens.analysis.waitattr import attribute_waits
    from attlens.errors import UsageError
    from attlens.report.waves_out import deps_to_dict, render_deps, select_deps

    results = _one_capture(args)
    objs = []
    for i, r in enumerate(results):
        att = attribute_waits(r.dispatch, r.deps, r.pairs)
        if args.pc is not None and not (0 <= args.pc < r.dispatch.code.size and r.dispatch.code.instruction_mask[args.pc]):
            raise UsageError(f"--pc {args.pc}: no instruction with that pc index (0..{r.dispatch.code.size - 1})")
        producers, waits = select_deps(r, att, pc=args.pc, line=args.line)
        if args.line is not None and not producers and not waits:
            raise UsageError(f"--line {args.line}: no memory op or wait on that line (try a longer or shorter path suffix)")
        if args.json:
            objs.append(deps_to_dict(r, att, producers, waits, None if args.topk == 0 else args.topk))
        else:
            from attlens.report.terminal import make_console

            console = make_console(args.no_color)
            if i:
                console.rule()
            title = f" (pc {args.pc})" if args.pc is not None else (f" (line {args.line})" if args.line else "")
            render_deps(r, att, producers, waits, console, topk=max(args.topk, 1), title=title)
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps(objs[0] if not args.all else {"schema": "attlens.deps_many", "schema_version": 1, "captures": objs}))
    return _exit_code(results)


def _write_atomic(path: str, text: str) -> None:
    from attlens.fsutil import write_atomic

    write_atomic(path, text)


def _rule_set(text: str) -> set[str]:
    return {x.strip() for x in text.split(",") if x.strip()}


def cmd_plan(args) -> int:
    import io

    from attlens.analysis.analyze import analyze
    from attlens.analysis.plan import make_plan
    from attlens.model.loader import load, resolve_capture_dirs
    from attlens.report.plan_out import plan_to_dict, plan_to_markdown, render_plan

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    results, plans = [], []
    for d in dirs:
        r = analyze(load(d, rocprof_dir=args.rocprof_dir))
        results.append(r)
        plans.append(make_plan(r, disable=_rule_set(args.disable), only=_rule_set(args.only)))
    if args.json:
        from attlens.report.json_out import dumps

        objs = [plan_to_dict(r, p) for r, p in zip(results, plans)]
        text = dumps(objs[0] if not args.all else {"schema": "attlens.plan_many", "schema_version": 1, "captures": objs}) + "\n"
    elif args.format == "md":
        text = "\n\n".join(plan_to_markdown(r, p) for r, p in zip(results, plans))
    else:
        from rich.console import Console

        from attlens.report.terminal import make_console

        if args.output:
            buf = io.StringIO()
            console = Console(file=buf, width=200, no_color=True, highlight=False)
        else:
            console = make_console(args.no_color)
        for i, (r, p) in enumerate(zip(results, plans)):
            if i:
                console.rule()
            render_plan(r, p, console)
        text = buf.getvalue() if args.output else None
    if args.output:
        _write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    elif text is not None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return _exit_code(results)


def cmd_rules(args) -> int:
    from attlens.analysis.plan import load_rules

    rules = load_rules()
    if args.json:
        from attlens.report.json_out import dumps
        from attlens.report.plan_out import rules_to_dict

        print(dumps(rules_to_dict(rules)))
        return 0
    for r in rules.values():
        print(f"{r.id}  ({r.kind}) — {r.title}")
        print(f"    trigger:  {r.trigger}")
        print(f"    evidence: {r.evidence}")
        print(f"    limits:   {r.limits}")
    return 0


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
    )


def cmd_profile(args) -> int:
    from attlens.capture.profile import capture_only, profile
    from attlens.report.profile_out import profile_to_dict, render_profile

    opts = _profile_options(args)
    res = profile(opts) if args.command == "profile" else capture_only(opts)
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps(profile_to_dict(res)))
    else:
        from attlens.report.terminal import make_console

        render_profile(res, make_console(args.no_color))
    return 0 if res.analysis is None else _exit_code([res.analysis])


def cmd_report(args) -> int:
    from pathlib import Path

    from attlens.errors import UsageError

    if args.diff:
        from attlens.analysis.diff import diff, load_side
        from attlens.report.diff_out import diff_to_html

        res = diff(load_side(args.diff[0]), load_side(args.diff[1]))
        _write_atomic(args.output, diff_to_html(res))
        print(f"wrote {args.output}", file=sys.stderr)
        return 0
    if not args.path:
        raise UsageError("give one or more capture directories (or --diff BEFORE AFTER)")
    from attlens.model.loader import resolve_capture_dirs

    dirs = [d for p in args.path for d in resolve_capture_dirs(p, all_captures=True)]
    pmc = None
    if args.pmc:
        from attlens.analysis.pmc import analyze_dispatches
        from attlens.capture.pmc_run import detect_target, read_pmc_outputs

        pivot, _src = read_pmc_outputs(Path(args.pmc))
        target = detect_target(Path(args.pmc))
        if not target:
            raise UsageError(f"{args.pmc}: cannot tell the GPU target of the counters (no agent_info.csv / sysinfo.csv beside them)")
        pmc = analyze_dispatches(pivot, target)
    if args.format == "md":
        if len(dirs) != 1:
            raise UsageError("--format md writes one capture's bundle: pass one capture")
        from attlens.analysis.analyze import analyze
        from attlens.analysis.plan import make_plan
        from attlens.analysis.waves import analyze_waves
        from attlens.model.loader import load
        from attlens.report.markdown import render_markdown_bundle

        r = analyze(load(dirs[0], rocprof_dir=args.rocprof_dir))
        waves = analyze_waves(r)
        md, js = render_markdown_bundle(r, make_plan(r, waves=waves), waves, Path(args.output))
        print(f"wrote {md} and {js}", file=sys.stderr)
        return _exit_code([r])
    from attlens.report.html import render_captures

    written = render_captures(dirs, args.output, rocprof_dir=args.rocprof_dir, pmc=pmc)
    for w in written:
        print(f"wrote {w}", file=sys.stderr)
    return 0


def cmd_diff(args) -> int:
    from attlens.analysis.diff import diff, load_side, noise_between
    from attlens.report.diff_out import diff_to_dict, diff_to_markdown, render_diff

    a, b = load_side(args.before), load_side(args.after)
    floor, source = None, None
    if args.noise_floor is not None:
        floor, source = args.noise_floor / 100, "--noise-floor"
    elif args.noise:
        floor, source = noise_between(load_side(args.noise[0]), load_side(args.noise[1])), f"--noise {args.noise[0]} {args.noise[1]}"
    res = diff(a, b, force=args.force, noise_floor=floor, noise_source=source)
    if args.json:
        from attlens.report.json_out import dumps

        text = dumps(diff_to_dict(res, top=None if args.top == 0 else args.top)) + "\n"
    elif args.format == "md":
        text = diff_to_markdown(res, top=max(args.top, 1))
    else:
        text = None
        if args.output:
            import io

            from rich.console import Console

            buf = io.StringIO()
            render_diff(res, Console(file=buf, width=200, no_color=True, highlight=False), top=max(args.top, 1))
            text = buf.getvalue()
        else:
            from attlens.report.terminal import make_console

            render_diff(res, make_console(args.no_color), top=max(args.top, 1))
    if args.output:
        _write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    elif text is not None:
        sys.stdout.write(text)
    return 0


def cmd_check(args) -> int:
    from attlens.analysis.diff import comparability, load_side, metric_value
    from attlens.errors import EXIT_OK, EXIT_REGRESSION, Incomparable

    cur, base = load_side(args.capture), load_side(args.baseline)
    blocking = [c for c in comparability(base, cur) if c["blocking"]]
    if blocking and not args.force:
        raise Incomparable("not comparable: " + "; ".join(f"{c['field']} {c['before']} vs {c['after']}" for c in blocking), hint="pass --force")
    before, after = metric_value(base, args.metric), metric_value(cur, args.metric)
    change = (after - before) / before * 100 if before else (0.0 if after == 0 else None)
    passed = change is not None and change <= args.max_regression
    msg = (f"{args.metric} per wave {before:,.1f} -> {after:,.1f} ({'n/a' if change is None else f'{change:+.2f}%'}; "
           f"limit +{args.max_regression}%): {'ok' if passed else 'REGRESSION'}")
    if args.junit:
        from attlens.report.diff_out import junit_xml

        _write_atomic(args.junit, junit_xml(cur.kernel, args.metric, before, after, change, args.max_regression, passed, msg))
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps({"schema": "attlens.check", "schema_version": 1, "metric": args.metric, "baseline": before, "current": after,
                     "change_percent": change, "max_regression_percent": args.max_regression, "passed": passed}))
    else:
        print(msg)
    return EXIT_OK if passed else EXIT_REGRESSION


def cmd_kernels(args) -> int:
    from attlens.capture.kernels import kernel_table
    from attlens.report.kernels_out import kernels_to_dict, render_kernels

    paths = args.path if len(args.path) > 1 else args.path[0]
    table = kernel_table(paths) if args.exclude is None else kernel_table(paths, exclude=args.exclude)
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps(kernels_to_dict(table)))
    else:
        from attlens.report.terminal import make_console

        render_kernels(table, make_console(args.no_color), top=args.top)
    return 0


def cmd_pmc(args) -> int:
    from pathlib import Path

    from attlens.capture.pmc_run import detect_target, read_pmc_outputs, run_passes
    from attlens.errors import UsageError

    cmd = list(args.cmd)
    if args.plan:
        from attlens.analysis.pmc import job_pmc_lists

        if not args.target:
            raise UsageError("--plan needs --target")
        jobs = job_pmc_lists(args.target)
        if args.json:
            from attlens.report.json_out import dumps

            print(dumps({"schema": "attlens.pmc_plan", "schema_version": 1, "target": args.target, "passes": [j["pmc"] for j in jobs]}))
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
        path = Path(args.path)
    else:
        raise UsageError("give a counter_collection.csv / pmc_perf.csv / folder, or a program after --")
    pivot, source = read_pmc_outputs(path)
    target = args.target or detect_target(path)
    if not target:
        raise UsageError(f"{path}: cannot tell the GPU target; pass --target gfx942|gfx950")
    from attlens.analysis.pmc import analyze_dispatches

    durations = {d: args.duration_us * 1000 for d in pivot} if args.duration_us else None
    results = analyze_dispatches(pivot, target, ideal_bytes=args.ideal_bytes, durations_ns=durations)
    if args.json:
        from attlens.report.json_out import dumps
        from attlens.report.pmc_out import pmc_to_dict

        print(dumps(pmc_to_dict(results, source=source)))
    else:
        from attlens.report.pmc_out import render_pmc
        from attlens.report.terminal import make_console

        render_pmc(results, make_console(args.no_color))
    return 0


def cmd_export(args) -> int:
    from attlens.analysis.clock import compute_clock
    from attlens.errors import UsageError
    from attlens.report.perfetto import build_trace, write_trace

    window = None
    if args.window:
        try:
            a, b = (int(x) for x in args.window.split(":"))
        except ValueError:
            raise UsageError(f"--window {args.window}: expected A:B in cycles, e.g. 0:200000") from None
        if b <= a:
            raise UsageError(f"--window {args.window}: B must be larger than A")
        window = (a, b)
    if args.max_waves is not None and args.max_waves < 1:
        raise UsageError("--max-waves must be at least 1")
    args.all = False
    r = _one_capture(args)[0]
    clock = compute_clock(r.dispatch)
    trace = build_trace(r, clock, max_waves=args.max_waves, window=window)
    size = write_trace(trace, args.perfetto)
    meta = trace["metadata"]
    if args.json:
        from attlens.report.json_out import dumps

        print(dumps({"schema": "attlens.export", "schema_version": 1, "output": str(args.perfetto), "bytes": size,
                     "events": len(trace["traceEvents"]), "waves_exported": meta["waves_exported"], "waves_total": meta["waves_total"],
                     "time_unit": meta["time_unit"]}))
    else:
        print(f"wrote {args.perfetto}: {len(trace['traceEvents']):,} events, {meta['waves_exported']} of {meta['waves_total']} waves, "
              f"{size / 1e6:.1f} MB ({meta['time_unit']}); open it in ui.perfetto.dev")
    return _exit_code([r])


COMMANDS = {"report": cmd_report, "diff": cmd_diff, "check": cmd_check, "kernels": cmd_kernels, "pmc": cmd_pmc, "profile": cmd_profile, "capture": cmd_profile, "analyze": cmd_analyze, "plan": cmd_plan, "rules": cmd_rules, "waves": cmd_waves, "deps": cmd_deps, "export": cmd_export, "demo": cmd_demo}


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    # Everything after "--" is the program to run (profile, capture, pmc).
    cmd: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, cmd = argv[:i], argv[i + 1 :]
    args = parser.parse_args(argv)
    args.cmd = cmd
    if not args.command:
        parser.print_help()
        return 2
    from attlens.errors import EXIT_INTERNAL, AttlensError

    try:
        return COMMANDS[args.command](args)
    except AttlensError as exc:
        _print_error(exc, getattr(args, "json", False))
        return exc.exit_code
    except KeyboardInterrupt:
        print("attlens: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into a closed reader (e.g. `| head`): not an error.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # never show a traceback to users
        if os.environ.get("ATTLENS_DEBUG"):
            raise
        print(
            f"attlens: internal error: {type(exc).__name__}: {exc} (please report it; set ATTLENS_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
