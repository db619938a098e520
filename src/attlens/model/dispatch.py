"""The loaded dispatch: what every analysis takes as input.

A :class:`Dispatch` holds the static instruction table (from code.json), the
per-record and per-wave arrays of every traced wave (from the wave files), the
optional occupancy/realtime/snapshot data, the kernel's resources and the
target's architecture facts. Records of all waves are stored back to back,
wave by wave, so ``records.pc[waves.rec_start[w]:waves.rec_stop[w]]`` is wave
``w``'s instruction stream in execution order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from attlens.io.code_json import CodeListing
from attlens.io.filenames_json import FilenamesIndex
from attlens.io.occupancy_json import Occupancy
from attlens.io.realtime_json import Realtime
from attlens.results import brief_repr

# Decoder instruction categories (att-format.md §2.3).
CATEGORY_NAMES = {
    0: "NONE",
    1: "SMEM",
    2: "SALU",
    3: "VMEM",
    4: "FLAT",
    5: "LDS",
    6: "VALU",
    7: "JUMP",
    8: "NEXT",
    9: "IMMED",
    10: "CONTEXT",
    11: "MESSAGE",
    12: "BVH",
}
# Wave states of the timeline (decoder enum; att-format.md §2.3).
STATE_NAMES = {0: "EMPTY", 1: "IDLE", 2: "EXEC", 3: "WAIT", 4: "STALL"}


class _Columns:
    """Arrays given directly, or (from a digest) loaded on first access."""

    def __getattr__(self, name):
        loaders = self.__dict__.get("_loaders")
        if loaders and name in loaders:
            value = loaders.pop(name)()
            setattr(self, name, value)
            return value
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @classmethod
    def lazy(cls, loaders: dict, **given):
        """An instance whose fields in ``loaders`` are produced on first use."""
        obj = cls.__new__(cls)
        obj.__dict__.update(given)
        obj.__dict__["_loaders"] = dict(loaders)
        return obj


@brief_repr("count", ("stall", lambda r: int(r.stall.sum())))
@dataclass
class Records(_Columns):
    """Every executed instruction of every traced wave (one row per record)."""

    # dtypes follow the decoder's record struct (io/wave_files.py checks the ranges)
    time: np.ndarray  # int64 (< 10^18), first issue attempt (shader clock of the wave's SE)
    category: np.ndarray  # uint8, decoder category
    stall: np.ndarray  # int32 (>= 0), cycles stalled before issue
    duration: np.ndarray  # int32 (>= 0), stall + issue (gfx9) / stall + execute (gfx10+)
    pc: np.ndarray  # int32, pc index into the code table
    wave: np.ndarray  # int32, wave index
    idle: np.ndarray  # int64, gap before the record (writer's running-max rule)

    @property
    def count(self) -> int:
        return len(self.time)


@brief_repr("count", ("records", lambda w: int(w.n_records.sum())))
@dataclass
class Waves(_Columns):
    """One row per traced wave, sorted by (se, simd, slot, instance)."""

    se: np.ndarray
    simd: np.ndarray
    slot: np.ndarray
    instance: np.ndarray
    cu: np.ndarray
    begin: np.ndarray  # int64
    end: np.ndarray  # int64
    rec_start: np.ndarray  # int64 offsets into Records
    rec_stop: np.ndarray
    tl_start: np.ndarray  # offsets into Timeline
    tl_stop: np.ndarray
    filenames: list[str]
    # the wave files' own waitcnt arrays, as checked compact JSON back to back
    waitcnt_blob: np.ndarray  # uint8
    waitcnt_off: np.ndarray  # int64, count + 1 offsets

    def stored_waitcnt(self, wave: int) -> list:
        """The ``waitcnt`` array stored in wave file ``wave`` (parsed on use)."""
        import orjson

        a, b = int(self.waitcnt_off[wave]), int(self.waitcnt_off[wave + 1])
        return orjson.loads(self.waitcnt_blob[a:b].tobytes())

    @property
    def count(self) -> int:
        return len(self.se)

    @property
    def n_records(self) -> np.ndarray:
        return self.rec_stop - self.rec_start


@brief_repr(("segments", lambda t: len(t.state)))
@dataclass
class Timeline(_Columns):
    state: np.ndarray  # uint8
    duration: np.ndarray  # int32
    wave: np.ndarray  # int32


@dataclass
class SourceLoc:
    file: str
    line: int | None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


def parse_source(raw: str) -> tuple[SourceLoc | None, list[SourceLoc]]:
    """``"a.py:10 -> b.py:20"`` → (own location, [call sites, innermost first])."""
    if not raw:
        return None, []
    locs = []
    for seg in raw.split(" -> "):
        seg = seg.strip()
        if not seg:
            continue
        f, sep, ln = seg.rpartition(":")
        # a line number, not a huge digit string (which JSON readers cannot hold)
        if sep and ln.isdigit() and len(ln) <= 9:
            locs.append(SourceLoc(f, int(ln)))
        else:
            locs.append(SourceLoc(seg, None))
    if not locs:
        return None, []
    return locs[0], locs[1:]


@brief_repr(("pcs", lambda s: len(s.mnemonic)), ("with_source", lambda s: sum(1 for x in s.own_source if x is not None)))
@dataclass
class StaticCode:
    """Per-pc static facts derived from the listing."""

    mnemonic: list[str]
    cls: list[str]  # taxonomy class id per pc ("" for labels/gaps)
    own_source: list[SourceLoc | None]
    inline_chain: list[list[SourceLoc]]


@brief_repr("target", "product", "source", "waitcnt_model")
@dataclass
class ArchInfo:
    target: str | None  # exact target name (gfx950), or None when unknown
    row_key: str | None  # ARCH_TABLE key
    facts: dict | None  # the ARCH_TABLE row, with metadata overrides applied
    waitcnt_model: str  # gfx9 | gfx10 | gfx12
    source: str  # agent_info | results.json | isa | gfxip | unknown
    reason: str  # how the target was decided, or why it is unknown
    evidence: list[str] = field(default_factory=list)
    product: str | None = None
    clock_mhz: int | None = None
    # what each source of facts said (model/context.py Claim.to_dict), in order of trust
    claims: list[dict] = field(default_factory=list)


@brief_repr("arch_vgprs", "agprs", "sgprs", "lds_bytes", "workgroup", "grid", "dispatch_id")
@dataclass
class Resources:
    """Kernel resources with where each came from ("unavailable" is None)."""

    arch_vgprs: int | None = None
    agprs: int | None = None
    sgprs: int | None = None
    lds_bytes: int | None = None
    scratch_bytes: int | None = None
    workgroup: tuple[int, int, int] | None = None
    grid: tuple[int, int, int] | None = None
    dispatch_id: int | None = None
    agent_handle: int | None = None
    isa_vgprs: int = 0
    isa_agprs: int = 0
    isa_sgprs: int = 0
    metadata_vgprs: int | None = None
    metadata_agprs: int | None = None
    metadata_sgprs: int | None = None
    # VGPR+AGPR registers per lane one wave allocates, when the metadata says
    # it better than arch VGPRs + AGPRs do (gfx950: 2 x the reported count)
    unified_vgprs: int | None = None
    duration_ns: int | None = None  # the dispatch's duration (kernel trace of the run)
    # every dispatch of the kernel with the same grid in that kernel trace: [{dispatch_id, duration_ns}]
    # (the plan's duration is their median: analysis/dispatch_facts.py)
    run_dispatches: list[dict] = field(default_factory=list)
    # kernels sharing the traced kernel's name that were considered, with why one was picked
    candidates: list[dict] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    # notes: expected facts of the target or the capture layout, said once
    # (gfx950's halved VGPR count, a grid read from the discovery run);
    # warnings: what the reader should act on (grid unknown, a code object the
    # metadata does not describe, kernels that cannot be told apart)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def threads_per_workgroup(self) -> int | None:
        return None if self.workgroup is None else self.workgroup[0] * self.workgroup[1] * self.workgroup[2]

    @property
    def workgroups(self) -> int | None:
        if self.grid is None or self.workgroup is None:
            return None
        n = 1
        for g, w in zip(self.grid, self.workgroup):
            n *= -(-g // max(w, 1))
        return n


@brief_repr(("kernel", lambda d: d.kernel_name), ("target", lambda d: d.arch.target), ("waves", lambda d: d.waves.count),
            ("records", lambda d: d.records.count), ("instructions", lambda d: int(d.code.instruction_mask.sum())), "partial", "path")
@dataclass
class Dispatch:
    path: Path
    kernel_name: str
    code: CodeListing
    static: StaticCode
    index: FilenamesIndex
    waves: Waves
    records: Records
    timeline: Timeline
    occupancy: Occupancy | None
    realtime: Realtime | None
    snapshots: dict[str, Path | None]
    arch: ArchInfo
    resources: Resources
    warnings: list[str] = field(default_factory=list)
    partial: bool = False  # some input was skipped (see warnings)
    rocprof_files: list[str] = field(default_factory=list)
    layout: str = "rocprofv3"  # the profiler generation that wrote the capture (model/layouts.py)
    stall_recorded: bool = True  # False: the records carry no stall cycles (rocprofv2); stall is unavailable
    digest: object | None = field(default=None, repr=False, compare=False)  # attlens.cache.store.Digest
    # per-pc partial sums the loader's parse processes computed (model/loader.py _part_pass)
    prepared: dict = field(default_factory=dict, repr=False, compare=False)
    # source copies read so far (a report asks for one file per hot line): read each once
    _sources: dict = field(default_factory=dict, repr=False, compare=False)

    def executions_per_pc(self) -> np.ndarray:
        """Executions per pc (int64, one per listed pc): the sums the loader's
        parse processes made, else counted from the records once and kept
        (several analyses ask; each count is a pass over every record)."""
        hits = self.prepared.get("pc_basic", (None,))[0]
        if hits is None or len(hits) != self.code.size:
            hits = self.prepared.get("pc_executions")
        if hits is None or len(hits) != self.code.size:
            hits = self.prepared["pc_executions"] = np.bincount(self.records.pc, minlength=self.code.size).astype(np.int64)
        return hits

    def source_text(self, loc: SourceLoc) -> list[str] | None:
        """Lines of a source file from the capture's snapshots, if present."""
        return self.source_file(loc.file)[0]

    def source_file(self, file: str) -> tuple[list[str] | None, str | None]:
        """(lines of the capture's copy of ``file``, or None with the reason).

        The copy is read through the confined reader (inside the capture, a
        regular file, at most MAX_SOURCE_FILE_BYTES; docs/security.md). Lines
        are split on newlines only, as compilers count them. Read once per file."""
        if file not in self._sources:
            self._sources[file] = self._read_source_file(file)
        return self._sources[file]

    def _read_source_file(self, file: str) -> tuple[list[str] | None, str | None]:
        from attlens.io.confine import RefusedPath
        from attlens.io.snapshots_json import read_source

        if file not in self.snapshots:
            return None, "not listed in snapshots.json"
        local = self.snapshots[file]
        if local is None:
            return None, "source copy not in the capture"
        try:
            data = read_source(self.path, local)
        except RefusedPath as exc:
            return None, str(exc)
        except OSError as exc:
            return None, f"cannot read the source copy ({exc.strerror or exc})"
        lines = data.decode("utf-8", errors="replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        return [ln[:-1] if ln.endswith("\r") else ln for ln in lines], None
