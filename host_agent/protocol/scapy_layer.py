"""The SA-ATP scapy layer, built from :data:`.layout.SA_HEADER` (for dissection, tests, pcaps).

scapy is imported on first use (it costs ~0.5 s); :func:`scapy_layer` builds the ``Packet``
class once, binds it to UDP port ``SA_PORT`` and returns it.
"""
from __future__ import annotations

import numpy as np

from .codec import Header
from .layout import (ENUM, F_PAYLOAD, FLAGS, HEX, MAX_LANES, PAYLOAD_LANE, SA_HEADER, SA_PORT,
                     SINT, HeaderField)

_layer = None


def _scapy_field(f: HeaderField):
    """The scapy field for one table row (scapy is imported by the caller)."""
    from scapy.fields import (BitEnumField, BitField, FlagsField, SignedByteField,
                              SignedIntField, SignedShortField, XBitField)
    if f.kind == SINT:
        signed = {8: SignedByteField, 16: SignedShortField, 32: SignedIntField}
        return signed[f.bits](f.name, f.default)
    if f.kind == ENUM:
        return BitEnumField(f.name, f.default, f.bits, dict(f.names))
    if f.kind == FLAGS:
        return FlagsField(f.name, f.default, f.bits,
                          [f.names.get(1 << i, f"bit{i}") for i in range(f.bits)])
    if f.kind == HEX:
        return XBitField(f.name, f.default, f.bits)
    return BitField(f.name, f.default, f.bits)


def _lanes(p) -> int:
    return (1 << p.klog2) if int(p.flags) & F_PAYLOAD else 0


def scapy_layer():
    """The scapy ``SA-ATP`` packet class (bound to UDP port SA_PORT): header + ``vals``."""
    global _layer
    if _layer is not None:
        return _layer
    from scapy.fields import FieldListField
    from scapy.layers.inet import UDP
    from scapy.packet import Packet, bind_layers

    class SAATP(Packet):
        name = "SA-ATP"
        fields_desc = [_scapy_field(f) for f in SA_HEADER] + [
            FieldListField("vals", [], _scapy_field(PAYLOAD_LANE), count_from=_lanes,
                           max_count=MAX_LANES)]   # scapy's default cap is 100 items

        def extract_padding(self, s):
            return b"", s

    bind_layers(UDP, SAATP, dport=SA_PORT)
    bind_layers(UDP, SAATP, sport=SA_PORT)
    _layer = SAATP
    return _layer


def to_scapy(h: Header, values: np.ndarray | None = None):
    """The scapy packet for a header (+ payload); PAYLOAD is set iff ``values`` is given."""
    fields = {f.name: getattr(h, f.name) for f in SA_HEADER}
    fields["flags"] = (h.flags | F_PAYLOAD) if values is not None else (h.flags & ~F_PAYLOAD)
    vals = [] if values is None else [int(x) for x in values]
    return scapy_layer()(**fields, vals=vals)


def from_scapy(p) -> tuple[Header, np.ndarray | None]:
    """Header and payload (int32 array or None) of a scapy SA-ATP packet or layer."""
    cls = scapy_layer()
    s = p[cls] if p.haslayer(cls) else p
    h = Header(**{f.name: int(getattr(s, f.name)) for f in SA_HEADER})
    vals = np.array(s.vals, dtype=np.int32) if h.flags & F_PAYLOAD else None
    return h, vals
