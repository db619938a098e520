"""rocprofv3 CSV outputs, read by header name (rocprofv3-interfaces.md §3).

Headers are quoted, strings are quoted without escaping, floats may be in
scientific notation, and files re-quoted by other tools quote every field; the
standard csv module handles all of these. Unknown leading columns (``Guid``,
``Pid`` from ``rocpd convert``) are ignored because lookups are by name.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

from attlens.errors import CorruptCapture

_AGENT = re.compile(r"^\s*(?:(Agent|GPU|CPU)\s+)?(\d+)\s*$")


def read_rows(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))  # kernel names exceed 5 KB
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None:
                return []
            reader.fieldnames = [f.strip() for f in reader.fieldnames]
            return [row for row in reader]
    except csv.Error as exc:
        raise CorruptCapture(f"{path.name}: unreadable CSV ({exc})") from None


def as_int(value) -> int | None:
    """An integer field; accepts floats and scientific notation ("1.0e+03")."""
    if value is None:
        return None
    value = str(value).strip()
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        try:
            return int(float(value))
        except ValueError:
            return None


def as_float(value) -> float | None:
    if value is None or not str(value).strip():
        return None
    try:
        return float(value)
    except ValueError:
        return None


def parse_agent_id(value) -> tuple[str | None, int | None]:
    """``"Agent 2"`` → ("Agent", 2); ``"2"`` → (None, 2); ``"GPU 0"`` → ("GPU", 0)."""
    m = _AGENT.match(str(value or ""))
    if not m:
        return None, None
    return m.group(1), int(m.group(2))


def read_agent_info(path: Path) -> list[dict]:
    """GPU and CPU agents with the fields attlens uses, typed."""
    agents = []
    for row in read_rows(path):
        agents.append(
            {
                "node_id": as_int(row.get("Node_Id")),
                "logical_node_id": as_int(row.get("Logical_Node_Id")),
                "type": (row.get("Agent_Type") or "").strip().upper(),
                "name": (row.get("Name") or "").strip(),
                "product_name": (row.get("Product_Name") or row.get("Marketing_Name") or "").strip(),
                "gfx_target_version": as_int(row.get("Gfx_Target_Version")),
                "cu_count": as_int(row.get("Cu_Count")),
                "simd_per_cu": as_int(row.get("Simd_Per_Cu")),
                "max_waves_per_simd": as_int(row.get("Max_Waves_Per_Simd")),
                "wave_front_size": as_int(row.get("Wave_Front_Size")),
                "lds_size_kb": as_int(row.get("Lds_Size_In_Kb")),
                "num_xcc": as_int(row.get("Num_Xcc")),
                "num_shader_banks": as_int(row.get("Num_Shader_Banks")),
                "max_engine_clk_mhz": as_int(row.get("Max_Engine_Clk_Fcompute")),
            }
        )
    return agents


def read_kernel_trace(path: Path) -> list[dict]:
    """Dispatch rows of kernel_trace.csv (22-column 7.x and 18-column ≤ 6.4 layouts)."""
    out = []
    for row in read_rows(path):
        kind, agent = parse_agent_id(row.get("Agent_Id"))
        lds = row.get("LDS_Block_Size")
        if lds is None:  # ≤ 6.4 layout: dispatch group segment size
            lds = row.get("Group_Segment_Size")
        out.append(
            {
                "dispatch_id": as_int(row.get("Dispatch_Id")),
                "kernel_id": as_int(row.get("Kernel_Id")),
                "kernel_name": row.get("Kernel_Name") or "",
                "agent": agent,
                "agent_kind": kind,
                "start_ns": as_int(row.get("Start_Timestamp")),
                "end_ns": as_int(row.get("End_Timestamp")),
                "lds_bytes": as_int(lds),
                "scratch_bytes": as_int(row.get("Scratch_Size") or row.get("Private_Segment_Size")),
                "vgpr_count": as_int(row.get("VGPR_Count")),
                "agpr_count": as_int(row.get("Accum_VGPR_Count")),
                "sgpr_count": as_int(row.get("SGPR_Count")),
                "workgroup": tuple(as_int(row.get(f"Workgroup_Size_{a}")) or 1 for a in "XYZ"),
                "grid": tuple(as_int(row.get(f"Grid_Size_{a}")) or 1 for a in "XYZ"),
            }
        )
    return out
