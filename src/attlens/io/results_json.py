"""rocprofv3 ``results.json`` (``-f json``): agents and kernel symbols
(rocprofv3-interfaces.md §3.8). Only the parts the loader needs are kept."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attlens.io.jsonfile import read_json


@dataclass
class ResultsJson:
    pid: int | None
    agents: list[dict]  # handle, type, name, node_id, logical_node_id, cu_count, ...
    kernel_symbols: list[dict]
    dispatches: list[dict] = field(default_factory=list)


def read_results_json(path: Path) -> list[ResultsJson]:
    doc = read_json(path)
    procs = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(procs, list):
        return []
    out = []
    for p in procs:
        if not isinstance(p, dict):
            continue
        agents = []
        for a in p.get("agents") or []:
            if not isinstance(a, dict):
                continue
            handle = (a.get("id") or {}).get("handle") if isinstance(a.get("id"), dict) else None
            agents.append(
                {
                    "handle": handle,
                    "type": a.get("type"),
                    "name": a.get("name"),
                    "product_name": a.get("product_name"),
                    "node_id": a.get("node_id"),
                    "logical_node_id": a.get("logical_node_id"),
                    "cu_count": a.get("cu_count"),
                    "simd_per_cu": a.get("simd_per_cu"),
                    "max_waves_per_simd": a.get("max_waves_per_simd"),
                    "wave_front_size": a.get("wave_front_size"),
                    "num_shader_banks": a.get("num_shader_banks"),
                    "lds_size_kb": a.get("lds_size_in_kb"),
                    "max_engine_clk_mhz": a.get("max_engine_clk_fcompute"),
                }
            )
        dispatches = []
        for rec in ((p.get("buffer_records") or {}).get("kernel_dispatch") or []):
            info = rec.get("dispatch_info") if isinstance(rec, dict) else None
            if isinstance(info, dict):
                dispatches.append(info)
        out.append(
            ResultsJson(
                pid=(p.get("metadata") or {}).get("pid"),
                agents=agents,
                kernel_symbols=[k for k in p.get("kernel_symbols") or [] if isinstance(k, dict)],
                dispatches=dispatches,
            )
        )
    return out
