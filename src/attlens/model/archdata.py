"""Per-target architecture facts: the one table every analysis reads.

Sources (see docs/architecture.md for the full list and what is inferred):
LLVM AMDGPU ``AMDGPUBaseInfo`` (total/granule of VGPRs and SGPRs, 800 SGPRs
per SIMD on GFX8-GFX9, no SGPR limit on GFX10+, 10 waves per SIMD before
gfx90a, 8 on gfx90a and later), the CDNA3/CDNA4 ISA guides (unified 512-entry
VGPR+AGPR file per SIMD lane, 8 waves per SIMD), the ROCm GPU specifications
table (MI100: 120 CUs, 64 KiB LDS, separate 256-entry VGPR and AccVGPR
files), real rocprofv3 ``agent_info.csv`` rows (gfx950: 256 CUs, 160 KiB LDS,
8 waves per SIMD, 32 shader engines), rocprofiler-compute ``sysinfo.csv``
files (MI100 and MI200 peak HBM bandwidth) and the waitcnt encodings of each
ISA generation.
Values a capture's own metadata provides (CU count, LDS size, max waves) are
overridden by that metadata when present.
"""

from __future__ import annotations

# waitcnt counter widths: the largest count each counter field can hold.
_GFX9_WAITCNT = {"vmcnt": 63, "lgkmcnt": 15, "expcnt": 7}
_GFX11_WAITCNT = {"vmcnt": 63, "vscnt": 63, "lgkmcnt": 63, "expcnt": 7}
_GFX12_WAITCNT = {
    "loadcnt": 63,
    "storecnt": 63,
    "samplecnt": 63,
    "bvhcnt": 7,
    "dscnt": 63,
    "kmcnt": 31,
    "expcnt": 7,
}

# Columns:
#   family            CDNA / RDNA generation
#   products          marketing names, for messages
#   gfxip_major       the filenames.json "gfxip" value of this target
#   waitcnt_model     which counter simulation applies (att-format.md §4.3)
#   wave_size         native wavefront size used by compute kernels
#   simds_per_cu      SIMDs per CU (per WGP half on RDNA)
#   max_waves_per_simd hardware wave-slot limit
#   vgprs_per_simd    VGPR entries per lane available to resident waves
#   vgpr_granule      allocation granule (registers) for wave_size
#   unified_agpr      AGPRs share the VGPR pool; arch VGPRs rounded to 4 first
#   separate_agpr     AGPRs have their own file of vgprs_per_simd entries (gfx908):
#                     the larger of the two counts limits occupancy
#   max_vgprs_per_wave addressable arch VGPRs per wave (AGPRs: same again when unified)
#   lds_bytes_per_cu  LDS per CU (per WGP on RDNA)
#   lds_granule_bytes LDS allocation granule
#   sgprs_per_simd    SGPR file per SIMD, or None when SGPRs never limit occupancy
#   sgpr_granule      SGPR allocation granule
#   max_sgprs_per_wave addressable SGPRs
#   cu_count          CUs of the reference product (metadata overrides)
#   shader_engines    SEs of the reference product (metadata overrides)
#   xcc_count         XCCs (accelerator complex dies) of the reference product; the SEs are split
#                     evenly between them, SE i on XCC i // (shader_engines / xcc_count)
#                     (metadata Num_Xcc overrides: partitioned parts and APUs differ)
#   time_quantum      ATT timestamps are multiples of this many cycles
#   waitcnt_max       largest value of each waitcnt field
#   mfma_passes       passes of a dependent MFMA result by block shape (4 cycles each);
#                     a dependent MFMA or VALU read must be at least that far behind
#   hbm_peak_gbps     peak theoretical HBM bandwidth (GB/s = bytes/ns) per product,
#                     keyed by the product name rocprofv3 writes (agent_info
#                     Product_Name, "AMD Instinct MI350X"); "" = the reference
#                     product, used when the capture's product is unknown
#   hbm_peak_source   where the peaks come from
#   pc_sampling       PC-sampling methods rocprofv3 offers (rocprofiler-sdk docs: stochastic on
#                     MI300/MI350, host-trap from MI200 on; none on consumer RDNA), best first
ARCH_TABLE: dict[str, dict] = {
    "gfx908": {
        "family": "CDNA",
        "products": "MI100",
        "gfxip_major": 9,
        "waitcnt_model": "gfx9",
        "wave_size": 64,
        "simds_per_cu": 4,
        "max_waves_per_simd": 10,
        "vgprs_per_simd": 256,
        "vgpr_granule": 4,
        "unified_agpr": False,
        "separate_agpr": True,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 64 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": 800,
        "sgpr_granule": 16,
        "max_sgprs_per_wave": 102,
        "cu_count": 120,
        "shader_engines": 8,
        "xcc_count": 1,
        "time_quantum": 4,
        "waitcnt_max": _GFX9_WAITCNT,
        "mfma_passes": {"4x4": 2, "16x16": 8, "32x32": 16},
        "hbm_peak_gbps": {"": 1228.8, "AMD Instinct MI100": 1228.8},
        "hbm_peak_source": "AMD Instinct MI100 specification 1.2288 TB/s; rocprofiler-compute sysinfo.csv of an MI100: hbm_bw 1228.8 = 1200 MHz x 32 B x 32 channels",
        "pc_sampling": [],  # host-trap from MI200 on (see the column's source above)
    },
    "gfx90a": {
        "family": "CDNA2",
        "products": "MI210 / MI250 / MI250X",
        "gfxip_major": 9,
        "waitcnt_model": "gfx9",
        "wave_size": 64,
        "simds_per_cu": 4,
        "max_waves_per_simd": 8,
        "vgprs_per_simd": 512,
        "vgpr_granule": 8,
        "unified_agpr": True,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 64 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": 800,
        "sgpr_granule": 16,
        "max_sgprs_per_wave": 102,
        "cu_count": 110,
        "shader_engines": 8,
        "xcc_count": 1,
        "time_quantum": 4,
        "waitcnt_max": _GFX9_WAITCNT,
        "mfma_passes": {"4x4": 2, "16x16": 8, "32x32": 16},
        # per agent: a kernel runs on one GCD, and an MI250X/MI250 is two GCDs (two agents) of 1.6384 TB/s each
        "hbm_peak_gbps": {"": 1638.4, "AMD Instinct MI250X": 1638.4, "AMD Instinct MI250": 1638.4, "AMD Instinct MI210": 1638.4},
        "hbm_peak_source": "AMD product specifications (peak theoretical memory bandwidth, per GCD = per agent): MI250X/MI250 3.2768 TB/s over 2 GCDs, MI210 1.6384 TB/s (1 GCD); rocprofiler-compute sysinfo.csv of an MI200 agent: hbm_bw 1638.4 = 1600 MHz x 32 B x 32 channels",
        "pc_sampling": ["host_trap"],
    },
    "gfx942": {
        "family": "CDNA3",
        "products": "MI300X / MI300A / MI325X",
        "gfxip_major": 9,
        "waitcnt_model": "gfx9",
        "wave_size": 64,
        "simds_per_cu": 4,
        "max_waves_per_simd": 8,
        "vgprs_per_simd": 512,
        "vgpr_granule": 8,
        "unified_agpr": True,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 64 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": 800,
        "sgpr_granule": 16,
        "max_sgprs_per_wave": 102,
        "cu_count": 304,
        "shader_engines": 32,
        "xcc_count": 8,
        "time_quantum": 4,
        "waitcnt_max": _GFX9_WAITCNT,
        "mfma_passes": {"4x4": 2, "16x16": 8, "32x32": 16},
        "hbm_peak_gbps": {"": 5300.0, "AMD Instinct MI300X": 5300.0, "AMD Instinct MI300A": 5300.0, "AMD Instinct MI325X": 6000.0},
        "hbm_peak_source": "AMD product specifications (peak theoretical memory bandwidth): MI300X/MI300A 5.3 TB/s, MI325X 6.0 TB/s; rocprof-compute computes 5,324.8 GB/s for MI300X (1300 MHz x 32 B x 128 channels; docs/architecture.md)",
        "pc_sampling": ["stochastic", "host_trap"],
    },
    "gfx950": {
        "family": "CDNA4",
        "products": "MI350X / MI355X",
        "gfxip_major": 9,
        "waitcnt_model": "gfx9",
        "wave_size": 64,
        "simds_per_cu": 4,
        "max_waves_per_simd": 8,
        "vgprs_per_simd": 512,
        "vgpr_granule": 8,
        "unified_agpr": True,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 160 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": 800,
        "sgpr_granule": 16,
        "max_sgprs_per_wave": 102,
        "cu_count": 256,
        "shader_engines": 32,
        "xcc_count": 8,
        "time_quantum": 4,
        "waitcnt_max": _GFX9_WAITCNT,
        "mfma_passes": {"4x4": 2, "16x16": 8, "32x32": 16},
        "hbm_peak_gbps": {"": 8000.0, "AMD Instinct MI350X": 8000.0, "AMD Instinct MI355X": 8000.0},
        "hbm_peak_source": "AMD product specifications (peak theoretical memory bandwidth): MI350X/MI355X 8.0 TB/s HBM3E",
        "pc_sampling": ["stochastic", "host_trap"],
    },
    "gfx11": {
        "family": "RDNA3 / RDNA3.5",
        "products": "Radeon RX 7900 (gfx1100), Ryzen AI Max (gfx1151)",
        "gfxip_major": 11,
        "waitcnt_model": "gfx10",
        "wave_size": 32,
        "simds_per_cu": 2,
        "max_waves_per_simd": 16,
        "vgprs_per_simd": 1536,
        "vgpr_granule": 24,
        "unified_agpr": False,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 64 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": None,
        "sgpr_granule": 8,
        "max_sgprs_per_wave": 106,
        "cu_count": None,
        "shader_engines": None,
        "xcc_count": 1,
        "time_quantum": 1,
        "waitcnt_max": _GFX11_WAITCNT,
        "mfma_passes": {"16x16": 4},
        "hbm_peak_gbps": None,
        "hbm_peak_source": "varies by product (GDDR6 / LPDDR5X): not tabulated",
        "pc_sampling": [],
    },
    "gfx12": {
        "family": "RDNA4",
        "products": "Radeon RX 9070 (gfx1201)",
        "gfxip_major": 12,
        "waitcnt_model": "gfx12",
        "wave_size": 32,
        "simds_per_cu": 2,
        "max_waves_per_simd": 16,
        "vgprs_per_simd": 1536,
        "vgpr_granule": 24,
        "unified_agpr": False,
        "max_vgprs_per_wave": 256,
        "lds_bytes_per_cu": 64 * 1024,
        "lds_granule_bytes": 512,
        "sgprs_per_simd": None,
        "sgpr_granule": 8,
        "max_sgprs_per_wave": 106,
        "cu_count": None,
        "shader_engines": None,
        "xcc_count": 1,
        "time_quantum": 1,
        "waitcnt_max": _GFX12_WAITCNT,
        "mfma_passes": {"16x16": 4},
        "hbm_peak_gbps": None,
        "hbm_peak_source": "varies by product (GDDR6): not tabulated",
        "pc_sampling": [],
    },
}

# Exact target names that share a row.
TARGET_ALIASES = {
    "gfx940": "gfx942",
    "gfx941": "gfx942",
    "gfx1100": "gfx11",
    "gfx1101": "gfx11",
    "gfx1102": "gfx11",
    "gfx1103": "gfx11",
    "gfx1150": "gfx11",
    "gfx1151": "gfx11",
    "gfx1152": "gfx11",
    "gfx1200": "gfx12",
    "gfx1201": "gfx12",
}

# ISA evidence for the exact target when no metadata names it
# (docs/architecture.md "Target from ISA evidence"). Prefixes of mnemonics.
# Not MFMA names alone: each list also holds non-matrix instructions.
GFX950_ONLY_MNEMONICS = (
    "v_mfma_scale_f32_",  # block-scaled MX MFMA
    "v_mfma_f32_16x16x128_f8f6f4",
    "v_mfma_f32_32x32x64_f8f6f4",
    "v_mfma_f32_16x16x32_bf16",
    "v_mfma_f32_16x16x32_f16",
    "v_mfma_f32_32x32x16_bf16",
    "v_mfma_f32_32x32x16_f16",
    "v_cvt_scalef32_",  # MX scale conversions
    "v_cvt_pk_f16_f32",
    "v_cvt_pk_bf16_f32",
    "v_permlane16_swap_b32",
    "v_permlane32_swap_b32",
    "v_prng_b32",
    "v_bitop3_",
    "v_maximum3_f32",
    "v_minimum3_f32",
    "v_ashr_pk_",
    "ds_read_b64_tr_",
    "ds_read_b96_tr_",
    "global_load_lds_dwordx3",
    "global_load_lds_dwordx4",
)
# Present on gfx940/941/942, removed on gfx950 (the xf32 MFMAs).
GFX942_ONLY_MNEMONICS = (
    "v_mfma_f32_16x16x8_xf32",
    "v_mfma_f32_32x32x4_xf32",
    "v_mfma_f32_16x16x8xf32",
    "v_mfma_f32_32x32x4xf32",
)
# gfx940+ memory instructions carry sc0/sc1/nt cache-policy bits; gfx90a uses glc/slc.
GFX94X_MEMORY_MODIFIERS = ("sc0", "sc1", "nt")
GFX90A_MEMORY_MODIFIERS = ("glc", "slc")


def hbm_peak(facts: dict | None, product: str | None) -> tuple[float | None, str | None, str]:
    """(peak GB/s, the product it is for, source) of a target row; the
    reference product's peak when ``product`` is unknown or not tabulated."""
    table = (facts or {}).get("hbm_peak_gbps")
    source = (facts or {}).get("hbm_peak_source") or ""
    if not table:
        return None, None, source or "no peak bandwidth for this target"
    if product and product in table:
        return table[product], product, source
    ref = next((k for k, v in table.items() if k and v == table[""]), None)
    note = f"{product!r} not tabulated: " if product else ""
    return table[""], ref, f"{note}reference product {ref}; {source}"


def resolve_target(name: str | None) -> str | None:
    """Row key of ARCH_TABLE for an exact target name such as ``gfx950``."""
    if not name:
        return None
    name = name.strip().lower().split(":")[0]  # drop feature suffixes (gfx90a:xnack+)
    if name in ARCH_TABLE:
        return name
    return TARGET_ALIASES.get(name)
