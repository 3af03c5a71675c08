"""Clean-up that a second Ctrl-C cannot cut short.

The commands clean up in ``finally`` blocks: kill the rank processes, remove their cgroups. A
user who presses Ctrl-C twice (or a supervisor that sends SIGTERM twice) interrupted that
clean-up half-way: ``saatp profile`` interrupted during its calibration with four SIGINTs
10-100 ms apart left two stage processes running and their three cgroups under
``/sys/fs/cgroup/cpu`` (2026-11-28). :func:`held_interrupts` runs a clean-up with SIGINT and
SIGTERM held and delivers them when it is done.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held_interrupts() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM held: a signal that arrives meanwhile is only
    noted, and afterwards (the handlers restored) the first of each is raised again, so that it
    still ends the command (``KeyboardInterrupt``, or what the command's SIGTERM handler does).
    Only the main thread can swap signal handlers; elsewhere the block runs as it is.

    Python handlers, not a blocked signal mask: the kernel hands a signal that the main thread
    blocks to another thread (numpy's and torch's), whose C handler still makes the main thread
    run the Python handler."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[int] = []
    old = {}
    try:
        for s in HELD:
            old[s] = signal.signal(s, lambda n, _frame: got.append(n))
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, signal.SIG_DFL if h is None else h)  # None: a handler set outside Python
        for s in dict.fromkeys(got):
            signal.raise_signal(s)


def exit_143(*_) -> None:
    """A SIGTERM handler: ``SystemExit(143)``, so that the finally blocks run (they kill the
    run's processes and remove its cgroups). Once: the command is ending, and later SIGTERMs
    are ignored (one during the interpreter's exit printed a traceback from an atexit callback,
    2026-11-28)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(143)


def exit_129(*_) -> None:
    """A SIGHUP handler (the terminal closed, an ssh session dropped): ``SystemExit(129)``, so
    that the finally blocks run as for SIGTERM (:func:`exit_143`). Once, as there."""
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(129)
