"""Frame channels (ports): in-memory, UDP tunnel and raw-socket ports, impairments and pcap taps.

``open_port(spec)`` builds a port from the text forms ``saatp switch -i`` accepts:
``IFACE`` (raw packet socket, through ``PACKET_MMAP`` rings when the kernel offers them:
``packet_ring.py``), ``udp:LOCAL_PORT:REMOTE_HOST:REMOTE_PORT`` (UDP tunnel),
``mem:NAME`` (in-memory; only useful inside one process).
"""
from __future__ import annotations

from .base import FramePort, PortClosed, PortError, PortWrapper
from .impair import Impairment, ImpairedPort, ImpairmentModel, parse_impairment
from .memory import MemoryPort
from .pcap import PcapTap, PcapWriter, read_pcap
from .packet_ring import PacketRingPort, open_raw_port
from .raw import RawSocketPort
from .udp import UdpTunnelPort

__all__ = ["FramePort", "PortClosed", "PortError", "PortWrapper", "Impairment", "ImpairedPort",
           "ImpairmentModel", "parse_impairment", "MemoryPort", "PcapTap", "PcapWriter", "read_pcap",
           "PacketRingPort", "RawSocketPort", "UdpTunnelPort", "open_port", "parse_port_spec"]


def parse_port_spec(text: str) -> tuple[int, str]:
    """``N@SPEC`` -> (N, SPEC), as ``simple_switch -i 1@veth0``."""
    num, sep, spec = text.partition("@")
    if not sep or not spec:
        raise PortError(f"interface {text!r}: expected PORT@INTERFACE (e.g. 1@veth0 or 1@udp:9001:127.0.0.1:9002)")
    try:
        n = int(num, 0)
    except ValueError:
        raise PortError(f"interface {text!r}: port number {num!r} is not an integer") from None
    if not 0 <= n < 511:
        raise PortError(f"interface {text!r}: port number must be in 0..510 (511 is the drop port)")
    return n, spec


def open_port(spec: str, memory: dict[str, FramePort] | None = None) -> FramePort:
    if spec.startswith("udp:"):
        parts = spec.split(":")
        if len(parts) != 4:
            raise PortError(f"{spec!r}: expected udp:LOCAL_PORT:REMOTE_HOST:REMOTE_PORT")
        try:
            lp, rp = int(parts[1]), int(parts[3])
        except ValueError:
            raise PortError(f"{spec!r}: ports must be integers") from None
        return UdpTunnelPort(lp, parts[2], rp)
    if spec.startswith("mem:"):
        if memory is None or spec[4:] not in memory:
            raise PortError(f"{spec!r}: no in-memory port of that name in this process")
        return memory[spec[4:]]
    return open_raw_port(spec)
