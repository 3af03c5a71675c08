"""Send and check packets on a switch's ports, by name: the packet-test API.

``PacketTester({"h1": port, ...})`` wraps :class:`~host_agent.channels.FramePort` objects (our
side of each switch port); packets are scapy packets or bytes::

    t.send("h1", Ether()/IP(dst="10.0.0.2")/UDP())
    got = t.expect("h2", expected_packet)          # AssertionError with a diff if it differs
    t.expect_no_packet("h3")

``expect`` compares whole frames, or only the bytes a :class:`Masked` pattern cares about
(``Masked(pkt).ignore(IP, "ttl", "chksum")``).  Frames that arrive and are not consumed by an
``expect`` are kept per port; :meth:`PacketTester.unexpected` lists them and
:meth:`PacketTester.check_no_unexpected` fails on them (the pytest fixture calls it at the end
of each test).  Waits are bounded by ``timeout`` (seconds): a test fails, never hangs.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

DEFAULT_TIMEOUT = 2.0
NO_PACKET_WAIT = 0.3


def _bytes(pkt: Any) -> bytes:
    """A scapy packet or bytes as bytes."""
    return bytes(pkt)


class Masked:
    """An expected frame with don't-care bits: ``Masked(pkt).ignore(IP, "ttl")`` or
    ``.ignore_bytes(start, end)``."""

    def __init__(self, pkt: Any):
        self.pkt = pkt
        self.data = _bytes(pkt)
        self.mask = bytearray(b"\xff" * len(self.data))

    def ignore_bytes(self, start: int, end: int) -> Masked:
        for i in range(start, min(end, len(self.data))):
            self.mask[i] = 0
        return self

    def ignore(self, layer: Any, *fields: str) -> Masked:
        """Ignore fields of a scapy layer of the packet (offsets found by scapy)."""
        from scapy.packet import Packet as _P
        if not isinstance(self.pkt, _P):
            raise TypeError("ignore() needs a scapy packet; use ignore_bytes() for bytes")
        lay = self.pkt.getlayer(layer)
        if lay is None:
            raise ValueError(f"the packet has no {getattr(layer, '__name__', layer)} layer")
        built = lay.__class__(_bytes(lay))      # the layer as sent (lengths, checksums filled)
        start = len(self.data) - len(_bytes(lay))
        unknown = set(fields) - {f.name for f in built.fields_desc}
        if unknown:
            raise ValueError(f"{built.__class__.__name__} has no field(s) {sorted(unknown)}")
        bit = 0
        for f in built.fields_desc:
            v = built.getfieldval(f.name)
            # bit fields know their width in bits; other fields are whole bytes as they encode
            size = f.size if isinstance(getattr(f, "size", None), int) else len(f.addfield(built, b"", v)) * 8
            if f.name in fields:
                for b in range(bit, bit + size):
                    self.mask[start + b // 8] &= ~(0x80 >> (b % 8)) & 0xFF
            bit += size
        return self

    def matches(self, data: bytes) -> bool:
        if len(data) != len(self.data):
            return False
        return all((a ^ b) & m == 0 for a, b, m in zip(data, self.data, self.mask))


def describe_difference(want: bytes, got: bytes, mask: bytes | None = None) -> str:
    if len(want) != len(got):
        return f"length {len(got)}, expected {len(want)}"
    for i, (a, b) in enumerate(zip(want, got)):
        m = mask[i] if mask is not None else 0xFF
        if (a ^ b) & m:
            return f"first difference at byte {i}: got {b:#04x}, expected {a:#04x}"
    return "equal"


class PacketTester:
    """Named ports of one switch; a reader thread per port queues what arrives."""

    def __init__(self, ports: dict[str, Any], numbers: dict[str, int] | None = None):
        self.ports = dict(ports)
        self.numbers = dict(numbers or {})      # name -> switch port number (for messages)
        self._queues: dict[str, deque] = {n: deque() for n in self.ports}
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._reader, args=(n,), daemon=True) for n in self.ports]
        for t in self._threads:
            t.start()

    def _reader(self, name: str) -> None:
        port = self.ports[name]
        while not self._stop.is_set():
            try:
                f = port.recv(0.1)
            except Exception:           # PortClosed: the tester is closing
                return
            if f is not None:
                with self._cv:
                    self._queues[name].append(f)
                    self._cv.notify_all()

    def _port(self, name: str) -> Any:
        if name not in self.ports:
            raise KeyError(f"no port named {name!r}; ports are {sorted(self.ports)}")
        return self.ports[name]

    def _label(self, name: str) -> str:
        return f"{name} (switch port {self.numbers[name]})" if name in self.numbers else name

    def _wait_for_frame(self, port: str, timeout: float) -> bool:
        """With ``self._cv`` held: wait up to ``timeout`` seconds for a frame queued on ``port``;
        True if one is there."""
        end = time.monotonic() + timeout
        while not self._queues[port]:
            left = end - time.monotonic()
            if left <= 0:
                return False
            self._cv.wait(left)
        return True

    def send(self, port: str, pkt: Any) -> None:
        self._port(port).send(_bytes(pkt))

    def expect(self, port: str, pkt: Any, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """Wait for the next frame on ``port`` and check it equals ``pkt`` (or matches a
        :class:`Masked`); returns the frame."""
        self._port(port)
        with self._cv:
            if not self._wait_for_frame(port, timeout):
                others = {n: len(q) for n, q in self._queues.items() if q}
                raise AssertionError(f"no packet on {self._label(port)} within {timeout} s"
                                     + (f"; frames waiting on other ports: {others}" if others else ""))
            got = self._queues[port].popleft()
        if isinstance(pkt, Masked):
            if not pkt.matches(got):
                raise AssertionError(f"packet on {self._label(port)} differs: "
                                     f"{describe_difference(pkt.data, got, pkt.mask)}")
        else:
            want = _bytes(pkt)
            if got != want:
                raise AssertionError(f"packet on {self._label(port)} differs: {describe_difference(want, got)}")
        return got

    def expect_no_packet(self, port: str, timeout: float = NO_PACKET_WAIT) -> None:
        """Wait ``timeout`` seconds and check nothing arrived on ``port``."""
        self._port(port)
        with self._cv:
            if not self._wait_for_frame(port, timeout):
                return
            got = self._queues[port][0]
        raise AssertionError(f"unexpected packet of {len(got)} bytes on {self._label(port)}: {got[:32].hex()}...")

    def recv(self, port: str, timeout: float = DEFAULT_TIMEOUT) -> bytes | None:
        """The next frame on ``port`` (None after ``timeout``), unchecked."""
        self._port(port)
        with self._cv:
            return self._queues[port].popleft() if self._wait_for_frame(port, timeout) else None

    def unexpected(self) -> dict[str, int]:
        with self._cv:
            return {n: len(q) for n, q in self._queues.items() if q}

    def check_no_unexpected(self, wait: float = 0.0) -> None:
        if wait:
            time.sleep(wait)
        left = self.unexpected()
        if left:
            raise AssertionError(f"frames nobody expected: {left}")

    def clear(self) -> None:
        with self._cv:
            for q in self._queues.values():
                q.clear()

    def close(self) -> None:
        self._stop.set()
        for p in self.ports.values():
            p.close()
        for t in self._threads:
            t.join(2)

    def names(self) -> Iterable[str]:
        return list(self.ports)
