"""The switch watchdog of a switch engine: is the switch's P4Runtime server still there?

Every :data:`PERIOD` seconds one thread asks the switch for its capabilities, each question
answered within :data:`TIMEOUT` seconds; :data:`MISSES` unanswered in a row (a refused
connection at once) mean the switch is gone, and ``on_gone(why)`` is called once: the group
fails at once instead of at its collective's timeout (at most about 1.5 s after the switch
went).

:meth:`SwitchWatch.stop` closes the channel, which cancels a question in flight, and waits for
the thread, so that no thread of a closed engine is left inside gRPC's C++ code when the process
exits (see ``ProcessGroupSAATP.shutdown`` for what such a thread can do at exit).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import grpc

from ..p4runtime import p4runtime_pb2
from ..p4runtime.p4runtime_pb2_grpc import P4RuntimeStub

PERIOD, TIMEOUT, MISSES = 0.25, 0.6, 2


class SwitchWatch:
    """Watch the P4Runtime server at ``addr`` from a thread of its own (started at once)."""

    def __init__(self, addr: str, on_gone: Callable[[str], None], describe: str = "", name: str = "saatp-switch-watch",
                 period: float = PERIOD, timeout: float = TIMEOUT, misses: int = MISSES):
        self.addr, self.on_gone, self.describe = addr, on_gone, describe
        self.period, self.timeout, self.misses = period, timeout, misses
        self._stop = threading.Event()
        self._channel = grpc.insecure_channel(addr)
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        stub = P4RuntimeStub(self._channel)
        misses = 0
        try:
            while not self._stop.wait(self.period):
                try:
                    stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=self.timeout)
                    misses = 0
                    continue
                except grpc.RpcError as e:
                    if self._stop.is_set():
                        return  # stop() cancelled the question
                    code = e.code() if callable(getattr(e, "code", None)) else None
                    misses = self.misses if code == grpc.StatusCode.UNAVAILABLE else misses + 1
                    detail = getattr(code, "name", str(code))
                if misses >= self.misses and not self._stop.is_set():
                    self.on_gone(f"the switch at {self.addr} is gone (P4Runtime: {detail}{self.describe})")
                    return
        finally:
            self._channel.close()

    def stop(self) -> None:
        """Stop asking and wait for the thread (at most the period plus a second)."""
        self._stop.set()
        self._channel.close()
        if self.thread is not threading.current_thread():
            self.thread.join(self.period + 1.0)
