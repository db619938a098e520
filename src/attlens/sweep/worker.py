"""Entry points the engines start as processes (not a user command):

``python -m attlens.sweep.worker finish DIR ATTEMPT_DIR``
    analyze an attempt's capture, write its report and ``result.json``
    (the local engine's analysis step);
``python -m attlens.sweep.worker slurm-task SUBMISSION.json INDEX``
    one Slurm array task: job number INDEX of the submission, with its
    retries (:func:`attlens.sweep.slurm.run_task`).

Errors print one line on stderr and exit with the documented code.
"""

from __future__ import annotations

import os
import sys


def main(argv: list[str] | None = None) -> int:
    from attlens.errors import EXIT_INTERNAL, EXIT_USAGE, AttlensError

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if len(args) == 3 and args[0] == "finish":
            from pathlib import Path

            from attlens.sweep.job import finish

            r = finish(Path(args[1]), Path(args[2]))
            print(f"result: {r['attempt_dir']}/result.json")
            return 0
        if len(args) == 3 and args[0] == "slurm-task":
            from attlens.sweep.slurm import run_task

            return run_task(args[1], int(args[2]))
        print("usage: python -m attlens.sweep.worker finish DIR ATTEMPT_DIR | slurm-task SUBMISSION INDEX", file=sys.stderr)
        return EXIT_USAGE
    except AttlensError as exc:
        print(f"attlens: error: {exc.message}" + (f" (hint: {exc.hint})" if exc.hint else ""), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("ATTLENS_DEBUG"):
            raise
        print(f"attlens: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
