"""The MCP tools, without the SDK: each takes a client's arguments, confines
its paths, takes analyzed captures from the cache, and returns the object the
CLI's ``--json`` prints for the same question (the same function of
:mod:`attlens.api`, then the result's ``to_dict()``). Failures raise
:class:`attlens.errors.AttlensError` subclasses; :mod:`attlens.serve.server`
turns them into tool errors.
"""

from __future__ import annotations

from attlens import api
from attlens.serve.cache import CaptureCache, Entry
from attlens.serve.roots import Roots

# name -> one-line description (the MCP tool descriptions; docs/agents.md lists the same)
TOOLS = {
    "list_captures": "Captures under a folder (up to eight levels down): layout generation, kernel, target, waves, instructions, dispatch id, and status ok/empty/broken (empty = a shell with no wave, or a PC-sampling folder); other profiler outputs found (rocprofiler-compute workloads, rocprofv3 run files, legacy rocprof v1) under `others`. Same object as `attlens captures PATH --json`.",
    "summary": "Start here: one capture on one screen (~2-3k tokens): the plan's verdict and top findings, then the numbers behind them (totals, stall by class, the top instructions and source lines by stall with latency and exposed cycles), occupancy, capture quality, warnings (act on these) and notes (expected facts). detail='full' adds the whole attlens.analyze object. Same object as `attlens analyze CAPTURE --summary --json --top TOP`.",
    "hotspots": "One ranking of a capture: by instruction, source line or opcode; sorted by stall, latency, exposed (not hidden by other waves) or idle cycles. Same object as `attlens analyze CAPTURE --by BY --sort SORT --top TOP --json`.",
    "plan": "The evidence-backed, prioritized optimization plan: each finding with evidence, the change to try and what would prove it wrong. Same object as `attlens plan CAPTURE --json`.",
    "asm": "The ISA window around one pc: AROUND instructions either side with per-pc cycles, class, source line, the memory ops each wait waited on, and the source lines' text when the capture has it. Same object as `attlens asm CAPTURE --pc PC --around AROUND --json`.",
    "deps": "Memory -> wait dependencies: which memory ops the waits waited on (cycles charged), load-to-use distances; optionally only one pc or one source line (FILE:LINE, a path suffix is enough). Same object as `attlens deps CAPTURE [--pc N | --line L] --top TOP --json`.",
    "waits": "Per wait site (s_waitcnt): count, mean, p50/p90/p95, stddev and max of the wait per execution; steady=true keeps only loop iterations after the first. Same object as `attlens waits CAPTURE [--steady] --top TOP --json`.",
    "waves": "Wave states, clock alignment, pipe utilization, execution phases, per-execution stalls of the top instructions, capture-coverage flags. Same object as `attlens waves CAPTURE --top TOP --json` (with per_wave=false: `--no-per-wave`).",
    "occupancy": "Theoretical occupancy (waves per SIMD) with its limiters and what to free for one more wave, observed residency, grid-limited flag. Same object as `attlens occupancy CAPTURE --json`.",
    "diff": "Compare two captures of a kernel (or attlens analyze --json --top 0 files): by source line and aligned instruction sites, with a verdict. Same object as `attlens diff BEFORE AFTER --json --top TOP`.",
    "check": "Gate a capture against a baseline: passed when METRIC per wave grew by at most MAX_REGRESSION percent. Same object as `attlens check CAPTURE --baseline BASELINE --max-regression P --metric M --json` (which exits 20 on a regression, 22 when a capture was partly read: `partial` true, `passed` false).",
    "kernels": "Kernel table from rocprofv3 outputs (kernel_stats.csv, kernel_trace.csv, results.json, results.db, or a folder of them): time, calls, ids, resources. Same object as `attlens kernels PATH --json`.",
    "rules": "Every rule of the plan: its trigger, the preconditions its advice assumes, its evidence and limits. Same object as `attlens rules --json`.",
    "whatif": "Replay the traced waves with changes applied together (findings by rule id, waits hidden, loads moved, waves per SIMD): predicted dispatch time, gain with interval, bound, calibration, changed pcs. As `attlens whatif --json`.",
    "schema": "The JSON Schema (draft 2020-12) of an attlens object, e.g. 'attlens.waits' or 'waits'.",
    "pc_sampling": "PC samples on their own (a rocprofv3 *_results.json or *_pc_sampling_*.csv, or a rocprof-compute-viewer PC-sampling ui_output folder): per instruction and source line, samples, issued, stalled and the stall reasons; no cycles. Same object as `attlens pcsampling PATH --json`. (summary, hotspots, asm and plan on a capture already carry the samples found beside it.)",
}

# name -> human-readable title (MCP tool title and annotations)
TITLES = {
    "list_captures": "List captures", "summary": "Capture summary", "hotspots": "Hotspot ranking", "plan": "Optimization plan",
    "asm": "ISA window", "deps": "Memory-to-wait dependencies", "waits": "Wait statistics", "waves": "Wave states and pipes",
    "occupancy": "Occupancy", "diff": "Compare two captures", "check": "Regression gate", "kernels": "Kernel table",
    "rules": "Plan rules", "whatif": "What-if replay", "schema": "JSON Schema of an object", "pc_sampling": "PC samples",
}


class Tools:
    def __init__(self, roots: Roots, cache: CaptureCache | None = None):
        self.roots = roots
        self.cache = cache or CaptureCache()

    # ------------------------------------------------------------ helpers

    def _entry(self, capture: str) -> Entry:
        from attlens.errors import SeveralCaptures
        from attlens.model.locate import resolve_capture_dirs

        p = self.roots.check(capture)
        try:
            d = resolve_capture_dirs(p)[0]
        except SeveralCaptures as exc:
            exc.hint = "pass one of the candidates' paths as capture (list_captures lists them)"
            raise
        return self.cache.get(self.roots.check(d))

    def _plan(self, e: Entry):
        return e.memo("plan", lambda: api.plan(e.result))

    def _attribution(self, e: Entry):
        from attlens.analysis.waitattr import attribute_waits

        r = e.result
        return e.memo("attribution", lambda: attribute_waits(r.dispatch, r.deps, r.pairs))

    def _side(self, path: str):
        from attlens.analysis.diff import side_from_json, side_from_result

        p = self.roots.check(path)
        if p.is_file() and p.suffix == ".json":
            return side_from_json(p)
        from attlens.analysis.diff import plan_summary

        e = self._entry(str(p))
        side = side_from_result(e.result, str(p))
        side.plan = plan_summary(self._plan(e))  # as `attlens diff`: the plans compared too
        return side

    # ------------------------------------------------------------ tools

    def list_captures(self, path: str = ".") -> dict:
        return api.captures(self.roots.check(path)).to_dict()

    def summary(self, capture: str, top: int = 10, detail: str = "brief") -> dict:
        from attlens.io.pcsampling_rcv import is_pc_sampling_dir
        from attlens.model.locate import resolve_capture_dirs

        d = resolve_capture_dirs(self.roots.check(capture))[0]
        if is_pc_sampling_dir(d):  # as `attlens analyze --summary`: the sampled stall reasons, no cycles
            return api.pc_sampling(self.roots.check(d)).to_dict(top)
        e = self._entry(capture)
        return api.summary(e.result, top=top, detail=detail, plan=self._plan(e)).to_dict()

    def pc_sampling(self, path: str, kernel: str | None = None, dispatch: int | None = None, top: int = 20) -> dict:
        return api.pc_sampling(self.roots.check(path), kernel=kernel, dispatch=dispatch).to_dict(top)

    def hotspots(self, capture: str, by: str = "instruction", sort: str = "stall", top: int = 10) -> dict:
        return api.hotspots(self._entry(capture).result, by, sort).to_dict(top)

    def plan(self, capture: str) -> dict:
        e = self._entry(capture)
        return e.memo("plan.json", lambda: self._plan(e).to_dict())

    def asm(self, capture: str, pc: int | str, around: int = 10) -> dict:
        e = self._entry(capture)
        return api.asm(e.result, pc, around, attribution=self._attribution(e)).to_dict()

    def deps(self, capture: str, pc: int | str | None = None, line: str | None = None, top: int = 10) -> dict:
        e = self._entry(capture)
        return api.deps(e.result, pc, line, attribution=self._attribution(e)).to_dict(top)

    def waits(self, capture: str, steady: bool = False, top: int = 10) -> dict:
        e = self._entry(capture)
        return api.waits(e.result, steady, attribution=self._attribution(e)).to_dict(top)

    def waves(self, capture: str, top: int = 10, per_wave: bool = False) -> dict:
        e = self._entry(capture)
        top = max(top, 1)
        return e.memo(f"waves:{top}", lambda: api.waves(e.result, top)).to_dict(per_wave=per_wave)

    def occupancy(self, capture: str) -> dict:
        return api.occupancy(self._entry(capture).result).to_dict()

    def diff(self, before: str, after: str, force: bool = False, noise_floor: float | None = None, top: int = 10) -> dict:
        floor = None if noise_floor is None else noise_floor / 100
        return api.diff(self._side(before), self._side(after), force=force, noise_floor=floor,
                        noise_source=None if noise_floor is None else "--noise-floor").to_dict(top)

    def check(self, capture: str, baseline: str, max_regression: float = 5.0, metric: str = "total", force: bool = False) -> dict:
        return api.check(self._side(capture), self._side(baseline), metric, max_regression, force).to_dict()

    def kernels(self, path: str, exclude: str | None = None) -> dict:
        return api.kernels(str(self.roots.check(path)), exclude).to_dict()

    def whatif(self, capture: str, apply: list[str] | None = None, hide_wait: list[int | str] | None = None,
               move: list[str] | None = None, waves_per_simd: int | None = None) -> dict:
        e = self._entry(capture)
        plan = self._plan(e) if apply else None  # the plan `plan` answers with: its findings are the ones applied
        return api.whatif(e.result, apply=apply, hide_wait=hide_wait, move=move, waves_per_simd=waves_per_simd, plan=plan).to_dict()

    def rules(self) -> dict:
        from attlens.analysis.plan import load_rules, rules_to_dict

        return rules_to_dict(load_rules())

    def schema(self, name: str) -> dict:
        """What ``attlens schema NAME`` prints: the schema with the ones it references embedded."""
        from attlens import schemas

        return schemas.bundle(schemas.require(name))
