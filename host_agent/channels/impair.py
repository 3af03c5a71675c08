"""Per-port link impairments: loss, delay, jitter, rate limit, duplication, reordering.

Like Linux ``netem``, applied to the frames a port *sends*.  Every random decision comes
from one ``random.Random(seed)`` and every frame consumes the same number of draws
whatever the outcome, so a seed gives the same decisions for the same frame sequence
(reproducible experiments).  :class:`ImpairmentModel` is the pure decision part (it
turns a frame and the current time into departure times, possibly none or two);
:class:`ImpairedPort` schedules the departures on a background thread.

Semantics:

* ``loss`` (percent): the frame is dropped;
* ``duplicate`` (percent): a second copy leaves right after the first;
* ``rate`` (bit/s): frames are serialised one after the other at this rate (a queue
  without limit; ``limit`` frames at most wait, further ones are tail-dropped);
* ``delay`` plus uniform ``jitter`` in [-jitter, +jitter] (clamped at 0); as in netem,
  jitter alone may reorder frames;
* ``reorder`` (percent): the frame is held back and leaves just after the next frame
  (or after ``hold`` seconds if no frame follows).

Text form (``--impair`` of ``saatp switch``): ``loss=1%,delay=10ms,jitter=2ms,rate=10mbit,
duplicate=0.5%,reorder=1%,seed=7``.
"""
from __future__ import annotations

import heapq
import itertools
import random
import re
import threading
import time
from dataclasses import dataclass, fields
from typing import Callable

from .base import FramePort, PortClosed, PortError, PortWrapper


@dataclass
class Impairment:
    loss: float = 0.0        # percent
    delay: float = 0.0       # seconds
    jitter: float = 0.0      # seconds
    rate: float = 0.0        # bit/s, 0 = unlimited
    duplicate: float = 0.0   # percent
    reorder: float = 0.0     # percent
    seed: int = 0
    limit: int = 10000       # frames waiting at most (rate/delay queue)
    hold: float = 0.05       # seconds a reordered frame waits for a successor

    def __post_init__(self) -> None:
        for f in ("loss", "duplicate", "reorder"):
            v = getattr(self, f)
            if not 0 <= v <= 100:
                raise PortError(f"impairment {f}={v}: must be a percentage in 0..100")
        for f in ("delay", "jitter", "rate", "hold"):
            if getattr(self, f) < 0:
                raise PortError(f"impairment {f} must not be negative")
        if self.limit < 1:
            raise PortError("impairment limit must be at least 1")

    @property
    def active(self) -> bool:
        return any((self.loss, self.delay, self.jitter, self.rate, self.duplicate, self.reorder))


_UNITS_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "": 1e-3}  # bare number: ms (netem)
_UNITS_RATE = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9, "bps": 8, "kbps": 8e3,
               "mbps": 8e6, "gbps": 8e9, "": 1}
_ALIASES = {"dup": "duplicate", "duplication": "duplicate", "drop": "loss", "bw": "rate"}


def parse_impairment(text: str) -> Impairment:
    """``loss=1%,delay=10ms,jitter=2ms,rate=10mbit,duplicate=1%,reorder=1%,seed=3``."""
    kw: dict = {}
    names = {f.name for f in fields(Impairment)}
    for item in filter(None, (s.strip() for s in text.split(","))):
        if "=" not in item:
            raise PortError(f"impairment {item!r}: expected NAME=VALUE")
        k, v = (s.strip().lower() for s in item.split("=", 1))
        k = _ALIASES.get(k, k)
        if k not in names:
            raise PortError(f"unknown impairment {k!r}; known: {sorted(names)}")
        m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*([a-z%]*)", v)
        if not m:
            raise PortError(f"impairment {k}={v}: not a number")
        num, unit = float(m.group(1)), m.group(2)
        if k in ("loss", "duplicate", "reorder"):
            if unit not in ("%", ""):
                raise PortError(f"impairment {k}={v}: use a percentage")
            kw[k] = num
        elif k in ("delay", "jitter", "hold"):
            if unit not in _UNITS_TIME:
                raise PortError(f"impairment {k}={v}: unknown time unit {unit!r}")
            kw[k] = num * _UNITS_TIME[unit]
        elif k == "rate":
            if unit not in _UNITS_RATE:
                raise PortError(f"impairment rate={v}: unknown rate unit {unit!r}")
            kw[k] = num * _UNITS_RATE[unit]
        else:  # seed, limit
            if unit or num != int(num):
                raise PortError(f"impairment {k}={v}: expected an integer")
            kw[k] = int(num)
    return Impairment(**kw)


class ImpairmentModel:
    """Decides, frame by frame, when (and how often) each frame leaves."""

    def __init__(self, imp: Impairment):
        self.imp = imp
        self.rng = random.Random(imp.seed)
        self._link_free = 0.0
        self._held: list[int] = []    # ids of frames waiting for a successor
        self.stats = {"lost": 0, "duplicated": 0, "reordered": 0, "queue_dropped": 0}

    def plan(self, nbytes: int, now: float, backlog: int = 0) -> tuple[list[float], bool]:
        """Departure times of one frame (``[]`` when lost) and whether it is held back.

        Draws exactly four random numbers per frame."""
        imp, rng = self.imp, self.rng
        r_loss, r_dup, r_reo, r_jit = rng.random(), rng.random(), rng.random(), rng.random()
        if r_loss * 100 < imp.loss:
            self.stats["lost"] += 1
            return [], False
        if backlog >= imp.limit:
            self.stats["queue_dropped"] += 1
            return [], False
        t = now
        if imp.rate:
            start = max(now, self._link_free)
            self._link_free = start + nbytes * 8 / imp.rate
            t = self._link_free
        d = imp.delay + (2 * r_jit - 1) * imp.jitter if imp.jitter else imp.delay
        t += max(0.0, d)
        times = [t]
        if r_dup * 100 < imp.duplicate:
            self.stats["duplicated"] += 1
            times.append(t)
        held = r_reo * 100 < imp.reorder
        if held:
            self.stats["reordered"] += 1
        return times, held


class ImpairedPort(PortWrapper):
    """Applies an :class:`Impairment` to what ``inner`` sends; receiving is untouched."""

    def __init__(self, inner: FramePort, imp: Impairment, clock: Callable[[], float] = time.monotonic):
        super().__init__(inner)
        self.imp = imp
        self.model = ImpairmentModel(imp)
        self._clock = clock
        self._heap: list[tuple[float, int, bytes]] = []
        self._held: list[tuple[float, bytes]] = []   # (deadline, frame)
        self._seq = itertools.count()
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=f"impair-{self.name}", daemon=True)
        self._thread.start()

    @property
    def stats(self) -> dict:  # type: ignore[override]
        return {**self.inner.stats, **self.model.stats}

    @stats.setter
    def stats(self, v: dict) -> None:
        pass

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise PortClosed(self.name)
        now = self._clock()
        with self._cv:
            times, held = self.model.plan(len(frame), now, len(self._heap) + len(self._held))
            if not times:
                return
            if held:
                self._held.append((now + self.imp.hold, frame))
                for _ in times[1:]:
                    self._held.append((now + self.imp.hold, frame))
            else:
                for t in times:
                    heapq.heappush(self._heap, (t, next(self._seq), frame))
                # frames held back leave right after this one
                for _, f in self._held:
                    heapq.heappush(self._heap, (times[-1], next(self._seq), f))
                self._held.clear()
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while True:
                    if self.closed:
                        return
                    now = self._clock()
                    if self._held and self._held[0][0] <= now:
                        for _, f in self._held:
                            heapq.heappush(self._heap, (now, next(self._seq), f))
                        self._held.clear()
                    if self._heap and self._heap[0][0] <= now:
                        _, _, frame = heapq.heappop(self._heap)
                        break
                    waits = [x for x in (self._heap[0][0] if self._heap else None,
                                         self._held[0][0] if self._held else None) if x is not None]
                    self._cv.wait(timeout=max(0.0, min(waits) - now) if waits else 0.5)
            try:
                self.inner.send(frame)
            except PortClosed:
                return

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every scheduled frame has left; True if it did within ``timeout``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._cv:
                if not self._heap and not self._held:
                    return True
            time.sleep(0.002)
        return False

    def close(self) -> None:
        super().close()
        with self._cv:
            self._cv.notify_all()
