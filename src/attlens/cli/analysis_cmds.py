"""Commands that read one capture: analyze, plan, rules, waves, deps, export."""

from __future__ import annotations

from attlens.cli.common import (
    COUNT,
    CYCLE_WINDOW,
    EPILOG,
    PC,
    POSITIVE,
    ROCPROF_DIR_HELP,
    add_json,
    add_no_color,
    add_cache_args,
    add_capture_args,
    add_pc_sampling_args,
    check_output,
    emit,
    emit_json,
    exit_code,
    input_files,
    json_answer,
    load_analyzed,
    one_capture,
    say,
    stored_answer,
    text_answer,
    write_atomic,
)


def register(sub) -> None:
    p = sub.add_parser("analyze", help="stall hotspots, stall classes and occupancy of a capture", epilog=EPILOG)
    add_capture_args(p, "attlens.analyze")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=10, metavar="N", help="rows per ranking (default 10; 0 = all in --json); --topk is the same")
    p.add_argument("--mode", choices=("asm", "src", "both"), default="both", help="rank instructions, source lines, or both")
    p.add_argument("--sort", choices=("stall", "latency", "exposed", "idle"), default="stall", help="rank by stall (default), latency, exposed cycles (not hidden by other waves), or idle (idle needs --by)")
    p.add_argument("--by", choices=("instruction", "line", "opcode"), help="one ranking of instructions, source lines or opcodes (--json: an attlens.hotspots object)")
    p.add_argument("--no-exposed", action="store_true", help="skip the hidden-latency model (faster; no exposed column)")
    p.add_argument("--detail", action="store_true", help="show source snippets and instructions of the top lines")
    p.add_argument("--context", type=COUNT, default=2, metavar="N", help="source lines of context with --detail (default 2)")
    p.add_argument("--no-plan", action="store_true", help="skip the short 'top findings' block")
    p.add_argument("--summary", action="store_true", help="one screen: the verdict, top findings and the numbers behind them (--json: attlens.summary, the MCP summary tool's object)")
    add_pc_sampling_args(p)
    add_no_color(p)
    p.set_defaults(func=cmd_analyze)

    p = sub.add_parser("plan", help="an evidence-backed, prioritized optimization plan", epilog=EPILOG)
    add_capture_args(p, "attlens.plan")
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or Markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically) instead of stdout")
    p.add_argument("--disable", metavar="RULE[,RULE]", default="", help="rules to skip (ids from `attlens rules`)")
    p.add_argument("--only", metavar="RULE[,RULE]", default="", help="run only these rules")
    add_pc_sampling_args(p)
    add_no_color(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("rules", help="list the plan's rules with their triggers, evidence and limits", epilog=EPILOG)
    add_json(p, "attlens.rules")
    p.set_defaults(func=cmd_rules)

    p = sub.add_parser("waves", help="wave states, clock alignment, pipe utilization, phases and per-execution stalls", epilog=EPILOG)
    add_capture_args(p, "attlens.waves")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=10, metavar="N", help="instructions in the per-execution table (default 10); --topk is the same")
    p.add_argument("--no-per-wave", action="store_true", help="omit the per-wave list from --json")
    add_no_color(p)
    p.set_defaults(func=cmd_waves)

    p = sub.add_parser("deps", help="memory -> wait dependencies: who waits on whom, top producers", epilog=EPILOG)
    add_capture_args(p, "attlens.deps")
    sel = p.add_mutually_exclusive_group()
    sel.add_argument("--line", metavar="FILE:LINE", help="only producers and waits on this source line (path suffix is enough)")
    sel.add_argument("--pc", type=PC, metavar="N|0xADDR", help="only this instruction (a wait or a memory op; pc index or 0x address) and its partners")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=10, metavar="N", help="rows per table (default 10; 0 = all in --json); --topk is the same")
    add_no_color(p)
    p.set_defaults(func=cmd_deps)

    p = sub.add_parser("export", help="export a capture as a Perfetto trace (protobuf, every wave, memory -> wait flows) or Chrome JSON", epilog=EPILOG)
    p.add_argument("path", help="a capture directory")
    p.add_argument("-o", "--output", "--perfetto", dest="output", required=True, metavar="OUT",
                   help="the trace file to write (atomically): OUT.pftrace a Perfetto protobuf trace, OUT.json a Chrome/Perfetto JSON trace; --perfetto is the same")
    p.add_argument("--format", choices=("proto", "json"), help="proto: Perfetto protobuf (needs the perfetto extra); json: Chrome JSON for chrome://tracing (default: json for a .json file, else proto)")
    p.add_argument("--rocprof-dir", metavar="DIR", help=ROCPROF_DIR_HELP)
    p.add_argument("--max-waves", type=POSITIVE, metavar="N", help="export only the first N waves (by start time)")
    p.add_argument("--window", type=CYCLE_WINDOW, metavar="A:B", help="only waves alive between cycles A and B after the first wave starts")
    p.add_argument("--max-events", type=COUNT, default=None, metavar="N",
                   help="stop adding waves before the trace passes N events (json default 1,000,000, ~140 MB; proto default: no limit; 0 = no limit)")
    p.add_argument("--json", action="store_true", help="print what was written (attlens.export; attlens schema attlens.export)")
    add_cache_args(p)
    p.set_defaults(func=cmd_export)


def cmd_analyze(args) -> int:
    from attlens.model.locate import resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    from attlens.io.pcsampling_rcv import is_pc_sampling_dir

    if any(is_pc_sampling_dir(d) for d in dirs):
        return _analyze_with_pc_sampling_dirs(args, dirs)
    if args.no_exposed and args.sort == "exposed":
        from attlens.errors import UsageError

        raise UsageError("--sort exposed needs the hidden-latency model: drop --no-exposed")
    if args.sort == "idle" and not args.by:
        from attlens.errors import UsageError

        raise UsageError("--sort idle ranks one table: add --by instruction|line|opcode")
    if args.summary and (args.by or args.all or args.no_plan):
        from attlens.errors import UsageError

        raise UsageError("--summary is one capture's verdict and numbers: drop --by, --all and --no-plan")
    if args.summary:
        from attlens.api import summary

        results = load_analyzed(args, dirs, exposed=not args.no_exposed)
        sm = summary(results[0], top=max(args.top, 1))
        if args.json:
            emit_json(sm.to_dict())
        else:
            from attlens.report.console import make_console
            from attlens.report.terminal import render_summary

            render_summary(sm, make_console(args.no_color))
        return exit_code(results)
    if args.json and not args.all:
        if args.by:
            from attlens.analysis.hotspots import hotspot_table

            return json_answer(args, "analyze", dirs[0], lambda r: hotspot_table(r, args.by, args.sort).to_dict(args.top),
                               exposed=not args.no_exposed)
        return json_answer(args, "analyze", dirs[0], lambda r: r.to_dict(args.top), exposed=not args.no_exposed)
    if not args.json and not args.all:
        render = _render_hotspots if args.by else _render_analysis
        return text_answer(args, "analyze", dirs[0], lambda r: render(args, r, _console(args.no_color)),
                           exposed=not args.no_exposed)
    results = load_analyzed(args, dirs, exposed=not args.no_exposed)
    if args.by:
        return _analyze_by(args, results)
    if args.json:
        from attlens.jsondoc import many

        if args.all:
            emit_json(many("attlens.analyze_many", [r.to_dict(args.top) for r in results]))
        else:
            emit_json(results[0].to_dict(args.top))
    else:
        console = _console(args.no_color)
        for i, r in enumerate(results):
            if i:
                console.rule()
            _render_analysis(args, r, console)
    return exit_code(results)


def _console(no_color: bool):
    """The console of a command's text on stdout (report/console.py)."""
    from attlens.report.console import make_console

    return make_console(no_color)


def _render_analysis(args, r, console) -> None:
    from attlens.report.terminal import render_analysis

    findings = verdict = None
    if not args.no_plan:
        from attlens.analysis.plan import make_plan
        from attlens.report.text import top_findings_lines, verdict_sentence

        plan = make_plan(r)
        verdict = verdict_sentence(plan)
        findings = top_findings_lines(plan) or ["no rule fired"]
        findings.append(f"(attlens plan {r.dispatch.path} for the evidence and changes)")
    render_analysis(r, console, topk=max(args.top, 1), mode=args.mode, detail=args.detail, context=args.context, sort=args.sort,
                    findings=findings, verdict=verdict)


def _render_hotspots(args, r, console) -> None:
    from attlens.analysis.hotspots import hotspot_table
    from attlens.report.terminal import render_hotspots

    render_hotspots(hotspot_table(r, args.by, args.sort), console, top=max(args.top, 1))


def _analyze_with_pc_sampling_dirs(args, dirs) -> int:
    """``analyze`` over folders some of which are PC-sampling-only ``ui_output``
    directories (no wave file): those get the per-instruction table of sampled
    stall reasons (``attlens.pc_sampling``: no cycles), the others the usual analysis."""
    from attlens.errors import EXIT_OK, EXIT_PARTIAL, UsageError
    from attlens.io.pcsampling_rcv import is_pc_sampling_dir

    if args.by:
        raise UsageError("--by ranks thread-trace cycles; a PC-sampling-only directory has none (its instructions are ranked by samples)")
    from attlens.api import pc_sampling

    items, partial = [], False
    for d in dirs:
        if is_pc_sampling_dir(d):
            v = pc_sampling(d)
            partial |= bool(v.warnings)
            items.append(("pcs", v))
        else:
            r = load_analyzed(args, [d], exposed=not args.no_exposed)[0]
            partial |= r.dispatch.partial
            items.append(("att", r))
    if args.json:
        from attlens.jsondoc import many

        objs = [x.to_dict(args.top) for _k, x in items]
        emit_json(objs[0] if not args.all else many("attlens.analyze_many", objs))
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_analysis, render_pc_sampling_view

        console = make_console(args.no_color)
        for i, (kind, x) in enumerate(items):
            if i:
                console.rule()
            if kind == "pcs":
                render_pc_sampling_view(x, console, top=max(args.top, 1), mode=args.mode)
            else:
                render_analysis(x, console, topk=max(args.top, 1), mode=args.mode, detail=args.detail, context=args.context, sort=args.sort)
    return EXIT_PARTIAL if partial else EXIT_OK


def _analyze_by(args, results) -> int:
    """``analyze --by``: one ranking (``attlens.hotspots``), the MCP ``hotspots`` tool's object."""
    from attlens.analysis.hotspots import hotspot_table

    tables = [hotspot_table(r, args.by, args.sort) for r in results]
    if args.json:
        from attlens.jsondoc import many

        objs = [t.to_dict(args.top) for t in tables]
        emit_json(objs[0] if not args.all else many("attlens.hotspots_many", objs))
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_hotspots

        console = make_console(args.no_color)
        for i, t in enumerate(tables):
            if i:
                console.rule()
            render_hotspots(t, console, top=max(args.top, 1))
    return exit_code(results)


def _rule_set(text: str) -> set[str]:
    return {x.strip() for x in text.split(",") if x.strip()}


def _plan(args, r):
    from attlens.api import plan

    return plan(r, disable=_rule_set(args.disable), only=_rule_set(args.only))


def cmd_plan(args) -> int:
    import io

    from attlens.model.locate import resolve_capture_dirs

    dirs = resolve_capture_dirs(args.path, all_captures=args.all)
    if args.output:
        check_output(args.output, [*dirs, args.pc_sampling])
    if args.json and not args.all and not args.output:
        return json_answer(args, "plan", dirs[0], lambda r: _plan(args, r).to_dict())
    if not args.json and not args.all:
        return _plan_text_answer(args, dirs[0])
    results = load_analyzed(args, dirs)
    plans = [_plan(args, r) for r in results]
    if args.json:
        from attlens.cli.common import json_text
        from attlens.jsondoc import many

        objs = [p.to_dict() for p in plans]
        doc = objs[0] if not args.all else many("attlens.plan_many", objs)
        if not args.output:
            emit_json(doc)
            return exit_code(results)
        text = json_text(doc) + "\n"
    elif args.format == "md":
        from attlens.report.markdown import plan_to_markdown

        text = "\n\n".join(plan_to_markdown(p) for p in plans)
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_plan

        buf = io.StringIO() if args.output else None
        console = make_console(args.no_color, file=buf)
        for i, p in enumerate(plans):
            if i:
                console.rule()
            render_plan(p, console)
        text = buf.getvalue() if args.output else None
    if args.output:
        check_output(args.output, [*dirs, *input_files(results)])
        write_atomic(args.output, text)
        say(f"wrote {args.output}")
    elif text is not None:
        emit(text)
    return exit_code(results)


def _plan_text(args, r) -> str:
    """The plan as it is written to a file or as Markdown (no colour)."""
    if args.format == "md":
        from attlens.report.markdown import plan_to_markdown

        return plan_to_markdown(_plan(args, r))
    import io

    from attlens.report.console import make_console as make
    from attlens.report.terminal import render_plan

    buf = io.StringIO()
    render_plan(_plan(args, r), make(args.no_color, file=buf))
    return buf.getvalue()


def _plan_text_answer(args, capture) -> int:
    """``plan`` of one capture as text or Markdown, to stdout or ``-o``: a stored answer."""
    if not args.output:
        if args.format == "md":
            return text_answer(args, "plan", capture, lambda r: emit(_plan_text(args, r)))
        from attlens.report.terminal import render_plan

        return text_answer(args, "plan", capture, lambda r: render_plan(_plan(args, r), _console(args.no_color)))
    from attlens.report.tty import terminal_width

    doc, code, _ = stored_answer(args, "plan", capture, lambda r: {"text": _plan_text(args, r), "inputs": input_files([r])},
                                 extra={"width": terminal_width(_NoTty())})
    check_output(args.output, [capture, *doc["inputs"]])
    write_atomic(args.output, doc["text"])
    say(f"wrote {args.output}")
    return code


class _NoTty:
    """The width a plan written to a file is laid out at (COLUMNS, else 120)."""

    def isatty(self) -> bool:
        return False


def cmd_rules(args) -> int:
    from attlens.analysis.plan import load_rules

    rules = load_rules()
    if args.json:
        from attlens.analysis.plan import rules_to_dict

        emit_json(rules_to_dict(rules))
        return 0
    from attlens.report.terminal import rules_text

    emit(rules_text(rules))
    return 0


def _waves_doc(args, r) -> dict:
    from attlens.api import waves

    return waves(r, args.top).to_dict(per_wave=not args.no_per_wave)


def cmd_waves(args) -> int:
    # the heavy modules are imported only when an answer has to be computed
    if args.json and not args.all:
        from attlens.model.locate import resolve_capture_dirs

        return json_answer(args, "waves", resolve_capture_dirs(args.path)[0], lambda r: _waves_doc(args, r), exposed=False)
    from attlens.api import waves

    if not args.json and not args.all:
        from attlens.model.locate import resolve_capture_dirs
        from attlens.report.terminal import render_waves

        return text_answer(args, "waves", resolve_capture_dirs(args.path)[0],
                           lambda r: render_waves(waves(r, args.top), _console(args.no_color), top=max(args.top, 1)), exposed=False)
    results = one_capture(args)
    objs = []
    for i, r in enumerate(results):
        wa = waves(r, args.top)
        if args.json:
            objs.append(wa.to_dict(per_wave=not args.no_per_wave))
        else:
            from attlens.report.console import make_console
            from attlens.report.terminal import render_waves

            console = make_console(args.no_color)
            if i:
                console.rule()
            render_waves(wa, console, top=max(args.top, 1))
    if args.json:
        from attlens.jsondoc import many

        emit_json(objs[0] if not args.all else many("attlens.waves_many", objs))
    return exit_code(results)


def _deps_doc(args, r) -> dict:
    from attlens.api import deps

    return deps(r, pc=args.pc, line=args.line).to_dict(args.top)


def cmd_deps(args) -> int:
    if args.json and not args.all:
        from attlens.model.locate import resolve_capture_dirs

        return json_answer(args, "deps", resolve_capture_dirs(args.path)[0], lambda r: _deps_doc(args, r), exposed=False)
    from attlens.api import deps

    if not args.json and not args.all:
        from attlens.model.locate import resolve_capture_dirs
        from attlens.report.terminal import render_deps

        return text_answer(args, "deps", resolve_capture_dirs(args.path)[0],
                           lambda r: render_deps(deps(r, pc=args.pc, line=args.line), _console(args.no_color), top=max(args.top, 1)),
                           exposed=False)
    results = one_capture(args)
    objs = []
    for i, r in enumerate(results):
        dr = deps(r, pc=args.pc, line=args.line)
        if args.json:
            objs.append(dr.to_dict(args.top))
        else:
            from attlens.report.console import make_console
            from attlens.report.terminal import render_deps

            console = make_console(args.no_color)
            if i:
                console.rule()
            render_deps(dr, console, top=max(args.top, 1))
    if args.json:
        from attlens.jsondoc import many

        emit_json(objs[0] if not args.all else many("attlens.deps_many", objs))
    return exit_code(results)


def cmd_export(args) -> int:
    from types import SimpleNamespace

    from attlens.cli.common import import_numpy_without_blas_threads

    import_numpy_without_blas_threads()  # before anything imports NumPy
    from attlens.analysis.clock import compute_clock
    from attlens.model.loader import load
    from attlens.model.locate import resolve_capture_dirs
    from attlens.jsondoc import header
    from attlens.report.perfetto import DEFAULT_MAX_EVENTS, stream_trace

    fmt = args.format or ("json" if str(args.output).lower().endswith(".json") else "proto")
    if fmt == "proto":
        from attlens.report.perfetto_proto import _builder

        _builder()  # the perfetto package, before any work
    max_events = (DEFAULT_MAX_EVENTS if fmt == "json" else 0) if args.max_events is None else args.max_events
    d = resolve_capture_dirs(args.path)[0]
    check_output(args.output, [d])
    # The trace needs the dispatch (and, for the flows, the wait pairs), not the other analyses.
    r = SimpleNamespace(dispatch=load(d, rocprof_dir=args.rocprof_dir))
    check_output(args.output, [d, *input_files([r])])
    clock = compute_clock(r.dispatch)
    if fmt == "proto":
        from attlens.analysis.stalls import compute_pc_sums
        from attlens.report.perfetto_proto import stream_proto

        pairs = compute_pc_sums(r.dispatch)[3]
        meta = stream_proto(r, clock, args.output, pairs=pairs, max_waves=args.max_waves, window=args.window, max_events=max_events)
    else:
        meta = stream_trace(r, clock, args.output, max_waves=args.max_waves, window=args.window, max_events=max_events)
        meta["format"], meta["flows"] = "json", 0
    cut = meta["waves_cut_by_max_events"]
    if args.json:
        emit_json({**header("attlens.export"), "output": str(args.output), "format": meta["format"], "bytes": meta["bytes"],
                   "events": meta["events"], "flows": meta["flows"], "waves_exported": meta["waves_exported"], "waves_total": meta["waves_total"],
                   "waves_cut_by_max_events": cut, "max_events": meta["max_events"], "time_unit": meta["time_unit"]})
    else:
        flows = f", {meta['flows']:,} memory → wait flows" if meta["flows"] else ""
        say(f"wrote {args.output} ({'Perfetto protobuf' if fmt == 'proto' else 'Chrome JSON'}): {meta['events']:,} events{flows}, "
            f"{meta['waves_exported']} of {meta['waves_total']} waves, {meta['bytes'] / 1e6:.1f} MB ({meta['time_unit']}); open it in ui.perfetto.dev")
    if cut:
        say(f"attlens: note: the {max_events:,}-event limit left out the {cut} latest-starting of the "
            f"{meta['waves_selected']} selected waves; pass --max-events 0 for all, or --window/--max-waves to choose"
            + ("; the protobuf form (-o trace.pftrace) holds every wave" if fmt == "json" else ""))
    return exit_code([r])
