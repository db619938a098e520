"""``python -m attlens`` and the ``attlens`` command (``[project.scripts]``).

Ctrl-C at any moment once ``entry()`` runs gives exit 130 and one line,
never a traceback: a quiet handler is installed before anything is imported
(importing the command line takes tens of milliseconds), the command's own
handler (``attlens.cli.main``) takes over while it runs, and the quiet one
again after it returns."""

import signal
import sys


def _quiet_interrupt(signum, frame):
    try:
        sys.stderr.write("attlens: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, RuntimeError):
        pass
    raise SystemExit(130)


def entry() -> int:
    try:
        signal.signal(signal.SIGINT, _quiet_interrupt)
    except ValueError:  # not the main thread
        pass
    try:
        from attlens.cli import main

        return main()
    except KeyboardInterrupt:  # Ctrl-C in a window no handler covers (Python's own default handler)
        _quiet_interrupt(signal.SIGINT, None)


if __name__ == "__main__":
    raise SystemExit(entry())
