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


def _read_records(entries, n_inst: int) -> tuple[dict, int]:
    """Columns of ``entries`` ([(entry, method)]) and how many samples had a
    field taken as unknown. One pass into Python lists, converted once."""
    n = len(entries)
    co, off, ts, disp, corr = ([-1] * n for _ in range(5))
    hw = {col: [-1] * n for col, _ in _HW}
    inst = [-1] * n
    issued, reason, itype, wcnt = ([-1] * n for _ in range(4))
    ai, st = [0] * n, [0] * n
    masks, has_mask = [0] * n, [False] * n
    methods = [0] * n
    issue_keys = [(b, f"arb_state_issue_{p}", f"arb_state_stall_{p}") for b, p in enumerate(ARB_PIPES)]
    bad = 0
    for i, (entry, method) in enumerate(entries):
        if not isinstance(entry, dict):
            bad += 1
            continue
        rec = entry.get("record")
        if not isinstance(rec, dict):
            rec = entry
        methods[i] = method
        flaw = 0
        pc = rec.get("pc")
        pc = pc if isinstance(pc, dict) else {}
        corr_id = rec.get("corr_id", rec.get("correlation_id"))
        for lst, v in ((co, pc.get("code_object_id")), (off, pc.get("code_object_offset")), (ts, rec.get("timestamp")),
                       (disp, rec.get("dispatch_id")), (corr, corr_id.get("internal") if isinstance(corr_id, dict) else None)):
            if type(v) is int and 0 <= v < (1 << 63):
                lst[i] = v
            else:
                flaw = 1
        h = rec.get("hw_id")
        if isinstance(h, dict):
            for col, key in _HW:
                v = h.get(key)
                if type(v) is int and 0 <= v < (1 << 15):
                    hw[col][i] = v
        m = rec.get("exec_mask")
        if type(m) is int and 0 <= m < (1 << 64):
            masks[i], has_mask[i] = m, True
        k = entry.get("inst_index")
        if type(k) is int and 0 <= k < n_inst:
            inst[i] = k
        if method == 1:
            wc = rec.get("wave_cnt")
            if type(wc) is int and 0 <= wc < (1 << 15):
                wcnt[i] = wc
            w = rec.get("wave_issued")
            if w == 0 or w == 1:
                issued[i] = int(w)
                snap = rec.get("snapshot")
                snap = snap if isinstance(snap, dict) else {}
                if w:
                    t = enum_index(rec.get("inst_type"), INST_TYPES, INST_TYPE_PREFIX)
                    itype[i] = t
                else:
                    t = enum_index(snap.get("stall_reason"), REASONS, REASON_PREFIX)
                    reason[i] = t
                flaw |= t < 0
                a = b_ = 0
                for b, ki, ks in issue_keys:
                    if snap.get(ki) in (1, True):
                        a |= 1 << b
                    if snap.get(ks) in (1, True):
                        b_ |= 1 << b
                ai[i], st[i] = a, b_
            else:
                flaw = 1
        bad += flaw
    cols = empty_columns(n)
    cols["method"][:] = methods
    for col, lst in (("code_object", co), ("offset", off), ("timestamp", ts), ("dispatch", disp), ("correlation", corr),
                     ("inst", inst), ("issued", issued), ("reason", reason), ("inst_type", itype), ("wave_count", wcnt),
                     ("arb_issue", ai), ("arb_stall", st), *hw.items()):
        cols[col][:] = lst
    cols["comment"][:] = cols["inst"]
    hm = np.array(has_mask, dtype=bool)
    if hm.any():
        cols["lanes"][hm] = popcount64(np.array(masks, dtype=np.uint64)[hm])
    return cols, bad


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
    import gc

    path = Path(path)
    # millions of small containers, none in a cycle: the collector would run hundreds of times for nothing
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read(path)
    finally:
        if enabled:
            gc.enable()


def _read(path: Path) -> PcSampleTable:
    p, warnings = _process(read_json(path), path)
    strings = _obj(p.get("strings"))
    insts = [s if isinstance(s, str) else "" for s in _list(strings.get("pc_sample_instructions"))]
    comments = [s if isinstance(s, str) else "" for s in _list(strings.get("pc_sample_comments"))]
    n_inst = min(len(insts), len(comments)) if comments else len(insts)
    buffers = _obj(p.get("buffer_records"))
    entries = [(e, m) for k, m in _KINDS for e in _list(buffers.get(k))]
    cols, bad = _read_records(entries, n_inst)
    del entries
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
