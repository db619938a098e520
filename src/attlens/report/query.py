"""One function per question, returning the ``--json`` object of its answer.

The CLI commands (with ``--json``) and the MCP tools (``attlens mcp``) both
call these, so a person and an agent get the same object for the same
question. Functions take an analyzed capture (``attlens.analyze`` result) and
the question's parameters; the wave-level pieces a caller already has
(``attribution``, ``waves``) can be passed in so a long-lived caller (the MCP
server) computes them once per capture.
"""

from __future__ import annotations


def summary(result, top: int | None = 10) -> dict:
    """``attlens analyze DIR --json --topk TOP``."""
    from attlens.report.json_out import analysis_to_dict

    return analysis_to_dict(result, top)


def hotspots(result, by: str = "instruction", sort: str = "stall", top: int | None = 10) -> dict:
    """``attlens analyze DIR --by BY --sort SORT --topk TOP --json``."""
    from attlens.analysis.hotspots import hotspot_table

    return hotspot_table(result, by, sort).to_dict(top)


def plan(result, disable: set[str] | None = None, only: set[str] | None = None, waves=None) -> dict:
    """``attlens plan DIR --json``."""
    from attlens.analysis.plan import make_plan
    from attlens.report.plan_out import plan_to_dict

    return plan_to_dict(result, make_plan(result, disable=disable, only=only, waves=waves))


def asm(result, pc: int, around: int = 10, attribution=None) -> dict:
    """``attlens asm DIR --pc PC --around AROUND --json``."""
    from attlens.analysis.asm import asm_window

    return asm_window(result, pc, around, attribution=attribution).to_dict()


def select_deps(result, pc: int | None = None, line: str | None = None, attribution=None):
    """The wait attribution and the producers/waits that ``--pc`` / ``--line`` select
    (all when neither); a pc that is not an instruction or a line with neither
    a memory op nor a wait is a usage error."""
    from attlens.analysis.waitattr import attribute_waits
    from attlens.errors import UsageError
    from attlens.report.waves_out import select_deps as _select

    d = result.dispatch
    if pc is not None and line is not None:
        raise UsageError("give a pc or a line, not both")
    if pc is not None and not (0 <= pc < d.code.size and d.code.instruction_mask[pc]):
        raise UsageError(f"--pc {pc}: no instruction with that pc index (0..{d.code.size - 1})")
    att = attribution if attribution is not None else attribute_waits(d, result.deps, result.pairs)
    producers, waits = _select(result, att, pc=pc, line=line)
    if line is not None and not producers and not waits:
        raise UsageError(f"--line {line}: no memory op or wait on that line (try a longer or shorter path suffix)")
    return att, producers, waits


def deps(result, pc: int | None = None, line: str | None = None, top: int | None = 10, attribution=None) -> dict:
    """``attlens deps DIR [--pc N | --line FILE:LINE] --topk TOP --json``."""
    from attlens.report.waves_out import deps_to_dict

    att, producers, waits = select_deps(result, pc, line, attribution)
    return deps_to_dict(result, att, producers, waits, None if not top or top <= 0 else top)


def waits(result, steady: bool = False, top: int | None = None, attribution=None) -> dict:
    """``attlens waits DIR [--steady] --topk TOP --json``."""
    from attlens.analysis.waitstats import compute_wait_stats

    return compute_wait_stats(result, steady=steady, attribution=attribution).to_dict(top)


def waves(result, top: int = 10, per_wave: bool = True, waves=None) -> dict:
    """``attlens waves DIR --topk TOP [--no-per-wave] --json``."""
    from attlens.analysis.waves import analyze_waves
    from attlens.report.waves_out import waves_to_dict

    return waves_to_dict(result, waves if waves is not None else analyze_waves(result, top=max(top, 1)), per_wave=per_wave)


def occupancy(result) -> dict:
    """``attlens occupancy DIR --json``."""
    from attlens.report.agent_out import occupancy_doc

    return occupancy_doc(result)


def diff(before, after, force: bool = False, noise_floor: float | None = None, noise_source: str | None = None, top: int | None = 10) -> dict:
    """``attlens diff BEFORE AFTER --json`` on two loaded sides (``attlens.analysis.diff.load_side``)."""
    from attlens.analysis.diff import diff as _diff
    from attlens.report.diff_out import diff_to_dict

    res = _diff(before, after, force=force, noise_floor=noise_floor, noise_source=noise_source)
    return diff_to_dict(res, top=None if not top or top <= 0 else top)


def check(current, baseline, metric: str = "total", max_regression: float = 5.0, force: bool = False) -> dict:
    """``attlens check CAPTURE --baseline BASELINE --json`` on two loaded sides."""
    from attlens.analysis.diff import check as _check

    return _check(current, baseline, metric, max_regression, force).to_dict()


def kernels(paths, exclude: str | None = None) -> dict:
    """``attlens kernels PATH ... --json``."""
    from attlens.capture.kernels import kernel_table
    from attlens.report.kernels_out import kernels_to_dict

    paths = paths if isinstance(paths, (str, bytes)) or len(paths) != 1 else paths[0]
    return kernels_to_dict(kernel_table(paths) if exclude is None else kernel_table(paths, exclude=exclude))


def captures(path) -> dict:
    """``attlens captures PATH --json``."""
    from attlens.model.inventory import list_captures

    return list_captures(path).to_dict()
