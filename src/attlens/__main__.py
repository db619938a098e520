"""``python -m attlens`` and the ``attlens`` command (``[project.scripts]``).

Ctrl-C at any moment once ``entry()`` runs gives exit 130 and one line,
never a traceback: a quiet handler is installed before anything is imported
(importing the command line takes tens of milliseconds), the command's own
handler (``attlens.cli.main``) takes over while it runs, and the quiet one
again after it returns."""

import gc
import signal
import sys

from attlens.interrupts import deferred, unraisable


def _quiet_interrupt(signum, frame):
    if deferred(frame):
        return
    try:
        sys.stderr.write("attlens: interrupted\n")
        sys.stderr.flush()
    except (OSError, ValueError, RuntimeError):
        pass
    raise SystemExit(130)


def _load_fragile_extensions() -> None:
    """Import the extension modules an interrupt must not land in, with
    SIGINT held: an exception raised while orjson's module initialises (the
    handler's SystemExit inside an import it makes) crashes the interpreter
    with a segfault (measured: 27 of 30 interrupts during ``import orjson``).
    A Ctrl-C that arrives meanwhile is acted on right after."""
    held = []
    try:
        signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread: no handler of ours runs there
        return
    try:
        import orjson  # noqa: F401
    finally:  # the quiet handler even when the import fails (the command reports that)
        signal.signal(signal.SIGINT, _quiet_interrupt)
    if held:
        _quiet_interrupt(signal.SIGINT, None)


def entry() -> int:
    sys.unraisablehook = unraisable
    try:
        _load_fragile_extensions()
    except KeyboardInterrupt:  # before the handler was set (Python's default one)
        _quiet_interrupt(signal.SIGINT, None)
    try:
        from attlens.cli import main

        code = main()
        # The process ends now: the collections Python runs while tearing
        # itself down would walk every object left, for nothing (40-50 ms after
        # a capture's analysis, 15 ms after an export). Frozen objects are
        # still freed; finalizers of objects alive at exit are not guaranteed anyway.
        gc.freeze()
        return code
    except KeyboardInterrupt:  # Ctrl-C in a window no handler covers (Python's own default handler)
        _quiet_interrupt(signal.SIGINT, None)


if __name__ == "__main__":
    raise SystemExit(entry())
