"""Theoretical occupancy (waves per SIMD, with the limiter) and the observed
residency from the trace.

Theoretical: the minimum over the VGPR, SGPR, LDS and hardware limits from the
architecture table, rounded down to whole workgroups per CU. Observed: the
largest number of waves resident at once on one SIMD, from the traced waves'
begin/end (the traced CU) and from occupancy.json (every CU of the traced SEs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.groups import tuple_groups

from attlens.results import brief_repr


def _ceil_to(x: int, g: int) -> int:
    return -(-x // g) * g


@dataclass
class Limit:
    name: str  # vgpr | sgpr | lds | waves (hardware slots) | workgroup
    waves_per_simd: int | None  # None: this resource does not limit
    detail: str


@brief_repr("available", "theoretical_waves_per_simd", "limiters", "observed_max_waves_per_simd_traced_cu", "grid_limited")
@dataclass
class OccupancyResult:
    available: bool
    reason: str | None  # why unavailable / partial
    wave_size: int | None = None
    vgpr_alloc: int | None = None  # registers per lane allocated to one wave (VGPR+AGPR pool)
    vgpr_inputs: dict | None = None  # reported count, ISA scan, the rule that reconciled them
    sgpr_alloc: int | None = None
    lds_alloc: int | None = None  # bytes per workgroup
    waves_per_workgroup: int | None = None
    limits: list[Limit] = field(default_factory=list)
    theoretical_waves_per_simd: int | None = None
    limiters: list[str] = field(default_factory=list)
    to_next_wave: dict | None = None  # what to free for one more wave per SIMD
    observed_max_waves_per_simd_traced_cu: int | None = None
    observed_mean_peak_waves_per_simd_traced_cu: float | None = None
    observed_max_waves_per_simd_all_cus: int | None = None
    workgroups: int | None = None
    resident_workgroup_capacity: int | None = None  # CUs × workgroups per CU
    grid_limited: bool | None = None
    explanation: list[str] = field(default_factory=list)
    capture: dict | None = field(default=None, repr=False)  # the capture it describes (attlens.jsondoc.capture_ref; set by analyze)
    warnings: list[str] = field(default_factory=list, repr=False)  # the analysis' warnings about that capture (set by analyze)

    def to_pandas(self):
        """One row per resource that can limit occupancy (vgpr, sgpr, lds,
        waves, workgroup): its waves per SIMD (None: it does not limit),
        whether it is a limiter, and the detail of ``limits`` in ``to_dict()``."""
        from attlens.results import dataframe

        limiters = set(self.limiters or [])
        return dataframe([{"name": l.name, "waves_per_simd": l.waves_per_simd, "limiter": l.name in limiters, "detail": l.detail} for l in self.limits],
                         ["name", "waves_per_simd", "limiter", "detail"])

    def to_dict(self) -> dict:
        """The ``attlens.occupancy`` object (``attlens occupancy --json``); its
        ``occupancy`` member is also the ``occupancy`` of ``attlens.analyze``."""
        from attlens.jsondoc import header

        return {
            **header("attlens.occupancy"),
            "capture": self.capture,
            "occupancy": {
                "available": self.available,
                "reason": self.reason,
                "theoretical_waves_per_simd": self.theoretical_waves_per_simd,
                "limiters": self.limiters,
                "limits": [{"name": l.name, "waves_per_simd": l.waves_per_simd, "detail": l.detail} for l in self.limits],
                "vgpr_alloc": self.vgpr_alloc,
                "sgpr_alloc": self.sgpr_alloc,
                "lds_alloc": self.lds_alloc,
                "waves_per_workgroup": self.waves_per_workgroup,
                "to_next_wave": self.to_next_wave,
                "observed_max_waves_per_simd_traced_cu": self.observed_max_waves_per_simd_traced_cu,
                "observed_mean_peak_waves_per_simd_traced_cu": None
                if self.observed_mean_peak_waves_per_simd_traced_cu is None
                else round(self.observed_mean_peak_waves_per_simd_traced_cu, 3),
                "observed_max_waves_per_simd_all_cus": self.observed_max_waves_per_simd_all_cus,
                "workgroups": self.workgroups,
                "resident_workgroup_capacity": self.resident_workgroup_capacity,
                "grid_limited": self.grid_limited,
                "explanation": self.explanation,
            },
            "warnings": self.warnings,
        }


def grid_waves(dispatch) -> tuple[int | None, int | None]:
    """(waves per workgroup, waves in the whole grid); None when unknown."""
    res = dispatch.resources
    ws = (dispatch.arch.facts or {}).get("wave_size") or 64
    wpw = -(-res.threads_per_workgroup // ws) if res.threads_per_workgroup else None
    return wpw, (res.workgroups * wpw if (res.workgroups and wpw) else None)


def _events(begins: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Times and +1/-1 steps of intervals' starts and ends."""
    t = np.concatenate([begins, ends])
    d = np.concatenate([np.ones(len(begins), dtype=np.int64), -np.ones(len(ends), dtype=np.int64)])
    return t, d


def _peaks(group: np.ndarray, t: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Per group (sorted by its id), the largest running sum of the steps
    ``d`` in time order, ends before starts at the same time (a slot reused
    in the same cycle): one sort and one cumulative sum over every group."""
    order = np.lexsort((d, t, group))
    g, cs = group[order], np.cumsum(d[order])
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    before = np.r_[0, cs[starts[1:] - 1]]  # the running sum at each group's start
    return np.maximum.reduceat(cs, starts) - before


def observed_residency(dispatch) -> tuple[int | None, float | None, int | None]:
    w = dispatch.waves
    peaks = []
    if len(w.begin):
        scope = tuple_groups(w.se, w.cu, w.simd)[0]
        t, d = _events(w.begin.astype(np.int64), w.end.astype(np.int64))
        peaks = _peaks(np.concatenate([scope, scope]), t, d).tolist()  # per (SE, CU, SIMD): order-free below
    traced_max = max(peaks) if peaks else None
    traced_mean = float(np.mean(peaks)) if peaks else None
    all_max = None
    occ = dispatch.occupancy
    if occ is not None and len(occ.events):
        ev = occ.events  # se, time, cu, simd, slot, start, kid
        keys = ev[:, 0] * 1_000_000 + ev[:, 2] * 16 + ev[:, 3]
        # by key, time, end-before-start (the start flag 0 before 1)
        all_max = max(0, int(_peaks(keys, ev[:, 1], np.where(ev[:, 5] == 1, 1, -1)).max()))
    return traced_max, traced_mean, all_max


def compute_occupancy(dispatch) -> OccupancyResult:
    arch, res = dispatch.arch, dispatch.resources
    traced_max, traced_mean, all_max = observed_residency(dispatch)
    out = OccupancyResult(available=False, reason=None)
    out.observed_max_waves_per_simd_traced_cu = traced_max
    out.observed_mean_peak_waves_per_simd_traced_cu = traced_mean
    out.observed_max_waves_per_simd_all_cus = all_max
    f = arch.facts
    if f is None:
        out.reason = f"target unknown ({arch.reason}): no register file or LDS size to compute with"
        return out
    if not res.arch_vgprs:
        out.reason = "VGPR count unknown"
        return out
    out.available = True
    ws = f["wave_size"]
    out.wave_size = ws
    hw = f["max_waves_per_simd"]
    simds = f["simds_per_cu"]

    # VGPR (+AGPR on unified-pool targets)
    arch_v = res.arch_vgprs
    agprs = res.agprs or 0
    g = f["vgpr_granule"]
    isa_total = _ceil_to(res.isa_vgprs, 4) + res.isa_agprs if (f["unified_agpr"] and res.isa_agprs) else res.isa_vgprs
    if res.unified_vgprs:
        # gfx950: 2 x rocprofv3's VGPR_Count, reconciled with the ISA scan (model/context.py)
        total = res.unified_vgprs
        vdetail = res.sources.get("unified_vgprs", f"{total} VGPR+AGPR registers")
        used = "2 x reported, reconciled with the ISA scan"
    elif f["unified_agpr"] and agprs:
        total = _ceil_to(arch_v, 4) + agprs
        vdetail = f"{arch_v} arch VGPRs (rounded to {_ceil_to(arch_v, 4)}) + {agprs} AGPRs"
        used = "max(ISA scan, metadata) arch VGPRs + AGPRs"
    elif f.get("separate_agpr") and agprs:
        # gfx908: AGPRs have their own file of the same size; the fuller one limits (docs/architecture.md)
        total = max(arch_v, agprs)
        vdetail = f"max({arch_v} arch VGPRs, {agprs} AGPRs): separate files"
        used = "max(ISA scan, metadata); the larger of the VGPR and AGPR files"
    else:
        total = arch_v
        vdetail = f"{arch_v} VGPRs"
        used = "max(ISA scan, metadata)"
    valloc = _ceil_to(total, g)
    out.vgpr_alloc = valloc
    out.vgpr_inputs = {
        "reported_vgprs": res.metadata_vgprs,
        "reported_agprs": res.metadata_agprs,
        "reported_source": res.sources.get("metadata_vgprs"),
        "isa_vgprs": res.isa_vgprs,
        "isa_agprs": res.isa_agprs,
        "isa_registers": isa_total,
        "registers_used": total,
        "rule": used,
        "granule": g,
        "allocated": valloc,
    }
    v_waves = min(hw, f["vgprs_per_simd"] // valloc)
    out.limits.append(Limit("vgpr", v_waves, f"{vdetail} → {valloc} allocated (granule {g}) of {f['vgprs_per_simd']} per SIMD"))

    # SGPR
    if f["sgprs_per_simd"] and res.sgprs:
        salloc = _ceil_to(res.sgprs, f["sgpr_granule"])
        out.sgpr_alloc = salloc
        s_waves = min(hw, f["sgprs_per_simd"] // salloc)
        out.limits.append(Limit("sgpr", s_waves, f"{res.sgprs} SGPRs → {salloc} allocated of {f['sgprs_per_simd']} per SIMD"))
    elif not f["sgprs_per_simd"]:
        out.limits.append(Limit("sgpr", None, "SGPRs do not limit occupancy on this target"))
    else:
        out.limits.append(Limit("sgpr", None, "SGPR count unknown"))

    # LDS
    wpw = None
    if res.threads_per_workgroup:
        wpw = -(-res.threads_per_workgroup // ws)
        out.waves_per_workgroup = wpw
    if res.lds_bytes is None:
        out.limits.append(Limit("lds", None, "LDS size unknown"))
    elif res.lds_bytes == 0:
        out.limits.append(Limit("lds", None, "no LDS allocated"))
    elif wpw is None:
        out.limits.append(Limit("lds", None, f"{res.lds_bytes} B LDS per workgroup but the workgroup size is unknown"))
    else:
        lalloc = _ceil_to(res.lds_bytes, f["lds_granule_bytes"])
        out.lds_alloc = lalloc
        wg_per_cu = f["lds_bytes_per_cu"] // lalloc
        l_waves = min(hw, (wg_per_cu * wpw) // simds)
        out.limits.append(
            Limit("lds", l_waves, f"{lalloc} B per workgroup → {wg_per_cu} workgroups of {wpw} waves per CU ({f['lds_bytes_per_cu'] // 1024} KiB)")
        )
    out.limits.append(Limit("waves", hw, f"hardware limit of {hw} waves per SIMD"))

    vals = [l.waves_per_simd for l in out.limits if l.waves_per_simd is not None]
    theo = min(vals)
    # Whole workgroups: a workgroup's waves spread over the CU's SIMDs, and a
    # CU only takes whole workgroups.
    resource_theo = theo
    if wpw:
        per_simd_per_wg = -(-wpw // simds)
        wg_fit = (theo * simds) // wpw
        rounded = min(theo, (wg_fit * wpw) // simds) if wg_fit else 0
        if rounded < theo:
            out.limits.append(
                Limit("workgroup", rounded, f"workgroups of {wpw} waves ({per_simd_per_wg} per SIMD) fit {wg_fit} per CU")
            )
            theo = rounded
    out.theoretical_waves_per_simd = theo
    # At the hardware maximum nothing else limits, even when a resource would
    # allow exactly that many waves. Below it, the limiters are the resources
    # at the minimum, plus "workgroup" when whole workgroups cut it further.
    if theo == hw:
        out.limiters = ["waves"]
    else:
        out.limiters = (
            ["waves"]
            if resource_theo == hw
            else [l.name for l in out.limits if l.waves_per_simd == resource_theo and l.name not in ("workgroup", "waves")]
        )
        if theo < resource_theo:
            out.limiters.append("workgroup")
    if theo == 0:
        out.explanation.append("a single workgroup does not fit on one CU with these resources")

    # What to free for the next reachable occupancy: one more wave per SIMD,
    # or with workgroups, one more whole workgroup per CU.
    if theo and theo < hw:
        if wpw:
            nxt = -(-(((theo * simds) // wpw) + 1) * wpw // simds)
        else:
            nxt = theo + 1
        need = {}
        if nxt <= hw:
            for l in out.limits:
                if l.waves_per_simd is None or l.waves_per_simd >= nxt or l.name == "workgroup":
                    continue
                if l.name == "vgpr":
                    allowed = (f["vgprs_per_simd"] // nxt) // g * g
                    need["vgpr"] = {"free_registers": valloc - allowed, "allocated": valloc, "allowed_for_next_wave": allowed}
                elif l.name == "sgpr":
                    allowed = (f["sgprs_per_simd"] // nxt) // f["sgpr_granule"] * f["sgpr_granule"]
                    need["sgpr"] = {"free_registers": out.sgpr_alloc - allowed, "allocated": out.sgpr_alloc, "allowed_for_next_wave": allowed}
                elif l.name == "lds" and out.lds_alloc and wpw:
                    wg_needed = -(-nxt * simds // wpw)
                    allowed = (f["lds_bytes_per_cu"] // wg_needed) // f["lds_granule_bytes"] * f["lds_granule_bytes"]
                    need["lds"] = {"free_bytes": out.lds_alloc - allowed, "allocated": out.lds_alloc, "allowed_for_next_wave": allowed}
        else:
            out.explanation.append(
                f"the next whole workgroup ({wpw} waves) would need {nxt} waves per SIMD, above the hardware limit of {hw}"
            )
        out.to_next_wave = {"waves_per_simd": nxt, "free": need} if need else None

    # Grid-limited?
    wgs = res.workgroups
    out.workgroups = wgs
    cus = f.get("cu_count")
    if wgs and wpw and cus and theo:
        wg_per_cu = max((theo * simds) // wpw, 1)
        out.resident_workgroup_capacity = cus * wg_per_cu
        # Every workgroup resident at once (a single round): more waves per
        # SIMD cannot run anything more for this dispatch.
        out.grid_limited = wgs <= out.resident_workgroup_capacity
        if out.grid_limited:
            out.explanation.append(
                f"grid-limited: {wgs} workgroups, and {cus} CUs can hold {out.resident_workgroup_capacity} at once "
                f"({wg_per_cu} per CU); more occupancy per CU cannot help, more work per dispatch (or smaller workgroups) can"
            )
    if traced_max is not None and theo and traced_max < theo:
        out.explanation.append(
            f"the traced CU never held more than {traced_max} waves per SIMD (theory allows {theo})"
            + ("; expected, the grid is too small" if out.grid_limited else "; waves arrived or left unevenly, or the grid was not large enough at the traced moment")
        )
    if traced_max is not None and theo is not None and traced_max > theo:
        out.explanation.append(
            f"observed {traced_max} waves on one SIMD, above the theoretical {theo}: the resource counts used are overstated"
        )
    return out
