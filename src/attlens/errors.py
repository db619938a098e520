"""Errors that reach the user as one line and a documented exit code.

Every failure a user can cause (bad path, damaged capture, ...) is raised as an
:class:`AttlensError` subclass carrying its exit code; the CLI prints
``attlens: error: <message>`` and exits with that code. The codes are part of
the public contract and are listed in ``docs/exit-codes.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Exit codes (docs/exit-codes.md). Never renumber: scripts depend on them.
EXIT_OK = 0
EXIT_INTERNAL = 1  # a bug in attlens; the message says how to get the traceback
EXIT_USAGE = 2  # bad command line (argparse uses 2 as well)
EXIT_NOT_FOUND = 3  # path does not exist or is not a directory
EXIT_NOT_A_CAPTURE = 4  # no filenames.json and no ui_output_* directory inside
EXIT_SEVERAL_CAPTURES = 5  # a folder with several captures: pass one, or --all
EXIT_EMPTY_CAPTURE = 6  # a capture with no waves or no instructions (shell directory)
EXIT_CORRUPT = 7  # a required file is truncated, invalid or inconsistent
EXIT_PARTIAL = 8  # analysis printed, but some input was skipped (see warnings)
EXIT_OUTPUT = 9  # the output path cannot or must not be written (a directory, read-only, inside a capture, an input)
# capture workflow (attlens profile / capture / pmc)
EXIT_NO_ROCPROFV3 = 10  # rocprofv3 not on PATH (or --rocprofv3 does not run)
EXIT_NO_DECODER = 11  # rocprofv3 cannot find librocprof-trace-decoder.so
EXIT_KERNEL_NOT_FOUND = 12  # no kernel matched, or the program ran no kernel
EXIT_NO_WAVES = 13  # the capture ran but no wave landed on the traced CU
EXIT_PROFILER_FAILED = 14  # rocprofv3 (or the program under it) failed or timed out
# diff / check
EXIT_REGRESSION = 20  # attlens check: the metric regressed beyond --max-regression
EXIT_INCOMPARABLE = 21  # the two captures cannot be compared meaningfully (use --force)
EXIT_GATE_PARTIAL = 22  # attlens check: a capture was partly read (skipped input); the gate does not pass on damaged input
# sweeps (attlens sweep)
EXIT_SWEEP_FILE = 30  # the sweep file is missing, unreadable or does not follow its schema
EXIT_SWEEP_INCOMPLETE = 31  # the sweep ran, but some job failed (see attlens sweep status)
EXIT_SWEEP_BUSY = 32  # another attlens sweep run holds the sweep folder
EXIT_ENGINE_UNAVAILABLE = 33  # the engine cannot be used here (Ray not installed, no sbatch, no GPU found)


class AttlensError(Exception):
    """A user-facing error: one line of text and an exit code."""

    exit_code = EXIT_INTERNAL

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message

    def to_dict(self) -> dict:
        """The ``attlens.error`` object (``--json`` on failure, MCP tool errors)."""
        from attlens.jsondoc import header

        out = {**header("attlens.error"), "error": {"exit_code": self.exit_code, "kind": type(self).__name__, "message": self.message,
                                                    "hint": self.hint}}
        cands = getattr(self, "candidates", None)
        if cands:
            out["error"]["candidates"] = [{"path": str(c.path), "waves": c.waves, "instructions": c.instructions, "error": c.error}
                                          for c in cands]
        return out


class UsageError(AttlensError):
    exit_code = EXIT_USAGE


class InternalError(AttlensError):
    """Reported for an unexpected exception (a bug), so that ``--json`` still
    gets an ``attlens.error`` object; never raised for a user's mistake."""

    exit_code = EXIT_INTERNAL


class InputNotFound(AttlensError):
    exit_code = EXIT_NOT_FOUND


class NotACapture(AttlensError):
    exit_code = EXIT_NOT_A_CAPTURE


class UnsupportedLayout(NotACapture):
    """Files of a profiler generation attlens recognises but cannot read (or
    that are not a thread trace): the message names the layout and what is
    missing; never reported as a corrupt file."""


@dataclass
class Candidate:
    """One of several inputs found where one was expected (a capture
    directory, or a rocprofv3 run's file); the counts are None when unknown."""

    path: Path
    waves: int | None = None
    instructions: int | None = None
    error: str | None = None


class SeveralCaptures(AttlensError):
    """A parent folder holding several capture directories (or rocprofv3 runs) was given."""

    exit_code = EXIT_SEVERAL_CAPTURES

    def __init__(self, message: str, candidates: list, *, hint: str | None = None):
        super().__init__(message, hint=hint)
        # Callers pass capture summaries or bare paths; every renderer reads
        # .path/.waves/.instructions/.error, so bare paths are wrapped here.
        self.candidates = [c if hasattr(c, "path") else Candidate(Path(c)) for c in candidates]


class EmptyCapture(AttlensError):
    exit_code = EXIT_EMPTY_CAPTURE


class CorruptCapture(AttlensError):
    exit_code = EXIT_CORRUPT


class NoRocprofv3(AttlensError):
    exit_code = EXIT_NO_ROCPROFV3


class NoDecoder(AttlensError):
    exit_code = EXIT_NO_DECODER


class KernelNotFound(AttlensError):
    exit_code = EXIT_KERNEL_NOT_FOUND


class NoWaves(AttlensError):
    exit_code = EXIT_NO_WAVES


class ProfilerFailed(AttlensError):
    exit_code = EXIT_PROFILER_FAILED


class Incomparable(AttlensError):
    exit_code = EXIT_INCOMPARABLE


class SweepFileError(AttlensError):
    """The sweep file is missing, unreadable or does not follow its schema."""

    exit_code = EXIT_SWEEP_FILE


class SweepDamaged(AttlensError):
    """A sweep folder's own state is damaged: its manifest is truncated, empty,
    not SQLite or misses a table, a recorded value is not what attlens wrote,
    or its lock file is not a regular file. Never repaired silently: a sweep
    run would otherwise start afresh and profile every finished job again."""

    exit_code = EXIT_CORRUPT


class SweepIncomplete(AttlensError):
    exit_code = EXIT_SWEEP_INCOMPLETE


class SweepBusy(AttlensError):
    exit_code = EXIT_SWEEP_BUSY


class EngineUnavailable(AttlensError):
    exit_code = EXIT_ENGINE_UNAVAILABLE


class OutputRefused(AttlensError):
    """The output path cannot be written (a directory, its parent a file,
    read-only, disk full) or must not be (inside a capture directory, equal to
    an input, a non-empty folder without --force)."""

    exit_code = EXIT_OUTPUT
