"""PC samples from any rocprofv3 / rocprof-compute-viewer output, as one
columnar table (rocprofv3-interfaces.md §9; docs/pcsampling.md).

Formats (one reader module each):

- ``*_pc_sampling_stochastic.csv`` / ``*_pc_sampling_host_trap.csv``
  (:mod:`attlens.io.pcsampling_csv`): one row per sample, no code object id
  or offset;
- ``*_results.json`` (:mod:`attlens.io.pcsampling_json`): the
  ``buffer_records.pc_sample_stochastic`` / ``pc_sample_host_trap`` records
  with code object id and offset, ``hw_id`` and the arbiter snapshot, plus
  the run's ``code_objects``, ``kernel_symbols`` and dispatches;
- rocprof-compute-viewer's PC-sampling ``ui_output`` directory
  (:mod:`attlens.io.pcsampling_rcv`): per instruction ``PC_Issued``,
  ``PC_Stalled`` and ``Stall_Reasons[10]`` in ``code.json``.

One row of :class:`PcSampleTable` stands for ``count`` samples that share
every column: 1 for the sample formats, the per-instruction totals for the
viewer's directory (one row for the issued samples, one per stall reason).
Unknown values are -1 (never 0): a CSV has no code object, a host-trap
sample no issue bit or reason. ``reason`` is set only where the wave did not
issue (``issued == 0``): rocprofv3 fills ``Stall_Reason`` of issued samples
too (with ``OTHER_WAIT``), which means nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.results import brief_repr

# Enum orders of rocprofiler-sdk's pc_sampling.h (the RCV Stall_Reasons list
# and integer values in JSON use these positions); names without the prefix.
REASON_PREFIX = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_"
REASONS = ("NONE", "NO_INSTRUCTION_AVAILABLE", "ALU_DEPENDENCY", "WAITCNT", "INTERNAL_INSTRUCTION", "BARRIER_WAIT",
           "ARBITER_NOT_WIN", "ARBITER_WIN_EX_STALL", "OTHER_WAIT", "SLEEP_WAIT")
INST_TYPE_PREFIX = "ROCPROFILER_PC_SAMPLING_INSTRUCTION_TYPE_"
INST_TYPES = ("NONE", "VALU", "MATRIX", "SCALAR", "TEX", "LDS", "LDS_DIRECT", "FLAT", "EXPORT", "MESSAGE", "BARRIER",
              "BRANCH_NOT_TAKEN", "BRANCH_TAKEN", "JUMP", "OTHER", "NO_INST", "DUAL_VALU")
# Pipes of the arbiter snapshot (snapshot.arb_state_issue_<pipe> / arb_state_stall_<pipe>), bit i of arb_issue / arb_stall.
ARB_PIPES = ("valu", "matrix", "lds", "lds_direct", "scalar", "vmem_tex", "flat", "exp", "misc", "brmsg")
# What a stall reason means, in one line (docs/pcsampling.md).
REASON_MEANING = {
    "NONE": "no reason recorded",
    "NO_INSTRUCTION_AVAILABLE": "the wave had no instruction ready (instruction fetch, branch)",
    "ALU_DEPENDENCY": "waiting for the result of an earlier ALU/MFMA instruction",
    "WAITCNT": "waiting at s_waitcnt for memory (vmcnt/lgkmcnt/expcnt)",
    "INTERNAL_INSTRUCTION": "an instruction the sequencer handles internally",
    "BARRIER_WAIT": "waiting at s_barrier for the other waves of the workgroup",
    "ARBITER_NOT_WIN": "ready, but another wave won the issue arbiter (pipe contention)",
    "ARBITER_WIN_EX_STALL": "won the arbiter, but the pipe could not accept the instruction (execution/queue stall)",
    "OTHER_WAIT": "another wait (s_nop and similar)",
    "SLEEP_WAIT": "s_sleep",
}
METHODS = ("host_trap", "stochastic", "per_instruction")  # method column: index into this
FORMATS = ("rocprofv3-csv", "rocprofv3-json", "rcv-ui-output")

# column name -> dtype; -1 means unknown in every signed column
COLUMNS = {
    "method": np.uint8,
    "count": np.int64,
    "timestamp": np.int64,
    "dispatch": np.int64,
    "correlation": np.int64,
    "code_object": np.int64,
    "offset": np.int64,  # code object offset of the sampled pc
    "vaddr": np.int64,  # ELF virtual address where the format gives it (RCV)
    "issued": np.int8,  # 1 issued, 0 not issued, -1 unknown (host trap)
    "reason": np.int8,  # index into REASONS where issued == 0, else -1
    "inst_type": np.int8,  # index into INST_TYPES, -1 unknown
    "wave_count": np.int16,
    "lanes": np.int16,  # active lanes (popcount of the exec mask), -1 unknown
    "chiplet": np.int16,
    "se": np.int16,  # hw_id.shader_engine_id (within the chiplet)
    "sa": np.int16,  # hw_id.shader_array_id
    "cu": np.int16,  # hw_id.cu_or_wgp_id
    "simd": np.int16,
    "wave_slot": np.int16,
    "arb_issue": np.uint16,  # bit i: ARB_PIPES[i] issued at the sample (stochastic)
    "arb_stall": np.uint16,
    "inst": np.int32,  # index into instructions (the sampled instruction's text), -1 unknown
    "comment": np.int32,  # index into comments (source line), -1 unknown
}


@brief_repr("format", "path", ("rows", lambda t: t.rows), ("samples", lambda t: t.samples), ("methods", lambda t: t.methods))
@dataclass
class PcSampleTable:
    """Columns of :data:`COLUMNS` (NumPy arrays of one length) and what the file says about its run."""

    format: str  # one of FORMATS
    path: str
    columns: dict[str, np.ndarray]
    instructions: list[str] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)
    # the run's code objects: {id, load_base, load_delta, load_size, uri} (JSON only)
    code_objects: list[dict] = field(default_factory=list)
    # kernel symbols: {kernel_id, name, mangled, code_object_id, entry_offset (in its code object) or None}
    kernel_symbols: list[dict] = field(default_factory=list)
    dispatch_kernels: dict[int, int] = field(default_factory=dict)  # dispatch id -> kernel id (kernel_dispatch records)
    agents: list[dict] = field(default_factory=list)  # GPU agents: {handle, name, num_xcc, shader_engines}
    pid: int | None = None
    hostname: str | None = None
    att_filenames: list[str] = field(default_factory=list)  # strings.att_filenames: a thread trace of the same run
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # facts about the file worth showing (not problems)

    def __getattr__(self, name):
        cols = self.__dict__.get("columns")
        if cols is not None and name in cols:
            return cols[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def rows(self) -> int:
        return len(self.columns["count"])

    @property
    def samples(self) -> int:
        return int(self.columns["count"].sum())

    @property
    def methods(self) -> list[str]:
        return [METHODS[m] for m in np.unique(self.columns["method"]).tolist()]

    def symbol(self, name: str) -> list[dict]:
        """Kernel symbols whose name (formatted, or mangled without ``.kd``) is ``name``."""
        out = []
        for s in self.kernel_symbols:
            mangled = s.get("mangled") or ""
            names = {s.get("name"), mangled, mangled[:-3] if mangled.endswith(".kd") else None, s.get("demangled") or None}
            if name and name in names:
                out.append(s)
        return out


def empty_columns(n: int) -> dict[str, np.ndarray]:
    """``n`` rows of unknowns (-1; 0 for the masks and the method, 1 for count)."""
    cols = {}
    for name, dt in COLUMNS.items():
        if name in ("method", "arb_issue", "arb_stall"):
            cols[name] = np.zeros(n, dtype=dt)
        elif name == "count":
            cols[name] = np.ones(n, dtype=dt)
        else:
            cols[name] = np.full(n, -1, dtype=dt)
    return cols


def enum_index(value, names: tuple[str, ...], prefix: str) -> int:
    """Position of an enum value written as its full name (the CSV's and
    JSON's spelling, ``ROCPROFILER_PC_SAMPLING_..._WAITCNT``), its short name,
    or its integer; -1 for anything else."""
    if isinstance(value, bool):
        return -1
    if isinstance(value, int):
        return value if 0 <= value < len(names) else -1
    if isinstance(value, str):
        v = value.strip()
        if v.startswith(prefix):
            v = v[len(prefix):]
        try:
            return names.index(v)
        except ValueError:
            if v.isdigit() and int(v) < len(names):
                return int(v)
    return -1


def popcount64(masks: np.ndarray) -> np.ndarray:
    """Set bits of each uint64 (active lanes of an exec mask)."""
    m = np.ascontiguousarray(masks, dtype=np.uint64)
    b = m.view(np.uint8).reshape(-1, 8)
    return np.unpackbits(b, axis=1).sum(axis=1).astype(np.int16)


def looks_like(path: Path) -> str | None:
    """Which PC-sampling format ``path`` is, by name and shape, without reading
    samples: ``rocprofv3-csv``, ``rocprofv3-json``, ``rcv-ui-output`` or None."""
    p = Path(path)
    if p.is_dir():
        return "rcv-ui-output" if (p / "filenames.json").is_file() and (p / "code.json").is_file() else None
    name = p.name
    if name.endswith(("pc_sampling_stochastic.csv", "pc_sampling_host_trap.csv")):
        return "rocprofv3-csv"
    if name.endswith(".csv"):
        return "rocprofv3-csv"
    if name.endswith("results.json"):
        return "rocprofv3-json"
    return None


def read_pc_sampling(path) -> PcSampleTable:
    """The samples of one PC-sampling output (any format above); raises an
    :class:`attlens.errors.AttlensError` for an unusable file."""
    from attlens.errors import InputNotFound, UsageError

    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p}: no such file or directory")
    kind = looks_like(p)
    if kind == "rcv-ui-output":
        from attlens.io.pcsampling_rcv import read_rcv_pc_sampling

        return read_rcv_pc_sampling(p)
    if kind == "rocprofv3-csv":
        from attlens.io.pcsampling_csv import read_pc_sampling_csv

        return read_pc_sampling_csv(p)
    if kind == "rocprofv3-json":
        from attlens.io.pcsampling_json import read_pc_sampling_json

        return read_pc_sampling_json(p)
    raise UsageError(f"{p}: not a PC-sampling output (expected *_pc_sampling_stochastic.csv, *_pc_sampling_host_trap.csv, "
                     "*_results.json, or a rocprof-compute-viewer PC-sampling ui_output directory)")
