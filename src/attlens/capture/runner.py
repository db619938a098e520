"""Running rocprofv3: argument lists only (never a shell), a timeout that ends
rocprofv3 and everything it started (attlens.procutil), and the stderr/stdout
of every run kept in the output folder."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from attlens.errors import NoRocprofv3, ProfilerFailed
from attlens.procutil import GroupTimeout, run_group

_OPENED = re.compile(r"Opened result file:\s*(\S+?)(?:\s+\(UUID=[^)]*\))?\s*$")


@dataclass
class Run:
    argv: list[str]
    returncode: int
    seconds: float
    stdout_path: Path
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text(encoding="utf-8", errors="replace")

    def opened_files(self, cwd: Path | None = None) -> list[Path]:
        """Outputs named by rocprofv3's ``Opened result file:`` log lines."""
        out = []
        for line in self.stderr.splitlines():
            m = _OPENED.search(line)
            if m:
                p = Path(m.group(1))
                out.append(p if p.is_absolute() or cwd is None else cwd / p)
        return out


def find_rocprofv3(explicit: str | None = None) -> str:
    exe = explicit or os.environ.get("ATTLENS_ROCPROFV3") or "rocprofv3"
    path = shutil.which(exe)
    if path is None:
        raise NoRocprofv3(
            f"{exe} not found on PATH",
            hint="install ROCm ≥ 7.0 (rocprofiler-sdk) and put /opt/rocm/bin on PATH, or pass --rocprofv3 PATH",
        )
    return path


def run(argv: list[str], log_dir: Path, name: str, timeout: float, cwd: Path | None = None, env: dict | None = None) -> Run:
    """Run ``argv`` (a list, no shell); keep stdout/stderr as ``<name>.stdout.txt`` / ``.stderr.txt``."""
    log_dir.mkdir(parents=True, exist_ok=True)
    out_p, err_p = log_dir / f"{name}.stdout.txt", log_dir / f"{name}.stderr.txt"
    t0 = time.monotonic()
    with out_p.open("wb") as out, err_p.open("wb") as err:
        try:
            rc = run_group(argv, stdout=out, stderr=err, cwd=cwd, env=env, timeout=timeout)
        except GroupTimeout:
            raise ProfilerFailed(f"{name}: rocprofv3 did not finish within {timeout:.0f} s (logs in {log_dir})", hint="raise --timeout") from None
        except OSError as exc:
            raise NoRocprofv3(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    return Run(argv, rc, time.monotonic() - t0, out_p, err_p)


def last_error_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if "Fatal error" in line or line.startswith(("F", "E")) and "]" in line:
            return line.strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "(no output)"
