"""The SA-ATP header layout: one field table, and the constants that follow from it.

:data:`SA_HEADER` lists the header's fields in wire order (most significant bit first), in
the spirit of scapy's ``fields_desc``: name, width in bits, kind, default and meaning.  The
struct fast path (:mod:`.codec`), the scapy layer (:mod:`.scapy_layer`), the pretty-printer
and the switch program's ``header sa_t`` (:mod:`.p4gen`) are all derived from it, so a field
is added or widened here and nowhere else.  ``p4src/SA-ATP.md`` section 3 explains the fields.

A packet is ``Ethernet | IPv4 | UDP (port SA_PORT) | SA-ATP header | payload``; the payload is
K = 2**klog2 lanes of :data:`PAYLOAD_LANE`, present iff ``flags & F_PAYLOAD``.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Optional

from ..constants import DEFAULT_K

VERSION = 1
SA_PORT = 9000      # UDP port of SA-ATP packets (both directions)
RING_PORT = 9001    # host-only ring all-reduce baseline (plain IPv4 forwarding at the switch)
NO_WID = 0xFF       # "no worker" in wid/helper/dst
SWITCH_WID = 0xFF   # wid of packets the switch makes

# ---------------------------------------------------------------- packet types (type field)
DATA, RESULT, PARTIAL, PROBE, NACK, PACK, HRESULT, FLUSH, CTRL = 0, 1, 2, 4, 5, 6, 7, 8, 9
# host-only types used by the ring baseline (sent to RING_PORT, never parsed by the switch)
RING_DATA, RING_ACK = 10, 11
TYPE_NAMES: Mapping[int, str] = MappingProxyType({
    DATA: "DATA", RESULT: "RESULT", PARTIAL: "PARTIAL", PROBE: "PROBE", NACK: "NACK",
    PACK: "PACK", HRESULT: "HRESULT", FLUSH: "FLUSH", CTRL: "CTRL",
    RING_DATA: "RING_DATA", RING_ACK: "RING_ACK"})
HOST_ONLY_TYPES = frozenset({RING_DATA, RING_ACK})

# ---------------------------------------------------------------- flag bits (flags field)
F_RESEND = 0x01     # a retransmission
F_ECN = 0x02        # congestion experienced (reserved in v1)
F_OVERFLOW = 0x04   # a saturating add clipped at least one lane of this chunk
F_SET = 0x08        # shadow set: floor(seq / P) mod 2
F_REDIRECT = 0x10   # the switch forwarded this packet to a helper / result holder
F_RELEASED = 0x20   # PROBE: the sender already holds a PACK for this chunk and wants the result
F_PAYLOAD = 0x40    # K int32 values follow the header
F_UCAST = 0x80      # HRESULT/NACK/PACK from a helper: deliver to worker ``dst`` only
FLAG_NAMES: Mapping[int, str] = MappingProxyType({
    F_RESEND: "RESEND", F_ECN: "ECN", F_OVERFLOW: "OVERFLOW", F_SET: "SET",
    F_REDIRECT: "REDIRECT", F_RELEASED: "RELEASED", F_PAYLOAD: "PAYLOAD", F_UCAST: "UCAST"})

# ---------------------------------------------------------------- field kinds
UINT = "uint"       # unsigned number, shown in decimal
SINT = "sint"       # two's complement number (whole bytes only)
HEX = "hex"         # unsigned, shown in hex (worker ids where 0xFF means none, bit sets)
ENUM = "enum"       # unsigned with named values (``names``: value -> name)
FLAGS = "flags"     # bit set with named bits (``names``: bit value -> name)
KINDS = (UINT, SINT, HEX, ENUM, FLAGS)


@dataclass(frozen=True)
class HeaderField:
    """One field of a protocol header, in wire order."""
    name: str
    bits: int
    kind: str
    default: int
    doc: str
    wraps: bool = False     # packed modulo 2**bits (serial numbers, bit sets); else it must
    #                         fit (fields that share a byte are always packed modulo 2**bits)
    names: Optional[Mapping[int, str]] = None
    show: bool = True       # part of the one-line pretty-print

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"field {self.name}: unknown kind {self.kind!r}")
        if self.bits < 1 or (self.kind == SINT and self.bits % 8):
            raise ValueError(f"field {self.name}: bad width {self.bits} for kind {self.kind}")
        if (self.kind in (ENUM, FLAGS)) != (self.names is not None):
            raise ValueError(f"field {self.name}: names go with enum and flags fields only")

    @property
    def signed(self) -> bool:
        return self.kind == SINT

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1


SA_HEADER: tuple[HeaderField, ...] = (
    HeaderField("version", 4, UINT, VERSION, "protocol version", show=False),
    HeaderField("type", 4, ENUM, DATA, "packet type", names=TYPE_NAMES, show=False),
    HeaderField("flags", 8, FLAGS, 0, "flag bits", wraps=True, names=FLAG_NAMES),
    HeaderField("job", 8, UINT, 0, "job id"),
    HeaderField("wid", 8, UINT, 0, "sender's worker id; SWITCH_WID for the switch"),
    HeaderField("nworkers", 8, UINT, 0, "workers in the job (informational)", show=False),
    HeaderField("helper", 8, HEX, NO_WID, "the job's current helper, or NO_WID"),
    HeaderField("slot", 16, UINT, 0, "aggregation slot: seq mod P"),
    HeaderField("seq", 32, UINT, 0, "chunk index"),
    HeaderField("iter", 16, UINT, 0, "iteration (serial number, RFC 1982)", wraps=True),
    HeaderField("nvalid", 16, UINT, 0, "valid lanes of a DATA packet", show=False),
    HeaderField("bitmap", 32, HEX, 0, "worker bit set: sender, contributors, or released",
                wraps=True),
    HeaderField("strag", 32, HEX, 0, "the job's straggler set; in a PACK the rounds acked",
                wraps=True),
    HeaderField("exp", 8, SINT, 0, "fixed-point exponent of the values", show=False),
    HeaderField("klog2", 8, UINT, DEFAULT_K.bit_length() - 1, "log2 of the lanes K", show=False),
    HeaderField("dst", 8, HEX, NO_WID, "destination worker of a unicast or redirect"),
    HeaderField("rsv", 8, UINT, 0, "reserved, 0", show=False),
)

# one payload lane; a payload is K = 2**klog2 of them
PAYLOAD_LANE = HeaderField("v", 32, SINT, 0, "int32, big-endian two's complement")

FIELD: Mapping[str, HeaderField] = MappingProxyType({f.name: f for f in SA_HEADER})
HDR_BITS = sum(f.bits for f in SA_HEADER)
if HDR_BITS % 8:
    raise ValueError(f"the SA-ATP header has {HDR_BITS} bits, not a whole number of bytes")
HDR_LEN = HDR_BITS // 8                     # 28
LANE_LEN = PAYLOAD_LANE.bits // 8           # 4
BITMAP_BITS = FIELD["bitmap"].bits          # one bit per worker of a job
MAX_WORKERS = BITMAP_BITS                   # workers per job (wids 0..MAX_WORKERS-1)
ITER_BITS = FIELD["iter"].bits
MAX_KLOG2 = 10                              # the largest payload: 1024 lanes (4 KiB)
MAX_LANES = 1 << MAX_KLOG2
if MAX_WORKERS >= NO_WID or NO_WID > FIELD["wid"].mask:
    raise ValueError("worker ids must fit the wid field below NO_WID")
if MAX_KLOG2 > FIELD["klog2"].mask or MAX_LANES > FIELD["nvalid"].mask:
    raise ValueError("MAX_KLOG2 does not fit the klog2/nvalid fields")
if max(TYPE_NAMES) > FIELD["type"].mask or max(FLAG_NAMES) > FIELD["flags"].mask:
    raise ValueError("a packet type or flag does not fit its field")


def serial_newer(a: int, b: int, bits: int = ITER_BITS) -> bool:
    """RFC 1982 serial-number compare: is ``a`` newer than ``b``?"""
    d = (a - b) & ((1 << bits) - 1)
    return 0 < d < (1 << (bits - 1))
