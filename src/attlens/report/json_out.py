"""The ``--json`` object of ``attlens analyze`` (schema: docs/json-schema.md).

Rules: the schema id and version are in every object; keys never change
meaning within a major version; a value that could not be determined is
``null`` (unavailable), never 0.
"""

from __future__ import annotations

import orjson

from attlens import __version__
from attlens.analysis.taxonomy import CLASSES

ANALYZE_SCHEMA = "attlens.analyze"
ANALYZE_SCHEMA_VERSION = 1
ERROR_SCHEMA = "attlens.error"


def header(schema: str, version: int = 1) -> dict:
    """The three keys every ``--json`` object starts with."""
    return {"schema": schema, "schema_version": version, "attlens_version": __version__}


def many(schema: str, objects: list[dict]) -> dict:
    """The ``attlens.*_many`` wrapper of ``--all``: ``{..., "captures": [...]}``."""
    return {**header(schema), "captures": objects}


def _share(x: int, total: int) -> float | None:
    return round(x / total, 6) if total else None


def _instr(h) -> dict:
    return {
        "pc": h.pc,
        "vaddr": h.vaddr,
        "codeobj": h.codeobj,
        "isa": h.isa,
        "mnemonic": h.mnemonic,
        "class": h.cls,
        "hit": h.hit,
        "latency": h.latency,
        "stall": h.stall,
        "idle": h.idle,
        "issue": h.issue,
        "stall_share": round(h.stall_share, 6),
        "latency_share": round(h.latency_share, 6),
        "class_stall": h.class_stall,
        "waited_on": h.waited_on,
        "exposed": h.exposed,
        "hidden": h.hidden,
        "source": h.source,
        "inline_chain": h.inline_chain,
    }


def _line(h) -> dict:
    return {
        "source": h.source,
        "file": h.file,
        "line": h.line,
        "instructions": h.instructions,
        "executed": h.executed,
        "hit": h.hit,
        "latency": h.latency,
        "stall": h.stall,
        "idle": h.idle,
        "stall_share": round(h.stall_share, 6),
        "latency_share": round(h.latency_share, 6),
        "dominant_class": h.dominant_class,
        "class_stall": h.class_stall,
        "inline_chains": h.inline_chains,
        "exposed": h.exposed,
        "hidden": h.hidden,
        "pcs": h.pcs,
    }


def occupancy_to_dict(o) -> dict:
    """The ``occupancy`` section (also the ``attlens.occupancy`` object's)."""
    return {
        "available": o.available,
        "reason": o.reason,
        "theoretical_waves_per_simd": o.theoretical_waves_per_simd,
        "limiters": o.limiters,
        "limits": [{"name": l.name, "waves_per_simd": l.waves_per_simd, "detail": l.detail} for l in o.limits],
        "vgpr_alloc": o.vgpr_alloc,
        "sgpr_alloc": o.sgpr_alloc,
        "lds_alloc": o.lds_alloc,
        "waves_per_workgroup": o.waves_per_workgroup,
        "to_next_wave": o.to_next_wave,
        "observed_max_waves_per_simd_traced_cu": o.observed_max_per_simd_traced,
        "observed_mean_peak_waves_per_simd_traced_cu": None
        if o.observed_mean_peak_per_simd_traced is None
        else round(o.observed_mean_peak_per_simd_traced, 3),
        "observed_max_waves_per_simd_all_cus": o.observed_max_per_simd_all_cus,
        "workgroups": o.workgroups,
        "resident_workgroup_capacity": o.resident_workgroup_capacity,
        "grid_limited": o.grid_limited,
        "explanation": o.explanation,
    }


def analysis_to_dict(result, topk: int | None = 20) -> dict:
    d = result.dispatch
    b = result.breakdown
    h = result.hotspots
    o = result.occupancy
    q = result.quality
    f = q.facts
    arch = d.arch
    res = d.resources
    k = None if topk is None or topk <= 0 else topk

    def top(order, items, fn):
        idx = order if k is None else order[:k]
        return [fn(items[i]) for i in idx]

    return {
        "schema": ANALYZE_SCHEMA,
        "schema_version": ANALYZE_SCHEMA_VERSION,
        "attlens_version": __version__,
        "capture": {
            "path": f.path,
            "kernel": f.kernel,
            "dispatch_id": f.dispatch_id,
            "agent_handle": f.agent_handle,
            "waves": f.waves,
            "waves_listed": f.waves_listed,
            "records": f.records,
            "shader_engines": f.shader_engines,
            "cus": f.cus,
            "simds": f.simds,
            "window_cycles_per_se": {str(se): v for se, v in f.window_cycles_per_se.items()},
            "shader_clock_mhz": f.shader_clock_mhz,
            "gfxip": f.gfxip,
            "decoder_version": f.decoder_version,
            "partial": d.partial,
            "rocprof_files": d.rocprof_files,
        },
        "target": {
            "name": arch.target,
            "family": arch.facts["family"] if arch.facts else None,
            "product": arch.product,
            "source": arch.source,
            "reason": arch.reason,
            "evidence": arch.evidence,
            "waitcnt_model": arch.waitcnt_model,
        },
        "resources": {
            "arch_vgprs": res.arch_vgprs,
            "agprs": res.agprs,
            "sgprs": res.sgprs,
            "lds_bytes": res.lds_bytes,
            "scratch_bytes": res.scratch_bytes,
            "workgroup": list(res.workgroup) if res.workgroup else None,
            "grid": list(res.grid) if res.grid else None,
            "workgroups": res.workgroups,
            "isa_scan": {"vgprs": res.isa_vgprs, "agprs": res.isa_agprs, "sgprs": res.isa_sgprs},
            "metadata": {"vgprs": res.metadata_vgprs, "agprs": res.metadata_agprs, "sgprs": res.metadata_sgprs},
            "sources": res.sources,
        },
        "totals": {
            "latency": b.total_latency,
            "stall": b.total_stall,
            "idle": b.total_idle,
            "issue": b.total_issue,
            "stall_share_of_latency": _share(b.total_stall, b.total_latency),
            "waits_resolved": b.waits_resolved,
            "waits_unresolved_with_stall": b.waits_unresolved_with_stall,
        },
        "stall_by_class": [
            {
                "class": c,
                "description": CLASSES[c],
                "stall": b.by_class_stall[c],
                "stall_share": _share(b.by_class_stall[c], b.total_stall),
                "latency": b.by_class_latency[c],
                "latency_share": _share(b.by_class_latency[c], b.total_latency),
                "records": b.by_class_records[c],
            }
            for c in sorted(CLASSES, key=lambda c: (-b.by_class_stall[c], -b.by_class_latency[c]))
            if b.by_class_latency[c] or b.by_class_records[c]
        ],
        "instructions": {
            "listed": h.listed,
            "executed": h.executed,
            "never_executed": h.never_executed,
            "mix": h.mix,
        },
        "hotspots": {
            "topk": k,
            "instructions_by_stall": top(h.by_stall, h.instructions, _instr),
            "instructions_by_latency": top(h.by_latency, h.instructions, _instr),
            "lines_by_stall": top(h.lines_by_stall, h.lines, _line),
            "lines_by_latency": top(h.lines_by_latency, h.lines, _line),
            "instructions_by_exposed": top(h.by_exposed, h.instructions, _instr) if result.hidden is not None else None,
            "lines_by_exposed": top(h.lines_by_exposed, h.lines, _line) if result.hidden is not None else None,
        },
        "latency_hiding": None
        if result.hidden is None
        else {
            "total": int(result.hidden.total.sum()),
            "hidden": int((result.hidden.total - result.hidden.exposed).sum()),
            "exposed": int(result.hidden.exposed.sum()),
            "hidden_share": round(result.hidden.hidden_share, 6),
        },
        "occupancy": occupancy_to_dict(o),
        "quality": {
            "code_json_consistent": q.code_json.consistent,
            "code_json_mismatching_pcs": q.code_json.mismatching,
            "mapped_latency_share": round(q.mapped_latency_share, 6),
            "has_source_lines": q.has_source_lines,
            "location_collapse": q.location_collapse,
        },
        "warnings": result.warnings,
    }


def dumps(obj) -> str:
    from attlens.textsafe import dumps_json  # non-UTF-8 paths as \xNN, not a TypeError

    return dumps_json(obj, orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode()


def error_to_dict(exc) -> dict:
    out = {
        "schema": ERROR_SCHEMA,
        "schema_version": 1,
        "attlens_version": __version__,
        "error": {"exit_code": exc.exit_code, "kind": type(exc).__name__, "message": exc.message, "hint": exc.hint},
    }
    cands = getattr(exc, "candidates", None)
    if cands:
        out["error"]["candidates"] = [
            {"path": str(c.path), "waves": c.waves, "instructions": c.instructions, "error": c.error} for c in cands
        ]
    return out
