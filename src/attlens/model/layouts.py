"""Which profiler generation wrote a capture (docs/formats.md), told by what
its files hold, never by a version string alone (the early 8-column
``code.json`` says "3.0.0" like the 10-column one). No heavy imports: the
``captures`` listing names layouts without loading anything."""

from __future__ import annotations

from attlens.io.code_json import LAYOUT_V2 as CODE_V2
from attlens.io.code_json import LAYOUT_V3_8COL as CODE_8COL

LAYOUT_V3 = "rocprofv3"
LAYOUT_V3_EARLY = "rocprofv3-early"
LAYOUT_V2 = "rocprofv2"
LAYOUT_PC_SAMPLING = "rocprofv3-pc-sampling"

# every layout `attlens captures` can name, with what it is (docs/formats.md)
LAYOUTS = {
    LAYOUT_V3: "rocprofv3 thread trace (att-tool 3.x: 10-column code.json with a header)",
    LAYOUT_V3_EARLY: "early rocprofv3 thread trace (before 2025: 8-column code.json without Stall/Idle, packed occupancy)",
    LAYOUT_V2: "rocprofv2 ATT plugin output (8-column code.json, no gfxip, no stall cycles in the records)",
    LAYOUT_PC_SAMPLING: "rocprofv3 PC-sampling ui_output (per-instruction samples, no wave files)",
    "rocprof-compute": "rocprofiler-compute workload (pmc_perf.csv / pmc_perf_N.csv, sysinfo.csv)",
    "rocprofv3-run": "rocprofv3 run outputs (kernel_trace.csv, agent_info.csv, results.json, results.db)",
    "rocprof-v1": "legacy rocprof (v1) output (results.db with a KERN table, or a Chrome-trace results.json)",
}


def capture_layout(index, code) -> str:
    """The layout of a capture from its filenames.json index and code.json listing."""
    if index.pc_sampling and not index.waves:
        return LAYOUT_PC_SAMPLING
    if code.layout == CODE_V2 or index.se_filenames:
        return LAYOUT_V2
    if code.layout == CODE_8COL:
        return LAYOUT_V3_EARLY
    return LAYOUT_V3


def stall_recorded(layout: str, records) -> bool:
    """Do the records carry stall cycles? The rocprofv2 plugin writes 0 in
    every record's stall field (its decoder kept time and duration only)."""
    return layout != LAYOUT_V2 or bool(records.count and records.stall.any())
