"""UDP tunnel ports: each datagram carries one whole Ethernet frame.

``UdpTunnelPort(local_port, remote_host, remote_port)`` binds ``local_port`` and sends
to ``remote_host:remote_port``; datagrams from any other source are ignored.  No
root is needed, so tests and unprivileged set-ups use it to wire switches and hosts.
The bind address is 127.0.0.1 when the remote is a loopback address, otherwise
``bind_host`` (default: all addresses).

The socket is connected to the remote, so the kernel filters other senders.  Its
receive buffer is large (``RCVBUF``); on Linux ``SO_RXQ_OVFL`` is on, and ``rx_overflow()``
reports how many datagrams the kernel dropped because the receive queue was full (the
count travels with each datagram, so drops after the last datagram read show up with
the next one).
"""
from __future__ import annotations

import ipaddress
import select
import socket
import struct
import sys

from .base import FramePort, PortClosed, PortError

MAX_FRAME = 65535
RCVBUF = 8 << 20
SNDBUF = 4 << 20
SO_RXQ_OVFL = getattr(socket, "SO_RXQ_OVFL", 40 if sys.platform.startswith("linux") else None)
_OVFL_SPACE = socket.CMSG_SPACE(4) if SO_RXQ_OVFL is not None else 0


class UdpTunnelPort(FramePort):
    def __init__(self, local_port: int, remote_host: str, remote_port: int, *,
                 bind_host: str | None = None, name: str | None = None):
        super().__init__()
        for what, p in (("local", local_port), ("remote", remote_port)):
            if not 0 <= int(p) <= 65535 or (what == "remote" and int(p) == 0):
                raise PortError(f"udp port: bad {what} port {p}")
        try:
            infos = socket.getaddrinfo(remote_host, int(remote_port), type=socket.SOCK_DGRAM)
        except socket.gaierror as e:
            raise PortError(f"udp port: cannot resolve {remote_host!r}: {e}") from None
        fam, _, _, _, addr = infos[0]
        self.remote = addr[:2]
        if bind_host is None:
            bind_host = "0.0.0.0" if fam == socket.AF_INET else "::"
            if ipaddress.ip_address(addr[0]).is_loopback:
                bind_host = addr[0]
        self.sock = socket.socket(fam, socket.SOCK_DGRAM)
        try:
            self.sock.bind((bind_host, int(local_port)))
        except OSError as e:
            self.sock.close()
            raise PortError(f"udp port: cannot bind {bind_host}:{local_port}: {e.strerror}") from None
        for opt, size in ((socket.SO_RCVBUF, RCVBUF), (socket.SO_SNDBUF, SNDBUF)):
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, opt, size)
            except OSError:
                pass
        self._ovfl = False
        if SO_RXQ_OVFL is not None:
            try:
                self.sock.setsockopt(socket.SOL_SOCKET, SO_RXQ_OVFL, 1)
                self._ovfl = True
            except OSError:
                pass
        try:
            self.sock.connect(self.remote)
        except OSError as e:
            self.sock.close()
            raise PortError(f"udp port: cannot reach {remote_host}:{remote_port}: {e.strerror}") from None
        self.local_port = self.sock.getsockname()[1]
        self.name = name or f"udp{self.local_port}"
        self._buf = bytearray(MAX_FRAME)
        self._view = memoryview(self._buf)
        self._kernel_drops = 0

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise PortClosed(self.name)
        try:
            self.sock.send(frame)
            self._count_tx(frame)
        except OSError:
            # nobody listening yet or buffer full: the frame is lost, as on a wire
            self.stats["tx_dropped"] += 1

    def send_batch(self, frames: list[bytes]) -> None:
        if self.closed:
            raise PortClosed(self.name)
        send, stats = self.sock.send, self.stats
        for frame in frames:
            try:
                send(frame)
                stats["tx_frames"] += 1
                stats["tx_bytes"] += len(frame)
            except OSError:
                stats["tx_dropped"] += 1

    def recv(self, timeout: float | None = None) -> bytes | None:
        waited = False
        while True:
            if self.closed:
                raise PortClosed(self.name)
            # under load, frames are usually already queued: try first, wait only when empty
            # (one select per frame would cost a system call each)
            try:
                data = self.sock.recv(MAX_FRAME, socket.MSG_DONTWAIT)
            except BlockingIOError:
                if waited:
                    return None
                try:
                    r, _, _ = select.select([self.sock], [], [], timeout)
                except (OSError, ValueError):
                    raise PortClosed(self.name) from None
                if not r:
                    return None
                waited = True
                continue
            except ConnectionRefusedError:
                continue  # ICMP port unreachable from an earlier send
            except OSError:
                raise PortClosed(self.name) from None
            return self._count_rx(data)

    def fileno(self) -> int | None:
        return None if self.closed else self.sock.fileno()

    def recv_batch(self, limit: int) -> list[bytes]:
        """Up to ``limit`` queued datagrams, read into one preallocated buffer; the first
        one with ``recvmsg_into`` so the kernel's overflow count comes along."""
        if self.closed:
            raise PortClosed(self.name)
        out: list[bytes] = []
        sock, buf, view = self.sock, self._buf, self._view
        dontwait = socket.MSG_DONTWAIT
        try:
            if self._ovfl:
                n, anc, _flags, _addr = sock.recvmsg_into([buf], _OVFL_SPACE, dontwait)
                for level, kind, data in anc:
                    if level == socket.SOL_SOCKET and kind == SO_RXQ_OVFL and len(data) >= 4:
                        self._kernel_drops = struct.unpack("=I", data[:4])[0]
                out.append(bytes(view[:n]))
            recv_into = sock.recv_into
            while len(out) < limit:
                n = recv_into(buf, MAX_FRAME, dontwait)
                out.append(bytes(view[:n]))
        except (BlockingIOError, InterruptedError):
            pass
        except ConnectionRefusedError:
            pass  # ICMP port unreachable from an earlier send; the next batch goes on
        except OSError:
            if out:
                pass
            else:
                raise PortClosed(self.name) from None
        st = self.stats
        st["rx_frames"] += len(out)
        st["rx_bytes"] += sum(map(len, out))
        return out

    def rx_overflow(self) -> int:
        return self._kernel_drops

    def close(self) -> None:
        if not self.closed:
            super().close()
            self.sock.close()
