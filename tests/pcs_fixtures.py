"""PC-sampling ``results.json`` fixtures for the join tests.

No real rocprofv3 results.json with PC samples and a thread trace of the same
run exists in ../shared. These fixtures are therefore BUILT, from two
sources only:

- the layout documented in ../shared/docs/rocprofv3-interfaces.md §9 (and the
  rocprofiler-sdk docs it cites): ``rocprofiler-sdk-tool[0]`` with
  ``buffer_records.pc_sample_stochastic[]`` records ``{record: {hw_id, pc:
  {code_object_id, code_object_offset}, exec_mask, timestamp, dispatch_id,
  corr_id, wave_issued, inst_type, wave_cnt, snapshot: {stall_reason,
  arb_state_*}}, inst_index}``, ``strings.pc_sample_instructions`` /
  ``pc_sample_comments``, ``code_objects`` (``load_base``, ``load_delta``),
  ``kernel_symbols`` (``kernel_address``), ``agents`` and
  ``strings.att_filenames``; enums as the full names the CSVs use;
- the real addresses and instruction texts of a shared capture
  (``code.json``'s ``Codeobj``/``Vaddr``/ISA of softmax) and the real agent
  handle, dispatch id and ATT file names of its run (big_results.json).

The load delta is deliberately NOT zero (``load_base − load_delta = SHIFT``):
a join that took ``code_object_offset`` for the ELF address would land every
sample SHIFT bytes off. Each fixture also plants samples outside the traced
CU, in an unknown code object, in another code object, outside the kernel and
of another dispatch. ``second_run=True`` writes the same kernel's samples as
another process would: other code object ids (the kernel in object 3, object 7
being some other library), another pid, no att_filenames naming the capture.

The builder returns the planted samples as plain Python records so the tests
recount what they expect from them, independently of attlens' readers.
"""

from __future__ import annotations

import json
from pathlib import Path

REASON = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_"
ITYPE = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_"
PIPES = ("valu", "matrix", "lds", "lds_direct", "scalar", "vmem_tex", "flat", "exp", "misc", "brmsg")
SHIFT = 0x1000  # load_base - load_delta: the first PT_LOAD's vaddr
LOAD_BASE = 136997477105664  # code object 7's real load_base in softmax's run


def code_rows(capture: Path) -> list[list]:
    return [r for r in json.loads((capture / "code.json").read_text())["code"] if not r[0].startswith(";")]


def _snapshot(reason: str | None, stall_pipe: str | None = None, issue_pipe: str | None = None) -> dict:
    snap = {"stall_reason": REASON + (reason or "OTHER_WAIT"), "dual_issue_valu": 0}
    for p in PIPES:
        snap[f"arb_state_issue_{p}"] = int(p == issue_pipe)
        snap[f"arb_state_stall_{p}"] = int(p == stall_pipe)
    return snap


def _record(co: int, offset: int, dispatch: int, issued: int, reason: str | None, itype: str, inst_index: int,
            chiplet: int = 0, se: int = 0, sa: int = 0, cu: int = 1, ts: int = 0, stall_pipe=None) -> dict:
    return {
        "record": {
            "size": 200,
            "hw_id": {"chiplet": chiplet, "wave_id": 3, "simd_id": 1, "pipe_id": 0, "cu_or_wgp_id": cu, "shader_array_id": sa,
                      "shader_engine_id": se, "workgroup_id": 0, "vm_id": 3, "queue_id": 2, "microengine_id": 1},
            "pc": {"code_object_id": co, "code_object_offset": offset},
            "exec_mask": 18446744073709551615, "timestamp": 390705261841337 + ts, "dispatch_id": dispatch,
            "corr_id": {"internal": dispatch, "external": 0}, "wrkgrp_id": {"x": 1, "y": 0, "z": 0}, "wave_in_grp": 0,
            "wave_issued": issued, "inst_type": ITYPE + itype, "wave_cnt": 6,
            "snapshot": _snapshot(reason, stall_pipe=stall_pipe, issue_pipe="valu" if issued else None),
        },
        "inst_index": inst_index,
    }


def plan_samples(capture: Path) -> list[dict]:
    """The planted samples (what each one is and where it should land), in
    terms of the capture's own pcs and addresses."""
    rows = code_rows(capture)
    by_text: dict[str, list] = {}
    for r in rows:
        by_text.setdefault(r[0].split(" ", 1)[0], []).append(r)
    waits = [r for r in rows if r[0].startswith("s_waitcnt vmcnt")][:3]
    valu = [r for r in rows if r[0].startswith("v_") and "mfma" not in r[0]][:2]
    last = max(r[5] for r in rows)
    out = []

    def add(row, n, **kw):
        for i in range(n):
            out.append({"pc": row[2] if row is not None else None, "vaddr": row[5] if row is not None else None,
                        "isa": row[0] if row is not None else None, "i": len(out), **kw})

    # traced dispatch 13, traced CUs (SE 0..3 of chiplet 0, CU 1, SA 0)
    add(waits[0], 40, kind="joined", issued=0, reason="WAITCNT", se=0)
    add(waits[0], 5, kind="joined", issued=0, reason="ALU_DEPENDENCY", se=1)
    add(waits[1], 12, kind="joined", issued=0, reason="WAITCNT", se=2)
    add(valu[0], 20, kind="joined", issued=0, reason="ARBITER_NOT_WIN", se=3, stall_pipe="valu")
    add(valu[0], 7, kind="joined", issued=1, reason=None, se=3)
    add(valu[1], 3, kind="joined", issued=1, reason=None, se=0)
    # left out, each for one reason
    add(waits[0], 9, kind="outside_traced_cus", issued=0, reason="WAITCNT", se=0, cu=2)
    add(waits[0], 4, kind="outside_traced_cus", issued=0, reason="WAITCNT", chiplet=1, se=0)  # SE 4 of the GPU
    add(waits[0], 2, kind="outside_traced_cus", issued=0, reason="WAITCNT", se=0, sa=1)
    add(waits[2], 6, kind="other_dispatches", issued=0, reason="WAITCNT", se=0, dispatch=12)
    add(None, 5, kind="unknown_code_object", issued=0, reason="WAITCNT", co=99, offset=1234)
    add(None, 3, kind="other_code_objects", issued=1, reason=None, co=5, offset=4096)
    add(None, 2, kind="outside_kernel", issued=0, reason="WAITCNT", co=7, vaddr=last + 0x400)
    return out


def at_pcs(capture: Path, pcs, n: int, reason: str | None, se: int = 0) -> list[dict]:
    """``n`` samples at each of ``pcs`` (traced dispatch, SE ``se``, the traced
    CU): not issued with ``reason``, or issued when ``reason`` is None."""
    rows = {r[2]: r for r in code_rows(capture)}
    out = []
    for pc in pcs:
        r = rows[pc]
        for _ in range(n):
            out.append({"pc": pc, "vaddr": r[5], "isa": r[0], "i": len(out), "kind": "joined", "issued": int(reason is None),
                        "reason": reason, "se": se})
    return out


def write_results_json(capture: Path, out: Path, second_run: bool = False, texts: dict | None = None,
                       samples: list[dict] | None = None) -> list[dict]:
    """Write ``out`` (a results.json) holding ``samples`` (default: those of
    :func:`plan_samples`); returns them. ``texts``: pc -> instruction text to
    write instead of the capture's own (a changed kernel)."""
    samples = plan_samples(capture) if samples is None else samples
    label = json.loads((capture / "code.json").read_text())["code"][0]
    kernel, entry_vaddr = label[0][1:].strip(), label[5]
    kernel_co = 3 if second_run else 7
    insts, comments, index = [], [], {}
    records = []
    for s in samples:
        co = s.get("co", kernel_co)
        offset = s["offset"] if "offset" in s else s["vaddr"] - SHIFT
        text = (texts or {}).get(s["pc"], s["isa"]) if s["isa"] else "s_nop 0"
        if text not in index:
            index[text] = len(insts)
            insts.append(text)
            comments.append("/sgl-workspace/FlyDSL-lab/kernels/softmax_kernel.py:41")
        records.append(_record(co, offset, s.get("dispatch", 13), s["issued"], s["reason"],
                               "VALU" if s["issued"] else "NO_INST", index[text], chiplet=s.get("chiplet", 0), se=s.get("se", 0),
                               sa=s.get("sa", 0), cu=s.get("cu", 1), ts=s["i"], stall_pipe=s.get("stall_pipe")))
    lb = LOAD_BASE
    cos = [{"size": 88, "code_object_id": 0, "agent_id": {"handle": 0}, "uri": "", "load_base": 0, "load_size": 0, "load_delta": 0,
            "storage_type": 0},
           {"size": 88, "code_object_id": kernel_co, "agent_id": {"handle": 47920}, "uri": "memory://1610108#offset=0x7c9935f9d000&size=10696",
            "load_base": lb, "load_size": 16384, "load_delta": lb - SHIFT, "storage_type": 2},
           {"size": 88, "code_object_id": 5, "agent_id": {"handle": 47920}, "uri": "memory://1610108#offset=0x654839acf850&size=2796392",
            "load_base": 136997318426624, "load_size": 2184401, "load_delta": 136997318426624, "storage_type": 2}]
    if second_run:  # object 7 is another library in the second process
        cos.append({"size": 88, "code_object_id": 7, "agent_id": {"handle": 47920}, "uri": "file:///opt/rocm/lib/libother.so#offset=0",
                    "load_base": 136716271747072, "load_size": 1089016, "load_delta": 136716271747072, "storage_type": 1})
    syms = [{"size": 88, "kernel_id": 1419, "code_object_id": kernel_co, "kernel_name": f"{kernel}.kd", "kernel_object": lb + 1536,
             "kernarg_segment_size": 96, "kernarg_segment_alignment": 16, "group_segment_size": 16, "private_segment_size": 0,
             "sgpr_count": 32, "arch_vgpr_count": 24, "accum_vgpr_count": 0, "kernel_code_entry_byte_offset": 4352,
             "kernel_address": {"handle": lb - SHIFT + entry_vaddr}, "formatted_kernel_name": kernel,
             "demangled_kernel_name": f"{kernel}.kd", "truncated_kernel_name": f"{kernel}.kd"}]
    if second_run:  # a kernel of the same name nowhere else; object 7 holds an unrelated one at the traced offset
        syms.append({**syms[0], "kernel_id": 9, "code_object_id": 7, "kernel_name": "other_kernel.kd", "formatted_kernel_name": "other_kernel",
                     "kernel_address": {"handle": 136716271747072 + entry_vaddr}})
    doc = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": 2220001 if second_run else 1610108, "node": {"hostname": "nimrodmi350"}, "command": ["python", "softmax.py"]},
        "agents": [{"size": 1, "id": {"handle": 47920}, "type": 2, "name": "gfx950", "num_xcc": 8, "num_shader_banks": 32, "cu_count": 256}],
        "counters": [],
        "strings": {"pc_sample_instructions": insts, "pc_sample_comments": comments,
                    "att_filenames": [] if second_run else [f"out_47920_shader_engine_{se}_13.att" for se in range(4)],
                    "code_object_snapshot_filenames": []},
        "code_objects": cos,
        "kernel_symbols": syms,
        "buffer_records": {"kernel_dispatch": [], "pc_sample_host_trap": [], "pc_sample_stochastic": records},
    }]}
    Path(out).write_text(json.dumps(doc))
    return samples
