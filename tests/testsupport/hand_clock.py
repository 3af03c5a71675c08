"""A clock for tests of timed behaviour (idle timeouts, flow ageing): it moves only when told."""
from __future__ import annotations

import threading


class HandClock:
    """A clock (seconds) that moves only when the test says so; callable like ``time.monotonic``."""

    def __init__(self, start: float = 1000.0) -> None:
        self.t = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.t

    def advance(self, ms: float) -> None:
        with self._lock:
            self.t += ms / 1000
