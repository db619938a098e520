"""The Python API: one function per question, each returning a result object
(docs/api.md).

The command line (``--json``) and the MCP server (``attlens mcp``) call these
same functions and print ``result.to_dict(...)``, so a script, a person and an
agent get the same answer to the same question. Every result object has

- a one-line ``repr()`` with its key numbers,
- ``to_dict()``: the ``--json`` object of its command (same keys; ``top``
  where the command has ``--top``; every row by default),
- ``to_pandas()`` where it holds rows (the optional extra ``attlens[pandas]``).

Names: an attribute has the name of the JSON key that carries its value
(``class`` is spelled ``class_``, the Python keyword rule).

Functions that take a ``result`` want an analyzed capture (:func:`analyze`);
the wave-level pieces a long-lived caller already has (``attribution``,
``waves``) can be passed in so they are computed once per capture.
Everything heavy is imported on first use.
"""

from __future__ import annotations

__all__ = ["load", "analyze", "summary", "hotspots", "plan", "asm", "deps", "waits", "waves", "occupancy", "diff", "check", "kernels",
           "captures", "pmc", "rules", "pc_samples", "pc_sampling", "whatif"]


# The command line checks its options in argparse (attlens.cli.common); the
# same values given here are checked here, so a wrong argument is a
# UsageError with one line, never a traceback or a silently wrong answer.

def _usage(msg: str):
    from attlens.errors import UsageError

    return UsageError(msg)


def _is_path(x) -> bool:
    return isinstance(x, (str, bytes)) or hasattr(x, "__fspath__")


def _analysis(x, name: str = "result"):
    """An AnalysisResult from an analysis, a loaded Dispatch or a capture path."""
    if hasattr(x, "hotspots") and hasattr(x, "dispatch") and hasattr(x, "sums"):
        return x
    if _is_path(x) or (hasattr(x, "waves") and hasattr(x, "code") and hasattr(x, "static")):
        return analyze(x)
    raise _usage(f"{name}: expected an analysis (attlens.analyze(...)), a loaded capture or a capture path, "
                 f"not {type(x).__name__}")


def _int(x, name: str, lo: int | None = None) -> int:
    """An integer option, bounded like the CLI's (:data:`attlens.limits.MAX_COUNT`)."""
    import numbers

    from attlens.limits import MAX_COUNT

    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise _usage(f"{name}={x!r}: expected an integer")
    if lo is not None and x < lo:
        raise _usage(f"{name}={x}: must be {lo} or more")
    if x > MAX_COUNT:
        raise _usage(f"{name}={x}: must be at most {MAX_COUNT:,}")
    return int(x)


def _bool(x, name: str) -> bool:
    """A flag: True or False (NumPy's bool too), never a truthy string ("no" is true)."""
    if isinstance(x, bool) or (type(x).__module__ == "numpy" and type(x).__name__ in ("bool", "bool_")):
        return bool(x)
    raise _usage(f"{name}={x!r}: expected True or False")


def _path(x, name: str = "path"):
    """A path argument: text, bytes (decoded as the file system does) or os.PathLike."""
    import os

    if isinstance(x, bytes):
        x = os.fsdecode(x)
    if not _is_path(x):
        raise _usage(f"{name}: expected a path (str or os.PathLike), not {type(x).__name__}")
    text = os.fspath(x)
    if not isinstance(text, str):
        text = os.fsdecode(text)
    if "\0" in text:
        raise _usage(f"{name}: a path cannot hold a NUL byte")
    return text


def _number(x, name: str, lo: float | None = None) -> float:
    import math
    import numbers

    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x):
        raise _usage(f"{name}={x!r}: expected a finite number")
    if lo is not None and x < lo:
        raise _usage(f"{name}={x}: must be {lo} or more")
    return float(x)


def _ids(x, name: str) -> set[str]:
    """Rule ids as a set (see :func:`_rule_list`)."""
    return set(_rule_list(x, name))


def load(path, rocprof_dir=None, cache=None):
    """Load a capture (a ``ui_output_agent_*_dispatch_*`` directory, or a folder
    holding exactly one): a :class:`~attlens.model.dispatch.Dispatch`.
    ``cache``: None = the digest in the user cache directory (docs/cache.md),
    False = parse afresh, or a cache directory."""
    from attlens.model.loader import load as _load

    path = _path(path)
    rocprof_dir = None if rocprof_dir is None else _path(rocprof_dir, "rocprof_dir")
    if not (cache is None or cache is False or _is_path(cache) or type(cache).__name__ == "DigestStore"):
        raise _usage(f"cache: expected None, False or a cache directory, not {type(cache).__name__}")
    return _load(path, rocprof_dir=rocprof_dir, cache=cache)


def analyze(capture, exposed: bool = True, rocprof_dir=None, pc_sampling=None, pc_sampling_scope: str = "traced"):
    """Every core analysis of a capture: an :class:`~attlens.analysis.analyze.AnalysisResult`
    (``attlens analyze --json``). ``capture``: a loaded Dispatch or a path;
    ``exposed=False`` skips the hidden-latency model (``--no-exposed``).
    ``pc_sampling``: None joins the PC samples found beside the capture,
    False none, a path or a :func:`pc_samples` table those
    (``--pc-sampling PATH``); ``pc_sampling_scope``: ``traced`` or ``kernel``
    (docs/pcsampling.md)."""
    from attlens.analysis.analyze import analyze as _analyze

    exposed = _bool(exposed, "exposed")
    if _is_path(capture):
        capture = load(capture, rocprof_dir=rocprof_dir)
    elif not (hasattr(capture, "waves") and hasattr(capture, "code") and hasattr(capture, "static")):
        raise _usage(f"capture: expected a capture path or a loaded capture (attlens.load(...)), not {type(capture).__name__}")
    if not (pc_sampling is None or pc_sampling is False or _is_path(pc_sampling) or hasattr(pc_sampling, "columns")):
        raise _usage(f"pc_sampling: expected None, False, a path or attlens.pc_samples(...), not {type(pc_sampling).__name__}")
    if pc_sampling_scope not in ("traced", "kernel"):
        raise _usage(f"pc_sampling_scope={pc_sampling_scope!r}: expected traced or kernel")
    return _analyze(capture, exposed=exposed, pc_sampling=pc_sampling, pc_sampling_scope=pc_sampling_scope)


def pc_samples(path, cache=None):
    """Every PC sample of one output (a rocprofv3 ``*_results.json``,
    ``*_pc_sampling_stochastic.csv`` / ``*_pc_sampling_host_trap.csv``, or a
    rocprof-compute-viewer PC-sampling ``ui_output`` folder) as one columnar
    :class:`~attlens.io.pcsampling.PcSampleTable`, kept in the digest cache
    (``cache`` as for :func:`load`)."""
    from attlens.model.pcsampling import read_samples

    if not _is_path(path):
        raise _usage(f"path: expected a PC-sampling file or folder path, not {type(path).__name__}")
    return read_samples(path, cache)


def pc_sampling(path, kernel: str | None = None, dispatch: int | None = None):
    """PC samples on their own, per instruction and source line: a
    :class:`~attlens.analysis.pcsampling_view.PcSamplingView`
    (``attlens pcsampling PATH --json``). ``path``: as for :func:`pc_samples`,
    or a table it returned."""
    from attlens.analysis.pcsampling_view import pc_sampling_view

    if kernel is not None and not isinstance(kernel, str):
        raise _usage(f"kernel={kernel!r}: expected a kernel name")
    table = path if hasattr(path, "columns") else pc_samples(path)
    return pc_sampling_view(table, kernel=kernel, dispatch=None if dispatch is None else _int(dispatch, "dispatch", 0))


def hotspots(result, by: str = "instruction", sort: str = "stall"):
    """One ranking of instructions, source lines or opcodes by stall, latency,
    exposed or idle cycles: a :class:`~attlens.analysis.hotspots.HotspotTable`
    (``attlens analyze --by BY --sort SORT --json``)."""
    from attlens.analysis.hotspots import hotspot_table

    return hotspot_table(_analysis(result), by, sort)


def plan(result, disable=None, only=None, waves=None, pmc=None):
    """The prioritized optimization plan: a :class:`~attlens.analysis.plan.Plan`
    (``attlens plan --json``). ``disable`` / ``only``: a rule id or several;
    ``waves``: a :func:`waves` result when the caller has it; ``pmc``: the
    :func:`pmc` counters of the same dispatch (their bytes replace the
    trace's estimate in the bandwidth rule; counters of another kernel,
    target or dispatch raise :class:`~attlens.errors.Incomparable`, as
    ``attlens report --pmc`` does)."""
    from attlens.analysis.plan import make_plan
    from attlens.analysis.pmc import PmcCounters, PmcResult
    from attlens.analysis.pmc_attach import PmcAttachment

    ok = pmc is None or isinstance(pmc, (PmcCounters, PmcResult, PmcAttachment)) or (
        isinstance(pmc, (list, tuple)) and all(isinstance(x, PmcResult) for x in pmc))
    if not ok:
        raise _usage(f"pmc: expected the counters of attlens.pmc(...) (or None), not {type(pmc).__name__}")
    result = _analysis(result)
    if isinstance(pmc, PmcCounters):
        from attlens.analysis.pmc_attach import attach_pmc

        d = result.dispatch
        pmc = attach_pmc(pmc, d.kernel_name, d.arch.target, d.resources.dispatch_id)
    return make_plan(result, disable=_ids(disable, "disable"), only=_ids(only, "only"), waves=waves, pmc=pmc)


def summary(result, top: int = 10, detail: str = "brief", plan=None):
    """The one-screen summary: the plan's verdict and top findings, then the
    numbers behind them (one ranking of instructions and one of lines), warnings
    and notes: a :class:`~attlens.analysis.summary.Summary` (``attlens analyze
    --summary --json``; ``detail="full"`` adds the whole ``attlens.analyze``
    object). ``plan``: a plan already made of the same analysis, to reuse."""
    from attlens.analysis.summary import make_summary

    if not isinstance(detail, str):
        raise _usage(f"detail={detail!r}: expected 'brief' or 'full'")
    return make_summary(_analysis(result), plan=plan, top=_int(top, "top", 1), detail=detail)


def _pc(pc):
    """An instruction index (int) as it is, or address / index text
    (``"0x1738"``, ``"973"``) for :func:`attlens.analysis.asm.resolve_pc`."""
    return pc if isinstance(pc, str) else _int(pc, "pc")


def asm(result, pc: int | str, around: int = 10, attribution=None):
    """The ISA window around one pc (an index, or an address as ``"0x…"``
    text): an :class:`~attlens.analysis.asm.AsmWindow` (``attlens asm --pc PC
    --around AROUND --json``)."""
    from attlens.analysis.asm import asm_window

    return asm_window(_analysis(result), _pc(pc), _int(around, "around", 0), attribution=attribution)


def deps(result, pc: int | str | None = None, line: str | None = None, attribution=None):
    """Memory -> wait dependencies, of the whole kernel or of one pc / source
    line: a :class:`~attlens.analysis.deps.DepsResult` (``attlens deps --json``)."""
    from attlens.analysis.deps import select_deps

    if line is not None and not isinstance(line, str):
        raise _usage(f"line={line!r}: expected FILE:LINE text")
    return select_deps(_analysis(result), pc=None if pc is None else _pc(pc), line=line, attribution=attribution)


def waits(result, steady: bool = False, attribution=None):
    """The wait per execution of every wait site: a :class:`~attlens.analysis.waitstats.WaitStats`
    (``attlens waits [--steady] --json``)."""
    from attlens.analysis.waitstats import compute_wait_stats

    return compute_wait_stats(_analysis(result), steady=_bool(steady, "steady"), attribution=attribution)


def waves(result, top: int = 10):
    """Wave states, clock, pipes, phases and the per-execution stalls of the
    ``top`` instructions: a :class:`~attlens.analysis.waves.WaveAnalysis`
    (``attlens waves --top TOP --json``)."""
    from attlens.analysis.waves import analyze_waves

    return analyze_waves(_analysis(result), top=max(_int(10 if top is None else top, "top"), 1))


def occupancy(result):
    """Theoretical and observed occupancy: the :class:`~attlens.analysis.occupancy.OccupancyResult`
    of the analysis (``attlens occupancy --json``)."""
    return _analysis(result).occupancy


def _side(x, rocprof_dir=None, with_plan: bool = False):
    """A diff side; ``with_plan``: a capture's or an analysis' side carries its plan's summary (as ``attlens diff``)."""
    from attlens.analysis.diff import Side, load_side, plan_summary, side_from_result

    if isinstance(x, Side):
        return x
    if hasattr(x, "hotspots") and hasattr(x, "dispatch"):  # an AnalysisResult
        side = side_from_result(x, str(x.dispatch.path))
        if with_plan:
            from attlens.analysis.plan import make_plan

            side.plan = plan_summary(make_plan(x))
        return side
    if not _is_path(x):
        raise _usage(f"expected a capture path, an analyze --json file, an analysis or a Side, not {type(x).__name__}")
    return load_side(_path(x), rocprof_dir=rocprof_dir, with_plan=with_plan)


def diff(before, after, force: bool = False, noise_floor: float | None = None, noise_source: str | None = None):
    """Compare two captures of a kernel: a :class:`~attlens.analysis.diff.DiffResult`
    (``attlens diff BEFORE AFTER --json``). Each side: a capture path, an
    ``attlens analyze --json --top 0`` file, an analysis or a loaded Side;
    ``noise_floor``: a fraction (0.02 = 2 %)."""
    from attlens.analysis.diff import diff as _diff

    force = _bool(force, "force")
    if noise_source is not None and not isinstance(noise_source, str):
        raise _usage(f"noise_source={noise_source!r}: expected text or None")
    if noise_floor is not None:
        noise_floor = _number(noise_floor, "noise_floor", 0.0)
    return _diff(_side(before, with_plan=True), _side(after, with_plan=True), force=force, noise_floor=noise_floor, noise_source=noise_source)


def check(current, baseline, metric: str = "total", max_regression: float = 5.0, force: bool = False):
    """Gate a capture against a baseline: a :class:`~attlens.analysis.diff.CheckResult`
    (``attlens check CAPTURE --baseline BASELINE --json``); sides as for :func:`diff`."""
    from attlens.analysis.diff import check as _check

    max_regression = _number(max_regression, "max_regression")
    force = _bool(force, "force")
    if not isinstance(metric, str):
        raise _usage(f"metric={metric!r}: expected total, stall, class:NAME or line:FILE:LINE")
    return _check(_side(current), _side(baseline), metric, max_regression, force)


def kernels(paths, exclude: str | None = None):
    """The kernel table of rocprofv3 outputs: a :class:`~attlens.capture.kernels.KernelTable`
    (``attlens kernels PATH ... --json``). ``exclude``: None = the default
    runtime-helper pattern, ``""`` = flag nothing."""
    from attlens.capture.kernels import kernel_table

    if _is_path(paths):
        paths = _path(paths, "paths")
    else:
        try:
            paths = [_path(p, "paths") for p in paths]
        except TypeError:
            raise _usage(f"paths: expected a path or several, not {type(paths).__name__}") from None
        if not paths:
            raise _usage("paths: no path given")
        paths = paths[0] if len(paths) == 1 else paths
    if exclude is not None and not isinstance(exclude, str):
        raise _usage(f"exclude={exclude!r}: expected a regular expression (text) or None")
    return kernel_table(paths) if exclude is None else kernel_table(paths, exclude=exclude)


def captures(path):
    """The captures under a folder, without loading them: a :class:`~attlens.model.inventory.CaptureList`
    (``attlens captures PATH --json``)."""
    from attlens.model.inventory import list_captures

    return list_captures(_path(path))


def pmc(path, target: str | None = None, ideal_bytes: float | None = None, duration_us: float | None = None):
    """L2/HBM figures from a counter run (``counter_collection.csv``,
    ``pmc_perf.csv`` or a folder of them): a :class:`~attlens.analysis.pmc.PmcCounters`
    (``attlens pmc PATH --json``). ``target``: gfx942 / gfx950 / MI300X ...
    (default: from the run's agent_info.csv or sysinfo.csv). A rocprofiler-compute
    sysinfo.csv beside the counters gives the product, XCD count and peak
    bandwidth (partitioned MI300, MI300A)."""
    from attlens.analysis.pmc import PmcCounters, analyze_dispatches
    from attlens.capture.pmc_run import detect_target, read_counter_run
    from attlens.errors import UsageError
    from attlens.io.confine import user_path

    path = _path(path)
    if target is not None and not isinstance(target, str):
        raise _usage(f"target={target!r}: expected gfx942, gfx950, MI300X, ... (text) or None")
    for name, v in (("ideal_bytes", ideal_bytes), ("duration_us", duration_us)):
        if v is not None and _number(v, name) <= 0:
            raise _usage(f"{name}={v}: must be more than 0")
    p = user_path(path)
    pivot, source, machine = read_counter_run(p)
    target = target or (machine or {}).get("target") or detect_target(p)
    if not target:
        raise UsageError(f"{path}: cannot tell the GPU target; give target (gfx942, gfx950, gfx90a, gfx908, MI300X, MI350X ...)")
    if machine and machine.get("target") and machine["target"] != target.strip().lower().split(":")[0]:
        machine = None  # the caller named another GPU: sysinfo.csv does not describe it
    durations = {d: duration_us * 1000 for d in pivot} if duration_us else None
    return PmcCounters(analyze_dispatches(pivot, target, ideal_bytes=ideal_bytes, durations_ns=durations, machine=machine),
                       source, target)


def rules() -> dict:
    """The plan's rules by id (:class:`~attlens.analysis.plan.RuleInfo`, each with ``to_dict()``);
    ``attlens rules --json`` is :func:`attlens.analysis.plan.rules_to_dict`."""
    from attlens.analysis.plan import load_rules

    return dict(load_rules())


def _rule_list(x, name: str) -> list[str]:
    """Rule ids in the order given (duplicates dropped): one id, "A,B" text, or an iterable of them;
    given but naming none (``","``) is a usage error."""
    if x is None:
        return []
    if isinstance(x, str):
        x = x.split(",")
    try:
        items = list(x)
    except TypeError:
        raise _usage(f"{name}={x!r}: expected a rule id or several") from None
    if not all(isinstance(i, str) for i in items):
        raise _usage(f"{name}: expected rule ids (strings)")
    ids = list(dict.fromkeys(p.strip() for i in items for p in i.split(",") if p.strip()))
    if not ids and items:
        raise _usage(f"{name}={x!r}: expected a rule id or several")
    return ids


def _pcs(x, name: str) -> list:
    """One pc or several (index or "0x…" address each)."""
    if x is None:
        return []
    if isinstance(x, (str, int)) and not isinstance(x, bool):
        return [x]
    try:
        return list(x)
    except TypeError:
        raise _usage(f"{name}={x!r}: expected a pc (index or '0x…' address) or several") from None


def _move_pair(x) -> tuple:
    """``(pc, before_pc)`` or ``"PC:BEFORE_PC"`` text (as ``--move``)."""
    if isinstance(x, str):
        a, sep, b = x.partition(":")
        if not sep or not a.strip() or not b.strip():
            raise _usage(f"move {x!r}: expected PC:BEFORE_PC (two pcs, each an index or a 0x address)")
        return a.strip(), b.strip()
    if isinstance(x, (list, tuple)) and len(x) == 2:
        return x[0], x[1]
    raise _usage(f"move {x!r}: expected PC:BEFORE_PC text or a (pc, before_pc) pair")


def _moves(x) -> list[tuple]:
    """``move``: None, one pair (``"PC:BEFORE_PC"`` or ``(pc, before_pc)``) or several."""
    if x is None:
        return []
    if isinstance(x, str):
        return [_move_pair(x)]
    if isinstance(x, tuple) and len(x) == 2 and all(isinstance(v, int) or (isinstance(v, str) and ":" not in v) for v in x):
        return [_move_pair(x)]
    try:
        items = list(x)
    except TypeError:
        raise _usage(f"move={x!r}: expected PC:BEFORE_PC text or (pc, before_pc) pairs") from None
    return [_move_pair(m) for m in items]


def whatif(result, apply=None, hide_wait=None, move=None, waves_per_simd=None, plan=None):
    """Replay the traced waves with edits applied, together: a
    :class:`~attlens.analysis.replay.WhatIf` (``attlens whatif --json``;
    docs/whatif.md). ``apply``: rule id(s) whose findings' changes are
    replayed (those the replay cannot express are listed, not guessed);
    ``hide_wait``: s_waitcnt pc(s) whose wait is hidden; ``move``:
    ``(pc, before_pc)`` pair(s) or ``"PC:BEFORE_PC"`` text, a load issued
    right before another pc; ``waves_per_simd``: resident waves per SIMD
    replayed. A pc is an index or an address as ``"0x…"`` text. ``plan``: a
    plan already made of the same analysis (for ``apply``)."""
    from attlens.analysis.asm import resolve_pc
    from attlens.analysis.replay import edits_for_rules, edits_from_options
    from attlens.analysis.replay import whatif as _whatif
    from attlens.limits import MAX_WAVES_PER_SIMD

    result = _analysis(result)
    rules_ = _rule_list(apply, "apply")
    moves = _moves(move)
    d = result.dispatch
    hidden = [resolve_pc(d, _pc(p)) for p in _pcs(hide_wait, "hide_wait")]
    moved = [(resolve_pc(d, _pc(a)), resolve_pc(d, _pc(b))) for a, b in moves]
    wps = None if waves_per_simd is None else _int(waves_per_simd, "waves_per_simd", 1)
    if wps is not None and wps > MAX_WAVES_PER_SIMD:
        raise _usage(f"waves_per_simd={wps}: must be at most {MAX_WAVES_PER_SIMD}")
    edits = edits_from_options(hidden, moved, wps, result)
    unexpressible: list[dict] = []
    if rules_:
        if plan is None:  # the plan only names the findings' edits: its own predictions would be replays thrown away
            from attlens.analysis.plan import make_plan

            plan = make_plan(result, predict=False)
        rule_edits, unexpressible = edits_for_rules(plan, rules_)
        cap = None
        if rule_edits and not edits:  # findings' changes alone: bounded by their cycles at stake, as in the plan
            from attlens.analysis.replay.findings import stake_cap

            skipped = {u["rule"] for u in unexpressible}
            cap = stake_cap([f for f in plan.findings if f.rule in rules_ and f.rule not in skipped])
        edits = [*rule_edits, *edits]
        return _whatif(result, edits, plan=plan, unexpressible=unexpressible, cap=cap)
    return _whatif(result, edits, plan=plan, unexpressible=unexpressible)
