"""Transports for running agents on wall-clock time (the in-process harness has its own).

* :class:`UdpSocketTransport`: an ordinary kernel UDP socket (no privileges); the agent's
  SA-ATP bytes are the UDP payload, sent to the switch's virtual IP and SA_PORT.  This is
  what agents use on Mininet hosts or real machines.
* :class:`FramePortTransport`: whole Ethernet frames over an ``host_agent.channels`` frame
  port (in-memory, UDP tunnel, raw); the agent writes Ethernet/IPv4/UDP itself from a
  :class:`~host_agent.wire.FrameTemplate`.

Both deliver received SA-ATP bytes to a callback from inside a
:class:`~host_agent.clock.RealClock` loop, so agent code never runs on two threads.
"""
from __future__ import annotations

import socket
import threading
from typing import Callable

from . import wire
from .channels.base import PortClosed
from .clock import RealClock


class UdpSocketTransport:
    def __init__(self, loop: RealClock, local: tuple[str, int], switch: tuple[str, int]):
        self.loop = loop
        self.switch = switch
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
        self.sock.bind(local)
        self.sock.setblocking(False)
        self.local = self.sock.getsockname()
        self._cb: Callable[[bytes], None] | None = None
        self.tx = self.rx = self.tx_dropped = 0
        loop.add_reader(self.sock, self._readable)

    def set_receiver(self, cb: Callable[[bytes], None]) -> None:
        self._cb = cb

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendto(data, self.switch)
            self.tx += 1
        except (BlockingIOError, OSError):
            self.tx_dropped += 1   # a full buffer drops, as a NIC queue would

    def _readable(self) -> None:
        for _ in range(256):
            try:
                data, _addr = self.sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            self.rx += 1
            if self._cb is not None:
                self._cb(data)

    def close(self) -> None:
        self.loop.remove_reader(self.sock)
        self.sock.close()


class FramePortTransport:
    """Agent <-> frame channel.

    A port with a file descriptor and batched receive (``fileno()`` and ``recv_batch(n)``, as
    UDP tunnels have) is read on the loop's own thread: the loop's ``select`` wakes when it is
    readable and everything queued (up to :data:`RX_BATCH` frames) is handed to the agent at
    once, no thread hand-off per frame. Other ports get a reader thread that hands each frame
    to the loop (:meth:`RealClock.call_soon_threadsafe`)."""

    RX_BATCH = 64

    def __init__(self, loop: RealClock, port, template: wire.FrameTemplate):
        self.loop = loop
        self.port = port
        self.tpl = template
        self._cb: Callable[[bytes], None] | None = None
        self._stop = threading.Event()
        self.bad = 0
        self._thread: threading.Thread | None = None
        fileno = getattr(port, "fileno", None)
        if callable(fileno) and fileno() is not None and hasattr(port, "recv_batch") \
                and hasattr(loop, "add_reader"):
            loop.add_reader(port, self._readable)
        else:
            self._thread = threading.Thread(target=self._reader, daemon=True, name="frame-rx")
            self._thread.start()

    def set_receiver(self, cb: Callable[[bytes], None]) -> None:
        self._cb = cb

    def send(self, data: bytes) -> None:
        self.port.send(self.tpl.frame(data))

    def _reader(self) -> None:
        while not self._stop.is_set():
            try:
                fr = self.port.recv(0.1)
            except PortClosed:
                return
            if fr is not None:
                self.loop.call_soon_threadsafe(self._deliver, fr)

    def _readable(self) -> None:
        try:
            frames = self.port.recv_batch(self.RX_BATCH)
        except PortClosed:
            self.loop.remove_reader(self.port)
            return
        for fr in frames:
            self._deliver(fr)

    def _deliver(self, fr: bytes) -> None:
        payload = wire.udp_payload(fr, self.tpl.sport)
        if payload is None:
            self.bad += 1
            return
        if self._cb is not None:
            self._cb(payload.tobytes())

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
        else:
            self.loop.remove_reader(self.port)
