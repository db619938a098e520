"""rocprof-compute-viewer's PC-sampling ``ui_output`` directory
(rocprofv3-interfaces.md §9; ../shared/outside/rcv-pcsampling/).

``filenames.json`` says ``pc_sampling: true`` (and ``wave_filenames: null``
when there is no thread trace); ``code.json``'s header adds ``PC_Issued``,
``PC_Stalled`` and ``Stall_Reasons`` (10 counts in the enum order of
``pc_sampling.h``, which the viewer labels None, Inst Fetch, ALU Dep,
Waitcnt, Internal, Barrier, ARB Loss, Pipe Stall, Other Wait, Sleeping) to
the thread-trace columns. Samples are per instruction, not per sample: each
instruction gives one row for its issued samples and one per stall reason.
The reasons of a row should sum to its ``PC_Stalled``; a difference is kept
as samples of unknown reason and reported.
"""

from __future__ import annotations

from pathlib import Path

from attlens.errors import CorruptCapture, EmptyCapture
from attlens.io.jsonfile import int64, read_json


def is_pc_sampling_dir(path) -> bool:
    """A directory whose ``filenames.json`` says PC sampling and lists no wave
    file (a PC-sampling-only ``ui_output``); False for anything unreadable."""
    p = Path(path) / "filenames.json"
    try:
        doc = read_json(p)
    except Exception:  # a broken file is the capture loader's to report
        return False
    return isinstance(doc, dict) and doc.get("pc_sampling") is True and not doc.get("wave_filenames")


def _count(v) -> int | None:
    n = int64(v)
    return n if n is not None and n >= 0 else None


def read_rcv_pc_sampling(d: Path) -> PcSampleTable:
    # NumPy only here: `analyze` asks is_pc_sampling_dir() before serving a stored answer without it
    import numpy as np

    from attlens.io.code_json import read_code_json
    from attlens.io.pcsampling import REASONS, PcSampleTable, empty_columns

    d = Path(d)
    flags = read_json(d / "filenames.json")
    if not isinstance(flags, dict) or flags.get("pc_sampling") is not True:
        raise CorruptCapture(f"{d.name}: filenames.json does not say pc_sampling: true (not a PC-sampling ui_output directory)")
    code = read_code_json(d / "code.json")
    extra = code.extra_columns
    if "PC_Issued" not in extra and "PC_Stalled" not in extra:
        raise CorruptCapture(f"{d.name}: code.json has no PC_Issued / PC_Stalled columns (not a PC-sampling listing)")
    issued = extra.get("PC_Issued", [None] * code.size)
    stalled = extra.get("PC_Stalled", [None] * code.size)
    reasons = extra.get("Stall_Reasons", [None] * code.size)
    pcs, kind, counts = [], [], []  # kind: -2 issued, 0..9 reason, -1 stalled with unknown reason
    bad = mismatched = 0
    for pc in np.flatnonzero(code.instruction_mask).tolist():
        iss, stl, rs = _count(issued[pc]), _count(stalled[pc]), reasons[pc]
        if issued[pc] is not None and iss is None or stalled[pc] is not None and stl is None:
            bad += 1
        if iss:
            pcs.append(pc), kind.append(-2), counts.append(iss)
        got = 0
        if isinstance(rs, list) and len(rs) == len(REASONS) and all(_count(x) is not None for x in rs):
            for k, x in enumerate(rs):
                if x:
                    pcs.append(pc), kind.append(k), counts.append(int(x))
                    got += int(x)
        elif rs is not None:
            bad += 1
        if stl is not None and stl != got:
            mismatched += 1
            if stl > got:
                pcs.append(pc), kind.append(-1), counts.append(stl - got)
    n = len(pcs)
    cols = empty_columns(n)
    pc_arr = np.asarray(pcs, dtype=np.int64)
    k_arr = np.asarray(kind, dtype=np.int64)
    cols["method"][:] = 2
    cols["count"][:] = np.asarray(counts, dtype=np.int64)
    cols["issued"][:] = np.where(k_arr == -2, 1, 0)
    cols["reason"][:] = np.where(k_arr >= 0, k_arr, -1)
    cols["code_object"][:] = code.codeobj[pc_arr] if n else []
    cols["vaddr"][:] = code.vaddr[pc_arr] if n else []
    cols["inst"][:] = cols["comment"][:] = pc_arr
    warnings, notes = [], []
    if bad:
        warnings.append(f"{d.name}/code.json: {bad} instruction(s) with PC-sampling counts that are not non-negative integers "
                        "(or a Stall_Reasons list that is not 10 of them); ignored")
    if mismatched:
        warnings.append(f"{d.name}/code.json: at {mismatched} instruction(s) the Stall_Reasons do not sum to PC_Stalled; "
                        "the difference is counted as stalled with an unknown reason")
    if flags.get("is_pcs_stochastic") is False and cols["reason"].max(initial=-1) >= 0:
        notes.append("filenames.json says is_pcs_stochastic: false, but code.json holds stall reasons (only stochastic "
                     "sampling records them): the reasons are used")
    if not n:
        raise EmptyCapture(f"{d.name}: the PC-sampling listing holds no sample (every PC_Issued and PC_Stalled is 0)")
    labels = [name for _pc, name in code.labels]
    t = PcSampleTable("rcv-ui-output", str(d), cols, list(code.isa), list(code.source), warnings=warnings, notes=notes)
    t.kernel_symbols = [{"kernel_id": i + 1, "name": name, "mangled": name, "demangled": "", "code_object_id": int(code.codeobj[pc]),
                         "entry_offset": None, "vaddr": int(code.vaddr[pc])} for i, (pc, name) in enumerate(code.labels)]
    if not labels:
        notes.append("code.json has no label row: the kernel name is unknown")
    return t
