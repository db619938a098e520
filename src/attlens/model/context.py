"""The capture's context: exact GPU target and kernel resources.

Looked up, in order, in the rocprofv3 outputs of the same run found beside the
capture (the directory itself, its parent and grandparent, and a ``rocprofv3/``
folder in either) or in ``--rocprof-dir``; then in the ISA itself. Every value
records where it came from.
"""

from __future__ import annotations

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
from attlens.model.rundirs import RUN_OUTPUT_SUFFIXES, search_dirs


def _run_prefix(filename: str) -> str:
    for suffix in RUN_OUTPUT_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)].rstrip("_")
    return filename


def _glob(dirs: list[Path], pattern: str) -> list[Path]:
    files = []
    for d in dirs:
        files.extend(sorted(d.glob(pattern)))
    return files


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


def _apply_overrides(row: dict, agent: dict | None) -> dict:
    facts = dict(row)
    if agent:
        for key, src in (
            ("cu_count", "cu_count"),
            ("max_waves_per_simd", "max_waves_per_simd"),
            ("simds_per_cu", "simd_per_cu"),
            ("wave_size", "wave_front_size"),
            ("shader_engines", "num_shader_banks"),
        ):
            v = agent.get(src)
            if isinstance(v, int) and v > 0:
                facts[key] = v
        kb = agent.get("lds_size_kb")
        if isinstance(kb, int) and kb > 0:
            facts["lds_bytes_per_cu"] = kb * 1024
    return facts


def _waitcnt_model_for_gfxip(gfxip: int | None) -> str:
    # RCV's dispatch: 9 → gfx9, 10/11 → gfx10, anything else → gfx12 (att-format.md §4.3)
    if gfxip == 9:
        return "gfx9"
    if gfxip in (10, 11):
        return "gfx10"
    return "gfx12"


def resolve_arch_and_resources(capture, rocprof_dir, kernel_name, code, index, handle, dispatch_id, warnings):
    dirs = search_dirs(capture, rocprof_dir)
    used: list[str] = []

    # --- results.json of the ATT run (agent handle → GPU, kernel symbol) ---
    results_match = None  # (path, proc, agent)
    for f in _glob(dirs, "*results.json"):
        try:
            procs = read_results_json(f)
        except AttlensError:
            continue
        for proc in procs:
            for a in proc.agents:
                if handle is not None and a.get("handle") == handle and a.get("type") == 2:
                    results_match = (f, proc, a)
                    break
            if results_match:
                break
        if results_match:
            break

    # --- agent_info.csv (exact target name of the GPUs of that run) ---
    agent_rows = None
    agent_file = None
    candidates = _glob(dirs, "*agent_info.csv")
    if results_match is not None:
        prefix = results_match[0].name[: -len("results.json")]
        candidates.sort(key=lambda p: 0 if p.name == f"{prefix}agent_info.csv" else 1)
    for f in candidates:
        try:
            rows = [r for r in read_agent_info(f) if r["type"] == "GPU"]
        except AttlensError:
            continue
        if rows:
            agent_rows, agent_file = rows, f
            break

    target = None
    source = "unknown"
    reason = ""
    evidence: list[str] = []
    agent = None
    if results_match is not None:
        f, proc, a = results_match
        target = a.get("name")
        agent = dict(a)
        source = "results.json"
        reason = f"{f.name}: agent handle {handle} is {target}"
        used.append(str(f))
        if agent_rows:
            node = a.get("node_id")
            for r in agent_rows:
                if r["node_id"] == node:
                    agent.update({k: v for k, v in r.items() if v not in (None, "", 0)})
    elif agent_rows:
        names = {r["name"] for r in agent_rows if r["name"]}
        if len(names) == 1:
            target = names.pop()
            agent = agent_rows[0]
            source = "agent_info"
            reason = f"{agent_file.name}: every GPU of the run is {target}"
            used.append(str(agent_file))
        else:
            reason = f"{agent_file.name}: GPUs of different targets ({', '.join(sorted(names))}) and no results.json maps agent handle {handle}"
    if agent_file is not None and str(agent_file) not in used and target is not None:
        used.append(str(agent_file))

    isa_target, isa_evidence, isa_reason = isa_target_evidence(code.isa)
    if target is None:
        if isa_target is not None:
            target, source, evidence = isa_target, "isa", isa_evidence
            reason = (reason + "; " if reason else "") + isa_reason
        else:
            reason = (reason + "; " if reason else "") + (
                f"no rocprofv3 agent_info.csv/results.json beside the capture, and {isa_reason}"
                if not agent_rows
                else isa_reason
            )
            evidence = isa_evidence
    elif isa_target is not None and resolve_target(isa_target) != resolve_target(target):
        warnings.append(f"metadata says {target} but the ISA contains {isa_target}-only instructions ({', '.join(isa_evidence[:3])})")

    row_key = resolve_target(target)
    facts = _apply_overrides(ARCH_TABLE[row_key], agent) if row_key else None
    if target is None and index.gfxip is not None:
        reason += f"; filenames.json says gfxip {index.gfxip} ({index.gfxv})"
    if target is not None and row_key is None:
        reason += f"; {target} has no row in the architecture table"
    model = facts["waitcnt_model"] if facts else _waitcnt_model_for_gfxip(index.gfxip)
    arch = ArchInfo(
        target=target,
        row_key=row_key,
        facts=facts,
        waitcnt_model=model,
        source=source,
        reason=reason,
        evidence=evidence,
        product=(agent or {}).get("product_name") or None,
        clock_mhz=(agent or {}).get("max_engine_clk_mhz") or None,
    )

    # --- resources ---
    res = Resources(dispatch_id=dispatch_id, agent_handle=handle)
    if dispatch_id is not None:
        res.sources["dispatch_id"] = "directory name"
    use = scan_registers(code.isa)
    res.isa_vgprs, res.isa_agprs, res.isa_sgprs = use.vgprs, use.agprs, use.sgprs
    needs = _code_needs(code, use, row_key)
    symbol = None
    if results_match is not None and kernel_name:
        codeobjs = set(code.codeobj[code.instruction_mask].tolist())
        matches = [
            s
            for s in results_match[1].kernel_symbols
            if s.get("formatted_kernel_name") == kernel_name or s.get("kernel_name") in (kernel_name, kernel_name + ".kd")
        ]
        matches.sort(key=lambda s: 0 if s.get("code_object_id") in codeobjs else 1)
        if len({_symbol_resources(s) for s in matches}) > 1:
            fit = [s for s in matches if not _misfit(_symbol_resources(s), needs, row_key)]
            picked = fit[0] if fit else matches[0]
            _record_candidates(res, f"{results_match[0].name} kernel_symbols", kernel_name,
                               [(_symbol_resources(s), s.get("kernel_id")) for s in matches], _symbol_resources(picked), needs, row_key)
            matches = [picked]
        symbol = matches[0] if matches else None
    if symbol is not None:
        src = f"{results_match[0].name} kernel_symbols"
        res.metadata_vgprs = symbol.get("arch_vgpr_count")
        res.metadata_agprs = symbol.get("accum_vgpr_count")
        res.metadata_sgprs = symbol.get("sgpr_count")
        res.lds_bytes = symbol.get("group_segment_size")
        res.scratch_bytes = symbol.get("private_segment_size")
        for k in ("metadata_vgprs", "metadata_agprs", "metadata_sgprs", "lds_bytes", "scratch_bytes"):
            res.sources[k] = src

    trace_row, trace_file, how, durations = None, None, "", []
    if kernel_name:
        for f in _glob(dirs, "*kernel_trace.csv"):
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
                break
            shapes = {(r["grid"], r["workgroup"]) for r in rows}
            if len(shapes) == 1:
                trace_row, trace_file, how = rows[0], f, f"all {len(rows)} dispatches of {kernel_name}{pick_note} share one shape"
                durations = rows
                break
            res.warnings.append(f"{f.name}: {len(rows)} dispatches of the kernel with {len(shapes)} different grid shapes; grid unknown")
    if trace_row is not None:
        used.append(str(trace_file))
        src = f"{trace_file.name} ({how})"
        res.grid, res.workgroup = trace_row["grid"], trace_row["workgroup"]
        res.sources["grid"] = res.sources["workgroup"] = src
        spans = sorted(r["end_ns"] - r["start_ns"] for r in durations if r["start_ns"] is not None and r["end_ns"] is not None and r["end_ns"] > r["start_ns"])
        if spans:
            res.duration_ns = spans[len(spans) // 2]
            res.sources["duration_ns"] = (
                f"{trace_file.name}: End_Timestamp - Start_Timestamp of dispatch {durations[0]['dispatch_id']}"
                if len(durations) == 1
                else f"{trace_file.name}: median End_Timestamp - Start_Timestamp of {len(spans)} dispatches of the same shape"
            )
        if symbol is None:
            res.metadata_vgprs = trace_row["vgpr_count"]
            res.metadata_agprs = trace_row["agpr_count"]
            res.metadata_sgprs = trace_row["sgpr_count"]
            res.lds_bytes = trace_row["lds_bytes"]
            res.scratch_bytes = trace_row["scratch_bytes"]
            for k in ("metadata_vgprs", "metadata_agprs", "metadata_sgprs", "lds_bytes", "scratch_bytes"):
                res.sources[k] = src
        # Files of one rocprofv3 run share a prefix (-o PFX → PFX_agent_info.csv, PFX_kernel_trace.csv ...).
        run_prefixes = {_run_prefix(Path(u).name) for u in used if not u.endswith("kernel_trace.csv")}
        trace_prefix = _run_prefix(trace_file.name)
        if trace_prefix not in run_prefixes:
            res.notes.append(
                f"grid and workgroup come from {trace_file.name}, which may be a different run than the capture (matched by {how})"
            )

    # Registers: the larger of the ISA scan and the metadata (rocprofv3 under-reports on gfx950).
    res.arch_vgprs = max(res.isa_vgprs, res.metadata_vgprs or 0) or None
    res.agprs = max(res.isa_agprs, res.metadata_agprs or 0)
    res.sgprs = res.metadata_sgprs if res.metadata_sgprs else (res.isa_sgprs + 6 if res.isa_sgprs else None)
    res.sources["arch_vgprs"] = "max(ISA scan, metadata)"
    res.sources["agprs"] = "max(ISA scan, metadata)"
    res.sources["sgprs"] = res.sources.get("metadata_sgprs", "ISA scan + 6 (VCC, FLAT_SCRATCH, XNACK)")
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
    return arch, res, used


# LDS-unit instructions that use no LDS memory (cross-lane data movement).
_NO_LDS_MEMORY = ("ds_swizzle", "ds_bpermute", "ds_permute", "ds_nop")


def _code_needs(code, use, row_key) -> dict:
    """What the listed code requires of the kernel that runs it."""
    lds_ops = sorted(
        {m for m in (mnemonic(t) for t in code.isa if t and not t.startswith(";")) if (m.startswith("ds_") and not m.startswith(_NO_LDS_MEMORY)) or m.startswith("global_load_lds")}
    )
    unified = (-(-use.vgprs // 4) * 4 + use.agprs) if use.agprs else use.vgprs
    return {"lds_ops": lds_ops, "isa_vgprs": use.vgprs, "isa_agprs": use.agprs, "isa_unified": unified, "isa_sgprs": use.sgprs}


def _symbol_resources(s: dict) -> tuple:
    return (s.get("kernel_id"), s.get("group_segment_size"), s.get("arch_vgpr_count"), s.get("accum_vgpr_count"), s.get("sgpr_count"))


def _row_resources(r: dict) -> tuple:
    return (r["kernel_id"], r["lds_bytes"], r["vgpr_count"], r["agpr_count"], r["sgpr_count"])


def _misfit(resources: tuple, needs: dict, row_key) -> list[str]:
    """Why a kernel with these resources cannot be the one that ran the listed code."""
    _kid, lds, vgprs, agprs, sgprs = resources
    why = []
    if needs["lds_ops"] and lds == 0:
        why.append(f"0 B LDS, but the code executes {needs['lds_ops'][0]}")
    if vgprs is not None:
        # gfx950: the reported count is half the allocation (see resolve_arch_and_resources)
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
