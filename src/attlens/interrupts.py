"""Where a Ctrl-C may not raise.

Python runs a signal handler in the main thread at its next step, wherever
that is. Raised inside a weakref callback or a finalizer (the import
machinery's module locks have a callback), the KeyboardInterrupt cannot
leave it: Python prints "Exception ignored ... Traceback" and goes on as if
nothing had happened. The handlers of attlens ask :func:`deferred` first: in
such a place the interrupt is handed to the SIGINT handler again 2 ms later
(a real-time timer, so not within the same few steps), until it lands where
it can be raised. Kept free of imports: ``attlens.__main__`` uses it before
anything else is loaded.
"""

from __future__ import annotations

import signal
import sys

RETRY_SECONDS = 0.002


def _cannot_raise(frame) -> bool:
    code = frame.f_code
    return (str(frame.f_globals.get("__name__", "")).startswith("importlib._bootstrap") or code.co_name == "__del__"
            or code is unraisable.__code__)


def deferred(frame) -> bool:
    """True when the interrupted code cannot pass an exception on (the import
    machinery, a finalizer, the hook below): the interrupt comes again later."""
    if frame is None or not _cannot_raise(frame):
        return False
    _again_later()
    return True


def _again_later() -> None:
    try:
        signal.signal(signal.SIGALRM, _again)
        signal.setitimer(signal.ITIMER_REAL, RETRY_SECONDS)
    except (AttributeError, ValueError, OSError):  # no timer here (not the main thread, another system): lost, as before
        pass


def _again(signum, frame) -> None:
    """The SIGALRM of :func:`_again_later`: the SIGINT handler in place, on the code running now."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler):
        handler(signal.SIGINT, frame)


def unraisable(info) -> None:
    """``sys.unraisablehook``: an interrupt raised where it could not leave
    (a callback the checks above do not know) comes again later instead of
    being printed and lost; anything else as Python prints it."""
    if info.exc_type is not None and issubclass(info.exc_type, (KeyboardInterrupt, SystemExit)):
        _again_later()
        return
    sys.__unraisablehook__(info)
