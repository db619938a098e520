"""Commands that compare captures: diff and the regression gate check."""

from __future__ import annotations

from attlens.cli.common import (
    COUNT,
    EPILOG,
    NONNEG_NUMBER,
    PERCENT,
    add_cache_args,
    add_json,
    add_no_color,
    check_output,
    emit,
    emit_json,
    say,
    side_inputs,
    write_atomic,
)


def register(sub) -> None:
    p = sub.add_parser("diff", help="compare two captures of a kernel (by source line and aligned instruction sites)", epilog=EPILOG)
    p.add_argument("before", help="capture directory, or an attlens analyze --json --top 0 file")
    p.add_argument("after", help="capture directory, or an attlens analyze --json --top 0 file")
    p.add_argument("--force", action="store_true", help="diff even when kernel or target differ")
    p.add_argument("--noise-floor", type=NONNEG_NUMBER, metavar="PCT", help="relative change (%%) below which a change is noise")
    p.add_argument("--noise", nargs=2, metavar=("A", "B"), help="two captures of the same dispatch range: their difference is the noise floor")
    p.add_argument("--top", type=COUNT, default=10, metavar="N", help="rows per table (default 10; 0 = all in --json)")
    p.add_argument("--format", choices=("text", "md"), default="text", help="text (default) or Markdown")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")
    add_json(p, "attlens.diff")
    add_no_color(p)
    add_cache_args(p)
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("check", help="gate a capture against a baseline: exit 0 within bounds, 20 on regression", epilog=EPILOG)
    p.add_argument("capture", help="capture directory or attlens analyze --json --top 0 file")
    p.add_argument("--baseline", required=True, metavar="BASELINE", help="the capture (or attlens analyze --json --top 0 file) to compare with")
    p.add_argument("--max-regression", type=PERCENT, default=5.0, metavar="PCT", help="allowed increase in %% (default 5)")
    p.add_argument("--metric", default="total", metavar="M", help="total | stall | class:NAME | line:FILE:LINE (per traced wave; default total latency)")
    p.add_argument("--force", action="store_true", help="compare even when kernel or target differ")
    p.add_argument("--junit", metavar="FILE", help="also write a JUnit XML result")
    add_json(p, "attlens.check")
    add_cache_args(p)
    p.set_defaults(func=cmd_check)


def cmd_diff(args) -> int:
    from attlens.analysis.diff import diff, load_side, noise_between, side_warnings
    from attlens.errors import EXIT_OK, EXIT_PARTIAL

    if args.output:
        check_output(args.output, side_inputs(args.before, args.after, *(args.noise or ())))
    a, b = load_side(args.before, with_plan=True), load_side(args.after, with_plan=True)
    floor, source = None, None
    if args.noise_floor is not None:
        floor, source = args.noise_floor / 100, "--noise-floor"
    elif args.noise:
        floor, source = noise_between(load_side(args.noise[0]), load_side(args.noise[1])), f"--noise {args.noise[0]} {args.noise[1]}"
    res = diff(a, b, force=args.force, noise_floor=floor, noise_source=source)
    code = EXIT_PARTIAL if res.partial else EXIT_OK  # as analyze: 8 when some input was skipped
    if not args.json and res.partial:
        # what was skipped, as analyze says it (every warning is in the JSON's warnings key)
        for w in side_warnings(res.before, res.after):
            say(f"attlens: warning: {w}")
    if args.json:
        doc = res.to_dict(args.top)
        if not args.output:
            emit_json(doc)
            return code
        from attlens.cli.common import json_text

        text = json_text(doc) + "\n"
    elif args.format == "md":
        from attlens.report.markdown import diff_to_markdown

        text = diff_to_markdown(res, top=max(args.top, 1))
    else:
        import io

        from attlens.report.console import make_console
        from attlens.report.terminal import render_diff

        buf = io.StringIO() if args.output else None
        render_diff(res, make_console(args.no_color, file=buf), top=max(args.top, 1))
        text = buf.getvalue() if buf is not None else None
    if args.output:
        write_atomic(args.output, text)
        say(f"wrote {args.output}")
    elif text is not None:
        emit(text)
    return code


def cmd_check(args) -> int:
    from attlens.analysis.diff import check, load_side
    from attlens.errors import EXIT_GATE_PARTIAL, EXIT_OK, EXIT_REGRESSION

    if args.junit:
        check_output(args.junit, side_inputs(args.capture, args.baseline))
    res = check(load_side(args.capture), load_side(args.baseline), args.metric, args.max_regression, args.force)
    if args.junit:
        from attlens.report.junit import junit_xml

        write_atomic(args.junit, junit_xml(res))
    if args.json:
        emit_json(res.to_dict())
    else:
        print(res.message)
    if res.partial:
        # a gate never passes on damaged input: its own exit code, the reason on stderr
        for w in res.warnings:
            say(f"attlens: warning: {w}")
        say(f"attlens: error: the {' and '.join(res.partial)} capture{'s were' if len(res.partial) == 2 else ' was'} partly read; "
            "the gate does not pass on damaged input (hint: see the warnings; re-capture, or compare what analyze --json reads)")
        return EXIT_GATE_PARTIAL
    return EXIT_OK if res.passed else EXIT_REGRESSION
