"""In-memory ports for tests: ``a, b = MemoryPort.pair()``; what ``a`` sends ``b`` receives.

``fileno()`` creates (on first use) a wake-up descriptor (a socket pair) that becomes
readable when frames arrive, so an event loop can wait on memory ports like on sockets.
"""
from __future__ import annotations

import queue
import socket
import threading

from .base import FramePort, PortClosed

_CLOSE = object()


class MemoryPort(FramePort):
    def __init__(self, name: str = "mem", maxsize: int = 0):
        super().__init__()
        self.name = name
        self._q: queue.Queue = queue.Queue(maxsize)
        self.peer: MemoryPort | None = None
        self._wake: tuple[socket.socket, socket.socket] | None = None
        self._wake_lock = threading.Lock()

    @classmethod
    def pair(cls, name_a: str = "mem-a", name_b: str = "mem-b", maxsize: int = 0) -> tuple["MemoryPort", "MemoryPort"]:
        a, b = cls(name_a, maxsize), cls(name_b, maxsize)
        a.peer, b.peer = b, a
        return a, b

    def inject(self, frame: bytes) -> None:
        """Make ``frame`` arrive at this port (as if the peer had sent it)."""
        try:
            self._q.put_nowait(bytes(frame))
        except queue.Full:
            return
        w = self._wake
        if w is not None:
            try:
                w[1].send(b"\0", socket.MSG_DONTWAIT)
            except OSError:
                pass  # already readable (buffer full) or closed: the reader wakes anyway

    def fileno(self) -> int | None:
        with self._wake_lock:
            if self.closed:
                return None
            if self._wake is None:
                self._wake = socket.socketpair()
                self._wake[0].setblocking(False)
            return self._wake[0].fileno()

    def recv_batch(self, limit: int) -> list[bytes]:
        w = self._wake
        if w is not None:
            try:
                while w[0].recv(4096):
                    pass
            except OSError:
                pass
        return super().recv_batch(limit)

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise PortClosed(self.name)
        self._count_tx(frame)
        if self.peer is not None and not self.peer.closed:
            self.peer.inject(frame)
        else:
            self.stats["tx_dropped"] += 1

    def recv(self, timeout: float | None = None) -> bytes | None:
        if self.closed:
            raise PortClosed(self.name)
        try:
            item = self._q.get(timeout=timeout) if timeout is None or timeout > 0 else self._q.get_nowait()
        except queue.Empty:
            return None
        if item is _CLOSE:
            raise PortClosed(self.name)
        return self._count_rx(item)

    def close(self) -> None:
        if not self.closed:
            super().close()
            self._q.put(_CLOSE)
            with self._wake_lock:
                w, self._wake = self._wake, None
            if w is not None:
                w[1].close()   # the reader sees end of file: readable, then PortClosed
                w[0].close()
