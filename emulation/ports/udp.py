"""UDP tunnel ports: each datagram carries one whole Ethernet frame.

``UdpTunnelPort(local_port, remote_host, remote_port)`` binds ``local_port`` and sends
to ``remote_host:remote_port``; datagrams from any other source are ignored.  No
root is needed, so tests and unprivileged set-ups use it to wire switches and hosts.
The bind address is 127.0.0.1 when the remote is a loopback address, otherwise
``bind_host`` (default: all addresses).
"""
from __future__ import annotations

import ipaddress
import select
import socket

from .base import FramePort, PortClosed, PortError

MAX_FRAME = 65535


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
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.local_port = self.sock.getsockname()[1]
        self.name = name or f"udp{self.local_port}"

    def send(self, frame: bytes) -> None:
        if self.closed:
            raise PortClosed(self.name)
        try:
            self.sock.sendto(frame, self.remote)
            self._count_tx(frame)
        except (BlockingIOError, ConnectionRefusedError, OSError):
            # nobody listening yet or buffer full: the frame is lost, as on a wire
            self.stats["tx_dropped"] += 1

    def recv(self, timeout: float | None = None) -> bytes | None:
        waited = False
        while True:
            if self.closed:
                raise PortClosed(self.name)
            # under load, frames are usually already queued: try first, wait only when empty
            # (one select per frame would cost a system call each)
            try:
                data, src = self.sock.recvfrom(MAX_FRAME, socket.MSG_DONTWAIT)
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
            if src[:2] != self.remote:
                continue
            return self._count_rx(data)

    def close(self) -> None:
        if not self.closed:
            super().close()
            self.sock.close()
