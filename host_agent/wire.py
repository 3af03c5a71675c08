"""The SA-ATP wire format, in one place.

Two views of the same bytes:

* the **fast path** (``struct`` + numpy) that the agents use on the data plane:
  :class:`Header`, :func:`pack`, :func:`unpack`, :class:`FrameTemplate`;
* **scapy layers** (:class:`SAATP`) for dissection, tests and pcaps.

``tests/saatp/test_saatp_wire.py`` checks that the two agree.  The layout is documented in
``p4src/SA-ATP.md`` section 3 and must match the ``sa_t``/``payload_t`` headers of
``p4src/saatp.p4``.

Frame: ``Ethernet | IPv4 (no options) | UDP (dport SA_PORT) | SA-ATP header (28 B) |
payload (K x int32 big-endian, present iff flags & PAYLOAD)``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace

import numpy as np

VERSION = 1
SA_PORT = 9000
RING_PORT = 9001  # host-only ring all-reduce baseline (plain IPv4 forwarding at the switch)
HDR_LEN = 28
ETH_LEN, IP_LEN, UDP_LEN = 14, 20, 8
L2L4_LEN = ETH_LEN + IP_LEN + UDP_LEN
SWITCH_WID = 0xFF
NO_WID = 0xFF

# packet types (4 bits)
DATA, RESULT, PARTIAL, PROBE, NACK, PACK, HRESULT, FLUSH, CTRL = 0, 1, 2, 4, 5, 6, 7, 8, 9
# host-only types used by the ring baseline (never sent to the SA-ATP port)
RING_DATA, RING_ACK = 10, 11
TYPE_NAMES = {DATA: "DATA", RESULT: "RESULT", PARTIAL: "PARTIAL", PROBE: "PROBE", NACK: "NACK",
              PACK: "PACK", HRESULT: "HRESULT", FLUSH: "FLUSH", CTRL: "CTRL",
              RING_DATA: "RING_DATA", RING_ACK: "RING_ACK"}

# flags (8 bits)
F_RESEND = 0x01     # a retransmission
F_ECN = 0x02        # congestion experienced (reserved in v1)
F_OVERFLOW = 0x04   # a saturating add clipped at least one lane of this chunk
F_SET = 0x08        # shadow set: floor(seq / P) mod 2
F_REDIRECT = 0x10   # the switch forwarded this packet to a helper / result holder
F_RELEASED = 0x20   # PROBE: the sender already holds a PACK for this chunk and wants the result
F_PAYLOAD = 0x40    # K int32 values follow the header
F_UCAST = 0x80      # HRESULT/NACK/PACK from a helper: deliver to worker ``dst`` only

_HDR = struct.Struct("!BBBBBBHIHHIIbBBB")
assert _HDR.size == HDR_LEN


class WireError(ValueError):
    """Malformed SA-ATP bytes."""


@dataclass
class Header:
    type: int = DATA
    flags: int = 0
    job: int = 0
    wid: int = 0
    nworkers: int = 0
    helper: int = NO_WID
    slot: int = 0
    seq: int = 0
    iter: int = 0
    nvalid: int = 0
    bitmap: int = 0
    strag: int = 0
    exp: int = 0
    klog2: int = 6
    dst: int = NO_WID
    rsv: int = 0
    version: int = VERSION

    def pack(self) -> bytes:
        return _HDR.pack(((self.version & 0xF) << 4) | (self.type & 0xF), self.flags & 0xFF,
                         self.job, self.wid, self.nworkers, self.helper, self.slot, self.seq,
                         self.iter & 0xFFFF, self.nvalid, self.bitmap & 0xFFFFFFFF,
                         self.strag & 0xFFFFFFFF, self.exp, self.klog2, self.dst, self.rsv)

    @classmethod
    def unpack(cls, b: bytes | memoryview, off: int = 0) -> "Header":
        if len(b) - off < HDR_LEN:
            raise WireError(f"SA-ATP header needs {HDR_LEN} bytes, got {len(b) - off}")
        (vt, flags, job, wid, nw, helper, slot, seq, it, nvalid, bitmap, strag, exp, klog2, dst,
         rsv) = _HDR.unpack_from(b, off)
        return cls(vt & 0xF, flags, job, wid, nw, helper, slot, seq, it, nvalid, bitmap, strag,
                   exp, klog2, dst, rsv, vt >> 4)

    def copy(self, **kw) -> "Header":
        return replace(self, **kw)

    @property
    def k(self) -> int:
        return 1 << self.klog2

    def __str__(self) -> str:
        fl = "|".join(n for n, b in (("RESEND", F_RESEND), ("ECN", F_ECN), ("OVF", F_OVERFLOW),
                                     ("SET", F_SET), ("REDIR", F_REDIRECT), ("REL", F_RELEASED),
                                     ("PAY", F_PAYLOAD), ("UCAST", F_UCAST)) if self.flags & b)
        return (f"{TYPE_NAMES.get(self.type, self.type)}[job={self.job} wid={self.wid} "
                f"iter={self.iter} seq={self.seq} slot={self.slot} bm={self.bitmap:#x} "
                f"strag={self.strag:#x} helper={self.helper} dst={self.dst} {fl}]")


def pack(h: Header, values: np.ndarray | None = None) -> bytes:
    """SA-ATP header (+ payload) bytes: the UDP payload of one packet.

    ``values`` must have exactly ``2**h.klog2`` int32 elements when given; the PAYLOAD flag
    is set or cleared to match.
    """
    if values is None:
        h.flags &= ~F_PAYLOAD
        return h.pack()
    v = np.asarray(values)
    if v.shape != (h.k,):
        raise WireError(f"payload must have K={h.k} elements, got shape {v.shape}")
    h.flags |= F_PAYLOAD
    return h.pack() + v.astype(">i4", copy=False).tobytes()


def unpack(b: bytes | memoryview, off: int = 0) -> tuple[Header, np.ndarray | None]:
    """Parse SA-ATP bytes; the payload is a native int32 array (or None).

    Raises :class:`WireError` on a short buffer, a wrong version, or a length that does not
    match the PAYLOAD flag and ``klog2``.
    """
    h = Header.unpack(b, off)
    if h.version != VERSION:
        raise WireError(f"unsupported SA-ATP version {h.version}")
    if h.klog2 > 10:
        raise WireError(f"klog2 {h.klog2} out of range")
    rest = len(b) - off - HDR_LEN
    if h.flags & F_PAYLOAD:
        need = 4 * h.k
        if rest != need:
            raise WireError(f"payload of {rest} bytes, expected {need} (K={h.k})")
        vals = np.frombuffer(b, dtype=">i4", count=h.k, offset=off + HDR_LEN).astype(np.int32)
        return h, vals
    if rest != 0:
        raise WireError(f"{rest} trailing bytes after a header-only packet")
    return h, None


# ------------------------------------------------------------------ L2-L4 framing
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


# ------------------------------------------------------------------ scapy layers
def _scapy():
    """Build and bind the scapy layers on first use (importing scapy costs ~0.5 s)."""
    global SAATP
    if SAATP is not None:
        return SAATP
    from scapy.fields import (BitEnumField, BitField, ByteField, FieldListField, FlagsField,
                              IntField, ShortField, SignedByteField, SignedIntField, XByteField,
                              XIntField)
    from scapy.layers.inet import UDP
    from scapy.packet import Packet, bind_layers

    class _SAATP(Packet):
        name = "SA-ATP"
        fields_desc = [
            BitField("version", VERSION, 4),
            BitEnumField("type", DATA, 4, {k: v for k, v in TYPE_NAMES.items() if k < 16}),
            FlagsField("flags", 0, 8, ["RESEND", "ECN", "OVERFLOW", "SET", "REDIRECT",
                                       "RELEASED", "PAYLOAD", "UCAST"]),
            ByteField("job", 0),
            ByteField("wid", 0),
            ByteField("nworkers", 0),
            XByteField("helper", NO_WID),
            ShortField("slot", 0),
            IntField("seq", 0),
            ShortField("iter", 0),
            ShortField("nvalid", 0),
            XIntField("bitmap", 0),
            XIntField("strag", 0),
            SignedByteField("exp", 0),
            ByteField("klog2", 6),
            XByteField("dst", NO_WID),
            ByteField("rsv", 0),
            FieldListField("vals", [], SignedIntField("v", 0),
                           count_from=lambda p: (1 << p.klog2) if int(p.flags) & F_PAYLOAD else 0),
        ]

        def extract_padding(self, s):
            return b"", s

    bind_layers(UDP, _SAATP, dport=SA_PORT)
    bind_layers(UDP, _SAATP, sport=SA_PORT)
    SAATP = _SAATP
    return SAATP


SAATP = None


def scapy_layer():
    """The scapy ``SA-ATP`` packet class (bound to UDP port SA_PORT)."""
    return _scapy()


def to_scapy(h: Header, values: np.ndarray | None = None):
    cls = _scapy()
    flags = h.flags | (F_PAYLOAD if values is not None else 0)
    if values is None:
        flags &= ~F_PAYLOAD
    return cls(version=h.version, type=h.type, flags=flags, job=h.job, wid=h.wid,
               nworkers=h.nworkers, helper=h.helper, slot=h.slot, seq=h.seq, iter=h.iter,
               nvalid=h.nvalid, bitmap=h.bitmap, strag=h.strag, exp=h.exp, klog2=h.klog2,
               dst=h.dst, rsv=h.rsv, vals=[] if values is None else [int(x) for x in values])


def from_scapy(p) -> tuple[Header, np.ndarray | None]:
    cls = _scapy()
    s = p[cls] if p.haslayer(cls) else p
    h = Header(type=int(s.type), flags=int(s.flags), job=s.job, wid=s.wid, nworkers=s.nworkers,
               helper=s.helper, slot=s.slot, seq=s.seq, iter=s.iter, nvalid=s.nvalid,
               bitmap=s.bitmap, strag=s.strag, exp=s.exp, klog2=s.klog2, dst=s.dst, rsv=s.rsv,
               version=s.version)
    vals = np.array(s.vals, dtype=np.int32) if int(s.flags) & F_PAYLOAD else None
    return h, vals


def serial_newer(a: int, b: int, bits: int = 16) -> bool:
    """RFC 1982 serial-number compare: is ``a`` newer than ``b``?"""
    d = (a - b) & ((1 << bits) - 1)
    return 0 < d < (1 << (bits - 1))
