"""The capture's context: exact GPU target and kernel resources.

Each source of facts has its own small function returning a :class:`Claim`
(what it says, from which file, and why it applies to this capture):

* :func:`results_json_claim` — the ATT run's ``results.json``: agent handle →
  GPU, the kernel's symbol;
* :func:`agent_info_claim` — ``agent_info.csv``: the GPUs of the run;
* :func:`sysinfo_claim` — rocprofiler-compute's ``sysinfo.csv``: product, CU
  count, peak bandwidth;
* :func:`kernel_trace_claim` — ``kernel_trace.csv``: grid, workgroup,
  duration and registers of the traced dispatch;
* :func:`occupancy_claim` — the v3.1.0 ``occupancy.json`` dispatch records
  (VGPRs, SGPRs, LDS, thread dims);
* :func:`isa_claim` — the instructions themselves (target-only mnemonics,
  register scan);
* :func:`gfxip_claim` — ``filenames.json``'s ``gfxip``/``gfxv`` (family only).

:func:`resolve_arch_and_resources` is the one place that combines them, in
that order of trust, and records the evidence each gave
(:attr:`ArchInfo.claims`, :attr:`Resources.sources`). The files are looked up
in the folders of :func:`attlens.model.rundirs.search_dirs` (beside the
capture, the default ``-d DIR/<hostname>/`` layout, ``attlens profile``'s
folders, or ``--rocprof-dir``). Where several runs' files are there, the run
whose ``.att`` files name this capture's agent handle and dispatch is
preferred: ``<prefix>_<handle>_shader_engine_<se>_<dispatch>.att`` ties the
run's file prefix (``-o``, or the pid) to the capture.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import AttlensError
from attlens.io.rocprof_csv import read_agent_info, read_kernel_trace
from attlens.io.results_json import read_results_json
from attlens.model.archdata import (
    ARCH_TABLE,
    GFX90A_MEMORY_MODIFIERS,
    GFX94X_MEMORY_MODIFIERS,
    GFX942_ONLY_MNEMONICS,
    GFX950_ONLY_MNEMONICS,
    resolve_target,
)
from attlens.model.dispatch import ArchInfo, Resources
from attlens.model.isa import mnemonic, operands, scan_registers
from attlens.model.rundirs import search_dirs

# the names of the run files whose prefix ties them to one rocprofv3 run (-o PFX)
_RUN_FILE_SUFFIXES = ("agent_info.csv", "kernel_trace.csv", "results.json")


@dataclass
class Claim:
    """What one source says about the capture's GPU or kernel."""

    source: str  # results.json | agent_info | sysinfo | kernel_trace | occupancy events | isa | gfxip
    file: str | None = None
    target: str | None = None
    gpu: dict | None = None  # agent facts (cu_count, lds_size_kb, product_name, hbm_bw ...)
    reason: str = ""
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"source": self.source, "file": Path(self.file).name if self.file else None, "target": self.target,
                "reason": self.reason}


def _run_prefix(filename: str) -> str:
    for suffix in _RUN_FILE_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)].rstrip("_")
    return filename


def _glob(dirs: list[Path], pattern: str) -> list[Path]:
    files = []
    for d in dirs:
        files.extend(sorted(d.glob(pattern)))
    return files


def att_run_prefixes(dirs: list[Path], handle, dispatch_id) -> set[str]:
    """Run prefixes (``-o`` or the pid) whose raw ``.att`` files name this
    capture's agent handle and dispatch."""
    if handle is None or dispatch_id is None:
        return set()
    pat = re.compile(rf"(.*)_{handle}_shader_engine_\d+_{dispatch_id}\.att")
    out = set()
    for f in _glob(dirs, f"*_{handle}_shader_engine_*_{dispatch_id}.att"):
        m = pat.fullmatch(f.name)
        if m:
            out.add(m.group(1))
    return out


def _prefer(files: list[Path], prefixes: set[str]) -> list[Path]:
    """``files`` with those of the preferred run prefixes first (stable)."""
    return sorted(files, key=lambda p: 0 if _run_prefix(p.name) in prefixes else 1)


# --------------------------------------------------------------------------- target sources


def isa_target_evidence(isa_lines) -> tuple[str | None, list[str], str]:
    """Target implied by the instructions alone (docs/architecture.md)."""
    mnems = {mnemonic(t) for t in isa_lines if t and not t.startswith(";")}
    g950 = sorted(m for m in mnems if m.startswith(GFX950_ONLY_MNEMONICS))
    g942 = sorted(m for m in mnems if m.startswith(GFX942_ONLY_MNEMONICS))
    if g950 and not g942:
        return "gfx950", g950[:8], f"gfx950-only instructions present ({', '.join(g950[:3])})"
    if g942 and not g950:
        return "gfx942", g942[:8], f"instructions removed in gfx950 present ({', '.join(g942[:3])})"
    mods94 = mods90 = False
    for t in isa_lines:
        m = mnemonic(t)
        if m.startswith(("global_", "buffer_", "flat_", "scratch_")):
            words = set(operands(t).replace(",", " ").split())
            mods94 |= bool(words & set(GFX94X_MEMORY_MODIFIERS))
            mods90 |= bool(words & set(GFX90A_MEMORY_MODIFIERS))
    if mods90 and not mods94:
        return None, ["glc/slc cache bits"], "glc/slc cache-policy bits suggest gfx90a or older, but no instruction is unique to one target"
    if mods94:
        return None, ["sc0/sc1/nt cache bits"], "sc0/sc1/nt cache-policy bits mean gfx940 or later, but no instruction tells gfx942 from gfx950"
    return None, [], "no instruction in the listing is unique to one target"


def isa_claim(code) -> Claim:
    target, evidence, reason = isa_target_evidence(code.isa)
    return Claim("isa", None, target, None, reason, evidence)


def gfxip_claim(index) -> Claim | None:
    """The family from filenames.json: ``gfxip`` (major), or ``gfxv`` "vega"
    (gfx9 and older; the rocprofv2 plugin writes only this) / "navi"."""
    if index.gfxip is not None:
        return Claim("gfxip", None, None, {"gfxip": index.gfxip}, f"filenames.json says gfxip {index.gfxip} ({index.gfxv})")
    if index.gfxv in ("vega", "navi"):
        major = 9 if index.gfxv == "vega" else None
        return Claim("gfxip", None, None, {"gfxip": major}, f"filenames.json says gfxv {index.gfxv!r} (no gfxip)")
    return None


def results_json_claim(dirs: list[Path], handle, prefixes: set[str]) -> tuple[Claim | None, object]:
    """(claim, the process object) of the first results.json whose GPU agent
    has the capture's agent handle."""
    if handle is None:
        return None, None
    for f in _prefer(_glob(dirs, "*results.json"), prefixes):
        try:
            procs = read_results_json(f)
        except AttlensError:
            continue
        for proc in procs:
            for a in proc.agents:
                if a.get("handle") == handle and a.get("type") == 2:
                    return Claim("results.json", str(f), a.get("name"), dict(a), f"{f.name}: agent handle {handle} is {a.get('name')}"), proc
    return None, None


def agent_info_claim(dirs: list[Path], prefixes: set[str], node_id=None) -> tuple[Claim | None, str]:
    """The GPUs of the run's agent_info.csv: the one GPU row of ``node_id``, or
    every GPU when they share one target. (claim, why not) when none applies."""
    for f in _prefer(_glob(dirs, "*agent_info.csv"), prefixes):
        try:
            rows = [r for r in read_agent_info(f) if r["type"] == "GPU"]
        except AttlensError:
            continue
        if not rows:
            continue
        if node_id is not None:
            mine = [r for r in rows if r["node_id"] == node_id]
            if mine:
                return Claim("agent_info", str(f), mine[0]["name"] or None, mine[0], f"{f.name}: node {node_id} is {mine[0]['name']}"), ""
        names = {r["name"] for r in rows if r["name"]}
        if len(names) == 1:
            name = names.pop()
            why = f"{f.name}: every GPU of the run is {name}"
            if _run_prefix(f.name) in prefixes:
                why += " (its run's .att files name this capture)"
            return Claim("agent_info", str(f), name, rows[0], why), ""
        return None, f"{f.name}: GPUs of different targets ({', '.join(sorted(names))}) and no results.json maps the agent handle"
    return None, ""


def sysinfo_claim(dirs: list[Path]) -> Claim | None:
    """rocprofiler-compute's sysinfo.csv beside the files (counter workloads)."""
    from attlens.io.sysinfo_csv import read_sysinfo

    for f in _glob(dirs, "sysinfo.csv"):
        try:
            info = read_sysinfo(f)
        except AttlensError:
            continue
        gpu = {"cu_count": info["cu_count"], "num_shader_banks": info["shader_engines"], "num_xcc": info["xcd"],
               "product_name": info["product"], "hbm_bw": info["hbm_peak_gbps"], "hbm_bw_source": info["hbm_peak_source"]}
        return Claim("sysinfo", str(f), info["target"], gpu, f"{f.name}: {info['product'] or 'the GPU'} is {info['target']}")
    return None


# --------------------------------------------------------------------------- resource sources


def _symbol_resources(s: dict) -> tuple:
    return (s.get("kernel_id"), s.get("group_segment_size"), s.get("arch_vgpr_count"), s.get("accum_vgpr_count"), s.get("sgpr_count"))


def _row_resources(r: dict) -> tuple:
    return (r["kernel_id"], r["lds_bytes"], r["vgpr_count"], r["agpr_count"], r["sgpr_count"])


def symbol_claim(res: Resources, results, kernel_name: str, code, needs: dict, row_key) -> None:
    """The kernel's resources from results.json's kernel_symbols (the claim's file)."""
    f, proc = results
    codeobjs = set(code.codeobj[code.instruction_mask].tolist()) if code.has_addresses else set()
    matches = [s for s in proc.kernel_symbols
               if s.get("formatted_kernel_name") == kernel_name or s.get("kernel_name") in (kernel_name, kernel_name + ".kd")]
    matches.sort(key=lambda s: 0 if s.get("code_object_id") in codeobjs else 1)
    if len({_symbol_resources(s) for s in matches}) > 1:
        fit = [s for s in matches if not _misfit(_symbol_resources(s), needs, row_key)]
        picked = fit[0] if fit else matches[0]
        _record_candidates(res, f"{Path(f).name} kernel_symbols", kernel_name,
                           [(_symbol_resources(s), s.get("kernel_id")) for s in matches], _symbol_resources(picked), needs, row_key)
        matches = [picked]
    if not matches:
        return
    s = matches[0]
    src = f"{Path(f).name} kernel_symbols"
    res.metadata_vgprs = s.get("arch_vgpr_count")
    res.metadata_agprs = s.get("accum_vgpr_count")
    res.metadata_sgprs = s.get("sgpr_count")
    res.lds_bytes = s.get("group_segment_size")
    res.scratch_bytes = s.get("private_segment_size")
    for k in ("metadata_vgprs", "metadata_agprs", "metadata_sgprs", "lds_bytes", "scratch_bytes"):
        res.sources[k] = src


def kernel_trace_claim(res: Resources, dirs: list[Path], prefixes: set[str], kernel_name: str, dispatch_id, needs: dict,
                       row_key, registers: bool) -> tuple[str | None, str]:
    """Grid, workgroup and duration (and, when ``registers``, the register
    and LDS counts) of the traced dispatch from a kernel_trace.csv. Returns
    (the file used or None, how its row was matched)."""
    trace_row, trace_file, how, durations, same = None, None, "", [], []
    if not kernel_name:
        return None, ""
    for f in _prefer(_glob(dirs, "*kernel_trace.csv"), prefixes):
        try:
            rows = [r for r in read_kernel_trace(f) if r["kernel_name"] == kernel_name]
        except AttlensError:
            continue
        if not rows:
            continue
        rows, pick_note = _fitting_rows(res, f.name, kernel_name, rows, needs, row_key)
        exact = [r for r in rows if r["dispatch_id"] == dispatch_id]
        if exact:
            trace_row, trace_file, how = exact[0], f, f"dispatch {dispatch_id} of {kernel_name}{pick_note}"
            durations = [exact[0]]
            # every dispatch of the same name and grid in the run: the plan's duration is their
            # median (one dispatch can be an outlier; analysis/dispatch_facts.py names them)
            same = [r for r in rows if (r["grid"], r["workgroup"]) == (exact[0]["grid"], exact[0]["workgroup"])]
            break
        shapes = {(r["grid"], r["workgroup"]) for r in rows}
        if len(shapes) == 1:
            trace_row, trace_file, how = rows[0], f, f"all {len(rows)} dispatches of {kernel_name}{pick_note} share one shape"
            durations = same = rows
            break
        res.warnings.append(f"{f.name}: {len(rows)} dispatches of the kernel with {len(shapes)} different grid shapes; grid unknown")
    if trace_row is None:
        return None, ""
    src = f"{trace_file.name} ({how})"
    res.grid, res.workgroup = trace_row["grid"], trace_row["workgroup"]
    res.sources["grid"] = res.sources["workgroup"] = src
    timed = [(r["dispatch_id"], r["end_ns"] - r["start_ns"]) for r in same
             if r["start_ns"] is not None and r["end_ns"] is not None and r["end_ns"] > r["start_ns"]]
    res.run_dispatches = [{"dispatch_id": i, "duration_ns": ns} for i, ns in timed]
    res.sources["run_dispatches"] = trace_file.name
    spans = sorted(r["end_ns"] - r["start_ns"] for r in durations if r["start_ns"] is not None and r["end_ns"] is not None and r["end_ns"] > r["start_ns"])
    if spans:
        res.duration_ns = spans[len(spans) // 2]
        res.sources["duration_ns"] = (
            f"{trace_file.name}: End_Timestamp - Start_Timestamp of dispatch {durations[0]['dispatch_id']}"
            if len(durations) == 1
            else f"{trace_file.name}: median End_Timestamp - Start_Timestamp of {len(spans)} dispatches of the same shape"
        )
    if registers:
        res.metadata_vgprs = trace_row["vgpr_count"]
        res.metadata_agprs = trace_row["agpr_count"]
        res.metadata_sgprs = trace_row["sgpr_count"]
        res.lds_bytes = trace_row["lds_bytes"]
        res.scratch_bytes = trace_row["scratch_bytes"]
        for k in ("metadata_vgprs", "metadata_agprs", "metadata_sgprs", "lds_bytes", "scratch_bytes"):
            res.sources[k] = src
    return str(trace_file), how


def occupancy_claim(res: Resources, occupancy, kernel_name: str) -> bool:
    """Resources from the v3.1.0 occupancy.json dispatch records of the traced
    kernel (decoder dispatch struct: ``vgprs`` includes AGPRs; ``thread_dim_*``
    is the workgroup), used only for what no run file gave. True if used."""
    if occupancy is None or not occupancy.dispatch_events:
        return False
    recs = [e for e in occupancy.dispatch_events if kernel_name and e.get("kernel_name") == kernel_name]
    if not recs:
        return False
    shapes = {(e["vgprs"], e["sgprs"], e["lds_size"], e["thread_dim_x"], e["thread_dim_y"], e["thread_dim_z"]) for e in recs}
    if len(shapes) > 1:
        res.notes.append(f"occupancy.json: {len(recs)} dispatch records of {kernel_name} with {len(shapes)} different resources; not used")
        return False
    e = recs[0]
    src = f"occupancy.json dispatch record of {kernel_name} ({len(recs)} record(s))"
    dims = (e["thread_dim_x"], e["thread_dim_y"], e["thread_dim_z"])
    if res.workgroup is None and all(isinstance(v, int) and v > 0 for v in dims):
        res.workgroup = dims
        res.sources["workgroup"] = src
    if res.metadata_vgprs is None and res.unified_vgprs is None and e["vgprs"]:
        res.unified_vgprs = e["vgprs"]
        res.sources["unified_vgprs"] = src + ": vgprs (arch VGPRs and AGPRs together)"
    if res.metadata_sgprs is None and e["sgprs"]:
        res.metadata_sgprs = e["sgprs"]
        res.sources["metadata_sgprs"] = src
    if res.lds_bytes is None and e["lds_size"] is not None:
        res.lds_bytes = e["lds_size"]
        res.sources["lds_bytes"] = src + ": lds_size"
    return True


# --------------------------------------------------------------------------- combining


def _apply_overrides(row: dict, agent: dict | None) -> dict:
    facts = dict(row)
    if agent:
        for key, src in (
            ("cu_count", "cu_count"),
            ("max_waves_per_simd", "max_waves_per_simd"),
            ("simds_per_cu", "simd_per_cu"),
            ("wave_size", "wave_front_size"),
            ("shader_engines", "num_shader_banks"),
            ("xcc_count", "num_xcc"),
        ):
            v = agent.get(src)
            if isinstance(v, int) and v > 0:
                facts[key] = v
        kb = agent.get("lds_size_kb")
        if isinstance(kb, int) and kb > 0:
            facts["lds_bytes_per_cu"] = kb * 1024
        bw = agent.get("hbm_bw")
        if isinstance(bw, (int, float)) and bw > 0:
            # the profiled GPU's own peak (a partition or an APU differs from the family's reference product)
            product = agent.get("product_name") or ""
            facts["hbm_peak_gbps"] = {"": float(bw), **({product: float(bw)} if product else {})}
            facts["hbm_peak_source"] = agent.get("hbm_bw_source") or "sysinfo.csv"
    return facts


def _waitcnt_model_for_gfxip(gfxip: int | None) -> str:
    # RCV's dispatch: 9 → gfx9, 10/11 → gfx10, anything else → gfx12 (att-format.md §4.3)
    if gfxip is not None and gfxip <= 9:
        return "gfx9"
    if gfxip in (10, 11):
        return "gfx10"
    return "gfx12"


def _pick_target(claims: list[Claim], gfxip: Claim | None, warnings: list[str], miss: str) -> tuple[Claim | None, str, list[str]]:
    """The first claim naming a target (the list is in order of trust), the
    reason, and the ISA evidence; a warning when the ISA contradicts it."""
    isa = next(c for c in claims if c.source == "isa")
    chosen = next((c for c in claims if c.target and c.source != "isa"), None)
    if chosen is not None:
        if isa.target is not None and resolve_target(isa.target) != resolve_target(chosen.target):
            warnings.append(f"metadata says {chosen.target} but the ISA contains {isa.target}-only instructions ({', '.join(isa.evidence[:3])})")
        return chosen, chosen.reason, []
    if isa.target is not None:
        return isa, (miss + "; " if miss else "") + isa.reason, isa.evidence
    files = [c for c in claims if c.source != "isa"]
    reason = (miss + "; " if miss else "") + (
        isa.reason if files or miss else f"no rocprofv3 agent_info.csv/results.json beside the capture, and {isa.reason}")
    if gfxip is not None:
        reason += "; " + gfxip.reason
    return None, reason, isa.evidence


def resolve_arch_and_resources(capture, rocprof_dir, kernel_name, code, index, handle, dispatch_id, warnings, occupancy=None):
    """(ArchInfo, Resources, files used) of a capture from every source of
    facts (module doc); ``warnings`` receives contradictions."""
    dirs = search_dirs(capture, rocprof_dir)
    prefixes = att_run_prefixes(dirs, handle, dispatch_id)
    used: list[str] = []

    results, proc = results_json_claim(dirs, handle, prefixes)
    node = results.gpu.get("node_id") if results else None
    agent, miss = agent_info_claim(dirs, prefixes | ({_run_prefix(Path(results.file).name)} if results else set()), node)
    sysinfo = sysinfo_claim(dirs) if results is None and agent is None else None
    gfxip = gfxip_claim(index)
    claims = [c for c in (results, agent, sysinfo) if c is not None] + [isa_claim(code)]
    chosen, reason, evidence = _pick_target(claims, gfxip, warnings, miss)
    target = chosen.target if chosen else None
    gpu = dict(chosen.gpu or {}) if chosen else {}
    if chosen is results and agent is not None and agent.gpu.get("node_id") == node:
        gpu.update({k: v for k, v in agent.gpu.items() if v not in (None, "", 0)})
    for c in (results, agent, sysinfo):
        if c is not None and c.target and (c is chosen or (chosen is results and c is agent)):
            used.append(c.file)

    row_key = resolve_target(target)
    facts = _apply_overrides(ARCH_TABLE[row_key], gpu) if row_key else None
    if target is not None and row_key is None:
        reason += f"; {target} has no row in the architecture table"
    gfx_major = gfxip.gpu.get("gfxip") if gfxip else None
    arch = ArchInfo(
        target=target,
        row_key=row_key,
        facts=facts,
        waitcnt_model=facts["waitcnt_model"] if facts else _waitcnt_model_for_gfxip(gfx_major),
        source=chosen.source if chosen else "unknown",
        reason=reason,
        evidence=evidence,
        product=gpu.get("product_name") or None,
        clock_mhz=gpu.get("max_engine_clk_mhz") or None,
        claims=[c.to_dict() for c in claims] + ([gfxip.to_dict()] if gfxip else []),
    )

    res = Resources(dispatch_id=dispatch_id, agent_handle=handle)
    if dispatch_id is not None:
        res.sources["dispatch_id"] = "directory name"
    use = scan_registers(code.isa)
    res.isa_vgprs, res.isa_agprs, res.isa_sgprs = use.vgprs, use.agprs, use.sgprs
    needs = _code_needs(code, use, row_key)
    if results is not None and kernel_name:
        symbol_claim(res, (results.file, proc), kernel_name, code, needs, row_key)
    trace_file, how = kernel_trace_claim(res, dirs, prefixes, kernel_name, dispatch_id, needs, row_key,
                                         registers="metadata_vgprs" not in res.sources)
    if trace_file is not None:
        used.append(trace_file)
        # Files of one rocprofv3 run share a prefix (-o PFX → PFX_agent_info.csv, PFX_kernel_trace.csv ...).
        run_prefixes = {_run_prefix(Path(u).name) for u in used if not u.endswith("kernel_trace.csv")} | prefixes
        if _run_prefix(Path(trace_file).name) not in run_prefixes:
            res.notes.append(
                f"grid and workgroup come from {Path(trace_file).name}, which may be a different run than the capture "
                f"(matched by {how})"
            )
    occupancy_claim(res, occupancy, kernel_name)
    _registers(res, needs, row_key)
    return arch, res, used


def _registers(res: Resources, needs: dict, row_key) -> None:
    """Registers: the larger of the ISA scan and the metadata (rocprofv3
    under-reports on gfx950)."""
    res.arch_vgprs = max(res.isa_vgprs, res.metadata_vgprs or 0) or None
    res.agprs = max(res.isa_agprs, res.metadata_agprs or 0)
    res.sgprs = res.metadata_sgprs if res.metadata_sgprs else (res.isa_sgprs + 6 if res.isa_sgprs else None)
    res.sources["arch_vgprs"] = "max(ISA scan, metadata)"
    res.sources["agprs"] = "max(ISA scan, metadata)"
    res.sources["sgprs"] = res.sources.get("metadata_sgprs", "ISA scan + 6 (VCC, FLAT_SCRATCH, XNACK)")
    if res.unified_vgprs is not None and res.metadata_vgprs is None:
        if needs["isa_unified"] > res.unified_vgprs:
            res.warnings.append(f"the ISA uses {needs['isa_unified']} VGPR+AGPR registers, more than the {res.unified_vgprs} "
                             f"of {res.sources.get('unified_vgprs')}; the ISA scan is used")
            res.unified_vgprs = needs["isa_unified"]
        return
    if row_key == "gfx950" and res.metadata_vgprs:
        # rocprofv3 computes (granulated_vgpr + 1) x 4 on gfx950, where the
        # hardware granule is 8: the reported count is half the unified
        # VGPR+AGPR allocation (docs/analysis.md, measured on the shared captures).
        reported2 = 2 * res.metadata_vgprs + (res.metadata_agprs or 0)
        isa_unified = needs["isa_unified"]
        res.unified_vgprs = max(reported2, isa_unified)
        res.sources["unified_vgprs"] = (
            f"max(2 x reported VGPR_Count {res.metadata_vgprs} = {reported2}, ISA scan v{res.isa_vgprs - 1 if res.isa_vgprs else '-'}"
            f"{f' + {res.isa_agprs} AGPRs' if res.isa_agprs else ''} = {isa_unified} registers)"
        )
        res.notes.append(
            f"rocprofv3 reports {res.metadata_vgprs} VGPRs on gfx950: the metadata is under-reported (half the unified "
            f"VGPR+AGPR allocation, docs/analysis.md, Occupancy); occupancy uses {res.unified_vgprs} = {res.sources['unified_vgprs']}"
        )
        if isa_unified > reported2:
            res.warnings.append(
                f"the ISA uses {isa_unified} VGPR+AGPR registers, more than 2 x the reported VGPR_Count ({reported2}): "
                "the metadata does not describe this code object; the ISA scan is used"
            )
    elif row_key == "gfx950" and res.metadata_vgprs is not None and res.isa_vgprs > res.metadata_vgprs:
        res.notes.append(
            f"rocprofv3 reports {res.metadata_vgprs} VGPRs on gfx950 but the ISA uses v{res.isa_vgprs - 1}: "
            "the metadata is under-reported on gfx950 (docs/analysis.md, Occupancy); the ISA scan is used"
        )


# LDS-unit instructions that use no LDS memory (cross-lane data movement).
_NO_LDS_MEMORY = ("ds_swizzle", "ds_bpermute", "ds_permute", "ds_nop")


def _code_needs(code, use, row_key) -> dict:
    """What the listed code requires of the kernel that runs it."""
    lds_ops = sorted(
        {m for m in (mnemonic(t) for t in code.isa if t and not t.startswith(";")) if (m.startswith("ds_") and not m.startswith(_NO_LDS_MEMORY)) or m.startswith("global_load_lds")}
    )
    unified = (-(-use.vgprs // 4) * 4 + use.agprs) if use.agprs else use.vgprs
    return {"lds_ops": lds_ops, "isa_vgprs": use.vgprs, "isa_agprs": use.agprs, "isa_unified": unified, "isa_sgprs": use.sgprs}


def _misfit(resources: tuple, needs: dict, row_key) -> list[str]:
    """Why a kernel with these resources cannot be the one that ran the listed code."""
    _kid, lds, vgprs, agprs, sgprs = resources
    why = []
    if needs["lds_ops"] and lds == 0:
        why.append(f"0 B LDS, but the code executes {needs['lds_ops'][0]}")
    if vgprs is not None:
        # gfx950: the reported count is half the allocation (see _registers)
        have = 2 * vgprs + (agprs or 0) if row_key == "gfx950" else vgprs
        need = needs["isa_unified"] if row_key == "gfx950" else needs["isa_vgprs"]
        if need > have:
            why.append(f"{vgprs} VGPRs reported ({have} usable), but the code uses {need}")
    if sgprs is not None and needs["isa_sgprs"] > sgprs:
        why.append(f"{sgprs} SGPRs reported, but the code uses s{needs['isa_sgprs'] - 1}")
    return why


def _describe(resources: tuple) -> str:
    kid, lds, vgprs, agprs, sgprs = resources
    return f"kernel id {kid}: LDS {lds} B, {vgprs} VGPRs{f' + {agprs} AGPRs' if agprs else ''}, {sgprs} SGPRs"


def _record_candidates(res, where, kernel_name, cands, picked, needs, row_key) -> None:
    """Several kernels share the traced kernel's name: say which was picked and why."""
    seen, rows = set(), []
    for r, _kid in cands:
        if r in seen:
            continue
        seen.add(r)
        rows.append({"where": where, "kernel_id": r[0], "lds_bytes": r[1], "vgprs": r[2], "agprs": r[3], "sgprs": r[4],
                     "misfit": _misfit(r, needs, row_key), "picked": r == picked})
    res.candidates.extend(rows)
    if picked is None:
        fitting = [x for x in rows if not x["misfit"]]
        res.warnings.append(
            f"{where}: {len(rows)} kernels are named {kernel_name} and {len(fitting) or 'none'} of them fit the code "
            "(LDS, VGPR and SGPR needs of the listing): their dispatches are not told apart"
        )
        return
    others = [x for x in rows if not x["picked"]]
    why = "; ".join(f"kernel id {x['kernel_id']}: {', '.join(x['misfit'])}" for x in others if x["misfit"])
    res.notes.append(
        f"{where}: {len(rows)} kernels are named {kernel_name}; picked {_describe(picked)}"
        + (f" (the others cannot run this code: {why})" if why else " (none is ruled out by the code; the first fitting one is used)")
    )


def _fitting_rows(res, fname, kernel_name, rows, needs, row_key) -> tuple[list[dict], str]:
    """Keep the kernel-trace rows of the kernel whose resources fit the code,
    when several kernels share the name."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault(_row_resources(r), []).append(r)
    if len(groups) < 2:
        return rows, ""
    fit = [k for k in groups if not _misfit(k, needs, row_key)]
    if len(fit) != 1:
        # Nothing (or more than one) fits: the rows cannot be told apart by the code.
        _record_candidates(res, fname, kernel_name, [(k, k[0]) for k in groups], None, needs, row_key)
        return rows, ""
    _record_candidates(res, fname, kernel_name, [(k, k[0]) for k in groups], fit[0], needs, row_key)
    return groups[fit[0]], f" (kernel id {fit[0][0]})"
