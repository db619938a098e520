"""rocprofiler-compute's ``sysinfo.csv`` (one row describing the profiled GPU).

The source of product, XCD and CU counts and peak HBM bandwidth for counter
runs: a partitioned MI300 (``compute_partition`` CPX, ``num_xcd`` 1) or an
MI300A (6 XCDs) differ from the family's reference product, so these come from
the file, never from the product family. Columns by name; older and newer
rocprofiler-compute versions add or drop some (``hbm_bw`` is absent in ROCm 7
files, ``gpu_series`` and ``chip_id`` appear in some).

Peak HBM bandwidth: ``hbm_bw`` (GB/s) when present, else rocprofiler-compute's
own formula ``max_mclk / 1000 x 32 x num_hbm_channels`` (rocprofv3-interfaces.md
§5.3), else unavailable.
"""

from __future__ import annotations

from pathlib import Path

from attlens.errors import CorruptCapture
from attlens.io.rocprof_csv import as_float, as_int, read_table


def _product(row: dict) -> str | None:
    for key in ("chip_id", "gpu_chip_id", "gpu_model", "gpu_series"):
        v = (row.get(key) or "").strip()
        if v and v.upper() not in ("N/A", "NA", "NONE") and not v.isdigit():  # gpu_chip_id can be a PCI device id
            return v
    return None


def read_sysinfo(path: Path) -> dict:
    """The profiled GPU: ``{"target", "product", "model", "cu_count", "shader_engines",
    "xcd", "hbm_peak_gbps", "hbm_peak_source", "max_sclk_mhz", "max_mclk_mhz",
    "l2_channels", "hbm_channels", "compute_partition", "memory_partition",
    "file"}``; a value the file lacks is None."""
    header, rows = read_table(path)
    if "gpu_arch" not in header:
        raise CorruptCapture(f"{path.name}: not a rocprofiler-compute sysinfo.csv (no gpu_arch column)")
    if not rows:
        raise CorruptCapture(f"{path.name}: no GPU row")
    r = rows[0]

    def pos(key, conv=as_int):
        v = conv(r.get(key))
        return v if v is not None and v > 0 else None

    peak, how = pos("hbm_bw", as_float), "sysinfo.csv hbm_bw"
    mclk, chans = pos("max_mclk"), pos("num_hbm_channels")
    if peak is None and mclk and chans:
        peak, how = mclk / 1000 * 32 * chans, f"sysinfo.csv max_mclk {mclk} MHz / 1000 x 32 B x {chans} HBM channels"
    part = (r.get("compute_partition") or "").strip() or None
    return {
        "file": str(path),
        "target": (r.get("gpu_arch") or "").strip().lower() or None,
        "product": _product(r),
        "model": (r.get("gpu_model") or "").strip() or None,
        "cu_count": pos("cu_per_gpu"),
        "shader_engines": pos("se_per_gpu"),
        "xcd": pos("num_xcd"),
        "hbm_peak_gbps": peak,
        "hbm_peak_source": how if peak is not None else None,
        "max_sclk_mhz": pos("max_sclk"),
        "max_mclk_mhz": mclk,
        "l2_channels": pos("total_l2_chan"),
        "hbm_channels": chans,
        "max_waves_per_cu": pos("max_waves_per_cu"),
        "wave_size": pos("wave_size"),
        "compute_partition": part if part not in ("NA", "N/A") else None,
        "memory_partition": ((r.get("memory_partition") or "").strip() or None),
    }
