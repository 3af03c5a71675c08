"""Clocks and timers for the agents: a deterministic virtual clock and a real one.

Agents only use ``now()`` and ``call_later(delay, fn, *args) -> Timer`` (``Timer.cancel()``),
so the same agent code runs on simulated time in the in-process harness and on wall-clock
time with kernel sockets.
"""
from __future__ import annotations

import heapq
import itertools
import queue
import select
import socket
import time
from typing import Any, Callable


class Timer:
    __slots__ = ("when", "fn", "args", "cancelled")

    def __init__(self, when: float, fn: Callable, args: tuple):
        self.when = when
        self.fn = fn
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class EventLoop:
    """A timer heap.  Subclasses decide how time passes."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._tie = itertools.count()

    def now(self) -> float:
        raise NotImplementedError

    def call_at(self, when: float, fn: Callable, *args: Any) -> Timer:
        t = Timer(when, fn, args)
        heapq.heappush(self._heap, (when, next(self._tie), t))
        return t

    def call_later(self, delay: float, fn: Callable, *args: Any) -> Timer:
        return self.call_at(self.now() + max(0.0, delay), fn, *args)

    def next_deadline(self) -> float | None:
        h = self._heap
        while h and h[0][2].cancelled:
            heapq.heappop(h)
        return h[0][0] if h else None

    def _pop_due(self, now: float) -> Timer | None:
        h = self._heap
        while h and h[0][2].cancelled:
            heapq.heappop(h)
        if h and h[0][0] <= now:
            return heapq.heappop(h)[2]
        return None


class VirtualClock(EventLoop):
    """Discrete-event time: ``run`` jumps from one event to the next.  Deterministic."""

    def __init__(self, start: float = 0.0) -> None:
        super().__init__()
        self._now = start
        self.events = 0

    def now(self) -> float:
        return self._now

    def run(self, until: Callable[[], bool] | None = None, max_time: float | None = None,
            max_events: int | None = None) -> bool:
        """Run events until ``until()`` is true (returns True), or nothing is left, or
        ``max_time``/``max_events`` is reached (returns False)."""
        n = 0
        while True:
            if until is not None and until():
                return True
            when = self.next_deadline()
            if when is None:
                return until is None
            if max_time is not None and when > max_time:
                self._now = max(self._now, max_time)
                return False
            if max_events is not None and n >= max_events:
                return False
            t = self._pop_due(when)
            self._now = max(self._now, t.when)
            n += 1
            self.events += 1
            t.fn(*t.args)


class RealClock(EventLoop):
    """Wall-clock time with a ``select`` loop over readable objects (sockets).

    Other threads hand work to the loop only through :meth:`call_soon_threadsafe` (a queue and
    a self-pipe that wakes the ``select``): the one thread-to-loop wake-up of the project."""

    def __init__(self) -> None:
        super().__init__()
        self._readers: dict[Any, Callable[[], None]] = {}
        self._posted: queue.SimpleQueue = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def now(self) -> float:
        return time.monotonic()

    def add_reader(self, sock: Any, fn: Callable[[], None]) -> None:
        self._readers[sock] = fn

    def remove_reader(self, sock: Any) -> None:
        self._readers.pop(sock, None)

    def call_soon_threadsafe(self, fn: Callable, *args: Any) -> None:
        """Run ``fn(*args)`` on the loop's thread as soon as it gets there (FIFO)."""
        self._posted.put((fn, args))
        try:
            self._wake_w.send(b"x")
        except (BlockingIOError, OSError):
            pass  # a full self-pipe wakes the loop anyway; a closed one means the loop is gone

    def _run_posted(self) -> None:
        try:
            while self._wake_r.recv(4096):
                pass
        except (BlockingIOError, OSError):
            pass
        while True:
            try:
                fn, args = self._posted.get_nowait()
            except queue.Empty:
                return
            fn(*args)

    def close(self) -> None:
        self._wake_r.close()
        self._wake_w.close()

    def run(self, until: Callable[[], bool] | None = None, timeout: float | None = None) -> bool:
        end = None if timeout is None else self.now() + timeout
        while True:
            if until is not None and until():
                return True
            now = self.now()
            if end is not None and now >= end:
                return False
            t = self._pop_due(now)
            if t is not None:
                t.fn(*t.args)
                continue
            nd = self.next_deadline()
            wait = 0.05
            if nd is not None:
                wait = min(wait, max(0.0, nd - now))
            if end is not None:
                wait = min(wait, max(0.0, end - now))
            if not self._readers and nd is None and until is None and self._posted.empty():
                return True
            r, _, _ = select.select([self._wake_r, *self._readers], [], [], wait)
            for s in r:
                if s is self._wake_r:
                    self._run_posted()
                else:
                    fn = self._readers.get(s)
                    if fn is not None:
                        fn()
