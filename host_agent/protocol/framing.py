"""Ethernet/IPv4/UDP framing of SA-ATP packets (no IP options, UDP checksum 0).

:class:`FrameTemplate` prepends precomputed L2-L4 headers for one flow; :func:`strip_frame`
checks and removes them.  Addresses may be given as text or as bytes.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from .codec import WireError
from .layout import SA_PORT

ETH_LEN, IP_LEN, UDP_LEN = 14, 20, 8
L2L4_LEN = ETH_LEN + IP_LEN + UDP_LEN


def mac_bytes(mac: str | bytes) -> bytes:
    if isinstance(mac, bytes):
        return mac
    b = bytes(int(x, 16) for x in mac.split(":"))
    if len(b) != 6:
        raise ValueError(f"bad MAC address {mac!r}")
    return b


def ip_bytes(ip: str | bytes) -> bytes:
    if isinstance(ip, bytes):
        return ip
    b = bytes(int(x) for x in ip.split("."))
    if len(b) != 4:
        raise ValueError(f"bad IPv4 address {ip!r}")
    return b


def ip_int(ip: str) -> int:
    return int.from_bytes(ip_bytes(ip), "big")


def mac_int(mac: str) -> int:
    return int.from_bytes(mac_bytes(mac), "big")


def csum16(b: bytes) -> int:
    """RFC 1071 Internet checksum."""
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@dataclass
class FrameTemplate:
    """Precomputed Ethernet/IPv4/UDP headers for one (src host -> dst) flow.

    :meth:`frame` prepends them to SA-ATP bytes, patching only the lengths and the IPv4
    checksum (the UDP checksum is 0, legal for IPv4).  Header-only and full-payload
    variants are cached, so the common case is one bytes concatenation.
    """
    src_mac: str
    dst_mac: str
    src_ip: str
    dst_ip: str
    sport: int = SA_PORT
    dport: int = SA_PORT
    ttl: int = 64
    _cache: dict = field(default_factory=dict, repr=False)

    def l2l4(self, sa_len: int) -> bytes:
        hit = self._cache.get(sa_len)
        if hit is not None:
            return hit
        udp_len = UDP_LEN + sa_len
        tot = IP_LEN + udp_len
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, tot, 0, 0x4000, self.ttl, 17, 0,
                                   ip_bytes(self.src_ip), ip_bytes(self.dst_ip)))
        struct.pack_into("!H", ip, 10, csum16(bytes(ip)))
        eth = mac_bytes(self.dst_mac) + mac_bytes(self.src_mac) + b"\x08\x00"
        udp = struct.pack("!HHHH", self.sport, self.dport, udp_len, 0)
        out = eth + bytes(ip) + udp
        self._cache[sa_len] = out
        return out

    def frame(self, sa: bytes) -> bytes:
        return self.l2l4(len(sa)) + sa


@dataclass
class L2L4:
    src_mac: bytes
    dst_mac: bytes
    src_ip: bytes
    dst_ip: bytes
    sport: int
    dport: int


def strip_frame(frame: bytes, check_ip_csum: bool = False) -> tuple[L2L4, memoryview]:
    """Split an Ethernet/IPv4/UDP frame into addresses and the UDP payload.

    Raises :class:`WireError` for anything that is not well-formed IPv4/UDP (no IP options
    allowed), so a foreign frame never reaches the protocol code.
    """
    if len(frame) < L2L4_LEN:
        raise WireError(f"frame of {len(frame)} bytes is too short for Ethernet/IPv4/UDP")
    mv = memoryview(frame)
    if frame[12:14] != b"\x08\x00":
        raise WireError("not IPv4")
    if frame[14] != 0x45:
        raise WireError("IPv4 with options or wrong version")
    if frame[23] != 17:
        raise WireError("not UDP")
    tot = int.from_bytes(frame[16:18], "big")
    if tot + ETH_LEN > len(frame) or tot < IP_LEN + UDP_LEN:
        raise WireError("bad IPv4 total length")
    if check_ip_csum and csum16(bytes(frame[14:34])) != 0:
        raise WireError("bad IPv4 checksum")
    ulen = int.from_bytes(frame[38:40], "big")
    if ulen != tot - IP_LEN:
        raise WireError("UDP length disagrees with IPv4 length")
    hdr = L2L4(bytes(frame[6:12]), bytes(frame[0:6]), bytes(frame[26:30]), bytes(frame[30:34]),
               int.from_bytes(frame[34:36], "big"), int.from_bytes(frame[36:38], "big"))
    return hdr, mv[L2L4_LEN:ETH_LEN + tot]


_ETH_IPV4 = b"\x08\x00"
_L4 = struct.Struct("!HHH")   # UDP source port, destination port, length


def udp_payload(frame: bytes, dport: int) -> memoryview | None:
    """The UDP payload of an Ethernet/IPv4 (no options)/UDP frame sent to ``dport``, or None
    for anything else: the checks of :func:`strip_frame` that a receiver needs, without
    building the addresses (the per-packet path of a worker's transport)."""
    if len(frame) < L2L4_LEN or frame[12:14] != _ETH_IPV4 or frame[14] != 0x45 or frame[23] != 17:
        return None
    tot = (frame[16] << 8) | frame[17]
    _sport, dp, ulen = _L4.unpack_from(frame, ETH_LEN + IP_LEN)
    if dp != dport or tot + ETH_LEN > len(frame) or tot < IP_LEN + UDP_LEN or ulen != tot - IP_LEN:
        return None
    return memoryview(frame)[L2L4_LEN:ETH_LEN + tot]
