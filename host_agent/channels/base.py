"""The frame-port abstraction shared by the switch process and the host agents.

A :class:`FramePort` moves whole Ethernet frames (``bytes``, without FCS) in and out:

* ``send(frame)`` transmits one frame (never blocks for long; a full socket buffer
  drops the frame, as a NIC queue would);
* ``recv(timeout)`` returns the next received frame, or ``None`` when ``timeout``
  seconds passed without one; it raises :class:`PortClosed` once the port is closed
  or its link disappeared (an interface that was deleted, for example);
* ``close()`` releases the resources; it is idempotent and wakes a blocked ``recv``.

Ports are thread-safe for one receiving thread and any number of sending threads.

For an event loop over many ports (the switch process), a port also offers:

* ``fileno()``: a file descriptor that becomes readable when frames are waiting
  (``None`` if the port has none; the loop then polls it);
* ``recv_batch(limit)``: up to ``limit`` frames already queued, without waiting;
* ``send_batch(frames)``: several frames in one call (multicast copies, a batch's outputs);
* ``rx_overflow()``: how many frames the kernel dropped because the receive queue was
  full, so far (0 where the kernel does not tell);
* ``check_link()``: raises :class:`PortClosed` when the link went away (called now and
  then by a loop that does not block in ``recv``).
Wrappers (:class:`~host_agent.channels.impair.ImpairedPort`, :class:`~host_agent.channels.pcap.PcapTap`)
are ports themselves and can be stacked.
"""
from __future__ import annotations

import abc
import threading


class PortClosed(Exception):
    """The port was closed or its link went away."""


class PortError(ValueError):
    """A port specification or configuration that cannot work."""


class FramePort(abc.ABC):
    name: str = "port"

    def __init__(self) -> None:
        self._closed = threading.Event()
        self.stats = {"rx_frames": 0, "rx_bytes": 0, "tx_frames": 0, "tx_bytes": 0, "tx_dropped": 0}

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @abc.abstractmethod
    def send(self, frame: bytes) -> None: ...

    @abc.abstractmethod
    def recv(self, timeout: float | None = None) -> bytes | None: ...

    def close(self) -> None:
        self._closed.set()

    def fileno(self) -> int | None:
        return None

    def recv_batch(self, limit: int) -> list[bytes]:
        out: list[bytes] = []
        while len(out) < limit:
            f = self.recv(0)
            if f is None:
                break
            out.append(f)
        return out

    def send_batch(self, frames: list[bytes]) -> None:
        for f in frames:
            self.send(f)

    def send_some(self, frames: list[bytes]) -> int:
        """Send frames in order without waiting for a busy link; returns how many were taken.
        Ports that can refuse (raw interface ports) return fewer when the link is full; the
        caller then waits for ``fileno()`` to be writable.  Here: all of them, via send_batch."""
        self.send_batch(frames)
        return len(frames)

    def tx_stalled(self) -> bool:
        """Whether a frame ``send_some`` took is still waiting for the link (then wait for
        ``fileno()`` to be writable and call ``send_some`` again, with no frames if need be)."""
        return False

    def rx_overflow(self) -> int:
        return 0

    def check_link(self) -> None:
        if self.closed:
            raise PortClosed(self.name)

    def _count_rx(self, frame: bytes) -> bytes:
        self.stats["rx_frames"] += 1
        self.stats["rx_bytes"] += len(frame)
        return frame

    def _count_tx(self, frame: bytes) -> None:
        self.stats["tx_frames"] += 1
        self.stats["tx_bytes"] += len(frame)

    def __enter__(self) -> "FramePort":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}{' closed' if self.closed else ''}>"


class PortWrapper(FramePort):
    """A port that forwards to an inner port (base for taps and impairments)."""

    def __init__(self, inner: FramePort):
        super().__init__()
        self.inner = inner
        self.name = inner.name

    def send(self, frame: bytes) -> None:
        self.inner.send(frame)

    def recv(self, timeout: float | None = None) -> bytes | None:
        return self.inner.recv(timeout)

    def recv_batch(self, limit: int) -> list[bytes]:
        return self.inner.recv_batch(limit)

    def fileno(self) -> int | None:
        return self.inner.fileno()

    def tx_stalled(self) -> bool:
        return self.inner.tx_stalled()

    def rx_overflow(self) -> int:
        return self.inner.rx_overflow()

    def check_link(self) -> None:
        self.inner.check_link()

    def close(self) -> None:
        super().close()
        self.inner.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set() or self.inner.closed
