"""Loopback ports that were free a moment ago, for a switch process, a tunnel, a store or a
test server (each is bound with port 0, read, then released). The one home of this helper:
the torch backend, the planners' process runs, the Mininet runner, the test tools and the
benchmarks all take their ports from here."""
from __future__ import annotations

import socket


def _free_ports(kind: int, n: int, host: str) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, kind)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]     # all bound together: distinct
    finally:
        for s in socks:
            s.close()


def free_udp_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct UDP ports free on ``host``."""
    return _free_ports(socket.SOCK_DGRAM, n, host)


def free_tcp_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host``."""
    return _free_ports(socket.SOCK_STREAM, 1, host)[0]
