"""Which GPUs a local sweep may use, and how one job is pinned to one of them.

Discovery, first that answers (docs/sweep.md):

1. ``--gpus 0,1,2,3`` on the command line;
2. the GPUs this process was given: ``ROCR_VISIBLE_DEVICES`` (and, within it,
   ``HIP_VISIBLE_DEVICES``), else ``HIP_VISIBLE_DEVICES`` / ``CUDA_VISIBLE_DEVICES``;
3. the kernel driver's topology: every node under
   ``/sys/class/kfd/kfd/topology/nodes/`` whose ``properties`` has a non-zero
   ``simd_count`` is a GPU (CPU nodes have none); they are numbered 0, 1, … in
   node order, which is the order ROCr enumerates GPU agents (what
   ``ROCR_VISIBLE_DEVICES`` indexes);
4. ``amd-smi list --json`` / ``rocm-smi --showid --json`` when present.

Pinning: ``ROCR_VISIBLE_DEVICES=<gpu>`` selects the device at the runtime
level (rocprofv3 and HIP both sit on ROCr); HIP then sees exactly one device,
so ``HIP_VISIBLE_DEVICES`` (and the ``CUDA_VISIBLE_DEVICES`` alias and
``GPU_DEVICE_ORDINAL``) are set to ``0``: HIP indexes *into* what ROCr
exposes, and ``HIP_VISIBLE_DEVICES=<gpu>`` on top of ``ROCR_VISIBLE_DEVICES=<gpu>``
would select nothing for any GPU but 0.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

KFD_TOPOLOGY = Path("/sys/class/kfd/kfd/topology/nodes")
PIN_VARS = ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL")


def parse_gpu_list(text: str) -> list[str]:
    """``"0,1,2"`` → ``["0", "1", "2"]``; ``"0-3"`` ranges too; UUIDs kept as they are."""
    out: list[str] = []
    for tok in (t.strip() for t in str(text).split(",")):
        if not tok:
            continue
        m = re.fullmatch(r"(\d+)-(\d+)", tok)
        if m:
            a, b = int(m.group(1)), int(m.group(2))
            if b < a or b - a > 4096:
                raise ValueError(f"bad GPU range {tok!r}")
            out.extend(str(i) for i in range(a, b + 1))
        elif re.fullmatch(r"\d+|GPU-[0-9A-Za-z-]+", tok):
            out.append(tok)
        else:
            raise ValueError(f"bad GPU id {tok!r} (give indices such as 0,1,2,3 or GPU-<uuid>)")
    if len(set(out)) != len(out):
        raise ValueError(f"GPU listed twice in {text!r}")
    return out


def from_environment(env: dict | None = None) -> tuple[list[str], str] | None:
    env = os.environ if env is None else env
    rocr = env.get("ROCR_VISIBLE_DEVICES")
    hip = env.get("HIP_VISIBLE_DEVICES") or env.get("CUDA_VISIBLE_DEVICES")
    try:
        if rocr:
            ids = parse_gpu_list(rocr)
            if hip:  # HIP indexes into what ROCr exposes
                sel = parse_gpu_list(hip)
                ids = [ids[int(i)] for i in sel if i.isdigit() and int(i) < len(ids)]
                return ids, f"ROCR_VISIBLE_DEVICES={rocr} with HIP_VISIBLE_DEVICES={hip}"
            return ids, f"ROCR_VISIBLE_DEVICES={rocr}"
        if hip:
            return parse_gpu_list(hip), f"HIP_VISIBLE_DEVICES={hip}"
    except ValueError:
        return None
    return None


def from_kfd(root: Path = KFD_TOPOLOGY) -> list[str]:
    """GPU indices from the KFD topology (nodes with a non-zero simd_count)."""
    try:
        nodes = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return []
    n = 0
    for node in nodes:
        try:
            text = (node / "properties").read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r"^simd_count\s+(\d+)", text, re.M)
        if m and int(m.group(1)) > 0:
            n += 1
    return [str(i) for i in range(n)]


def from_smi() -> list[str]:
    """GPU indices from amd-smi / rocm-smi JSON, when one of them is installed."""
    for argv in (["amd-smi", "list", "--json"], ["rocm-smi", "--showid", "--json"]):
        if shutil.which(argv[0]) is None:
            continue
        try:
            p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
            doc = json.loads(p.stdout)
        except (OSError, subprocess.SubprocessError, ValueError):
            continue
        if isinstance(doc, list):  # amd-smi: [{"gpu": 0, ...}, ...]
            ids = [str(d["gpu"]) for d in doc if isinstance(d, dict) and isinstance(d.get("gpu"), int)]
        elif isinstance(doc, dict):  # rocm-smi: {"card0": {...}, ...}
            ids = [k[4:] for k in doc if re.fullmatch(r"card\d+", k)]
        else:
            ids = []
        if ids:
            return sorted(ids, key=int)
    return []


def discover(explicit: str | None = None) -> tuple[list[str], str]:
    """The GPUs of a local sweep and where that list came from."""
    if explicit:
        return parse_gpu_list(explicit), "--gpus"
    env = from_environment()
    if env and env[0]:
        return env
    kfd = from_kfd()
    if kfd:
        return kfd, f"{KFD_TOPOLOGY} (nodes with simd_count > 0)"
    smi = from_smi()
    if smi:
        return smi, "amd-smi/rocm-smi"
    return [], "no GPU found (no KFD topology, no amd-smi/rocm-smi)"


def pin_env(env: dict, gpu: str | None) -> dict:
    """``env`` with the job pinned to ``gpu`` (None: left as the scheduler set it)."""
    out = dict(env)
    if gpu is None:
        return out
    out["ROCR_VISIBLE_DEVICES"] = str(gpu)
    for var in PIN_VARS[1:]:
        out[var] = "0"
    return out
