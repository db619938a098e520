"""How close the dispatch came to the target's peak HBM bandwidth.

Bytes, from the trace: every executed vector-memory instruction moves its
width (from the mnemonic: ``dwordx4``/``b128`` = 16 B per lane ...) for each
of the wave's lanes; scalar loads move their width once per wave. The traced
waves' average is scaled to every wave of the grid (workgroups x waves per
workgroup). Assumptions, stated with the result: full EXEC masks (every lane
active), the traced waves are representative of the grid, and every requested
byte is counted, L2 hits included, so for kernels that re-read data the figure
is an upper bound on HBM traffic. With PMC counters of the same dispatch the
counters' L2-to-fabric bytes replace the estimate.

Which bytes can be shared between workgroups: a data-flow pass over the
listing (analysis/regs.py) marks every register that depends on a live-in
SGPR other than a scalar-load base (the workgroup ids) or on loaded data. A
memory instruction whose address depends on none of them reads the same
addresses in every workgroup (a weight vector, a table): it is counted once
per workgroup's worth in the *lower bound* of the grid's bytes, and for every
wave in the upper bound. ``fraction_of_peak_low`` uses the lower bound.

Lanes that share an address move its bytes once (analysis/lanes.py): a
vector load or store counts ``width x (wave size / lanes sharing an
address)`` per wave, loads and stores apart; atomics count every lane (each
is its own read-modify-write).

Duration: the one the dispatch facts chose (analysis/dispatch_facts.py: the
median of the run's dispatches of the same name and grid, cross-checked with
the capture's own span), else the run's kernel_trace.csv
(``Resources.duration_ns``). Peak: the architecture table (``hbm_peak_gbps``),
for the capture's product when it is tabulated (a rocprofiler-compute
sysinfo.csv beside the capture overrides it). bytes / ns = GB/s.

Nothing physical above its peak: counted (PMC) bytes above the peak in that
duration are never given as a measurement: the figure is unavailable and
``reason`` says the timing is unusable (analysis/ceiling.py); so are the
bytes of a kernel that streams; the requested bytes of a looping kernel above
the peak (data re-read from L2) are no HBM figure at all:
``achieved_gbps``/``fraction_of_peak`` are then None and ``requested_gbps``
keeps the requested bytes per ns.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from attlens.analysis.ceiling import CEILING_FRACTION, over_peak
from attlens.analysis.occupancy import grid_waves
from attlens.analysis.regs import address_registers, defs_uses, mnemonic_of
from attlens.model.archdata import hbm_peak
from attlens.results import brief_repr

_VMEM_PREFIXES = ("buffer_", "tbuffer_", "global_", "flat_", "scratch_")
_NOT_DATA = ("buffer_wbl2", "buffer_inv", "buffer_wbinvl1", "buffer_gl", "global_wb", "global_inv", "global_wbinv")
# width suffixes, longest match first
_WIDTH = (
    ("dwordx4", 16), ("b128", 16), ("dwordx3", 12), ("b96", 12), ("dwordx2", 8), ("b64", 8), ("x2", 8),
    ("dword", 4), ("b32", 4), ("ushort", 2), ("sshort", 2), ("short", 2), ("b16", 2), ("u16", 2), ("i16", 2),
    ("ubyte", 1), ("sbyte", 1), ("byte", 1), ("u8", 1), ("i8", 1), ("b8", 1),
)
_FORMAT = re.compile(r"format_(d16_)?(x|xy|xyz|xyzw)\b")
_SCALAR = re.compile(r"^s_(buffer_)?(load|store)_(dword|b32)(x(\d+))?")



def access_width(mnem: str) -> tuple[str | None, int | None]:
    """(``load`` | ``store`` | ``atomic`` | None, bytes per lane) of a vector-memory mnemonic."""
    if not mnem.startswith(_VMEM_PREFIXES) or mnem.startswith(_NOT_DATA):
        return None, None
    kind = "atomic" if "_atomic" in mnem else ("store" if "_store" in mnem else ("load" if "_load" in mnem else None))
    if kind is None:
        return None, None
    m = _FORMAT.search(mnem)
    if m:
        return kind, (2 if m.group(1) else 4) * len(m.group(2))
    if "_d16" in mnem:
        return kind, 2
    for suffix, width in _WIDTH:
        if mnem.endswith("_" + suffix) or ("_" + suffix + "_") in mnem + "_":
            return kind, width
    return kind, 4 if kind == "atomic" else None


def scalar_width(mnem: str) -> int | None:
    m = _SCALAR.match(mnem)
    if not m:
        return None
    return 4 * int(m.group(5) or 1)


def workgroup_dependent(isa: list[str]) -> dict[int, bool]:
    """Per vector-memory pc of the listing: does its address depend on the
    workgroup (a live-in SGPR that is not a scalar-load base, or loaded data)?

    One flow-sensitive pass in listing order (a write from independent
    sources clears the mark), exact for straight-line code."""
    written: set = set()
    live_in: set = set()
    bases: set = set()
    for text in isa:
        m = mnemonic_of(text)
        if not m:
            continue
        w, r = defs_uses(text)
        live_in |= {x for x in r if x[0] == "s" and x not in written}
        if m.startswith(("s_load", "s_buffer_load")):
            ops = text.split(None, 1)[1].split(",") if " " in text.strip() else []
            if len(ops) > 1:
                from attlens.analysis.regs import registers

                bases |= registers(ops[1])
        written |= w
    tainted = set(live_in - bases)
    out: dict[int, bool] = {}
    for pc, text in enumerate(isa):
        m = mnemonic_of(text)
        if not m:
            continue
        w, r = defs_uses(text)
        kind, _ = access_width(m)
        if kind is not None:
            out[pc] = bool(address_registers(text) & tainted)
        if kind in ("load", "atomic") or m.startswith(("ds_read", "ds_load", "ds_bpermute", "ds_swizzle", "ds_permute")):
            dep = True  # loaded data: anything
        elif m.startswith(("s_load", "s_buffer_load")):
            dep = bool(r & tainted)
        else:
            dep = bool(r & tainted)
        if dep:
            tainted |= w
        else:
            tainted -= w
    return out


@brief_repr("available", "source", "bytes_moved", "duration_ns", "achieved_gbps", "fraction_of_peak")
@dataclass
class Bandwidth:
    available: bool
    reason: str | None = None  # why the fraction is unavailable
    source: str = "trace"  # "trace" | "pmc"
    read_bytes: float | None = None  # whole grid
    write_bytes: float | None = None
    bytes_moved: float | None = None
    bytes_moved_low: float | None = None  # workgroup-invariant addresses counted once per workgroup
    shared_bytes_per_wave: float | None = None  # traced average of workgroup-invariant bytes
    streaming_share: float | None = None  # of the traced bytes, from instructions run once per wave
    traced_waves: int = 0
    grid_waves: int | None = None
    bytes_per_wave: float | None = None
    duration_ns: int | None = None
    duration_source: str | None = None
    achieved_gbps: float | None = None  # None when above the peak (not an HBM figure)
    requested_gbps: float | None = None  # bytes_moved / duration, L2 hits included (trace estimate)
    peak_gbps: float | None = None
    peak_product: str | None = None
    peak_source: str | None = None
    fraction_of_peak: float | None = None  # from bytes_moved (upper bound without PMC)
    fraction_of_peak_low: float | None = None  # from bytes_moved_low
    assumptions: list[str] = field(default_factory=list)
    by_instruction: list[dict] = field(default_factory=list)  # top pcs by bytes (traced waves)
    unknown_width: list[int] = field(default_factory=list)  # executed memory pcs whose width is not known
    vector_widths: dict = field(default_factory=dict)  # pc -> bytes per lane, executed vector memory pcs
    lanes_sharing: dict = field(default_factory=dict)  # pc -> lanes of a wave sharing each address (> 1 only)
    shared_address_saving_bytes: float | None = None  # grid bytes a lane-by-lane count would add (lanes sharing an address)
    bounds: list[str] = field(default_factory=list)  # figures above the peak, and what they invalidate

    @property
    def at_ceiling(self) -> bool | None:
        """At the HBM ceiling by a bound the trace supports: PMC bytes, or the
        lower bound of a kernel that streams (≥ 90 % of its bytes from
        instructions each wave runs once). None when undecidable."""
        if not self.available:
            return None
        if self.source == "pmc":
            return self.fraction_of_peak is not None and self.fraction_of_peak >= CEILING_FRACTION
        if self.fraction_of_peak_low is not None and self.fraction_of_peak_low >= CEILING_FRACTION and (self.streaming_share or 0) >= 0.9:
            return True
        if self.fraction_of_peak is not None and self.fraction_of_peak < CEILING_FRACTION:
            return False  # even every requested byte from HBM stays below
        return None

    def to_dict(self) -> dict:
        def r(x, n=0):
            return None if x is None else round(x, n) if n else int(round(x))

        return {
            "available": self.available,
            "reason": self.reason,
            "source": self.source,
            "read_bytes": r(self.read_bytes),
            "write_bytes": r(self.write_bytes),
            "bytes_moved": r(self.bytes_moved),
            "bytes_moved_low": r(self.bytes_moved_low),
            "shared_bytes_per_wave": r(self.shared_bytes_per_wave, 1),
            "streaming_share": r(self.streaming_share, 4),
            "traced_waves": self.traced_waves,
            "grid_waves": self.grid_waves,
            "bytes_per_wave": r(self.bytes_per_wave, 1),
            "duration_ns": self.duration_ns,
            "duration_source": self.duration_source,
            "achieved_gbps": r(self.achieved_gbps, 1),
            "requested_gbps": r(self.requested_gbps, 1),
            "peak_gbps": self.peak_gbps,
            "peak_product": self.peak_product,
            "peak_source": self.peak_source,
            "fraction_of_peak": r(self.fraction_of_peak, 4),
            "fraction_of_peak_low": r(self.fraction_of_peak_low, 4),
            "at_ceiling": self.at_ceiling,
            "ceiling_fraction": CEILING_FRACTION,
            "assumptions": self.assumptions,
            "top_instructions": self.by_instruction,
            "unknown_width_pcs": self.unknown_width,
            "lanes_sharing_an_address": [{"pc": pc, "lanes": n} for pc, n in sorted(self.lanes_sharing.items())],
            "shared_address_saving_bytes": r(self.shared_address_saving_bytes),
            "bounds": self.bounds,
        }


def hbm_floor_ns(bw: Bandwidth | None) -> float | None:
    """The dispatch's bytes at the peak HBM bandwidth (bytes / GB/s = ns): no
    dispatch moving them can be faster. From the trace, the lower byte count
    (workgroup-shared addresses counted once), and only for a kernel that
    streams (≥ 90 % of its bytes from instructions each wave runs once): the
    requested bytes of a looping kernel are re-read from L2, so they set no
    HBM floor. None when unknown."""
    if bw is None or not bw.available or not bw.peak_gbps:
        return None
    b = bw.bytes_moved_low if bw.source == "trace" and bw.bytes_moved_low is not None else bw.bytes_moved
    if not b:
        return None
    if bw.source == "trace" and (bw.streaming_share or 0) < 0.9:
        return None
    return float(b) / float(bw.peak_gbps)


def _pmc_for(dispatch, pmc):
    """The PMC result of this dispatch: from a PmcAttachment (already matched
    to this capture; not used when a check failed and it was attached only by
    force: another kernel's bytes must not become this one's), a PmcCounters,
    a PmcResult or a list of them (by dispatch id, else the one result of
    the same kernel)."""
    if pmc is None:
        return None  # (before the imports: the counters' modules cost 7 ms)
    from attlens.analysis.pmc_attach import PmcAttachment
    from attlens.model.kernelname import same_kernel

    if isinstance(pmc, PmcAttachment):
        return None if pmc.mismatches else pmc.result
    items = pmc.results if hasattr(pmc, "results") else pmc if isinstance(pmc, (list, tuple)) else [pmc]
    did = dispatch.resources.dispatch_id
    for p in items:
        if did is not None and getattr(p, "dispatch_id", None) == did:
            return p
    named = [p for p in items if same_kernel(getattr(p, "kernel", None), dispatch.kernel_name)]
    return named[0] if len(named) == 1 else None


def compute_bandwidth(result, pmc, loops, duration_ns: int | None = None, duration_source: str | None = None,
                      grid_mismatch: str | None = None, wave_weights=None, weights_note: str | None = None) -> Bandwidth:
    """``pmc``: counters of the dispatch or None; ``loops``: its LoopStructure;
    ``duration_ns``: the dispatch facts' duration (default: the kernel trace's);
    ``grid_mismatch``: why the kernel trace's grid does not describe this
    capture (the traced bytes are then not scaled to it); ``wave_weights``:
    per traced wave, how many of the grid's waves it stands for (default: each
    the same share), e.g. early-exit and working waves by their measured share."""
    from attlens.analysis.lanes import lane_groups

    d = result.dispatch
    s = result.sums
    st = d.static
    res = d.resources
    out = Bandwidth(available=False, traced_waves=d.waves.count)
    ws = (d.arch.facts or {}).get("wave_size") or 64
    wg_dep = workgroup_dependent(d.code.isa)
    groups = lane_groups(d.code, ws, res.workgroup)
    waves_per_wg, out.grid_waves = grid_waves(d)
    # grid-weighted executions per pc: each traced wave stands for a share of the grid's waves
    if wave_weights is not None and d.records.count:
        ghit = np.bincount(d.records.pc, weights=np.asarray(wave_weights, dtype=np.float64)[d.records.wave], minlength=len(s.hit))
    else:
        ghit = s.hit.astype(np.float64) * ((out.grid_waves or 0) / d.waves.count if d.waves.count else 0.0)
    rd = wr = shared = once = saved = 0.0  # grid bytes
    traced_total = 0.0
    rows = []
    for pc in np.flatnonzero(s.hit > 0).tolist():
        m = st.mnemonic[pc]
        kind, width = access_width(m)
        if kind is not None:
            if width is None:
                out.unknown_width.append(pc)
                continue
            out.vector_widths[pc] = width
            # lanes that share an address move its bytes once (atomics: every lane its own RMW)
            lanes = 1 if kind == "atomic" else groups.get(pc, 1)
            if lanes > 1:
                out.lanes_sharing[pc] = lanes
            per_exec = width * (ws // lanes)
            saved += float(ghit[pc]) * width * (ws - ws // lanes)
        else:
            sw = scalar_width(m)
            if sw is None:
                continue
            kind = "store" if "_store" in m else "load"
            per_exec = sw
        b = float(ghit[pc]) * per_exec
        traced = float(s.hit[pc]) * per_exec
        traced_total += traced * (2 if kind == "atomic" else 1)
        if kind in ("load", "store", "atomic") and pc in out.vector_widths and not wg_dep.get(pc, True):
            shared += b
        if not loops.repeats[pc]:
            once += b
        if kind == "store":
            wr += b
        elif kind == "atomic":  # read-modify-write: the line is read and written
            rd += b
            wr += b
        else:
            rd += b
        rows.append((traced, pc, kind))
    rows.sort(reverse=True)
    out.by_instruction = [
        {"pc": pc, "isa": d.code.isa[pc], "kind": k, "bytes_per_lane": out.vector_widths.get(pc), "lanes_sharing_an_address": out.lanes_sharing.get(pc, 1),
         "executions": int(s.hit[pc]), "bytes_traced": int(b)}
        for b, pc, k in rows[:5]
    ]
    out.assumptions = [
        f"every lane of a wave active (full EXEC, {ws} lanes); ATT does not record EXEC masks; lanes whose address the ISA proves "
        "equal (lane-invariant or lane-shifted) count once",
        weights_note or "the traced waves are representative of every wave of the grid",
        "upper bound: every requested byte counts, L2/MALL hits included; lower bound: instructions whose "
        "address does not depend on the workgroup id count once per workgroup",
    ]
    if out.unknown_width:
        out.assumptions.append(f"{len(out.unknown_width)} executed memory instruction(s) of unknown width are left out")
    out.duration_ns = res.duration_ns if duration_ns is None else int(duration_ns)
    out.duration_source = res.sources.get("duration_ns") if duration_ns is None else duration_source
    out.peak_gbps, out.peak_product, out.peak_source = hbm_peak(d.arch.facts, d.arch.product)
    if d.waves.count and out.grid_waves:
        out.read_bytes, out.write_bytes = rd, wr
        out.bytes_moved = rd + wr
        out.bytes_per_wave = traced_total / d.waves.count
        out.shared_bytes_per_wave = shared / out.grid_waves
        # workgroup-invariant addresses: once per workgroup's worth of waves
        out.bytes_moved_low = (rd + wr - shared) + out.shared_bytes_per_wave * waves_per_wg
        out.streaming_share = once / (rd + wr) if (rd + wr) else None
        out.shared_address_saving_bytes = saved
    p = _pmc_for(d, pmc)
    if p is not None and getattr(p, "bytes_moved", None) is not None:
        out.source = "pmc"
        out.read_bytes, out.write_bytes, out.bytes_moved = p.read_bytes, p.write_bytes, p.bytes_moved
        out.assumptions = [f"bytes from PMC counters ({p.read_bytes_method}; {p.write_bytes_method})"]
        if out.duration_ns is None and p.duration_ns:
            out.duration_ns, out.duration_source = int(p.duration_ns), p.duration_source
    missing = []
    if grid_mismatch and out.source == "trace":
        missing.append(grid_mismatch)
    elif out.bytes_moved is None:
        missing.append("grid size unknown (no kernel_trace.csv row for this dispatch)" if not out.grid_waves else "no traced waves")
    if out.duration_ns is None:
        missing.append("dispatch duration unknown (no kernel_trace.csv row with timestamps)")
    if out.peak_gbps is None:
        missing.append(f"no peak HBM bandwidth for target {d.arch.target or 'unknown'}")
    if missing:
        out.reason = "; ".join(missing)
        return out
    if out.source == "pmc":
        # counted bytes cannot exceed the peak: then the duration is not this dispatch's (analysis/ceiling.py)
        why = over_peak(out.bytes_moved, out.duration_ns, out.peak_gbps)
        if why is not None:
            out.reason = f"timing unusable ({out.duration_source}): {why}"
            return out
    out.available = True
    out.requested_gbps = out.achieved_gbps = out.bytes_moved / out.duration_ns  # bytes/ns = GB/s
    out.fraction_of_peak = out.achieved_gbps / out.peak_gbps
    if out.bytes_moved_low is not None and out.source == "trace":
        out.fraction_of_peak_low = out.bytes_moved_low / out.duration_ns / out.peak_gbps
    _bound_by_peak(out)
    return out


def _bound_by_peak(out: Bandwidth) -> None:
    """Nothing physical above its peak: an impossible figure is dropped and said.

    PMC bytes, or the bytes of a kernel that streams (each byte requested once),
    above the peak mean the duration or the grid is wrong: the figure is
    unavailable. The requested bytes of a looping kernel above the peak are
    data re-read from L2/MALL: no HBM figure (``requested_gbps`` keeps them)."""
    peak = out.peak_gbps
    streams = out.source == "pmc" or (out.streaming_share or 0) >= 0.9
    low = out.fraction_of_peak if out.source == "pmc" else out.fraction_of_peak_low
    if streams and low is not None and low > 1.0:
        what = "PMC bytes" if out.source == "pmc" else "the bytes of this streaming kernel"
        out.bounds.append(f"{what} / the duration = {low * peak:,.0f} GB/s, {low:.0%} of the {peak:,.0f} GB/s peak: impossible, so the "
                          f"duration ({out.duration_ns:,} ns, {out.duration_source}) or the grid ({out.grid_waves} waves) does not describe these bytes")
        out.available = False
        out.reason = out.bounds[-1]
        out.achieved_gbps = out.fraction_of_peak = out.fraction_of_peak_low = None
        return
    if out.fraction_of_peak is not None and out.fraction_of_peak > 1.0:
        out.bounds.append(f"the requested bytes move {out.requested_gbps:,.0f} GB/s, {out.fraction_of_peak:.0%} of the {peak:,.0f} GB/s HBM peak: "
                          "the data is re-read from L2/MALL, so this is no HBM figure (HBM bytes need PMC counters)")
        out.achieved_gbps = out.fraction_of_peak = None
        if out.fraction_of_peak_low is not None and out.fraction_of_peak_low > 1.0:
            out.fraction_of_peak_low = None
