"""What captures a folder holds, without loading their wave files.

For each capture directory found (the same search as every command: the
directory itself or up to four levels below): kernel (the listing's first
label), target (the same context lookup as ``load``), traced waves and listed
instructions, agent handle and dispatch id (from the directory name), and a
status: ``ok``, ``empty`` (an empty shell: no wave landed on the traced CU, or
an empty listing) or ``broken`` (with the error). One bad directory never hides
the others.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from attlens.errors import AttlensError, EmptyCapture, InputNotFound
from attlens.results import brief_repr


@brief_repr("status", "kernel", "target", "waves", "instructions", "dispatch_id", "path")
@dataclass
class CaptureInfo:
    path: Path
    status: str  # ok | empty | broken
    kernel: str | None
    target: str | None
    target_source: str | None
    waves: int | None
    instructions: int | None
    agent_handle: int | None
    dispatch_id: int | None
    error: str | None = None

    def to_dict(self) -> dict:
        return {"path": str(self.path), "status": self.status, "kernel": self.kernel, "target": self.target, "target_source": self.target_source,
                "waves": self.waves, "instructions": self.instructions, "agent_handle": self.agent_handle, "dispatch_id": self.dispatch_id,
                "error": self.error}


@brief_repr(("captures", lambda c: len(c.captures)), ("ok", lambda c: sum(1 for x in c.captures if x.status == "ok")),
            ("empty", lambda c: sum(1 for x in c.captures if x.status == "empty")), ("broken", lambda c: sum(1 for x in c.captures if x.status == "broken")), "path")
@dataclass
class CaptureList:
    path: Path  # the folder searched
    captures: list[CaptureInfo] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The ``attlens.captures`` object (``attlens captures --json``)."""
        from attlens.jsondoc import header

        return {**header("attlens.captures"), "path": str(self.path), "captures": [c.to_dict() for c in self.captures]}


def _describe(d: Path) -> CaptureInfo:
    from attlens.io.code_json import read_code_json
    from attlens.io.filenames_json import read_filenames_json
    from attlens.model.context import resolve_arch_and_resources
    from attlens.model.loader import _DIR_NAME

    m = _DIR_NAME.search(d.name)
    handle = int(m.group(1)) if m else None
    dispatch_id = int(m.group(2)) if m else None
    info = CaptureInfo(d, "ok", None, None, None, None, None, handle, dispatch_id)
    try:
        index = read_filenames_json(d / "filenames.json")
        info.waves = len(index.waves)
        code = read_code_json(d / "code.json")
        info.instructions = int(code.instruction_mask.sum())
        info.kernel = code.labels[0][1] if code.labels else None
        arch, _res, _used = resolve_arch_and_resources(d, None, info.kernel or "", code, index, handle, dispatch_id, [])
        info.target, info.target_source = arch.target, arch.source
        if not index.waves or not info.instructions:
            info.status = "empty"
        if index.pc_sampling and not index.waves:  # not a shell: rocprof-compute-viewer's PC-sampling listing
            info.error = "PC samples, no thread trace: attlens analyze shows why its instructions stalled (docs/pcsampling.md)"
    except EmptyCapture as exc:
        info.status, info.error = "empty", exc.message
    except AttlensError as exc:
        info.status, info.error = "broken", exc.message
    except OSError as exc:
        info.status, info.error = "broken", f"{type(exc).__name__}: {exc}"
    if info.status == "ok" and info.waves == 0:
        info.status = "empty"
    return info


def list_captures(path: str | Path) -> CaptureList:
    from attlens.model.locate import find_captures

    p = Path(path)
    if not p.is_dir():
        raise InputNotFound(f"{p}: no such directory" if not p.exists() else f"{p}: not a directory")
    return CaptureList(p, [_describe(d) for d in find_captures(p)])
