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
    try:
        _load_fragile_extensions()
    except KeyboardInterrupt:  # before the handler was set (Python's default one)
        _quiet_interrupt(signal.SIGINT, None)
    try:
        from attlens.cli import main

        code = main()
    except KeyboardInterrupt:  # Ctrl-C in a window no handler covers (Python's own default handler)
        _quiet_interrupt(signal.SIGINT, None)
    # The interpreter's collections at exit would walk every object the command
    # made (40-50 ms after a capture's analysis); nothing needs them: outputs
    # are closed by their own with-blocks, and finalizers of objects alive at
    # exit are not guaranteed to run anyway. Frozen objects are left to the OS.
    import gc

    gc.freeze()
    return code


if __name__ == "__main__":
    raise SystemExit(entry())
