"""L2 / HBM analysis of rocprofv3 hardware counters (PMC), one dispatch at a time.

Facts come from ``rocprofv3-interfaces.md`` §2.4, §3.5 and §5; docs/pmc.md has
the per-target tables, the formulas, the thresholds and the vcopy check.

Three jobs:

* :func:`plan_passes` / :func:`job_pmc_lists` split a counter list into
  hardware passes (no block over its single-pass limit, §5.4) and give the
  ``pmc:`` list of each rocprofv3 job.
* :func:`merge_passes` joins the passes of ONE collection by dispatch id.
* :func:`analyze_pmc` turns one dispatch's counters into L2 hit rate, request
  mix, bytes from/to memory (with the target's own read formula, §5.3),
  over-fetch, achieved bandwidth and four decisions, each with its numbers.

Unavailable values are ``None``, never 0: a missing counter, a zero
denominator or a missing duration gives ``None``; a counter that really is 0
gives 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from attlens.analysis.ceiling import CEILING_FRACTION, over_peak  # one 'at the ceiling' threshold for the trace and the counters
from attlens.errors import UsageError
from attlens.results import brief_repr

# ---------------------------------------------------------------------------
# Per-target facts (doc §5). Kept here, not in model/archdata.py, on purpose.
# ---------------------------------------------------------------------------

# Max counters per block per pass, §5.4 (aqlprofile gfx9_block_info.h via RCP
# mi_gpu_spec.yaml). The doc gives one table for gfx942 and gfx950 ("same as
# gfx90a and gfx940"); rocprofiler-compute's own pass files of MI100 and MI200
# (perfmon/pmc_perf_N.txt in ../shared/outside/rocprof-compute) stay within it
# (at most 4 TCC, 8 SQ, 2 TA/TD/CPC/CPF, 4 TCP, 2 GRBM per pass).
GFX9_BLOCK_LIMITS: dict[str, int] = {
    "SQ": 8, "TA": 2, "TD": 2, "TCP": 4, "TCC": 4, "CPC": 2, "CPF": 2, "SPI": 6, "GRBM": 2, "GDS": 4,
}

L2_LINE_BYTES = 128


@dataclass(frozen=True)
class PmcProduct:
    name: str
    xcc: int  # XCCs per agent in SPX mode (per-XCC counters come out x this)
    target: str  # ARCH_TABLE row holding the product's peak bandwidth

    @property
    def peak_hbm_gbps(self) -> float:
        return _peak(self)[0]

    @property
    def peak_source(self) -> str:
        return _peak(self)[1]


def _peak(prod: PmcProduct) -> tuple[float, str]:
    """The product's peak HBM bandwidth from the one architecture table
    (``model/archdata.py``, ``hbm_peak_gbps``), with its source."""
    from attlens.model.archdata import ARCH_TABLE, hbm_peak

    gbps, _product, source = hbm_peak(ARCH_TABLE[prod.target], f"AMD Instinct {prod.name}")
    return gbps, source


@dataclass(frozen=True)
class PmcTarget:
    target: str
    family: str
    # "bubble" (gfx942), "split" (gfx950), doc §5.3; "ea" (gfx90a, gfx908): the
    # older TCC_EA_* names, 32- or 64-B requests only (rocprofiler-compute
    # analysis_configs/gfx90a|gfx908 "L2-Fabric Read BW")
    read_formula: str
    counters: tuple[str, ...]  # the L2/HBM set attlens collects, in pass order
    block_limits: Mapping[str, int]
    l2_line_bytes: int
    products: Mapping[str, PmcProduct]
    default_product: str
    largest_request_bytes: int = 128  # the largest L2 -> fabric request; smaller ones move part of it

    @property
    def ea(self) -> str:
        """The prefix of the L2 -> fabric counters on this target."""
        return "TCC_EA_" if self.read_formula == "ea" else "TCC_EA0_"

    @property
    def product(self) -> PmcProduct:
        return self.products[self.default_product]

    @property
    def xcc(self) -> int:
        return self.product.xcc

    @property
    def peak_hbm_gbps(self) -> float:
        return self.product.peak_hbm_gbps


PMC_TARGETS: dict[str, PmcTarget] = {
    "gfx942": PmcTarget(
        target="gfx942",
        family="CDNA3",
        read_formula="bubble",
        # Order matters: the planner fills passes in this order, so every byte
        # formula has its inputs in ONE pass (one application run): pass 1 =
        # read bytes + HBM share, pass 2 = write bytes + HBM share + requests,
        # pass 3 = hit/miss.
        counters=(
            "TCC_EA0_RDREQ_sum", "TCC_EA0_RDREQ_32B_sum", "TCC_BUBBLE_sum", "TCC_EA0_RDREQ_DRAM_sum",
            "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_EA0_WRREQ_DRAM_sum", "TCC_REQ_sum",
            "TCC_HIT_sum", "TCC_MISS_sum",
            "GRBM_GUI_ACTIVE",
        ),
        block_limits=GFX9_BLOCK_LIMITS,
        l2_line_bytes=L2_LINE_BYTES,
        products={
            "MI300X": PmcProduct("MI300X", 8, "gfx942"),
            "MI325X": PmcProduct("MI325X", 8, "gfx942"),
            "MI300A": PmcProduct("MI300A", 6, "gfx942"),  # 6 XCCs [assumption: not in the interfaces doc]
        },
        default_product="MI300X",
    ),
    "gfx950": PmcTarget(
        target="gfx950",
        family="CDNA4",
        read_formula="split",
        counters=(
            "TCC_EA0_RDREQ_32B_sum", "TCC_EA0_RDREQ_64B_sum", "TCC_EA0_RDREQ_128B_sum", "TCC_EA0_RDREQ_sum",
            "TCC_EA0_WRREQ_sum", "TCC_EA0_WRREQ_64B_sum", "TCC_EA0_RDREQ_DRAM_32B_sum", "TCC_EA0_WRREQ_WRITE_DRAM_32B_sum",
            "TCC_HIT_sum", "TCC_MISS_sum", "TCC_REQ_sum",
            "GRBM_GUI_ACTIVE",
        ),
        block_limits=GFX9_BLOCK_LIMITS,
        l2_line_bytes=L2_LINE_BYTES,
        products={
            "MI350X": PmcProduct("MI350X", 8, "gfx950"),
            "MI355X": PmcProduct("MI355X", 8, "gfx950"),
        },
        default_product="MI350X",
    ),
}
# In pass order (4 TCC counters a pass): read bytes and their HBM share (+ the
# read-latency level) | write bytes, their HBM share and requests | hit/miss.
_EA_COUNTERS = (
    "TCC_EA_RDREQ_sum", "TCC_EA_RDREQ_32B_sum", "TCC_EA_RDREQ_DRAM_sum", "TCC_EA_RDREQ_LEVEL_sum",
    "TCC_EA_WRREQ_sum", "TCC_EA_WRREQ_64B_sum", "TCC_EA_WRREQ_DRAM_sum", "TCC_REQ_sum",
    "TCC_HIT_sum", "TCC_MISS_sum",
    "GRBM_GUI_ACTIVE",
)
# gfx90a (CDNA2) and gfx908 (CDNA1): counter names without the "0", read bytes
# 32*TCC_EA_RDREQ_32B + 64*(TCC_EA_RDREQ - TCC_EA_RDREQ_32B), write bytes as on
# gfx942 (rocprofiler-compute analysis_configs/gfx90a and gfx908,
# 0200_system-speed-of-light.yaml "L2-Fabric Read/Write BW"). One agent is one
# GCD: MI250X / MI250 show as two agents. L2 line: 128 B on CDNA2, 64 B on CDNA1
# (rocprofiler-compute's L2 Cache BW = TCC_REQ x 128 on gfx90a, x 64 on gfx908).
PMC_TARGETS["gfx90a"] = PmcTarget(
    target="gfx90a", family="CDNA2", read_formula="ea", counters=_EA_COUNTERS, block_limits=GFX9_BLOCK_LIMITS,
    l2_line_bytes=128, largest_request_bytes=64,
    products={"MI210": PmcProduct("MI210", 1, "gfx90a"), "MI250": PmcProduct("MI250", 1, "gfx90a"),
              "MI250X": PmcProduct("MI250X", 1, "gfx90a")},
    default_product="MI210",
)
PMC_TARGETS["gfx908"] = PmcTarget(
    target="gfx908", family="CDNA", read_formula="ea", counters=_EA_COUNTERS, block_limits=GFX9_BLOCK_LIMITS,
    l2_line_bytes=64, largest_request_bytes=64,
    products={"MI100": PmcProduct("MI100", 1, "gfx908")},
    default_product="MI100",
)

_TARGET_ALIASES = {"gfx940": "gfx942", "gfx941": "gfx942"}

# Decision thresholds (docs/pmc.md "Decisions").
STREAMING_HIT_RATE_MAX = 0.50  # L2 hit rate below this = streaming, little reuse
PARTIAL_LINE_SHARE_MIN = 0.25  # share of sub-line requests at/above this = partial-line traffic
PARTIAL_LINE_MIN_REQUESTS = 256  # fewer requests than this never fire partial-line (noise)
REDUNDANT_FETCH_MIN = 1.25  # read bytes / ideal read bytes at/above this = redundant fetch
SPLIT_CONSISTENCY_TOL = 0.02  # gfx950: RDREQ vs 32B+64B+128B may differ this much (separate runs)


def product_key(name: str | None) -> str | None:
    """A product name as the tables spell it: ``MI300X_A1`` → ``MI300X``,
    ``AMD Instinct MI350X`` → ``MI350X``; None for None."""
    if not name:
        return None
    s = name.strip().upper()
    if s.startswith("AMD INSTINCT "):
        s = s[len("AMD INSTINCT "):]
    return s.split("_")[0].strip()


def resolve_pmc_target(name: str, product: str | None = None) -> tuple[PmcTarget, PmcProduct]:
    """``gfx942``/``gfx950``/``gfx90a``/``gfx908`` (feature suffixes allowed) or a
    product name (``MI300X``, ``MI325X``, ``MI350X``, ``MI355X``, ``MI210``,
    ``MI100``, RCP's ``MI350``/``MI300X_A1``)."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError("PMC analysis needs a target (gfx942, gfx950, gfx90a, gfx908 or a product name such as MI300X)")
    raw = name.strip()
    key = raw.lower().split(":")[0]
    key = _TARGET_ALIASES.get(key, key)
    tgt = PMC_TARGETS.get(key)
    prod_name = product
    if tgt is None:
        want = raw.upper().split("_")[0]  # "MI300X_A1" -> "MI300X"
        for t in PMC_TARGETS.values():
            for pname in t.products:
                if want == pname or want + "X" == pname:  # RCP says "MI350" for MI350X
                    tgt, prod_name = t, prod_name or pname
                    break
            if tgt is not None:
                break
    if tgt is None:
        known = sorted(PMC_TARGETS) + sorted(p for t in PMC_TARGETS.values() for p in t.products)
        raise UsageError(f"no PMC facts for target {raw!r}; known: {', '.join(known)}")
    if prod_name is None:
        return tgt, tgt.product
    p = tgt.products.get(product_key(prod_name))
    if p is None:
        raise UsageError(f"product {prod_name!r} is not a {tgt.target} product ({', '.join(tgt.products)})")
    return tgt, p


# ---------------------------------------------------------------------------
# Pass planning (§5.4)
# ---------------------------------------------------------------------------

_VALID_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\[\d+\])?(:device=\d+)?$")


def counter_block(name: str) -> str:
    """Hardware block of a counter: the prefix before the first ``_``."""
    return name.split("_", 1)[0].upper()


def canonical_counter(name: str) -> str:
    """``TCC_HIT_sum`` and ``TCC_HIT`` are one counter (same CSV value, §3.5)."""
    base, _, qual = name.partition(":")
    if base.endswith("_sum"):
        base = base[: -len("_sum")]
    return base + (":" + qual if qual else "")


def plan_passes(counters: Iterable[str], target: str) -> list[list[str]]:
    """Group counters into passes so that no block exceeds its single-pass limit.

    First fit in input order: counter k of a block goes to pass k // limit, so
    the number of passes is max over blocks of ceil(n / limit), the minimum.
    Deterministic; order inside a pass follows the input. ``X`` and ``X_sum``
    are one counter: the later spelling is dropped (asking for both may count
    the event twice, §5.4). Unknown blocks (derived counters such as
    ``FETCH_SIZE``) are refused: their hardware cost is not known here.
    """
    tgt, _ = resolve_pmc_target(target)
    limits = tgt.block_limits
    if isinstance(counters, str):
        counters = [counters]
    passes: list[list[str]] = []
    used: list[dict[str, int]] = []
    seen: set[str] = set()
    for name in counters:
        if not isinstance(name, str) or not _VALID_NAME.match(name.strip()):
            raise UsageError(f"not a counter name: {name!r}")
        name = name.strip()
        key = canonical_counter(name)
        if key in seen:
            continue
        block = counter_block(name)
        limit = limits.get(block)
        if limit is None:
            raise UsageError(
                f"counter {name!r}: unknown block {block!r} on {tgt.target} (known: {', '.join(sorted(limits))}); "
                "derived counters cannot be planned, list their hardware counters instead"
            )
        seen.add(key)
        for i, u in enumerate(used):
            if u.get(block, 0) < limit:
                break
        else:
            passes.append([])
            used.append({})
            i = len(passes) - 1
        passes[i].append(name)
        used[i][block] = used[i].get(block, 0) + 1
    return passes


def job_pmc_lists(target: str, counters: Iterable[str] | None = None, *, base_job: Mapping | None = None) -> list[dict]:
    """One rocprofv3 input-file job per pass: ``[{**base_job, "pmc": [...]}, ...]``.

    Put the result under ``jobs:`` of a YAML/JSON input file (§2.8); each job
    is one application run. ``counters`` defaults to the target's L2/HBM set.
    """
    tgt, _ = resolve_pmc_target(target)
    base = dict(base_job or {})
    if "pmc" in base or "pmc_groups" in base:
        raise UsageError("base_job must not carry 'pmc' or 'pmc_groups' (pmc and pmc_groups together is fatal in rocprofv3)")
    plan = plan_passes(tgt.counters if counters is None else counters, tgt.target)
    return [{**base, "pmc": list(p)} for p in plan]


# ---------------------------------------------------------------------------
# Merging passes
# ---------------------------------------------------------------------------


class PmcMergeError(UsageError):
    """Passes that must not be joined by dispatch id."""


_META_KEYS = ("kernel_name", "gpu", "start_ns", "end_ns")


def merge_passes(passes: Sequence[Mapping], *, run_ids: Sequence[str | None] | None = None) -> dict[int, dict]:
    """Join the passes of ONE collection: same dispatch id -> one counter dict.

    Each pass is ``{dispatch_id: record}``, a record being ``{"kernel_name",
    "gpu", "counters": {...}, "start_ns", "end_ns"}`` (read_pmc_perf /
    pivot_counter_rows shape) or a bare ``{counter: value}``.

    Dispatch ids restart in every process, so "dispatch 7" only names the same
    kernel launch in two passes when both passes replay the same collection
    (same command, same filters). The run of each pass comes from ``run_ids``
    or the records' ``"run_id"``; passes of different runs are refused, and so
    is a dispatch id whose kernel name or GPU differs between passes. A
    counter seen in several passes keeps its first value and is listed under
    ``"repeated_counters"``.
    """
    if run_ids is not None and len(run_ids) != len(passes):
        raise UsageError(f"merge_passes: {len(run_ids)} run ids for {len(passes)} passes")
    runs: list[str | None] = []
    for i, p in enumerate(passes):
        rid = run_ids[i] if run_ids is not None else None
        if rid is None:
            found = {r.get("run_id") for r in p.values() if isinstance(r, Mapping) and r.get("run_id") is not None}
            if len(found) > 1:
                raise PmcMergeError(f"pass {i + 1} mixes runs {sorted(map(str, found))}; dispatch ids restart per process")
            rid = next(iter(found), None)
        runs.append(rid)
    known = [r for r in runs if r is not None]
    if len(set(known)) > 1:
        raise PmcMergeError(
            f"refusing to merge passes from different runs ({', '.join(sorted(set(map(str, known))))}): dispatch ids "
            "restart at every process start, so the same id names unrelated kernel launches in different runs; "
            "merge only the passes of one collection"
        )
    out: dict[int, dict] = {}
    for i, p in enumerate(passes):
        for did, rec in p.items():
            did = int(did)
            if isinstance(rec, Mapping) and isinstance(rec.get("counters"), Mapping):
                counters, meta = rec["counters"], rec
            else:
                counters, meta = (rec if isinstance(rec, Mapping) else {}), {}
            cur = out.get(did)
            if cur is None:
                cur = out[did] = {
                    "kernel_name": meta.get("kernel_name"), "gpu": meta.get("gpu"),
                    "counters": {}, "start_ns": meta.get("start_ns"), "end_ns": meta.get("end_ns"),
                    "passes": [], "repeated_counters": [], "run_id": runs[i],
                }
            for k in ("kernel_name", "gpu"):
                a, b = cur[k], meta.get(k)
                if a is None:
                    cur[k] = b
                elif b is not None and a != b:
                    raise PmcMergeError(
                        f"dispatch {did}: {k} {a!r} in an earlier pass but {b!r} in pass {i + 1}; the passes are not "
                        "replays of the same run (different runs or a non-deterministic launch order)"
                    )
            for k in ("start_ns", "end_ns"):
                if cur[k] is None:
                    cur[k] = meta.get(k)
            cur["passes"].append(i)
            for name, v in counters.items():
                if name in cur["counters"] and canonical_counter(name) not in cur["repeated_counters"]:
                    cur["repeated_counters"].append(canonical_counter(name))
                cur["counters"].setdefault(name, v)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------
# Analysis of one dispatch
# ---------------------------------------------------------------------------


@brief_repr("id", "verdict", "title")
@dataclass
class Decision:
    id: str  # streaming_no_reuse | partial_line_waste | redundant_fetch | bandwidth_ceiling
    title: str
    verdict: bool | None  # True fired, False checked and not fired, None not decidable
    text: str
    numbers: dict = field(default_factory=dict)
    threshold: str = ""

    def to_dict(self) -> dict:
        return {"id": self.id, "title": self.title, "verdict": self.verdict, "text": self.text, "threshold": self.threshold,
                "numbers": _plain(self.numbers)}


@brief_repr("dispatch_id", "kernel", "target", "l2_hit_rate", "write_bytes", "achieved_gbps", "fraction_of_peak",
            ("fired", lambda r: len(r.fired)))
@dataclass
class PmcResult:
    target: str
    product: str
    xcc: int
    peak_hbm_gbps: float
    peak_source: str
    l2_line_bytes: int
    dispatch_id: int | None = None
    kernel: str | None = None
    counters: dict = field(default_factory=dict)  # normalized: canonical name -> value
    l2_hits: float | None = None
    l2_misses: float | None = None
    l2_requests: float | None = None
    l2_hit_rate: float | None = None  # fraction
    read_requests: dict = field(default_factory=dict)  # {"32B","64B","128B","total"} -> count | None
    read_mix: dict = field(default_factory=dict)  # {"32B","64B","128B"} -> fraction | None
    write_requests: dict = field(default_factory=dict)  # {"32B","64B","total"}
    write_mix: dict = field(default_factory=dict)  # {"32B","64B"}
    read_bytes: float | None = None
    read_bytes_range: tuple[float, float] | None = None  # (v, v) when exact
    read_bytes_method: str | None = None
    fetch_size_formula_bytes: float | None = None  # gfx942 BUBBLE formula (= SDK FETCH_SIZE x 1024)
    write_bytes: float | None = None
    write_bytes_method: str | None = None
    hbm_read_bytes: float | None = None
    hbm_write_bytes: float | None = None
    hbm_method: str | None = None
    ideal_bytes: float | None = None
    over_fetch: float | None = None
    over_fetch_range: tuple[float, float] | None = None
    duration_ns: float | None = None
    duration_source: str | None = None
    bytes_moved: float | None = None
    achieved_gbps: float | None = None
    achieved_gbps_range: tuple[float, float] | None = None
    fraction_of_peak: float | None = None
    fraction_of_peak_range: tuple[float, float] | None = None
    # why no bandwidth is given although bytes and a duration are (degenerate
    # timestamps, or a figure above the physical peak); None when usable
    timing_unusable: str | None = None
    largest_request_bytes: int = L2_LINE_BYTES  # the largest L2 -> fabric request of the target
    gpu_busy_cycles_per_xcc: float | None = None
    decisions: list[Decision] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def decision(self, did: str) -> Decision | None:
        return next((d for d in self.decisions if d.id == did), None)

    @property
    def fired(self) -> list[Decision]:
        return [d for d in self.decisions if d.verdict]

    def to_dict(self) -> dict:
        """One dispatch of ``attlens.pmc`` (``dispatches``). Fractions are in [0, 1], bytes are
        bytes, bandwidths GB/s (10^9 B/s), ranges ``[low, high]``; unknown values None, never 0."""
        return {
            "dispatch_id": self.dispatch_id,
            "kernel": self.kernel,
            "target": {"name": self.target, "product": self.product, "xcc": self.xcc, "peak_hbm_gbps": _r(self.peak_hbm_gbps),
                       "peak_source": self.peak_source, "l2_line_bytes": self.l2_line_bytes,
                       "largest_request_bytes": self.largest_request_bytes},
            "l2": {"hits": _r(self.l2_hits), "misses": _r(self.l2_misses), "requests": _r(self.l2_requests), "hit_rate": _r(self.l2_hit_rate)},
            "read": {"requests": _plain(self.read_requests) or None, "mix": _plain(self.read_mix) or None,
                     "bytes": _r(self.read_bytes), "bytes_range": _rr(self.read_bytes_range), "method": self.read_bytes_method,
                     "fetch_size_formula_bytes": _r(self.fetch_size_formula_bytes)},
            "write": {"requests": _plain(self.write_requests) or None, "mix": _plain(self.write_mix) or None,
                      "bytes": _r(self.write_bytes), "method": self.write_bytes_method},
            "hbm": {"read_bytes": _r(self.hbm_read_bytes), "write_bytes": _r(self.hbm_write_bytes), "method": self.hbm_method},
            "over_fetch": {"ideal_bytes": _r(self.ideal_bytes), "ratio": _r(self.over_fetch), "ratio_range": _rr(self.over_fetch_range)},
            "bandwidth": {"duration_ns": _r(self.duration_ns), "duration_source": self.duration_source, "bytes_moved": _r(self.bytes_moved),
                          "achieved_gbps": _r(self.achieved_gbps), "achieved_gbps_range": _rr(self.achieved_gbps_range),
                          "fraction_of_peak": _r(self.fraction_of_peak), "fraction_of_peak_range": _rr(self.fraction_of_peak_range),
                          "timing_unusable": self.timing_unusable},
            "gpu_busy_cycles_per_xcc": _r(self.gpu_busy_cycles_per_xcc),
            "decisions": [d.to_dict() for d in self.decisions],
            "counters": _plain(self.counters),
            "notes": list(self.notes),
        }


@brief_repr(("dispatches", lambda c: len(c.results)), "target", "source")
@dataclass
class PmcCounters:
    """What a counter run gave (``attlens pmc PATH``, ``attlens report --pmc PATH``):
    the per-dispatch results, the file(s) they were read from and the GPU target."""

    results: list[PmcResult]
    source: str | None
    target: str | None

    def to_dict(self) -> dict:
        """The ``attlens.pmc`` object (``attlens pmc --json``)."""
        from attlens.jsondoc import header

        return {**header("attlens.pmc"), "source": self.source, "dispatches": [r.to_dict() for r in self.results]}


def _r(x, nd: int = 6):
    """A number as JSON shows it: whole floats as ints, others rounded."""
    if x is None:
        return None
    if isinstance(x, float) and x.is_integer() and abs(x) < 2**53:
        return int(x)
    return round(x, nd) if isinstance(x, float) else x


def _rr(t):
    return None if t is None else [_r(t[0]), _r(t[1])]


def _plain(v):
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return _r(v) if isinstance(v, float) else v


def _num(v) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(str(v).strip()) if isinstance(v, str) else float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def normalize_counters(counters: Mapping) -> tuple[dict[str, float], list[str]]:
    """Canonical name -> value. ``X_sum`` and ``X`` are one counter (the ``_sum``
    spelling wins); per-instance columns (``TCC_HIT[3]``) are skipped; empty,
    non-numeric, NaN or negative values are unavailable (absent), not 0."""
    out: dict[str, float] = {}
    from_sum: set[str] = set()
    notes: list[str] = []
    for name, raw in counters.items():
        if not isinstance(name, str) or "[" in name:
            continue
        key = canonical_counter(name.strip())
        v = _num(raw)
        if v is None:
            if raw not in (None, ""):
                notes.append(f"{name}: value {raw!r} is not a number; treated as unavailable")
            continue
        if v < 0:
            notes.append(f"{name}: negative value {v:g}; treated as unavailable")
            continue
        is_sum = name.strip().split(":")[0].endswith("_sum")
        if key in out:
            if out[key] != v:
                notes.append(f"{key} given twice with different values ({out[key]:g} vs {v:g}); "
                             "the _sum spelling (else the first) is used")
            if is_sum and key not in from_sum:
                out[key] = v
                from_sum.add(key)
            continue
        out[key] = v
        if is_sum:
            from_sum.add(key)
    return out, notes


def read_bytes_gfx942(c: Mapping[str, float]) -> float | None:
    """128·BUBBLE + 64·(RDREQ − BUBBLE − RDREQ_32B) + 32·RDREQ_32B (= FETCH_SIZE·1024)."""
    b, r, r32 = c.get("TCC_BUBBLE"), c.get("TCC_EA0_RDREQ"), c.get("TCC_EA0_RDREQ_32B")
    if b is None or r is None or r32 is None:
        return None
    return 128.0 * b + 64.0 * (r - b - r32) + 32.0 * r32


def read_bytes_gfx950(c: Mapping[str, float]) -> float | None:
    """32·RDREQ_32B + 64·RDREQ_64B + 128·RDREQ_128B."""
    n = [c.get("TCC_EA0_RDREQ_32B"), c.get("TCC_EA0_RDREQ_64B"), c.get("TCC_EA0_RDREQ_128B")]
    if any(x is None for x in n):
        return None
    return 32.0 * n[0] + 64.0 * n[1] + 128.0 * n[2]


def write_bytes(c: Mapping[str, float]) -> float | None:
    """64·WRREQ_64B + 32·(WRREQ − WRREQ_64B), both targets."""
    w, w64 = c.get("TCC_EA0_WRREQ"), c.get("TCC_EA0_WRREQ_64B")
    if w is None or w64 is None:
        return None
    return 64.0 * w64 + 32.0 * max(w - w64, 0.0)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _rng(r, f) -> tuple[float, float] | None:
    if r is None:
        return None
    lo, hi = f(r[0]), f(r[1])
    if lo is None or hi is None:
        return None
    return (min(lo, hi), max(lo, hi))


def _mib(x: float | None) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.2f} MiB"


def _span(r, fmt) -> str:
    if r is None:
        return "n/a"
    return fmt(r[0]) if r[0] == r[1] else f"{fmt(r[0])} .. {fmt(r[1])}"


def _machine_facts(tgt: PmcTarget, prod: PmcProduct, machine: Mapping | None) -> tuple[str, int | None, float | None, str | None]:
    """(product label, XCDs, peak GB/s, its source) of the profiled GPU: from
    sysinfo.csv where it says them, else the product table (a product the
    table knows by the sysinfo name), else the target's reference product."""
    if not machine:
        return prod.name, None, None, None
    key = product_key(machine.get("product"))
    known = tgt.products.get(key) if key else None
    if known is None and key:
        known = next((p for n, p in tgt.products.items() if n == key + "X"), None)  # RCP says "MI350" for MI350X
    label = known.name if known else (machine.get("product") or prod.name)
    peak, source = machine.get("hbm_peak_gbps"), machine.get("hbm_peak_source")
    if peak is None and known is not None:
        peak, source = known.peak_hbm_gbps, known.peak_source
    elif peak is None:
        peak, source = prod.peak_hbm_gbps, f"{machine.get('product')!r} not tabulated and sysinfo.csv gives no peak: reference product {prod.name}; {prod.peak_source}"
    return label, machine.get("xcd"), peak, source


def analyze_pmc(
    dispatch_counters: Mapping,
    target: str,
    ideal_bytes: float | None = None,
    duration_ns: float | None = None,
    *,
    product: str | None = None,
    peak_hbm_gbps: float | None = None,
    xcc: int | None = None,
    dispatch_id: int | None = None,
    kernel_name: str | None = None,
    duration_source: str | None = None,
    machine: Mapping | None = None,
    timing_unusable: str | None = None,
) -> PmcResult:
    """Analyze ONE dispatch from its counters (name -> value, with or without ``_sum``).

    ``ideal_bytes``: bytes the kernel must read at minimum (for over-fetch).
    ``duration_ns``: kernel duration, best from a separate kernel-trace run
    (counter collection serializes dispatches, §2.4). ``machine``: the
    profiled GPU as rocprofiler-compute's sysinfo.csv describes it
    (:func:`attlens.io.sysinfo_csv.read_sysinfo`: product, XCDs, peak HBM
    bandwidth; a partitioned MI300 or an MI300A differ from the family's
    reference product). ``product``, ``peak_hbm_gbps`` and ``xcc`` override
    both. ``timing_unusable``: why the caller's duration cannot be used (then
    no bandwidth is given, and the reason is kept).

    A bandwidth above the peak is never given as a measurement: the timing is
    then unusable and ``timing_unusable`` says why (analysis/ceiling.py).
    """
    tgt, prod = resolve_pmc_target(target, None if machine and product is None else product)
    label, m_xcc, m_peak, m_source = _machine_facts(tgt, prod, machine) if product is None else (prod.name, None, None, None)
    if ideal_bytes is not None and (_num(ideal_bytes) is None or float(ideal_bytes) < 0):
        raise UsageError(f"ideal bytes must be a number >= 0, got {ideal_bytes!r}")
    if peak_hbm_gbps is not None and (_num(peak_hbm_gbps) is None or float(peak_hbm_gbps) <= 0):
        raise UsageError(f"peak bandwidth must be > 0 GB/s, got {peak_hbm_gbps!r}")
    if xcc is not None and (not isinstance(xcc, int) or xcc < 1):
        raise UsageError(f"XCC count must be an integer >= 1, got {xcc!r}")
    raw, notes = normalize_counters(dispatch_counters or {})
    # gfx90a/gfx908 name the L2 -> fabric counters TCC_EA_*: one set of formulas below
    c = {("TCC_EA0_" + k[7:] if k.startswith("TCC_EA_") else k): v for k, v in raw.items()} if tgt.read_formula == "ea" else raw
    if peak_hbm_gbps is not None:
        peak, peak_source = float(peak_hbm_gbps), "caller"
    elif m_peak is not None:
        peak, peak_source = float(m_peak), m_source
    else:
        peak, peak_source = prod.peak_hbm_gbps, prod.peak_source
    res = PmcResult(
        target=tgt.target, product=label, xcc=xcc or m_xcc or prod.xcc, peak_hbm_gbps=peak, peak_source=peak_source,
        l2_line_bytes=tgt.l2_line_bytes, dispatch_id=dispatch_id, kernel=kernel_name,
        counters=dict(sorted(raw.items())), notes=notes, largest_request_bytes=tgt.largest_request_bytes,
    )

    # L2 hit rate
    res.l2_hits, res.l2_misses, res.l2_requests = c.get("TCC_HIT"), c.get("TCC_MISS"), c.get("TCC_REQ")
    if res.l2_hits is not None and res.l2_misses is not None:
        res.l2_hit_rate = _ratio(res.l2_hits, res.l2_hits + res.l2_misses)
        if res.l2_hit_rate is None:
            notes.append("TCC_HIT + TCC_MISS = 0: no L2 lookups, hit rate undefined")

    # Read request mix and read bytes
    r, r32 = c.get("TCC_EA0_RDREQ"), c.get("TCC_EA0_RDREQ_32B")
    r64, r128 = c.get("TCC_EA0_RDREQ_64B"), c.get("TCC_EA0_RDREQ_128B")
    res.fetch_size_formula_bytes = read_bytes_gfx942(c)
    sub_line_range = None  # share of read requests smaller than a line, as a range
    if tgt.read_formula == "split":
        exact = read_bytes_gfx950(c)
        if exact is not None:
            total = r32 + r64 + r128
            res.read_requests = {"32B": r32, "64B": r64, "128B": r128, "total": total}
            res.read_bytes, res.read_bytes_range = exact, (exact, exact)
            res.read_bytes_method = "gfx950: 32*TCC_EA0_RDREQ_32B + 64*TCC_EA0_RDREQ_64B + 128*TCC_EA0_RDREQ_128B"
            if r is not None and r > 0 and abs(r - total) / r > SPLIT_CONSISTENCY_TOL:
                notes.append(f"TCC_EA0_RDREQ ({r:,.0f}) differs from 32B+64B+128B ({total:,.0f}) by more than "
                             f"{SPLIT_CONSISTENCY_TOL:.0%}: counters from different runs disagree")
        elif r is not None and r32 is not None:
            big = max(r - r32, 0.0)
            res.read_requests = {"32B": r32, "64B": None, "128B": None, "total": r}
            res.read_bytes_range = (32.0 * r32 + 64.0 * big, 32.0 * r32 + 128.0 * big)
            res.read_bytes_method = ("gfx950 bounds only: TCC_EA0_RDREQ_64B/_128B missing; low = all non-32B requests "
                                     "64 B, high = all 128 B")
            if big > 0:
                notes.append("gfx950 read bytes need TCC_EA0_RDREQ_64B and TCC_EA0_RDREQ_128B; only bounds "
                             f"{_span(res.read_bytes_range, _mib)} are known (the BUBBLE/FETCH_SIZE formula gives the low bound)")
            else:
                res.read_bytes = res.read_bytes_range[0]
                res.read_requests.update({"64B": 0.0, "128B": 0.0})
        else:
            notes.append("read bytes need TCC_EA0_RDREQ_32B, _64B and _128B on gfx950")
    elif tgt.read_formula == "ea":
        if r is not None and r32 is not None:
            n64 = r - r32
            if n64 < 0:
                notes.append(f"TCC_EA0_RDREQ_32B ({r32:,.0f}) > TCC_EA0_RDREQ ({r:,.0f}) (counters from different runs?); "
                             "64-B requests taken as 0")
                n64 = 0.0
            res.read_requests = {"32B": r32, "64B": n64, "128B": None, "total": r32 + n64}
            exact = 32.0 * r32 + 64.0 * n64
            res.read_bytes, res.read_bytes_range = exact, (exact, exact)
            res.read_bytes_method = f"{tgt.target}: 32*TCC_EA0_RDREQ_32B + 64*(TCC_EA0_RDREQ - TCC_EA0_RDREQ_32B)"
        else:
            notes.append(f"read bytes need TCC_EA0_RDREQ and TCC_EA0_RDREQ_32B on {tgt.target}")
    else:
        exact = read_bytes_gfx942(c)
        if exact is not None:
            n64 = r - c["TCC_BUBBLE"] - r32
            if n64 < 0:
                notes.append(f"TCC_EA0_RDREQ - TCC_BUBBLE - TCC_EA0_RDREQ_32B = {n64:,.0f} < 0 (counters from different "
                             "runs?); 64-B requests taken as 0")
                exact -= 64.0 * n64
                n64 = 0.0
            res.read_requests = {"32B": r32, "64B": n64, "128B": c["TCC_BUBBLE"], "total": r32 + n64 + c["TCC_BUBBLE"]}
            res.read_bytes, res.read_bytes_range = exact, (exact, exact)
            res.read_bytes_method = ("gfx942: 128*TCC_BUBBLE + 64*(TCC_EA0_RDREQ - TCC_BUBBLE - TCC_EA0_RDREQ_32B) "
                                     "+ 32*TCC_EA0_RDREQ_32B")
        else:
            notes.append("read bytes need TCC_EA0_RDREQ, TCC_EA0_RDREQ_32B and TCC_BUBBLE on gfx942")
    rq = res.read_requests
    if rq:
        tot = rq["total"]
        res.read_mix = {k: (_ratio(rq[k], tot) if rq[k] is not None else None) for k in ("32B", "64B", "128B")}
        if tot:
            if tgt.largest_request_bytes <= 64 and res.read_mix["32B"] is not None:
                sub_line_range = (res.read_mix["32B"], res.read_mix["32B"])  # 64 B is the largest request here
            elif res.read_mix["64B"] is not None:
                s = res.read_mix["32B"] + res.read_mix["64B"]
                sub_line_range = (s, s)
            elif res.read_mix["32B"] is not None:
                sub_line_range = (res.read_mix["32B"], 1.0)

    # Writes
    w, w64 = c.get("TCC_EA0_WRREQ"), c.get("TCC_EA0_WRREQ_64B")
    res.write_bytes = write_bytes(c)
    if res.write_bytes is not None:
        res.write_bytes_method = "64*TCC_EA0_WRREQ_64B + 32*(TCC_EA0_WRREQ - TCC_EA0_WRREQ_64B)"
        if w64 > w:
            notes.append(f"TCC_EA0_WRREQ_64B ({w64:,.0f}) > TCC_EA0_WRREQ ({w:,.0f}); 32-B writes taken as 0")
        res.write_requests = {"32B": max(w - w64, 0.0), "64B": w64, "total": max(w, w64)}
        res.write_mix = {k: _ratio(res.write_requests[k], res.write_requests["total"]) for k in ("32B", "64B")}
    else:
        notes.append("write bytes need TCC_EA0_WRREQ and TCC_EA0_WRREQ_64B")

    # HBM-only traffic
    if tgt.read_formula == "split" and (c.get("TCC_EA0_RDREQ_DRAM_32B") is not None or c.get("TCC_EA0_WRREQ_WRITE_DRAM_32B") is not None):
        rd, wd = c.get("TCC_EA0_RDREQ_DRAM_32B"), c.get("TCC_EA0_WRREQ_WRITE_DRAM_32B")
        res.hbm_read_bytes = None if rd is None else 32.0 * rd
        res.hbm_write_bytes = None if wd is None else 32.0 * wd
        res.hbm_method = "gfx950: 32*TCC_EA0_RDREQ_DRAM_32B, 32*TCC_EA0_WRREQ_WRITE_DRAM_32B"
    else:
        rs, ws = _ratio(c.get("TCC_EA0_RDREQ_DRAM"), r), _ratio(c.get("TCC_EA0_WRREQ_DRAM"), w)
        if res.read_bytes is not None and rs is not None:
            res.hbm_read_bytes = res.read_bytes * min(rs, 1.0)
        if res.write_bytes is not None and ws is not None:
            res.hbm_write_bytes = res.write_bytes * min(ws, 1.0)
        if res.hbm_read_bytes is not None or res.hbm_write_bytes is not None:
            res.hbm_method = "estimate: fabric bytes x TCC_EA0_RDREQ_DRAM/TCC_EA0_RDREQ (x WRREQ_DRAM/WRREQ for writes)"

    # Over-fetch
    if ideal_bytes is not None:
        res.ideal_bytes = float(ideal_bytes)
        if res.ideal_bytes == 0:
            notes.append("ideal bytes = 0: over-fetch undefined")
        else:
            res.over_fetch_range = _rng(res.read_bytes_range, lambda b: b / res.ideal_bytes)
            res.over_fetch = None if res.read_bytes is None else res.read_bytes / res.ideal_bytes

    # Bandwidth
    d = _num(duration_ns)
    if duration_ns is not None and (d is None or d <= 0):
        timing_unusable = timing_unusable or f"duration {duration_ns!r} ns is not positive (rounded or swapped timestamps)"
        d = None
    moved_range = None
    if res.read_bytes_range is not None and res.write_bytes is not None:
        moved_range = (res.read_bytes_range[0] + res.write_bytes, res.read_bytes_range[1] + res.write_bytes)
        if res.read_bytes is not None:
            res.bytes_moved = res.read_bytes + res.write_bytes
    if d is not None and timing_unusable is None and moved_range is not None:
        timing_unusable = over_peak(moved_range[0], d, peak)  # even the fewest bytes would not fit: not this dispatch's time
    if timing_unusable is not None:
        res.timing_unusable = timing_unusable
        notes.append(f"timing unusable: {timing_unusable}; no bandwidth given")
        d = None
    res.duration_ns, res.duration_source = d, (duration_source or "caller") if d is not None else None
    if d is not None:
        res.achieved_gbps_range = _rng(moved_range, lambda b: b / d)  # bytes/ns = GB/s
        res.achieved_gbps = None if res.bytes_moved is None else res.bytes_moved / d
        res.fraction_of_peak_range = _rng(res.achieved_gbps_range, lambda g: g / peak)
        res.fraction_of_peak = None if res.achieved_gbps is None else res.achieved_gbps / peak

    g = c.get("GRBM_GUI_ACTIVE")
    res.gpu_busy_cycles_per_xcc = None if g is None else g / res.xcc
    if tgt.read_formula == "ea":  # say the counters by the names this target has
        for k in ("read_bytes_method", "write_bytes_method", "hbm_method"):
            v = getattr(res, k)
            if v:
                setattr(res, k, v.replace("TCC_EA0_", tgt.ea))
        res.notes[:] = [n.replace("TCC_EA0_", tgt.ea) for n in res.notes]

    res.decisions = [
        _streaming(res),
        _partial_line(res, sub_line_range),
        _redundant(res),
        _ceiling(res),
    ]
    return res


def _verdict(r: tuple[float, float] | None, thr: float, above: bool) -> bool | None:
    """True/False when the whole range is on one side of the threshold."""
    if r is None:
        return None
    lo, hi = r
    if above:
        return True if lo >= thr else (False if hi < thr else None)
    return True if hi < thr else (False if lo >= thr else None)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _streaming(res: PmcResult) -> Decision:
    hr = res.l2_hit_rate
    nums = {"l2_hit_rate": hr, "l2_hits": res.l2_hits, "l2_misses": res.l2_misses, "read_bytes": res.read_bytes,
            "write_bytes": res.write_bytes, "over_fetch": res.over_fetch}
    thr = f"L2 hit rate < {STREAMING_HIT_RATE_MAX:.0%}"
    title = "streaming with no reuse"
    if hr is None:
        return Decision("streaming_no_reuse", title, None, "L2 hit rate unavailable (needs TCC_HIT and TCC_MISS)", nums, thr)
    v = hr < STREAMING_HIT_RATE_MAX
    if v:
        of = f"; reads are {res.over_fetch:.2f}x the ideal bytes, so each byte is fetched about once" if res.over_fetch is not None and res.over_fetch < REDUNDANT_FETCH_MIN else ""
        text = (f"L2 hit rate {_pct(hr)} ({res.l2_hits:,.0f} hits, {res.l2_misses:,.0f} misses) is below "
                f"{STREAMING_HIT_RATE_MAX:.0%}: data streams through L2 with little reuse{of}. Cache tiling will not "
                "help; only moving fewer bytes (fusion, narrower types, skipping work) shortens a memory-bound kernel.")
    else:
        text = f"L2 hit rate {_pct(hr)}: L2 serves most requests, the kernel reuses data in L2."
    return Decision("streaming_no_reuse", title, v, text, nums, thr)


def _partial_line(res: PmcResult, sub_line: tuple[float, float] | None) -> Decision:
    title = "partial-line waste"
    small = "32/64-B" if res.largest_request_bytes > 64 else "32-B"
    thr = (f"share of {small} read requests (or of 32-B write requests) >= {PARTIAL_LINE_SHARE_MIN:.0%}, "
           f"with >= {PARTIAL_LINE_MIN_REQUESTS} requests; the L2 line is {res.l2_line_bytes} B"
           + (f", the largest fabric request {res.largest_request_bytes} B" if res.largest_request_bytes != res.l2_line_bytes else ""))
    nrd = res.read_requests.get("total") if res.read_requests else None
    nwr = res.write_requests.get("total") if res.write_requests else None
    w32 = res.write_mix.get("32B") if res.write_mix else None
    nums = {"read_requests": dict(res.read_requests), "read_mix": dict(res.read_mix),
            "write_requests": dict(res.write_requests), "write_mix": dict(res.write_mix),
            "sub_line_read_share": None if sub_line is None else (sub_line[0] if sub_line[0] == sub_line[1] else list(sub_line))}
    rv = None if sub_line is None else (False if nrd is not None and nrd < PARTIAL_LINE_MIN_REQUESTS else _verdict(sub_line, PARTIAL_LINE_SHARE_MIN, True))
    wv = None if w32 is None else (False if nwr is not None and nwr < PARTIAL_LINE_MIN_REQUESTS else w32 >= PARTIAL_LINE_SHARE_MIN)
    # Sides without counters are ignored; a side whose range straddles the threshold keeps it open.
    judged = ([rv] if sub_line is not None else []) + ([wv] if w32 is not None else [])
    v = True if any(judged) else (None if (not judged or None in judged) else False)
    if not judged:
        return Decision("partial_line_waste", title, None, "request sizes unavailable (needs the RDREQ/WRREQ size counters)", nums, thr)
    mix = ""
    if res.read_mix:
        mix = ", ".join(f"{_pct(res.read_mix[k])} {k}" for k in ("32B", "64B", "128B"))
    wmix = "" if w32 is None else f"; writes {_pct(w32)} 32 B"
    if v:
        text = (f"memory reads are {mix or 'n/a'}{wmix}: many requests move less than a {res.l2_line_bytes}-B line. "
                "Strided, scattered or misaligned accesses use part of each line; make each wave read contiguous, "
                "line-aligned 128-B runs (wider loads, transposed layout).")
    elif v is False:
        text = f"memory reads are {mix or 'n/a'}{wmix}: requests are mostly full lines."
        if (nrd is not None and nrd < PARTIAL_LINE_MIN_REQUESTS) or (nwr is not None and nwr < PARTIAL_LINE_MIN_REQUESTS):
            text += f" (Fewer than {PARTIAL_LINE_MIN_REQUESTS} requests are not judged.)"
    else:
        text = (f"memory reads are {mix or 'n/a'}{wmix}: the 64/128-B split is unknown "
                f"(sub-line share {_span(sub_line, _pct)}), so partial-line traffic cannot be judged.")
    return Decision("partial_line_waste", title, v, text, nums, thr)


def _redundant(res: PmcResult) -> Decision:
    title = "redundant fetch"
    thr = f"read bytes / ideal bytes >= {REDUNDANT_FETCH_MIN:.2f}"
    nums = {"read_bytes": res.read_bytes, "read_bytes_range": res.read_bytes_range, "ideal_bytes": res.ideal_bytes,
            "over_fetch": res.over_fetch, "over_fetch_range": res.over_fetch_range, "l2_hit_rate": res.l2_hit_rate}
    if res.ideal_bytes is None:
        return Decision("redundant_fetch", title, None, "no ideal byte count given (pass the bytes the kernel must read)", nums, thr)
    v = _verdict(res.over_fetch_range, REDUNDANT_FETCH_MIN, True)
    rb, of = _span(res.read_bytes_range, _mib), _span(res.over_fetch_range, lambda x: f"{x:.2f}x")
    if res.over_fetch_range is None:
        text = "read bytes unavailable; over-fetch cannot be computed"
    elif v:
        text = (f"reads from memory {rb} are {of} the ideal {_mib(res.ideal_bytes)}: lines are fetched more than "
                "once. The working set outlives L2, workgroups sharing data run far apart, or data shared across XCCs "
                f"is fetched once per XCC (L2 is per XCC, {res.xcc} on {res.product}). Reorder or tile so that "
                "consumers of the same data run together.")
    elif v is False:
        text = f"reads from memory {rb} are {of} the ideal {_mib(res.ideal_bytes)}: no redundant fetch."
    else:
        text = f"reads from memory {rb} are {of} the ideal {_mib(res.ideal_bytes)}: the range straddles the threshold."
    return Decision("redundant_fetch", title, v, text, nums, thr)


def _ceiling(res: PmcResult) -> Decision:
    title = "at the bandwidth ceiling"
    thr = f"(read + written bytes) / duration >= {CEILING_FRACTION:.0%} of the {res.peak_hbm_gbps:,.0f} GB/s peak"
    nums = {"bytes_moved": res.bytes_moved, "duration_ns": res.duration_ns, "duration_source": res.duration_source,
            "timing_unusable": res.timing_unusable, "achieved_gbps": res.achieved_gbps, "achieved_gbps_range": res.achieved_gbps_range,
            "peak_hbm_gbps": res.peak_hbm_gbps, "fraction_of_peak": res.fraction_of_peak,
            "fraction_of_peak_range": res.fraction_of_peak_range}
    if res.timing_unusable is not None:
        return Decision("bandwidth_ceiling", title, None, f"timing unusable: {res.timing_unusable}", nums, thr)
    if res.duration_ns is None:
        return Decision("bandwidth_ceiling", title, None, "no kernel duration; achieved bandwidth unavailable", nums, thr)
    if res.achieved_gbps_range is None:
        return Decision("bandwidth_ceiling", title, None, "read or written bytes unavailable; achieved bandwidth unknown", nums, thr)
    v = _verdict(res.fraction_of_peak_range, CEILING_FRACTION, True)
    bw = _span(res.achieved_gbps_range, lambda x: f"{x:,.0f} GB/s")
    fr = _span(res.fraction_of_peak_range, _pct)
    src = f" (duration from {res.duration_source})" if res.duration_source else ""
    if v:
        text = (f"achieved {bw} = {fr} of the {res.peak_hbm_gbps:,.0f} GB/s peak{src}: the kernel is at the memory "
                "bandwidth ceiling; only moving fewer bytes makes it faster.")
    elif v is False:
        text = (f"achieved {bw} = {fr} of the {res.peak_hbm_gbps:,.0f} GB/s peak{src}: below the ceiling; a "
                "memory-bound kernel here is latency- or concurrency-limited (too few bytes in flight), or too short "
                "to ramp up.")
    else:
        text = f"achieved {bw} = {fr} of peak{src}: the range straddles the threshold."
    return Decision("bandwidth_ceiling", title, v, text, nums, thr)


PMC_RUN_DURATION = "PMC-run timestamps (perturbed: counter collection serializes dispatches)"


def analyze_dispatches(
    dispatches: Mapping[int, Mapping],
    target: str,
    *,
    ideal_bytes: float | Mapping[int, float] | None = None,
    durations_ns: Mapping[int, float] | None = None,
    use_pmc_timestamps: bool = True,
    **kw,
) -> list[PmcResult]:
    """:func:`analyze_pmc` for every record of a ``{dispatch_id: {"counters", "kernel_name",
    "start_ns", "end_ns"}}`` pivot (read_pmc_perf / pivot_counter_rows / merge_passes).

    Duration per dispatch: ``durations_ns[id]`` (e.g. from a kernel-trace run)
    else, if ``use_pmc_timestamps``, ``end_ns - start_ns`` of the PMC run.
    Timestamps that give no positive duration, or that the reader found
    rounded (``timing_unusable`` of the record), make the timing unusable.
    """
    out = []
    for did, rec in sorted(dispatches.items()):
        counters = rec.get("counters", {}) if isinstance(rec, Mapping) else {}
        ideal = ideal_bytes.get(did) if isinstance(ideal_bytes, Mapping) else ideal_bytes
        dur, src, unusable = None, None, None
        if durations_ns is not None and durations_ns.get(did) is not None:
            dur, src = durations_ns[did], "caller"
        elif use_pmc_timestamps:
            unusable = rec.get("timing_unusable")
            s, e = _num(rec.get("start_ns")), _num(rec.get("end_ns"))
            if s is not None and e is not None and unusable is None:
                if e > s:
                    dur, src = e - s, PMC_RUN_DURATION
                else:
                    unusable = f"PMC-run timestamps give no positive duration (Start_Timestamp {s!r}, End_Timestamp {e!r})"
        r = analyze_pmc(counters, target, ideal, dur, dispatch_id=int(did), kernel_name=rec.get("kernel_name"),
                        duration_source=src, timing_unusable=unusable, **kw)
        r.notes.extend(n for n in (rec.get("notes", []) or []) if n not in r.notes)
        if rec.get("repeated_counters"):
            r.notes.append("counters present in several passes (first pass kept): " + ", ".join(rec["repeated_counters"]))
        out.append(r)
    return out
