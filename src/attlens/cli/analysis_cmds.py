"""Commands that read one capture: analyze, plan, rules, waves, deps, export."""

from __future__ import annotations

import sys

from attlens.cli.common import (
    COUNT,
    CYCLE_WINDOW,
    EPILOG,
    POSITIVE,
    add_capture_args,
    check_output,
    emit_json,
    exit_code,
    input_files,
    one_capture,
    write_atomic,
)


def register(sub) -> None:
    p = sub.add_parser("analyze", help="stall hotspots, stall classes and occupancy of a capture", epilog=EPILOG)
    add_capture_args(p)
    p.add_argument("--topk", type=COUNT, default=10, metavar="N", help="rows per ranking (default 10; 0 = all in --json)")
    p.add_argument("--mode", choices=("asm", "src", "both"), default="both", help="rank instructions, source lines, or both")
    p.add_argument("--sort", choices=("stall", "latency", "exposed"), default="stall", help="rank by stall (default), latency, or exposed cycles (not hidden by other waves)")
    p.add_argument("--no-exposed", action="store_true", help="skip the hidden-latency model (faster; no exposed column)")
    p.add_argument("--detail", action="store_true", help="show source snippets and instructions of the top lines")
    p.add_argument("--context", type=COUNT, default=2, metavar="N", help="source lines of context with --detail (default 2)")
    p.add_argument("--no-plan", action="store_true", help="skip the short 'top findings' block")
    p.add_argument("--no-color", action="store_true", help="plain text output")
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("plan", help="an evidence-backed, prioritized optimization plan", epilog=EPILOG)
    add_capture_args(p)
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or Markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically) instead of stdout")
    p.add_argument("--disable", metavar="RULE[,RULE]", default="", help="rules to skip (ids from `attlens rules`)")
    p.add_argument("--only", metavar="RULE[,RULE]", default="", help="run only these rules")
    p.add_argument("--no-color", action="store_true")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("rules", help="list the plan's rules with their triggers, evidence and limits", epilog=EPILOG)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("waves", help="wave states, clock alignment, pipe utilization, phases and per-execution stalls", epilog=EPILOG)
    add_capture_args(p)
    p.add_argument("--topk", type=COUNT, default=10, metavar="N", help="instructions in the per-execution table (default 10)")
    p.add_argument("--no-per-wave", action="store_true", help="omit the per-wave list from --json")
    p.add_argument("--no-color", action="store_true")
    p.set_defaults(func=cmd_waves)

    p = sub.add_parser("deps", help="memory -> wait dependencies: who waits on whom, top producers", epilog=EPILOG)
    add_capture_args(p)
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--line", metavar="FILE:LINE", help="only producers and waits on this source line (path suffix is enough)")
    sel.add_argument("--pc", type=COUNT, metavar="N", help="only this instruction (a wait or a memory op) and its partners")
    p.add_argument("--topk", type=COUNT, default=10, metavar="N", help="rows per table (default 10; 0 = all in --json)")
    p.add_argument("--no-color", action="store_true")
    p.set_defaults(func=cmd_deps)

    p = sub.add_parser("export", help="export a capture as a Chrome/Perfetto trace (ui.perfetto.dev)", epilog=EPILOG)
    p.add_argument("path", help="a capture directory")
    p.add_argument("--perfetto", required=True, metavar="OUT.json", help="output file (written atomically)")
    p.add_argument("--rocprof-dir", metavar="DIR")
    p.add_argument("--max-waves", type=POSITIVE, metavar="N", help="export only the first N waves (by start time)")
    p.add_argument("--window", type=CYCLE_WINDOW, metavar="A:B", help="only waves alive between cycles A and B after the first wave starts")
    p.add_argument("--json", action="store_true", help="print a summary object")
    p.set_defaults(func=cmd_export)


def cmd_analyze(args) -> int:
    from attlens.analysis.analyze import analyze
    from attlens.model.loader import load, resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    if args.no_exposed and args.sort == "exposed":
        from attlens.errors import UsageError

        raise UsageError("--sort exposed needs the hidden-latency model: drop --no-exposed")
    results = [analyze(load(d, rocprof_dir=args.rocprof_dir), exposed=not args.no_exposed) for d in dirs]
    if args.json:
        from attlens.report.json_out import analysis_to_dict

        topk = None if args.topk == 0 else args.topk
        if args.all:
            objs = [analysis_to_dict(r, topk) for r in results]
            emit_json({"schema": "attlens.analyze_many", "schema_version": 1, "captures": objs})
        else:
            emit_json(analysis_to_dict(results[0], topk))
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
    return exit_code(results)


def _rule_set(text: str) -> set[str]:
    return {x.strip() for x in text.split(",") if x.strip()}


def cmd_plan(args) -> int:
    import io

    from attlens.analysis.analyze import analyze
    from attlens.analysis.plan import make_plan
    from attlens.model.loader import load, resolve_capture_dirs
    from attlens.report.plan_out import plan_to_dict, plan_to_markdown, render_plan

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    if args.output:
        check_output(args.output, dirs)
    results, plans = [], []
    for d in dirs:
        r = analyze(load(d, rocprof_dir=args.rocprof_dir))
        results.append(r)
        plans.append(make_plan(r, disable=_rule_set(args.disable), only=_rule_set(args.only)))
    if args.json:
        objs = [plan_to_dict(r, p) for r, p in zip(results, plans)]
        doc = objs[0] if not args.all else {"schema": "attlens.plan_many", "schema_version": 1, "captures": objs}
        if not args.output:
            emit_json(doc)
            return exit_code(results)
        from attlens.cli.common import json_text

        text = json_text(doc) + "\n"
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
        check_output(args.output, [*dirs, *input_files(results)])
        write_atomic(args.output, text)
        print(f"wrote {args.output}", file=sys.stderr)
    elif text is not None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return exit_code(results)


def cmd_rules(args) -> int:
    from attlens.analysis.plan import load_rules

    rules = load_rules()
    if args.json:
        from attlens.report.plan_out import rules_to_dict

        emit_json(rules_to_dict(rules))
        return 0
    for r in rules.values():
        print(f"{r.id}  ({r.kind}) — {r.title}")
        print(f"    trigger:  {r.trigger}")
        print(f"    evidence: {r.evidence}")
        print(f"    limits:   {r.limits}")
    return 0


def cmd_waves(args) -> int:
    from attlens.analysis.waves import analyze_waves
    from attlens.report.waves_out import render_waves, waves_to_dict

    results = one_capture(args)
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
        emit_json(objs[0] if not args.all else {"schema": "attlens.waves_many", "schema_version": 1, "captures": objs})
    return exit_code(results)


def cmd_deps(args) -> int:
    from attlens.analysis.waitattr import attribute_waits
    from attlens.errors import UsageError
    from attlens.report.waves_out import deps_to_dict, render_deps, select_deps

    results = one_capture(args)
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
        emit_json(objs[0] if not args.all else {"schema": "attlens.deps_many", "schema_version": 1, "captures": objs})
    return exit_code(results)


def cmd_export(args) -> int:
    from attlens.analysis.clock import compute_clock
    from attlens.model.loader import resolve_capture_dirs
    from attlens.report.perfetto import build_trace, write_trace

    args.all = False
    check_output(args.perfetto, resolve_capture_dirs(args.path))
    r = one_capture(args)[0]
    check_output(args.perfetto, [r.dispatch.path, *input_files([r])])
    clock = compute_clock(r.dispatch)
    trace = build_trace(r, clock, max_waves=args.max_waves, window=args.window)
    size = write_trace(trace, args.perfetto)
    meta = trace["metadata"]
    if args.json:
        emit_json({"schema": "attlens.export", "schema_version": 1, "output": str(args.perfetto), "bytes": size,
                   "events": len(trace["traceEvents"]), "waves_exported": meta["waves_exported"], "waves_total": meta["waves_total"],
                   "time_unit": meta["time_unit"]})
    else:
        print(f"wrote {args.perfetto}: {len(trace['traceEvents']):,} events, {meta['waves_exported']} of {meta['waves_total']} waves, "
              f"{size / 1e6:.1f} MB ({meta['time_unit']}); open it in ui.perfetto.dev")
    return exit_code([r])
