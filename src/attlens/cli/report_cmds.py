"""Commands that write reports: report (HTML, Markdown, index, diff page) and demo."""

from __future__ import annotations

from attlens.cli.common import (
    EPILOG,
    POSITIVE,
    ROCPROF_DIR_HELP,
    add_cache_args,
    add_no_color,
    add_pc_sampling_args,
    add_sample_state,
    analyze_kwargs,
    check_output,
    emit_json,
    exit_code,
    load_analyzed,
    progress,
    say,
    side_inputs,
    write_atomic,
)


def register(sub) -> None:
    p = sub.add_parser("report", help="single-file offline HTML report (or a Markdown bundle); an index for several captures", epilog=EPILOG)
    p.add_argument("path", nargs="*", help="capture directories (or one folder holding several)")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="report.html; with --format md a directory; with several captures the index page")
    p.add_argument("--format", choices=("html", "md"), default="html", help="html (default): one offline file; md: report.md and analysis.json in the -o folder")
    p.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="an HTML diff of two captures instead")
    p.add_argument("--rocprof-dir", metavar="DIR", help=ROCPROF_DIR_HELP)
    p.add_argument("--pmc", metavar="PATH", help="counter_collection.csv / pmc_perf.csv of the same kernel to add the L2/HBM block "
                   "(its kernel, target and dispatch must match the capture's)")
    p.add_argument("--force", action="store_true", help="with --pmc: attach counters even when kernel, target or dispatch differ (the report says so); with --diff: compare even when kernel or target differ")
    p.add_argument("--json", action="store_true", help="print a manifest of the files written (attlens.report)")
    add_pc_sampling_args(p)
    add_cache_args(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("demo", help="build a synthetic capture with a planted hotspot and analyze it", epilog=EPILOG)
    p.add_argument("-o", "--output", "--out", dest="out", metavar="DIR", help="write the capture here (default: one folder reused by every run, $XDG_CACHE_HOME/attlens-demo); --out is the same")
    p.add_argument("--json", action="store_true", help="print what was written and the analysis as JSON (attlens.demo)")
    p.add_argument("--top", "--topk", dest="top", type=POSITIVE, default=8, metavar="N", help="rows per ranking (default 8); --topk is the same")
    p.add_argument("--force", action="store_true", help="write into --out even if it is not empty (files of an earlier demo are replaced)")
    add_no_color(p)
    p.set_defaults(func=cmd_demo)


def _written(path, kind: str) -> dict:
    from pathlib import Path

    p = Path(path)
    size = sum(f.stat().st_size for f in p.rglob("*") if f.is_file()) if p.is_dir() else p.stat().st_size
    return {"path": str(p), "kind": kind, "bytes": size}


def _manifest(args, fmt: str, written: list[dict], captures: list[dict]) -> int:
    """Say what was written: one line per file on stderr; with ``--json`` the
    ``attlens.report`` object on stdout."""
    for w in written:
        say(f"wrote {w['path']}")
    if args.json:
        from attlens.jsondoc import header

        emit_json({**header("attlens.report"), "format": fmt, "written": written, "captures": captures})
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    # as analyze: 8 when some input was skipped (a capture partly read, or one of an index not loaded)
    return EXIT_PARTIAL if any(c.get("partial") or c.get("error") for c in captures) else EXIT_OK


def _capture_entry(result, report=None, pmc=None) -> dict:
    d = result.dispatch
    return {"path": str(d.path), "kernel": d.kernel_name, "dispatch_id": d.resources.dispatch_id, "target": d.arch.target,
            "report": None if report is None else str(report), "error": None, "partial": bool(d.partial), "pmc": pmc, "pmc_refused": None,
            "warnings": list(result.warnings)}


def cmd_report(args) -> int:
    from pathlib import Path

    from attlens.errors import UsageError

    if args.diff:
        from attlens.analysis.diff import diff, load_side
        from attlens.report.html import diff_to_html

        if args.path or args.pmc or args.format == "md":
            raise UsageError("--diff BEFORE AFTER writes the HTML diff page alone: no capture paths, --pmc or --format md with it")
        check_output(args.output, side_inputs(*args.diff))
        res = diff(load_side(args.diff[0]), load_side(args.diff[1]), force=args.force)
        write_atomic(args.output, diff_to_html(res))
        code = _manifest(args, "diff", [_written(args.output, "diff")], [])
        from attlens.errors import EXIT_PARTIAL

        return EXIT_PARTIAL if res.partial else code  # as diff: 8 when a side was partly read
    if not args.path:
        raise UsageError("give one or more capture directories (or --diff BEFORE AFTER)")
    from attlens.model.locate import resolve_capture_dirs

    if args.format == "md" and args.pmc:
        raise UsageError("--pmc attaches counters to the HTML report; the Markdown bundle has no L2/HBM block (use attlens pmc for them)")
    dirs = [d for p in args.path for d in resolve_capture_dirs(p, all_captures=True)]
    if args.format == "md":
        check_output(args.output, [*dirs, args.pmc, args.pc_sampling], directory=True, names=("report.md", "analysis.json"))
    else:
        check_output(args.output, [*dirs, args.pmc, args.pc_sampling])
    counters = None
    if args.pmc:
        from attlens.analysis.pmc import PmcCounters, analyze_dispatches
        from attlens.capture.pmc_run import detect_target, read_counter_run

        from attlens.io.confine import user_path

        pivot, source, machine = read_counter_run(user_path(args.pmc))
        target = (machine or {}).get("target") or detect_target(user_path(args.pmc))
        if not target:
            raise UsageError(f"{args.pmc}: cannot tell the GPU target of the counters (no agent_info.csv / sysinfo.csv beside them)")
        counters = PmcCounters(analyze_dispatches(pivot, target, machine=machine), source, target)
    if args.format == "md":
        if len(dirs) != 1:
            raise UsageError("--format md writes one capture's bundle: pass one capture")
        md, js, entry = _stored_bundle(args, dirs[0])
        return _manifest(args, "md", [_written(md, "markdown"), _written(js, "analysis")], [entry])
    log: list[dict] = []
    if len(dirs) == 1 and counters is None:
        written = _stored_report(args, dirs[0], log)
    else:
        from attlens.report.html import render_captures

        with progress(args) as step:
            written = render_captures(dirs, args.output, rocprof_dir=args.rocprof_dir, pmc=counters, force=args.force, progress=step, log=log,
                                      analyze_kw=analyze_kwargs(args))
    for e in log:
        if e["pmc_refused"]:
            say(f"attlens: warning: no counters attached to {e['path']}: {e['pmc_refused']}")
        elif e["pmc"] and any(c["match"] is False for c in e["pmc"]["checks"]):
            say(f"attlens: warning: counters attached to {e['path']} with --force although " + "; ".join(
                f"{c['field']} {c['capture']} vs {c['counters']}" for c in e["pmc"]["checks"] if c["match"] is False))
    index = len(dirs) > 1
    return _manifest(args, "html", [_written(w, "index" if index and i == len(written) - 1 else "report") for i, w in enumerate(written)], log)


def _stored_report(args, capture, log: list) -> list:
    """The HTML report of one capture (no counters) written to ``-o``: the page
    made before for the same capture state and output path, or made now and
    kept (attlens.cache.answers). Returns the files written; ``log`` gets the
    capture's entry."""
    import os
    from pathlib import Path

    from attlens.cache.answers import answer

    computed = []

    def build():
        from attlens.report.html import render_captures

        entries: list[dict] = []
        with progress(args) as step:
            render_captures([capture], args.output, rocprof_dir=args.rocprof_dir, force=args.force, progress=step, log=entries,
                            analyze_kw=analyze_kwargs(args))
        computed.append(True)
        # a schema like every stored answer (cache.answers._plausible refuses a document without one)
        return {"schema": "attlens.report-page", "html": Path(args.output).read_text(encoding="utf-8"), "log": entries}, 0

    question = ["report-html", str(capture), os.path.abspath(args.output),
                sorted((k, v) for k, v in vars(args).items() if k not in ("func", "cmd", "cache_dir", "no_cache", "json"))]
    add_sample_state(question, args, capture)
    doc, _ = answer(capture, args.rocprof_dir, question, build)
    if not computed and not _stored_page_ok(doc):
        doc, _ = build()  # a document of another shape under this question's name: made again
    if not computed:
        write_atomic(args.output, doc["html"])
    log.extend(doc["log"])
    return [Path(args.output)]


def _stored_page_ok(doc) -> bool:
    """A stored page as :func:`_stored_report` keeps it (no counters: no pmc in its log)."""
    log = doc.get("log")
    return (doc.get("schema") == "attlens.report-page" and isinstance(doc.get("html"), str) and isinstance(log, list)
            and all(isinstance(e, dict) and e.get("pmc") is None and e.get("pmc_refused") is None and isinstance(e.get("path"), str)
                    for e in log))


def _stored_bundle(args, capture):
    """The Markdown bundle (report.md, analysis.json) of one capture written
    into ``-o``: the files made before for the same capture state and folder,
    or made now and kept (attlens.cache.answers). Returns both paths and the
    capture's log entry."""
    import os
    from pathlib import Path

    from attlens.cache.answers import answer
    from attlens.report.markdown import render_markdown_bundle

    out = Path(args.output)
    computed = []

    def build():
        from attlens.analysis.plan import make_plan
        from attlens.analysis.waves import analyze_waves

        r = load_analyzed(args, [capture])[0]
        waves = analyze_waves(r)
        md, js = render_markdown_bundle(r, make_plan(r, waves=waves), waves, out)
        computed.append(True)
        return {"schema": "attlens.report-bundle", "report.md": md.read_text(encoding="utf-8"),
                "analysis.json": js.read_text(encoding="utf-8"), "entry": _capture_entry(r, md)}, exit_code([r])

    question = ["report-md", str(capture), os.path.abspath(out),
                sorted((k, v) for k, v in vars(args).items() if k not in ("func", "cmd", "cache_dir", "no_cache", "json"))]
    add_sample_state(question, args, capture)
    doc, _ = answer(capture, args.rocprof_dir, question, build)
    if not computed and not (doc.get("schema") == "attlens.report-bundle" and isinstance(doc.get("report.md"), str)
                             and isinstance(doc.get("analysis.json"), str) and isinstance(doc.get("entry"), dict)):
        doc, _ = build()  # a document of another shape under this question's name: made again
    md, js = out / "report.md", out / "analysis.json"
    if not computed:
        from attlens.fsutil import make_dirs

        make_dirs(out)
        write_atomic(js, doc["analysis.json"])
        write_atomic(md, doc["report.md"])
    return md, js, doc["entry"]


def cmd_demo(args) -> int:
    from attlens.analysis.analyze import analyze
    from attlens.model.loader import load
    from attlens.synth import write_capture

    if args.out:
        _check_demo_out(args.out, args.force)
    out = args.out or _demo_home()
    from attlens.fsutil import make_dirs

    make_dirs(out)
    try:
        path = write_capture(out)
    except OSError as exc:
        from attlens.errors import OutputRefused

        raise OutputRefused(f"cannot write the demo capture into {out}: {exc.strerror or exc}", hint="choose another --out folder") from None
    result = analyze(load(path))
    if args.json:
        from attlens.jsondoc import header

        emit_json({**header("attlens.demo"), "capture": str(path), "written": [_written(path, "capture")],
                   "analysis": result.to_dict(args.top)})
        return 0
    from rich.markup import escape

    from attlens.report.console import make_console
    from attlens.report.terminal import render_analysis

    console = make_console(args.no_color)
    console.print(f"[bold]attlens demo[/bold]: a synthetic capture of a toy kernel written to {escape(str(path))}")
    console.print("The planted hotspot is the global-memory wait at toy_kernel.py:24; the analysis below should rank it first.\n")
    from attlens.analysis.plan import make_plan
    from attlens.report.text import top_findings_lines, verdict_sentence

    plan = make_plan(result)
    findings = top_findings_lines(plan) + [f"(attlens plan {path} for the evidence and changes)"]
    render_analysis(result, console, topk=args.top, mode="both", detail=True, context=1, detail_k=2, findings=findings,
                    verdict=verdict_sentence(plan))
    console.print(f"\nNext: attlens analyze {escape(str(path))} --json")
    return 0


def _demo_home() -> str:
    """The default demo folder: one per user, reused by every run (the same
    files are written again), never a new temporary folder per run."""
    import os
    from pathlib import Path

    from attlens.errors import OutputRefused

    xdg = os.environ.get("XDG_CACHE_HOME")
    home = (Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache") / "attlens-demo"
    if home.is_symlink() or (home.exists() and not home.is_dir()):
        raise OutputRefused(f"{home}: exists and is not a plain directory; the demo will not write there",
                            hint="remove it, or pass --out DIR")
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    check_output(str(home), (), directory=True)
    return str(home)


def _check_demo_out(out: str, force: bool) -> None:
    """``demo --out DIR`` writes a capture's files into DIR: refuse a file, and
    a non-empty folder unless --force (a user's files are never replaced silently)."""
    import os

    from attlens.errors import OutputRefused

    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputRefused(f"{out}: exists and is not a directory")
    if os.path.isdir(out) and any(os.scandir(out)) and not force:
        raise OutputRefused(f"{out}: the folder is not empty; the demo would write its files into it",
                            hint="pass an empty or new folder, or --force to write anyway")
    check_output(out, (), directory=True)
