"""Loopback ports that are free a moment ago, for a test or benchmark to give to a switch
process, a tunnel or a server (each is bound on 127.0.0.1 with port 0, read, then released)."""
from __future__ import annotations

import socket


def _free_ports(kind: int, n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]     # all bound together: distinct
    finally:
        for s in socks:
            s.close()


def free_udp_ports(n: int) -> list[int]:
    """``n`` distinct UDP ports free on 127.0.0.1."""
    return _free_ports(socket.SOCK_DGRAM, n)


def free_tcp_port() -> int:
    """A TCP port free on 127.0.0.1."""
    return _free_ports(socket.SOCK_STREAM, 1)[0]
