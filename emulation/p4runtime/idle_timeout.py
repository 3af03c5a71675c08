"""Idle timeouts (P4Runtime spec: ``TableEntry.idle_timeout_ns``, ``IdleTimeoutNotification``).

Tables whose P4Info says ``idle_timeout_behavior: NOTIFY_CONTROL`` (``support_timeout =
true``) get a hit clock when a pipeline is installed, so every hit stamps the entry with the
switch's time.  :class:`IdleTimeoutSweeper` is a thread that, every quarter of the shortest
timeout in use (bounded to 50 ms .. 1 s), asks each such table for the entries idle longer
than their timeout and sends them, several per message, in one ``IdleTimeoutNotification``
on the primary controller's stream.  Like BMv2, the switch never deletes them; an entry is
reported once per idle period (a hit, or a new timeout set by MODIFY, re-arms it).  With
no primary controller the sweep reports nothing and keeps the entries for later.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from host_agent.p4runtime import p4info_pb2 as p4i
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import encode_matches

from .arbitration import Arbiter
from .state import ServerState

log = logging.getLogger("saatp.p4runtime")

MIN_SWEEP_S = 0.05
MAX_SWEEP_S = 1.0


def supports_idle_timeout(t: Any) -> bool:
    """Whether a P4Info table accepts entries with ``idle_timeout_ns``."""
    return t.idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL


def switch_clock_ns(switch: Any) -> Callable[[], int]:
    """The switch's clock in nanoseconds (the one its timestamps use)."""
    now_us = getattr(switch, "now_us", None)
    if now_us is None:
        return time.monotonic_ns
    return lambda: now_us() * 1000


def sweep_period_s(shortest_timeout_ns: int) -> float:
    """How long the sweeper sleeps: a quarter of the shortest timeout, within bounds."""
    if shortest_timeout_ns <= 0:
        return MAX_SWEEP_S
    return min(MAX_SWEEP_S, max(MIN_SWEEP_S, shortest_timeout_ns / 4e9))


class IdleTimeoutSweeper:
    """Finds idle entries and notifies the primary controller; ``wake()`` starts the thread."""

    def __init__(self, state: ServerState, arbiter: Arbiter):
        self.state = state
        self.arbiter = arbiter
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        state.on_pipeline_change(self.arm_hit_clocks)

    # ------------------------------------------------------------- pipeline
    def _aging_tables(self) -> list[tuple[Any, Any]]:
        """(P4Info table, switch table) of every table that supports idle timeouts."""
        idx, sw = self.state.index, self.state.device.switch
        if idx is None or sw is None:
            return []
        out = []
        for t in idx.tables.values():
            if not supports_idle_timeout(t):
                continue
            try:
                out.append((t, sw.table(t.preamble.name)))
            except KeyError:
                continue
        return out

    def arm_hit_clocks(self) -> None:
        """Pipeline hook: make the tables that support idle timeouts record their hits."""
        sw = self.state.device.switch
        if sw is None:
            return
        clock = switch_clock_ns(sw)
        with self.state.device.lock:
            for _, tab in self._aging_tables():
                tab.hit_clock = clock

    # --------------------------------------------------------------- thread
    def wake(self) -> None:
        """An entry got an idle timeout: start the sweeper if needed and let it re-plan."""
        with self._start_lock:
            if self._stop.is_set():
                return
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="p4rt-idle-timeout", daemon=True)
                self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        with self._start_lock:
            self._stop.set()
            self._wake.set()
            t = self._thread
        if t is not None:
            t.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                period = self.sweep()
            except Exception:  # noqa: BLE001 - a sweep failing must not end the thread
                log.exception("idle-timeout sweep failed")
                period = MAX_SWEEP_S
            self._wake.wait(period)
            self._wake.clear()

    # ---------------------------------------------------------------- sweep
    def sweep(self) -> float:
        """One pass: notify the primary of newly idle entries; returns the next sleep (s)."""
        dev = self.state.device
        prim = self.arbiter.primary("")
        msg = None
        with dev.lock:
            tables = self._aging_tables()
            shortest = min((s for s in (tab.shortest_idle_timeout_ns() for _, tab in tables) if s),
                           default=0)
            if prim is not None and shortest:
                for t, tab in tables:
                    if tab.hit_clock is None:
                        continue
                    for ent in tab.idle_entries(tab.hit_clock()):
                        if msg is None:
                            msg = pb.StreamMessageResponse()
                        te = msg.idle_timeout_notification.table_entry.add(table_id=t.preamble.id)
                        te.match.extend(encode_matches(t, ent.match))
                        if ent.priority:
                            te.priority = ent.priority
                        te.idle_timeout_ns = ent.idle_timeout_ns
        if msg is not None and prim is not None:
            msg.idle_timeout_notification.timestamp = time.time_ns()
            prim.out.put(msg)
        return sweep_period_s(shortest)
