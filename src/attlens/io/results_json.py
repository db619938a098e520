"""rocprofv3 ``results.json`` (``-f json``), rocprofv3-interfaces.md §3.8.

One :class:`ResultsJson` per process object of ``"rocprofiler-sdk-tool"``:

- ``agents`` (typed subset of ``rocprofiler_agent_t``; ``handle`` is the number
  in ATT file names), ``kernel_symbols`` (raw), ``code_objects`` (raw);
- ``dispatches``: the raw ``dispatch_info`` of every
  ``buffer_records.kernel_dispatch`` record (kept for existing callers);
- ``kernel_dispatches``: the same records in the dict shape of
  :func:`attlens.io.rocprof_csv.read_kernel_trace` (name and register counts
  from ``kernel_symbols``, ``agent`` = the agent's logical node id, as in
  ``"Agent N"``), plus ``agent_handle``, ``pid`` and ``correlation_id``;
- ``counters``: the counter definitions of ``counters[]``;
- ``counter_records``: ``callback_records.counter_collection`` with the
  per-instance ``records[]`` summed per counter id and named through
  ``counters[]`` (the same sum counter_collection.csv writes);
- ``att_filenames``, ``code_object_snapshot_filenames`` from ``strings``.

The ATT runs in ../shared have every record list empty: only agents, symbols,
code objects and the file-name tables are filled there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attlens.io.jsonfile import int64, read_json


@dataclass
class ResultsJson:
    pid: int | None
    agents: list[dict]  # handle, type, name, node_id, logical_node_id, cu_count, ...
    kernel_symbols: list[dict]
    dispatches: list[dict] = field(default_factory=list)  # raw dispatch_info dicts
    kernel_dispatches: list[dict] = field(default_factory=list)  # read_kernel_trace shape
    code_objects: list[dict] = field(default_factory=list)
    counters: list[dict] = field(default_factory=list)
    counter_records: list[dict] = field(default_factory=list)
    att_filenames: list[str] = field(default_factory=list)
    code_object_snapshot_filenames: list[str] = field(default_factory=list)
    hostname: str | None = None
    command: list[str] = field(default_factory=list)


def _handle(v) -> int | None:
    """``{"handle": N}`` or a bare integer → N."""
    if isinstance(v, dict):
        v = v.get("handle")
    return int64(v)


def _int(v) -> int | None:
    return int64(v)


def _count(v) -> int | None:
    """A size, count or id: a non-negative 64-bit integer, else None (unavailable)."""
    n = int64(v)
    return n if n is not None and n >= 0 else None


def _str(v) -> str | None:
    return v if isinstance(v, str) else None


def _xyz(v) -> tuple[int, int, int] | None:
    if not isinstance(v, dict):
        return None
    vals = tuple(_count(v.get(a)) for a in "xyz")
    if any(x is None for x in vals):
        return None
    return vals  # type: ignore[return-value]


def _dicts(v) -> list[dict]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _strings(v) -> list[str]:
    return [x for x in v if isinstance(x, str)] if isinstance(v, list) else []


def _agents(p: dict) -> list[dict]:
    agents = []
    for a in _dicts(p.get("agents")):
        agents.append(
            {
                "handle": _handle(a.get("id")),
                "type": _int(a.get("type")),
                "name": _str(a.get("name")),
                "product_name": _str(a.get("product_name")),
                "node_id": _int(a.get("node_id")),
                "logical_node_id": _int(a.get("logical_node_id")),
                "gpu_index": _int(a.get("gpu_index")),
                "cu_count": _int(a.get("cu_count")),
                "simd_per_cu": _int(a.get("simd_per_cu")),
                "max_waves_per_simd": _int(a.get("max_waves_per_simd")),
                "wave_front_size": _int(a.get("wave_front_size")),
                "num_shader_banks": _int(a.get("num_shader_banks")),
                "num_xcc": _int(a.get("num_xcc")),
                "lds_size_kb": _int(a.get("lds_size_in_kb")),
                "max_engine_clk_mhz": _int(a.get("max_engine_clk_fcompute")),
            }
        )
    return agents


def _symbol(s: dict) -> dict:
    """A kernel symbol with every scalar typed: strings stay, non-negative
    integers that fit 64 bits stay (every number of a symbol is an id, a size
    or a count), anything else (a string count, -1, 2**64, a float) is None;
    nested objects (``kernel_address``) are kept as they are."""
    # the common case (a plain non-negative int) decided inline: a run's results.json lists every
    # kernel of the process (1,560 symbols, 18,720 values: 30 ms through _count)
    return {k: v if (type(v) is int and 0 <= v < _INT64_END) or isinstance(v, (str, dict)) else _count(v) for k, v in s.items()}


_INT64_END = 1 << 63


def _symbol_name(s: dict) -> str:
    for key in ("formatted_kernel_name", "demangled_kernel_name", "kernel_name"):
        v = s.get(key)
        if isinstance(v, str) and v:
            return v
    return ""


def _dispatch_row(info: dict, rec: dict, symbols: dict, agent_node: dict, pid) -> dict:
    kid = _int(info.get("kernel_id"))
    sym = symbols.get(kid) or {}
    handle = _handle(info.get("agent_id"))
    return {
        "dispatch_id": _int(info.get("dispatch_id")),
        "kernel_id": kid,
        "kernel_name": _symbol_name(sym),
        "agent": agent_node.get(handle),
        "agent_kind": "Agent",
        "agent_handle": handle,
        "pid": pid,
        "queue_id": _handle(info.get("queue_id")),
        "correlation_id": _int((rec.get("correlation_id") or {}).get("internal")) if isinstance(rec.get("correlation_id"), dict) else None,
        "start_ns": _int(rec.get("start_timestamp")),
        "end_ns": _int(rec.get("end_timestamp")),
        "lds_bytes": _count(info.get("group_segment_size")),  # dispatch value (not rounded to 512)
        "scratch_bytes": _count(info.get("private_segment_size")),
        "vgpr_count": _count(sym.get("arch_vgpr_count")),
        "agpr_count": _count(sym.get("accum_vgpr_count")),
        "sgpr_count": _count(sym.get("sgpr_count")),
        "workgroup": _xyz(info.get("workgroup_size")) or (1, 1, 1),
        "grid": _xyz(info.get("grid_size")) or (1, 1, 1),
    }


def _counter_defs(p: dict) -> list[dict]:
    out = []
    for c in _dicts(p.get("counters")):
        out.append(
            {
                "id": _handle(c.get("id")),
                "agent_handle": _handle(c.get("agent_id")),
                "name": _str(c.get("name")),
                "description": _str(c.get("description")),
                "block": _str(c.get("block")),
                "expression": _str(c.get("expression")),
                "is_constant": c.get("is_constant") if isinstance(c.get("is_constant"), bool) else None,
                "is_derived": c.get("is_derived") if isinstance(c.get("is_derived"), bool) else None,
            }
        )
    return out


def _counter_records(p: dict, defs: list[dict], symbols: dict, agent_node: dict, pid) -> list[dict]:
    by_agent = {(d["agent_handle"], d["id"]): d["name"] for d in defs if d["id"] is not None and d["name"]}
    by_id: dict[int, set] = {}
    for d in defs:
        if d["id"] is not None and d["name"]:
            by_id.setdefault(d["id"], set()).add(d["name"])
    out = []
    records = (p.get("callback_records") or {}).get("counter_collection") if isinstance(p.get("callback_records"), dict) else None
    for rec in _dicts(records):
        data = rec.get("dispatch_data") if isinstance(rec.get("dispatch_data"), dict) else {}
        info = data.get("dispatch_info") if isinstance(data.get("dispatch_info"), dict) else {}
        row = _dispatch_row(info, data, symbols, agent_node, pid)
        handle = row["agent_handle"]
        sums: dict[str, float] = {}
        instances: dict[str, int] = {}
        for r in _dicts(rec.get("records")):
            cid = _handle(r.get("counter_id"))
            value = r.get("value")
            if cid is None or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            name = by_agent.get((handle, cid))
            if name is None:
                names = by_id.get(cid) or set()
                name = next(iter(names)) if len(names) == 1 else f"counter_{cid}"
            sums[name] = sums.get(name, 0.0) + float(value)
            instances[name] = instances.get(name, 0) + 1
        row["counters"] = sums
        row["instances"] = instances
        row["thread_id"] = _int(rec.get("thread_id"))
        out.append(row)
    return out


def read_results_json(path: Path) -> list[ResultsJson]:
    doc = read_json(path)
    procs = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(procs, list):
        return []
    out = []
    for p in procs:
        if not isinstance(p, dict):
            continue
        meta = p.get("metadata") if isinstance(p.get("metadata"), dict) else {}
        pid = _int(meta.get("pid"))
        agents = _agents(p)
        agent_node = {a["handle"]: a["logical_node_id"] for a in agents if a["handle"] is not None}
        kernel_symbols = [_symbol(s) for s in _dicts(p.get("kernel_symbols"))]
        symbols = {}
        for s in kernel_symbols:
            kid = _int(s.get("kernel_id"))
            if kid is not None and kid not in symbols:
                symbols[kid] = s
        dispatches, kernel_dispatches = [], []
        buffers = p.get("buffer_records") if isinstance(p.get("buffer_records"), dict) else {}
        for rec in _dicts(buffers.get("kernel_dispatch")):
            info = rec.get("dispatch_info")
            if isinstance(info, dict):
                dispatches.append(info)
                row = _dispatch_row(info, rec, symbols, agent_node, pid)
                row["thread_id"] = _int(rec.get("thread_id"))
                row["stream_id"] = _handle(rec.get("stream_id"))
                kernel_dispatches.append(row)
        strings = p.get("strings") if isinstance(p.get("strings"), dict) else {}
        defs = _counter_defs(p)
        node = meta.get("node") if isinstance(meta.get("node"), dict) else {}
        out.append(
            ResultsJson(
                pid=pid,
                agents=agents,
                kernel_symbols=kernel_symbols,
                dispatches=dispatches,
                kernel_dispatches=kernel_dispatches,
                code_objects=_dicts(p.get("code_objects")),
                counters=defs,
                counter_records=_counter_records(p, defs, symbols, agent_node, pid),
                att_filenames=_strings(strings.get("att_filenames")),
                code_object_snapshot_filenames=_strings(strings.get("code_object_snapshot_filenames")),
                hostname=node.get("hostname") if isinstance(node.get("hostname"), str) else None,
                command=_strings(meta.get("command")),
            )
        )
    return out
