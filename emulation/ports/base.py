"""The frame-port abstraction shared by the switch process and the host agents.

A :class:`FramePort` moves whole Ethernet frames (``bytes``, without FCS) in and out:

* ``send(frame)`` transmits one frame (never blocks for long; a full socket buffer
  drops the frame, as a NIC queue would);
* ``recv(timeout)`` returns the next received frame, or ``None`` when ``timeout``
  seconds passed without one; it raises :class:`PortClosed` once the port is closed
  or its link disappeared (an interface that was deleted, for example);
* ``close()`` releases the resources; it is idempotent and wakes a blocked ``recv``.

Ports are thread-safe for one receiving thread and any number of sending threads.
Wrappers (:class:`~emulation.ports.impair.ImpairedPort`, :class:`~emulation.ports.pcap.PcapTap`)
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

    def close(self) -> None:
        super().close()
        self.inner.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set() or self.inner.closed
