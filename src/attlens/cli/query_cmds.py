"""The query verbs a person and an agent ask about one capture (or a folder):
asm, waits, occupancy, captures. Their ``--json`` objects are what the MCP
tools of the same names return (docs/agents.md)."""

from __future__ import annotations

from attlens.cli.common import COUNT, EPILOG, PC, ROCPROF_DIR_HELP, add_json, add_no_color, add_pc_sampling_args, exit_code


def _one_capture_args(p, schema: str) -> None:
    p.add_argument("path", help="a ui_output_agent_*_dispatch_* directory (or a folder holding one capture)")
    p.add_argument("--rocprof-dir", metavar="DIR", help=ROCPROF_DIR_HELP)
    add_json(p, schema)
    add_no_color(p)


def register(sub) -> None:
    p = sub.add_parser("asm", help="the ISA window around a pc, with per-pc cycles, waits' producers and source lines", epilog=EPILOG)
    _one_capture_args(p, "attlens.asm")
    p.add_argument("--pc", type=PC, required=True, metavar="N|0xADDR", help="the instruction: its pc index (as in analyze, deps, plan) or its address (0x1738, code.json Vaddr)")
    p.add_argument("--around", type=COUNT, default=10, metavar="K", help="instructions before and after it (default 10)")
    add_pc_sampling_args(p)
    p.set_defaults(func=cmd_asm)

    p = sub.add_parser("waits", help="per wait site: count, mean, p50/p90/p95, stddev and max of the wait per execution", epilog=EPILOG)
    _one_capture_args(p, "attlens.waits")
    p.add_argument("--steady", action="store_true", help="only steady-state executions (loop iterations after the first)")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=10, metavar="N", help="sites shown (default 10; 0 = all); --topk is the same")
    p.set_defaults(func=cmd_waits)

    p = sub.add_parser("occupancy", help="theoretical occupancy, its limiters, and the residency observed", epilog=EPILOG)
    _one_capture_args(p, "attlens.occupancy")
    p.set_defaults(func=cmd_occupancy)

    p = sub.add_parser("pcsampling", help="PC samples on their own: per instruction and source line, how often sampled, issued, stalled and why",
                       epilog=EPILOG)
    p.add_argument("path", help="a rocprofv3 *_results.json or *_pc_sampling_{stochastic,host_trap}.csv, or a rocprof-compute-viewer "
                                "PC-sampling ui_output folder")
    p.add_argument("--kernel", metavar="NAME", help="only samples of this kernel (a name or part of one; results.json and viewer folders)")
    p.add_argument("--dispatch", type=COUNT, metavar="N", help="only samples of this dispatch id")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=20, metavar="N", help="rows per table (default 20; 0 = all in --json)")
    p.add_argument("--mode", choices=("asm", "src", "both"), default="both", help="instructions, source lines, or both")
    add_json(p, "attlens.pc_sampling")
    add_no_color(p)
    p.set_defaults(func=cmd_pcsampling)

    p = sub.add_parser("captures", help="list the captures under a folder (every layout generation) and the other profiler outputs found", epilog=EPILOG)
    p.add_argument("path", help="a folder (searched up to eight levels down) or a capture directory")
    add_json(p, "attlens.captures")
    add_no_color(p)
    p.set_defaults(func=cmd_captures)


def _load(args, exposed: bool = True):
    from attlens.analysis.analyze import analyze
    from attlens.cli.common import analyze_kwargs
    from attlens.model.loader import load
    from attlens.model.locate import resolve_capture_dirs

    d = resolve_capture_dirs(args.path)[0]
    kw = analyze_kwargs(args)
    return analyze(load(d, rocprof_dir=args.rocprof_dir, hidden=exposed, samples="pc_sampling" not in kw), exposed=exposed, **kw)


def _print(obj) -> None:
    from attlens.cli.common import emit_json

    emit_json(obj)


def _console(args):
    from attlens.report.console import make_console

    return make_console(args.no_color)


def cmd_asm(args) -> int:
    from attlens.api import asm

    r = _load(args)
    win = asm(r, args.pc, args.around)
    if args.json:
        _print(win.to_dict())
    else:
        from attlens.report.terminal import render_asm

        render_asm(win, _console(args))
    return exit_code([r])


def cmd_waits(args) -> int:
    from attlens.api import waits

    r = _load(args, exposed=False)
    ws = waits(r, steady=args.steady)
    if args.json:
        _print(ws.to_dict(args.top))
    else:
        from attlens.report.terminal import render_waits

        render_waits(ws, _console(args), top=max(args.top, 1))
    return exit_code([r])


def cmd_occupancy(args) -> int:
    from attlens.api import occupancy

    r = _load(args, exposed=False)
    if args.json:
        _print(occupancy(r).to_dict())
    else:
        from attlens.report.terminal import render_occupancy

        render_occupancy(occupancy(r), _console(args))
    return exit_code([r])


def cmd_captures(args) -> int:
    from attlens.api import captures

    cl = captures(args.path)
    if args.json:
        _print(cl.to_dict())
    else:
        from attlens.report.terminal import render_captures

        render_captures(cl, _console(args))
    return 0


def cmd_pcsampling(args) -> int:
    from attlens.api import pc_sampling
    from attlens.io.confine import user_path

    view = pc_sampling(user_path(args.path), kernel=args.kernel, dispatch=args.dispatch)
    if args.json:
        _print(view.to_dict(args.top))
    else:
        from attlens.report.terminal import render_pc_sampling_view

        render_pc_sampling_view(view, _console(args), top=max(args.top, 1), mode=args.mode)
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    return EXIT_PARTIAL if view.warnings else EXIT_OK
