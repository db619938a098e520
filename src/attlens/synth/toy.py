"""A toy model of a GPU kernel, executed wave by wave into ATT files.

The model is deliberately simple and fully documented (docs/demo.md), so tests
and the demo know the right answer in advance:

* every instruction issues in ``issue`` cycles (4 on gfx9) after an optional
  ``stall``; the next instruction is attempted when the previous one completes;
* memory ops complete ``latency`` cycles after they issue;
* a wait (``s_waitcnt``) resolves, per counter it names, the oldest
  ``outstanding - N`` ops (in order) and stalls until the last of them has
  completed; its stall is therefore exactly set by its producers;
* a program is a prologue, a loop body run ``iterations`` times (closed by a
  taken ``s_cbranch_scc1``, not taken on the last pass) and an epilogue;
* each traced wave runs the same program with seeded jitter on latencies.

The default kernel plants one hotspot: a global load issued three instructions
before the ``s_waitcnt vmcnt(0)`` that consumes it (toy_kernel.py line 24),
which therefore collects most of the kernel's stall as a global-memory wait.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from attlens.fsutil import write_atomic

from attlens.model.isa import mnemonic, waitcnt_fields

# Decoder categories (att-format.md §2.3)
SMEM, SALU, VMEM, FLAT, LDS, VALU, JUMP, NEXT, IMMED, MESSAGE = 1, 2, 3, 4, 5, 6, 7, 8, 9, 11

SOURCE_FILE = "/work/toy/toy_kernel.py"


@dataclass
class Op:
    text: str
    line: int | None  # source line in SOURCE_FILE (None: no line info)
    latency: int = 0  # memory ops: cycles from issue to completion
    stall: int = 0  # fixed stall before issue (non-wait instructions)
    issue: int = 4
    size: int = 4  # bytes in the code object (vaddr step)
    skew: int = 0  # extra stall x the wave's SIMD index: uneven work between the waves of a workgroup
    source: str | None = None  # overrides SOURCE_FILE:line when set (e.g. inline chains)


@dataclass
class ToyKernel:
    name: str = "toy_kernel"
    prologue: list[Op] = field(default_factory=list)
    body: list[Op] = field(default_factory=list)
    epilogue: list[Op] = field(default_factory=list)
    iterations: int = 8
    shader_engines: int = 2
    simds: int = 4
    slots: int = 2  # concurrent waves per SIMD
    instances: int = 2  # waves that reuse each slot, one after the other
    traced_cu: int = 1
    jitter: float = 0.1  # relative latency jitter
    source_text: str | None = None  # contents written as the source snapshot
    gfxip: int = 9
    extra_listed: list[Op] = field(default_factory=list)  # listed after the epilogue, never executed
    # rocprofv3 side files written beside the capture (None: write none)
    target: str | None = "gfx950"
    workgroup: int = 256
    grid: int = 256 * 4096
    vgprs: int = 16  # as rocprofv3 reports them (arch VGPRs)
    agprs: int = 0
    sgprs: int = 32
    lds_bytes: int = 8192
    duration_ns: int = 89000  # kernel_trace.csv End - Start of the dispatch
    # s_barrier synchronizes the waves of a workgroup (the traced waves of one slot and
    # instance across the SIMDs): each is released ``stall`` cycles after the last arrives
    barrier_sync: bool = False
    # End - Start of other dispatches of the same kernel and grid in the kernel trace (ids after this one's)
    other_dispatches: list[int] = field(default_factory=list)
    span_ns: int | None = None  # the traced SEs' waves span this (less 1 µs launch overhead); default duration_ns

    @property
    def listing(self) -> list[Op]:
        return self.prologue + self.body + self.epilogue + self.extra_listed


def default_kernel(iterations: int = 8) -> ToyKernel:
    """The demo kernel: a small MFMA loop with a planted global-memory wait."""
    pro = [
        Op("s_load_dwordx4 s[4:7], s[0:1], 0x0", 10, latency=180, size=8),
        Op("s_load_dwordx2 s[8:9], s[0:1], 0x10", 10, latency=180, size=8),
        Op("v_lshlrev_b32_e32 v8, 4, v0", 11),
        Op("s_waitcnt lgkmcnt(0)", 12),
        Op("s_mov_b32 s2, 0", 13),
    ]
    body = [
        Op("buffer_load_dwordx4 v[0:3], v8, s[4:7], 0 offen", 20, latency=720, stall=8, size=8),
        Op("ds_read_b128 v[4:7], v9", 21, latency=96, size=8),
        Op("s_waitcnt lgkmcnt(0)", 22),
        Op("v_mfma_f32_16x16x16_bf16 a[0:3], v[4:5], v[6:7], a[0:3]", 23, issue=8, size=8),
        Op("s_waitcnt vmcnt(0)", 24),  # the planted hotspot
        Op("v_pk_add_f32 v[10:11], v[0:1], v[2:3]", 25, size=8),
        Op("ds_write_b64 v9, v[10:11]", 26, latency=64, size=8),
        Op("s_add_u32 s2, s2, 1", 27),
        Op("s_cmp_lt_u32 s2, s3", 27),
        Op("s_cbranch_scc1 65521", 27),  # back 15 dwords: to the buffer_load
    ]
    epi = [
        Op("s_waitcnt lgkmcnt(0)", 30),
        Op("v_accvgpr_read_b32 v12, a0", 31, size=8),
        Op("buffer_store_dwordx4 v[12:15], v8, s[4:7], 0 offen", 32, latency=400, size=8),
        Op("s_waitcnt vmcnt(0)", 33),
        Op("s_endpgm", 34),
    ]
    src = "\n".join(
        [
            "# toy_kernel.py: the attlens demo kernel (synthetic)",
            *[f"# line {i}" for i in range(2, 10)],
            "args = load_kernel_args()          # 10",
            "offset = thread_id() * 16          # 11",
            "wait_for(args)                     # 12",
            "k = 0                              # 13",
            *[f"# line {i}" for i in range(14, 20)],
            "a = global_load(A, offset)         # 20  issued too late",
            "b = lds_read(B_tile)               # 21",
            "wait_lds()                         # 22",
            "acc = mfma(b, acc)                 # 23",
            "wait_global()                      # 24  <- planted hotspot",
            "c = a + a                          # 25",
            "lds_write(C_tile, c)               # 26",
            "k += 1; loop while k < K           # 27",
            "# line 28",
            "# line 29",
            "wait_lds()                         # 30",
            "out = acc                          # 31",
            "global_store(C, out)               # 32",
            "wait_global()                      # 33",
            "end()                              # 34",
        ]
    )
    return ToyKernel(prologue=pro, body=body, epilogue=epi, iterations=iterations, source_text=src)


def _category(text: str) -> int:
    m = mnemonic(text)
    if m.startswith(("s_load", "s_buffer_load", "s_store")):
        return SMEM
    if m.startswith(("s_waitcnt", "s_nop", "s_barrier", "s_sleep", "s_wait_")):
        return IMMED
    if m.startswith("s_endpgm") or m.startswith("s_sendmsg"):
        return MESSAGE
    if m.startswith(("s_cbranch", "s_branch")):
        return JUMP
    if m.startswith("s_"):
        return SALU
    if m.startswith(("buffer_", "tbuffer_")):
        return VMEM
    if m.startswith(("global_", "flat_", "scratch_")):
        return FLAT
    if m.startswith("ds_"):
        return LDS
    return VALU


def _counter_of(text: str) -> str | None:
    m = mnemonic(text)
    if m.startswith(("s_load", "s_buffer_load", "ds_", "s_sendmsg")):
        return "lgkmcnt"
    if m.startswith(("buffer_", "global_", "flat_", "scratch_", "tbuffer_")):
        return "vmcnt"
    return None


def _run_wave(kernel: ToyKernel, start: int, rng: random.Random, simd: int = 0, release: list | None = None):
    """Execute the program once; returns (records, timeline, waitcnt, end, arrivals).

    ``release``: with ``barrier_sync``, the time each s_barrier execution of the
    workgroup ends (None: not known yet, the barrier takes its own stall);
    ``arrivals``: when this wave reached each s_barrier execution."""
    seq: list[tuple[int, Op, bool]] = []  # (pc, op, is_last_iteration)
    pc_of = {id(op): i + 1 for i, op in enumerate(kernel.listing)}
    for op in kernel.prologue:
        seq.append((pc_of[id(op)], op, False))
    for it in range(kernel.iterations):
        for op in kernel.body:
            seq.append((pc_of[id(op)], op, it == kernel.iterations - 1))
    for op in kernel.epilogue:
        seq.append((pc_of[id(op)], op, False))

    fifo = {"vmcnt": deque(), "lgkmcnt": deque()}  # (pc, completion time)
    t = start + 32  # every wave starts in IDLE for ~32 cycles (att-format.md §2.3)
    records, waitcnt, states = [], [], [(1, 32)]
    arrivals: list[int] = []
    for pc, op, last in seq:
        cat = _category(op.text)
        if cat == JUMP and last:
            cat = NEXT
        fields = waitcnt_fields(op.text)
        if fields:
            popped = []
            for name in ("lgkmcnt", "vmcnt"):
                if name not in fields:
                    continue
                q = fifo[name]
                got = [q.popleft() for _ in range(max(len(q) - fields[name], 0))]
                if got:
                    waitcnt.append([pc, [[p, 0] for p, _ in got]])
                popped += got
            ready = max((c for _, c in popped), default=t)
            stall = max(ready - t, 0)
            stall = -(-stall // 4) * 4
            issue = 0
        elif kernel.barrier_sync and mnemonic(op.text) == "s_barrier":
            b = len(arrivals)
            arrivals.append(t)
            done = release[b] if release is not None and b < len(release) else t + op.stall
            stall, issue = -(-max(done - t, 0) // 4) * 4, 0
        else:
            stall, issue = op.stall + op.skew * simd, op.issue
        if mnemonic(op.text) == "s_endpgm":
            issue = 4 + 4 * rng.randint(2, 10)  # MESSAGE: runs until the wave ends
        duration = stall + issue
        records.append([t, cat, stall, duration, pc])
        if stall:
            states.append((3 if cat == IMMED else 4, stall))
        if issue:
            states.append((3 if mnemonic(op.text) == "s_endpgm" else 2, issue))
        ctr = _counter_of(op.text)
        if ctr:
            lat = op.latency * (1 + rng.uniform(-kernel.jitter, kernel.jitter))
            fifo[ctr].append((pc, t + duration + int(lat)))
        t += duration
    merged: list[list[int]] = []
    for s, d in states:
        if merged and merged[-1][0] == s:
            merged[-1][1] += d
        else:
            merged.append([s, d])
    return records, merged, waitcnt, t, arrivals


def _run_group(kernel: ToyKernel, starts: list[int], rng: random.Random) -> list:
    """The waves of one workgroup (one per SIMD), their s_barriers synchronized:
    each barrier execution ends ``stall`` cycles after the last wave arrives.
    Each wave draws the same jitter on every re-run."""
    states = []
    for _ in starts:
        states.append(rng.getstate())
        _run_wave(kernel, 0, rng)  # advance the stream by one wave's draws
    release: list[int] = []
    stall = next((op.stall for op in kernel.listing if mnemonic(op.text) == "s_barrier"), 0)
    for _ in range(64):
        runs = []
        for simd, (t0, st) in enumerate(zip(starts, states)):
            r = random.Random()
            r.setstate(st)
            runs.append(_run_wave(kernel, t0, r, simd, release))
        n = min(len(x[4]) for x in runs)
        new = [max(x[4][b] for x in runs) + stall for b in range(n)]
        if new == release:
            break
        release = new
    return [x[:4] for x in runs]


def write_capture(out_dir: str | Path, kernel: ToyKernel | None = None, seed: int = 0, dispatch_id: int = 7, agent_handle: int = 1) -> Path:
    """Write a complete ``ui_output_agent_<h>_dispatch_<d>/`` directory and
    return its path. Every file follows att-format.md; code.json sums are the
    writer's own rule applied to the generated wave files."""
    kernel = kernel or default_kernel()
    rng = random.Random(seed)
    root = Path(out_dir) / f"ui_output_agent_{agent_handle}_dispatch_{dispatch_id}"
    root.mkdir(parents=True, exist_ok=True)
    listing = kernel.listing
    n_pc = len(listing) + 1
    hit = [0] * n_pc
    lat = [0] * n_pc
    stl = [0] * n_pc
    idl = [0] * n_pc
    wave_index: dict = {}
    occupancy: dict[str, list] = {}
    realtime: dict[str, list] = {}
    for se in range(kernel.shader_engines):
        se_clock0 = 1000 + 750 * se  # per-SE clock origins differ (att-format.md §2.6)
        events = []
        se_end = se_clock0
        runs = _run_se(kernel, se_clock0, rng)
        for simd in range(kernel.simds):
            for slot in range(kernel.slots):
                for k in range(kernel.instances):
                    t0, (records, timeline, waitcnt, end) = runs[(simd, slot, k)]
                    begin = t0
                    name = f"se{se}_sm{simd}_sl{slot}_wv{k}.json"
                    doc = {
                        "name": f"SE{se}",
                        "duration": end - begin,
                        "num_insts": len(records),
                        "num_stitched": len(records),
                        "wave": {
                            "cu": kernel.traced_cu,
                            "id": k,
                            "simd": simd,
                            "slot": slot,
                            "begin": begin,
                            "end": end,
                            "instructions": records,
                            "timeline": timeline,
                            "waitcnt": waitcnt,
                        },
                    }
                    write_atomic(root / name, orjson.dumps(doc))
                    wave_index.setdefault(str(se), {}).setdefault(str(simd), {}).setdefault(str(slot), {})[str(k)] = [name, begin, end]
                    # writer's aggregation rule (att-format.md §2.2)
                    cursor = begin
                    for time, _cat, stall, dur, pc in records:
                        hit[pc] += 1
                        lat[pc] += dur
                        stl[pc] += stall
                        idl[pc] += max(time - cursor, 0)
                        cursor = max(cursor, time + dur)
                    events.append([begin, kernel.traced_cu, simd, slot, 1, 1])
                    events.append([end, kernel.traced_cu, simd, slot, 0, 1])
                    se_end = max(se_end, end)
        events += _other_cu_events(kernel, events, se_clock0)
        events.sort(key=lambda e: (e[0], e[4]))
        occupancy[str(se)] = events
        # As on real MI350X captures, at the same instant each later SE's clock
        # reads ~750 cycles lower; 10 M cycles per 500 k realtime ticks = 2 GHz.
        realtime[f"SE{se}"] = [[500 - 750 * se + 1000, 10_000_000], [500 - 750 * se + 10_001_000, 10_500_000]]

    code_rows = [[f"; {kernel.name}", 0, 0, "", 3, 0x1700, 0, 0, 0, 0]]
    vaddr = 0x1700
    for i, op in enumerate(listing, start=1):
        src = op.source if op.source is not None else (f"{SOURCE_FILE}:{op.line}" if op.line is not None else "")
        code_rows.append([op.text, 0, i, src, 3, vaddr, hit[i], lat[i], stl[i], idl[i]])
        vaddr += op.size
    files = {
        "code.json": {"code": code_rows, "header": "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle", "version": "3.0.0"},
        "filenames.json": {
            "counter_names": [],
            "gfxip": kernel.gfxip,
            "gfxv": "vega" if kernel.gfxip <= 9 else "navi",
            "global_begin_time": 0,
            "version": "3.0.0",
            "wave_filenames": wave_index,
        },
        "occupancy.json": {**occupancy, "dispatches": {"1": kernel.name}, "version": "3.0.0"},
        "realtime.json": {**realtime, "metadata": {"descriptor": "[gfx_clock, realtime_clock]", "frequency": 100000000}},
    }
    if kernel.source_text is not None and any(op.line is not None for op in listing):
        parts = SOURCE_FILE.strip("/").split("/")
        node: dict = {}
        cur = node
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = "source_0_" + parts[-1]
        files["snapshots.json"] = {"/": node}
        write_atomic(root / ("source_0_" + parts[-1]), kernel.source_text.encode())
    for name, doc in files.items():
        write_atomic(root / name, orjson.dumps(doc))
    if kernel.target:
        _write_side_files(root.parent, kernel, dispatch_id)
    return root


def _run_se(kernel: ToyKernel, se_clock0: int, rng: random.Random) -> dict:
    """Every traced wave of one SE: (simd, slot, instance) -> (begin, run). The
    instances of a slot run back to back; with ``barrier_sync`` the waves of one
    slot and instance across the SIMDs form a workgroup."""
    out: dict = {}
    start = {(simd, slot): se_clock0 + 200 + 16 * simd + 40 * slot for simd in range(kernel.simds) for slot in range(kernel.slots)}
    if not kernel.barrier_sync:
        for simd in range(kernel.simds):
            for slot in range(kernel.slots):
                for k in range(kernel.instances):
                    run = _run_wave(kernel, start[(simd, slot)], rng)[:4]
                    out[(simd, slot, k)] = (start[(simd, slot)], run)
                    start[(simd, slot)] = run[3] + 20
        return out
    for slot in range(kernel.slots):
        for k in range(kernel.instances):
            starts = [start[(simd, slot)] for simd in range(kernel.simds)]
            for simd, run in enumerate(_run_group(kernel, starts, rng)):
                out[(simd, slot, k)] = (starts[simd], run)
                start[(simd, slot)] = run[3] + 20
    return out


GPU_SHADER_ENGINES = 32  # the agent_info.csv the toy writes (Num_Shader_Banks): an MI350X


def _other_cu_events(kernel: ToyKernel, traced: list, se_clock0: int) -> list:
    """occupancy.json covers every CU of a traced SE (att-format.md §2.5): the
    toy gives the SE its share of the grid's waves (grid waves / 32 SEs) as
    copies of the traced CU's waves on further CUs, shifted in time so the
    SE's waves span the kernel trace's duration less 1 µs of launch overhead
    (at the toy's 2 GHz clock; one copy at least when the traced waves end
    sooner). The grid, the duration and the capture then
    agree, as they do on a real capture (analysis/dispatch_facts.py)."""
    waves = [(b[0], e[0], b[2], b[3]) for b, e in zip(traced[0::2], traced[1::2])]
    wpw = -(-kernel.workgroup // 64)
    target = -(-(-(-kernel.grid // kernel.workgroup) * wpw) // GPU_SHADER_ENGINES)
    want_end = se_clock0 + 200 + 2 * (kernel.span_ns if kernel.span_ns is not None else kernel.duration_ns) - 2000
    # at least one wave that ends with the dispatch (within one workgroup of the grid's share)
    grid_waves = -(-kernel.grid // kernel.workgroup) * wpw
    extra = max(target - len(waves), int(max(e for _, e, _, _ in waves) < want_end and len(waves) < grid_waves))
    if extra <= 0:
        return []
    copies = -(-extra // len(waves))
    out = []
    for c in range(copies):
        subset = waves[: min(len(waves), extra - c * len(waves))]
        shift = max(want_end - max(e for _, e, _, _ in subset), 0) * (c + 1) // copies
        for b, e, simd, slot in subset:
            out += [[b + shift, kernel.traced_cu + 1 + c, simd, slot, 1, 1], [e + shift, kernel.traced_cu + 1 + c, simd, slot, 0, 1]]
    return out


def _write_side_files(where: Path, kernel: ToyKernel, dispatch_id: int) -> None:
    """Minimal rocprofv3 ``agent_info.csv`` and ``kernel_trace.csv`` of the
    same (imaginary) run, in rocprofv3's quoting style."""
    agent_cols = ["Node_Id", "Logical_Node_Id", "Agent_Type", "Simd_Per_Cu", "Max_Waves_Per_Simd", "Lds_Size_In_Kb",
                  "Wave_Front_Size", "Cu_Count", "Num_Shader_Banks", "Gfx_Target_Version", "Max_Engine_Clk_Fcompute", "Name", "Product_Name"]
    agent_rows = [
        [0, 0, '"CPU"', 0, 0, 0, 0, 64, 0, 0, 0, '"Toy CPU"', '"Toy CPU"'],
        [1, 1, '"GPU"', 4, 8, 160, 64, 256, 32, 90500, 2400, f'"{kernel.target}"', '"attlens toy GPU"'],
    ]
    lines = [",".join(f'"{c}"' for c in agent_cols)] + [",".join(str(v) for v in r) for r in agent_rows]
    write_atomic(where / "demo_agent_info.csv", ("\n".join(lines) + "\n").encode())
    trace_cols = ["Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
                  "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
                  "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
                  "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z"]
    lines = [",".join(f'"{c}"' for c in trace_cols)]
    start = 1000
    for i, dur in enumerate([kernel.duration_ns, *kernel.other_dispatches]):
        row = ['"KERNEL_DISPATCH"', '"Agent 1"', 1, 0, 100, dispatch_id + i, 5, f'"{kernel.name}"', dispatch_id + i, start, start + dur,
               kernel.lds_bytes, 0, kernel.vgprs, kernel.agprs, kernel.sgprs, kernel.workgroup, 1, 1, kernel.grid, 1, 1]
        lines.append(",".join(str(v) for v in row))
        start += dur + 5000
    write_atomic(where / "demo_kernel_trace.csv", ("\n".join(lines) + "\n").encode())
