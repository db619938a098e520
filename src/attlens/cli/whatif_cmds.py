"""``attlens whatif``: the traced waves replayed with edits applied (by
finding with ``--apply``, or by pc), the predicted dispatch time and which
waves and pcs changed (docs/whatif.md). Its ``--json`` object is what the
MCP tool ``whatif`` and :func:`attlens.whatif` return."""

from __future__ import annotations

import argparse

from attlens.cli.common import COUNT, EPILOG, PC, ROCPROF_DIR_HELP, add_cache_args, add_json, add_no_color, int_range
from attlens.limits import MAX_WAVES_PER_SIMD

WAVES_PER_SIMD = int_range(1, MAX_WAVES_PER_SIMD)


def pc_pair(text: str) -> tuple:
    """``--move PC:BEFORE_PC``: two pcs, each an index or a 0x address."""
    a, sep, b = text.partition(":")
    if not sep or not a.strip() or not b.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected PC:BEFORE_PC, e.g. 812:790 or 0x1738:0x16f0")
    return PC(a), PC(b)


pc_pair.__name__ = "PC:BEFORE_PC"


def register(sub) -> None:
    p = sub.add_parser("whatif", help="replay the traced waves with changes applied: the predicted kernel time and what changed", epilog=EPILOG)
    p.add_argument("path", help="a ui_output_agent_*_dispatch_* directory (or a folder holding one capture)")
    p.add_argument("--rocprof-dir", metavar="DIR", help=ROCPROF_DIR_HELP)
    add_json(p, "attlens.whatif")
    add_cache_args(p)
    p.add_argument("--apply", metavar="RULE[,RULE]", action="append", default=[],
                   help="replay the change of these findings (rule ids from `attlens plan`), all together; repeatable")
    p.add_argument("--hide-wait", type=PC, action="append", default=[], metavar="PC",
                   help="hide this s_waitcnt's wait (pc index or 0x address); repeatable")
    p.add_argument("--move", type=pc_pair, action="append", default=[], metavar="PC:BEFORE_PC",
                   help="issue the load at PC right before BEFORE_PC (each a pc index or 0x address); repeatable")
    p.add_argument("--waves-per-simd", type=WAVES_PER_SIMD, metavar="N", help="replay with N resident waves per SIMD")
    p.add_argument("--top", "--topk", dest="top", type=COUNT, default=20, metavar="N",
                   help="changed pcs listed in the text (default 20; 0 = all; --json has all)")
    add_no_color(p)
    p.set_defaults(func=cmd_whatif)


def cmd_whatif(args) -> int:
    from attlens.api import whatif
    from attlens.cli.common import emit_json, exit_code, load_analyzed
    from attlens.model.locate import resolve_capture_dirs

    d = resolve_capture_dirs(args.path)[0]
    r = load_analyzed(args, [d])[0]
    w = whatif(r, apply=args.apply, hide_wait=args.hide_wait, move=args.move, waves_per_simd=args.waves_per_simd)
    if args.json:
        emit_json(w.to_dict())
    else:
        from attlens.report.console import make_console
        from attlens.report.terminal import render_whatif

        render_whatif(w.to_dict(), make_console(args.no_color), dispatch=r.dispatch, top=args.top)
    return exit_code([r])
