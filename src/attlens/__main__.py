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
        from attlens.cli import common, main

        common.the_command_line_runs_here()
        code = main()
        # The process ends now: the collections Python runs while tearing
        # itself down would walk every object left, for nothing (40-50 ms after
        # a capture's analysis, 15 ms after an export). Frozen objects are
        # still freed; finalizers of objects alive at exit are not guaranteed anyway.
        gc.freeze()
        return code
    except KeyboardInterrupt:  # Ctrl-C in a window no handler covers (Python's own default handler)
        _quiet_interrupt(signal.SIGINT, None)


def run() -> None:
    """The ``attlens`` command: :func:`entry`; after a command that read
    captures the process ends without Python's teardown (:func:`_end_process`)."""
    code = entry()
    from attlens.cli import ended_reading_captures

    if not ended_reading_captures():
        raise SystemExit(code)
    _end_process(code)


def _end_process(code) -> None:
    """End the process with ``code`` once its exit handlers have run and its
    output is flushed, without the interpreter's teardown: freeing every
    module's objects one by one is work for nothing in a process that ends
    (15-20 ms after a softmax ``analyze``, a few percent of it). With a thread
    still running (an engine's, a server's) Python's own exit waits for it."""
    import atexit
    import os
    import threading

    if threading.active_count() > 1:
        raise SystemExit(code)
    atexit._run_exitfuncs()  # what the teardown would run first (temporary folders' finalizers among them)
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a reader that went away, a closed stream: the code stands
            pass
    os._exit(code if isinstance(code, int) else (0 if code is None else 1))


if __name__ == "__main__":
    run()
