"""PC samples in rocprofv3's ``<name>_results.json`` (``-f json``;
rocprofv3-interfaces.md §9 and §3.8).

Under ``rocprofiler-sdk-tool[i]``: ``buffer_records.pc_sample_stochastic[]``
and ``pc_sample_host_trap[]``, each ``{record: {hw_id, pc: {code_object_id,
code_object_offset}, exec_mask, timestamp, dispatch_id, corr_id, wave_issued,
inst_type, wave_cnt, snapshot: {stall_reason, arb_state_issue_<pipe>,
arb_state_stall_<pipe>, ...}}, inst_index}``; ``strings.pc_sample_instructions``
and ``pc_sample_comments`` indexed by ``inst_index`` (-1: none); the run's
``code_objects``, ``kernel_symbols``, ``buffer_records.kernel_dispatch``,
``agents`` and ``strings.att_filenames``. Enums are read as full names
(the documented spelling), short names or integers.

Code object ids are per process: only the process object that holds samples
is read (the first one when several do; a warning says so).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from attlens.errors import CorruptCapture, EmptyCapture
from attlens.io.jsonfile import int64, read_json
from attlens.io.pcsampling import (
    ARB_PIPES,
    INST_TYPE_PREFIX,
    INST_TYPES,
    REASON_PREFIX,
    REASONS,
    PcSampleTable,
    empty_columns,
    enum_index,
    popcount64,
)

_KINDS = (("pc_sample_host_trap", 0), ("pc_sample_stochastic", 1))
_HW = (("chiplet", "chiplet"), ("se", "shader_engine_id"), ("sa", "shader_array_id"), ("cu", "cu_or_wgp_id"),
       ("simd", "simd_id"), ("wave_slot", "wave_id"))


def _obj(v) -> dict:
    return v if isinstance(v, dict) else {}


def _list(v) -> list:
    return v if isinstance(v, list) else []


def _nonneg(v) -> int | None:
    n = int64(v)
    return n if n is not None and n >= 0 else None


def _handle(v) -> int | None:
    return _nonneg(v.get("handle")) if isinstance(v, dict) else _nonneg(v)


def _code_objects(p: dict) -> list[dict]:
    out = []
    for c in _list(p.get("code_objects")):
        if not isinstance(c, dict):
            continue
        cid = _nonneg(c.get("code_object_id"))
        if cid is None or cid == 0 and not c.get("uri"):  # entry 0 is a dummy
            continue
        out.append({"id": cid, "load_base": _nonneg(c.get("load_base")), "load_delta": int64(c.get("load_delta")),
                    "load_size": _nonneg(c.get("load_size")), "uri": c.get("uri") if isinstance(c.get("uri"), str) else None,
                    "agent": _handle(c.get("agent_id", c.get("rocp_agent")))})
    return out


def _symbols(p: dict, code_objects: list[dict]) -> list[dict]:
    base = {c["id"]: c["load_base"] for c in code_objects}
    out = []
    for s in _list(p.get("kernel_symbols")):
        if not isinstance(s, dict):
            continue
        kid = _nonneg(s.get("kernel_id"))
        cid = _nonneg(s.get("code_object_id"))
        if kid is None or cid is None or kid == 0:
            continue
        addr = _handle(s.get("kernel_address"))
        lb = base.get(cid)
        name = next((s[k] for k in ("formatted_kernel_name", "truncated_kernel_name", "kernel_name")
                     if isinstance(s.get(k), str) and s[k]), "")
        out.append({"kernel_id": kid, "name": name, "mangled": s.get("kernel_name") if isinstance(s.get("kernel_name"), str) else "",
                    "demangled": s.get("demangled_kernel_name") if isinstance(s.get("demangled_kernel_name"), str) else "",
                    "code_object_id": cid,
                    "entry_offset": addr - lb if addr is not None and lb is not None and addr >= lb else None})
    return out


def _agents(p: dict) -> list[dict]:
    out = []
    for a in _list(p.get("agents")):
        if isinstance(a, dict) and a.get("type") == 2:
            out.append({"handle": _handle(a.get("id")), "name": a.get("name") if isinstance(a.get("name"), str) else None,
                        "num_xcc": _nonneg(a.get("num_xcc")), "shader_engines": _nonneg(a.get("num_shader_banks")),
                        "cu_count": _nonneg(a.get("cu_count"))})
    return out


def _dispatch_kernels(p: dict) -> dict[int, int]:
    out = {}
    for rec in _list(_obj(p.get("buffer_records")).get("kernel_dispatch")):
        info = _obj(_obj(rec).get("dispatch_info"))
        d, k = _nonneg(info.get("dispatch_id")), _nonneg(info.get("kernel_id"))
        if d is not None and k is not None:
            out[d] = k
    return out


def _fill(cols: dict, i: int, entry, method: int, masks: np.ndarray, has_mask: np.ndarray, n_inst: int) -> int:
    """One sample into row ``i``; returns 1 when a field had to be taken as unknown."""
    entry = _obj(entry)
    rec = entry.get("record") if isinstance(entry.get("record"), dict) else entry
    bad = 0
    cols["method"][i] = method
    pc = _obj(rec.get("pc"))
    for col, v in (("code_object", pc.get("code_object_id")), ("offset", pc.get("code_object_offset")),
                   ("timestamp", rec.get("timestamp")), ("dispatch", rec.get("dispatch_id")),
                   ("correlation", _obj(rec.get("corr_id", rec.get("correlation_id"))).get("internal"))):
        n = _nonneg(v)
        if n is None:
            bad = 1
        else:
            cols[col][i] = n
    hw = _obj(rec.get("hw_id"))
    for col, key in _HW:
        n = _nonneg(hw.get(key))
        if n is not None and n < (1 << 15):
            cols[col][i] = n
    m = rec.get("exec_mask")
    if isinstance(m, int) and not isinstance(m, bool) and 0 <= m < (1 << 64):
        masks[i], has_mask[i] = m, True
    k = entry.get("inst_index")
    if isinstance(k, int) and not isinstance(k, bool) and 0 <= k < n_inst:
        cols["inst"][i] = cols["comment"][i] = k
    if method != 1:
        return bad
    wc = _nonneg(rec.get("wave_cnt"))
    if wc is not None and wc < (1 << 15):
        cols["wave_count"][i] = wc
    issued = rec.get("wave_issued")
    if issued in (0, 1) and not isinstance(issued, float):
        cols["issued"][i] = int(issued)
    else:
        return 1
    snap = _obj(rec.get("snapshot"))
    if issued:
        t = enum_index(rec.get("inst_type"), INST_TYPES, INST_TYPE_PREFIX)
        cols["inst_type"][i] = t
        bad |= t < 0
    else:
        r = enum_index(snap.get("stall_reason"), REASONS, REASON_PREFIX)
        cols["reason"][i] = r
        bad |= r < 0
    ai = st = 0
    for b, pipe in enumerate(ARB_PIPES):
        if snap.get(f"arb_state_issue_{pipe}") in (1, True):
            ai |= 1 << b
        if snap.get(f"arb_state_stall_{pipe}") in (1, True):
            st |= 1 << b
    cols["arb_issue"][i], cols["arb_stall"][i] = ai, st
    return bad


def _process(doc, path: Path) -> tuple[dict, list[str]]:
    procs = doc.get("rocprofiler-sdk-tool") if isinstance(doc, dict) else None
    if not isinstance(procs, list) or not procs:
        raise CorruptCapture(f"{path.name}: not a rocprofv3 results.json (no 'rocprofiler-sdk-tool' list)")
    procs = [p for p in procs if isinstance(p, dict)]
    with_samples = [p for p in procs if any(_list(_obj(p.get("buffer_records")).get(k)) for k, _ in _KINDS)]
    if not with_samples:
        raise EmptyCapture(f"{path.name}: no PC sample (buffer_records.pc_sample_stochastic and pc_sample_host_trap are empty; "
                           "the run had no --pc-sampling-* options)")
    warnings = []
    if len(with_samples) > 1:
        warnings.append(f"{path.name}: {len(with_samples)} processes hold PC samples; code object ids are per process, "
                        "so only the first one is read")
    return with_samples[0], warnings


def read_pc_sampling_json(path: Path) -> PcSampleTable:
    path = Path(path)
    p, warnings = _process(read_json(path), path)
    strings = _obj(p.get("strings"))
    insts = [s if isinstance(s, str) else "" for s in _list(strings.get("pc_sample_instructions"))]
    comments = [s if isinstance(s, str) else "" for s in _list(strings.get("pc_sample_comments"))]
    n_inst = min(len(insts), len(comments)) if comments else len(insts)
    buffers = _obj(p.get("buffer_records"))
    entries = [(e, m) for k, m in _KINDS for e in _list(buffers.get(k))]
    cols = empty_columns(len(entries))
    masks = np.zeros(len(entries), dtype=np.uint64)
    has_mask = np.zeros(len(entries), dtype=bool)
    bad = sum(_fill(cols, i, e, m, masks, has_mask, n_inst) for i, (e, m) in enumerate(entries))
    cols["lanes"][has_mask] = popcount64(masks[has_mask])
    if bad:
        warnings.append(f"{path.name}: {bad} sample(s) with a missing or unknown field (pc, dispatch, issue bit, stall reason "
                        "or instruction type); those fields are taken as unknown")
    code_objects = _code_objects(p)
    meta = _obj(p.get("metadata"))
    node = _obj(meta.get("node"))
    return PcSampleTable(
        "rocprofv3-json", str(path), cols, insts, comments if comments else [""] * len(insts),
        code_objects=code_objects, kernel_symbols=_symbols(p, code_objects), dispatch_kernels=_dispatch_kernels(p),
        agents=_agents(p), pid=_nonneg(meta.get("pid")), hostname=node.get("hostname") if isinstance(node.get("hostname"), str) else None,
        att_filenames=[s for s in _list(strings.get("att_filenames")) if isinstance(s, str)], warnings=warnings,
    )
