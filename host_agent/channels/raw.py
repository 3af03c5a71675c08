"""Raw packet-socket ports on a Linux network interface (Mininet links, veths, real NICs).

Needs root (or CAP_NET_RAW).  The socket is an ``AF_PACKET``/``SOCK_RAW`` socket bound
to one interface with ``ETH_P_ALL``; frames the kernel reports as ``PACKET_OUTGOING``
(our own transmissions, looped back to every packet socket) are ignored.

Offloads: with GRO/GSO/TSO on, a packet socket sees "super-frames" larger than the
MTU, and with TX checksum offload a veth peer hands over frames whose L4 checksum is
not filled in yet.  Turn them off on the interface and on its peer, as Mininet and the
p4lang tutorials do::

    ethtool -K IFACE rx off tx off sg off tso off gso off gro off lro off

When the interface disappears (``ip link del``, a Mininet shutdown) ``recv`` raises
:class:`PortClosed`; the switch process then shuts down cleanly.

Sending: ``send``/``send_batch`` wait while the socket's send buffer is full (a link shaped
with ``tc ... htb rate R`` holds about ``SO_SNDBUF`` worth of frames in its qdisc, then the
socket blocks); :meth:`RawSocketPort.send_some` never waits: it sends until the kernel says
``EAGAIN`` and returns how many frames it took, and the caller waits for the socket to be
writable (``POLLOUT`` on ``fileno()``) before offering the rest.  That is how the switch
process turns a slow link into queueing (back-pressure) instead of a stalled event loop.

``rx_overflow()`` is the kernel's count of frames this socket dropped because its
receive queue was full (``PACKET_STATISTICS``; the kernel resets it on each read, so
the port adds the readings up).
"""
from __future__ import annotations

import errno
import os
import select
import socket
import struct
import threading

from .base import FramePort, PortClosed, PortError

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
MAX_FRAME = 65535 + 14
RCVBUF = 8 << 20
SOL_PACKET = getattr(socket, "SOL_PACKET", 263)
PACKET_STATISTICS = 6


def interface_exists(ifname: str) -> bool:
    return os.path.exists(f"/sys/class/net/{ifname}")


class RawSocketPort(FramePort):
    def __init__(self, ifname: str, *, name: str | None = None):
        super().__init__()
        if not hasattr(socket, "AF_PACKET"):
            raise PortError("raw interface ports need Linux packet sockets (AF_PACKET)")
        if not ifname or "/" in ifname or len(ifname) > 15:
            raise PortError(f"bad interface name {ifname!r}")
        if not interface_exists(ifname):
            raise PortError(f"no network interface named {ifname!r}")
        self.ifname = ifname
        self.name = name or ifname
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        except PermissionError:
            raise PortError(f"interface {ifname}: packet sockets need root (CAP_NET_RAW)") from None
        try:
            self.sock.bind((ifname, 0))
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        except OSError as e:
            self.sock.close()
            raise PortError(f"interface {ifname}: {e.strerror}") from None
        self._buf = bytearray(MAX_FRAME)
        self._view = memoryview(self._buf)
        self._kernel_drops = 0
        self._drops_lock = threading.Lock()   # the kernel resets its count on each read

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise PortClosed(self.name)
        try:
            self.sock.send(frame)
            self._count_tx(frame)
        except OSError as e:
            if e.errno in (errno.ENXIO, errno.ENODEV) or not interface_exists(self.ifname):
                self.close()
                raise PortClosed(self.name) from None
            self.stats["tx_dropped"] += 1  # ENOBUFS, EMSGSIZE, link down: lost

    def send_some(self, frames: list[bytes]) -> int:
        """Send frames in order without waiting; returns how many were taken (sent, or lost
        as on a wire: ENOBUFS, oversize, link down).  Fewer than ``len(frames)``: the link
        refuses more for now (EAGAIN); wait for POLLOUT before offering the rest."""
        if self.closed:
            raise PortClosed(self.name)
        send, dontwait, st = self.sock.send, socket.MSG_DONTWAIT, self.stats
        for k, f in enumerate(frames):
            try:
                send(f, dontwait)
            except (BlockingIOError, InterruptedError):
                return k
            except OSError as e:
                if e.errno in (errno.ENXIO, errno.ENODEV) or not interface_exists(self.ifname):
                    self.close()
                    raise PortClosed(self.name) from None
                st["tx_dropped"] += 1
                continue
            st["tx_frames"] += 1
            st["tx_bytes"] += len(f)
        return len(frames)

    def recv(self, timeout: float | None = None) -> bytes | None:
        waited = False
        while True:
            if self.closed:
                raise PortClosed(self.name)
            try:
                # try first; wait (select) only when nothing is queued
                data, addr = self.sock.recvfrom(MAX_FRAME, socket.MSG_DONTWAIT)
            except BlockingIOError:
                try:
                    r, _, _ = select.select([self.sock], [], [], timeout) if not waited else ([], [], [])
                except (OSError, ValueError):
                    raise PortClosed(self.name) from None
                if not r:
                    if not interface_exists(self.ifname):
                        self.close()
                        raise PortClosed(f"{self.name}: interface disappeared")
                    return None
                waited = True
                continue
            except OSError as e:
                if e.errno == errno.ENETDOWN and interface_exists(self.ifname):
                    continue
                self.close()
                raise PortClosed(f"{self.name}: {e.strerror}") from None
            if addr[2] == PACKET_OUTGOING:
                continue
            return self._count_rx(data)

    def fileno(self) -> int | None:
        return None if self.closed else self.sock.fileno()

    def recv_batch(self, limit: int) -> list[bytes]:
        """Up to ``limit`` queued frames (our own transmissions skipped), without waiting."""
        if self.closed:
            raise PortClosed(self.name)
        out: list[bytes] = []
        recv_into, buf, view = self.sock.recvfrom_into, self._buf, self._view
        dontwait = socket.MSG_DONTWAIT
        reads = 0
        while reads < limit:
            try:
                n, addr = recv_into(buf, MAX_FRAME, dontwait)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                if e.errno == errno.ENETDOWN and interface_exists(self.ifname):
                    break
                if out:
                    break
                self.close()
                raise PortClosed(f"{self.name}: {e.strerror}") from None
            reads += 1
            if addr[2] != PACKET_OUTGOING:
                out.append(bytes(view[:n]))
        st = self.stats
        st["rx_frames"] += len(out)
        st["rx_bytes"] += sum(map(len, out))
        return out

    def rx_overflow(self) -> int:
        with self._drops_lock:      # two readers at once would lose one's share of the count
            if not self.closed:
                try:
                    _packets, drops = struct.unpack("=II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
                    self._kernel_drops += drops
                except OSError:
                    pass
            return self._kernel_drops

    def check_link(self) -> None:
        if self.closed:
            raise PortClosed(self.name)
        if not interface_exists(self.ifname):
            self.close()
            raise PortClosed(f"{self.name}: interface disappeared")

    def close(self) -> None:
        if not self.closed:
            # the kernel's count goes with the socket: take its last reading first, so that
            # rx_overflow() after close (a switch's final stats line) still has every drop
            self.rx_overflow()
            super().close()
            self.sock.close()
