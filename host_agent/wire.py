"""The SA-ATP wire format in one import: ``from host_agent import wire``.

The names are defined in :mod:`host_agent.protocol` and gathered here for the agents:

* :mod:`~host_agent.protocol.layout`: the header's field table :data:`SA_HEADER`, packet
  types, flags, ports, and derived limits (``HDR_LEN``, ``MAX_WORKERS``, ``MAX_KLOG2``);
* :mod:`~host_agent.protocol.codec`: the fast path (:class:`Header`, :func:`pack`,
  :func:`unpack`, :class:`WireError`);
* :mod:`~host_agent.protocol.framing`: Ethernet/IPv4/UDP (:class:`FrameTemplate`,
  :func:`strip_frame`);
* :mod:`~host_agent.protocol.scapy_layer`: the scapy layer (:func:`scapy_layer`,
  :func:`to_scapy`, :func:`from_scapy`).

Frame: ``Ethernet | IPv4 (no options) | UDP (port SA_PORT) | SA-ATP header (HDR_LEN bytes) |
payload (K x int32 big-endian, present iff flags & F_PAYLOAD)``.
"""
from __future__ import annotations

from .protocol.codec import (BYTE_FIELDS, LANE_DTYPE, Header, WireError, data_packets, format_header, pack,
                             unpack)
from .protocol.framing import (ETH_LEN, IP_LEN, L2L4, L2L4_LEN, UDP_LEN, FrameTemplate, csum16,
                               ip_bytes, ip_int, mac_bytes, mac_int, strip_frame, udp_payload)
from .protocol.layout import (CTRL, DATA, F_ECN, F_OVERFLOW, F_PAYLOAD, F_REDIRECT, F_RELEASED,
                              F_RESEND, F_SET, F_UCAST, FLAG_NAMES, FLUSH, HDR_LEN, HRESULT, LANE_LEN,
                              MAX_KLOG2, MAX_LANES, MAX_WORKERS, NACK, NO_WID, PACK, PARTIAL,
                              PROBE, RESULT, RING_ACK, RING_DATA, RING_PORT, SA_HEADER, SA_PORT,
                              SWITCH_WID, TYPE_NAMES, VERSION, serial_newer)
from .protocol.scapy_layer import from_scapy, scapy_layer, to_scapy

__all__ = [
    "BYTE_FIELDS", "LANE_DTYPE", "Header", "WireError", "data_packets", "format_header", "pack", "unpack",
    "ETH_LEN", "IP_LEN", "L2L4", "L2L4_LEN", "UDP_LEN", "FrameTemplate", "csum16", "ip_bytes",
    "ip_int", "mac_bytes", "mac_int", "strip_frame", "udp_payload",
    "CTRL", "DATA", "F_ECN", "F_OVERFLOW", "F_PAYLOAD", "F_REDIRECT", "F_RELEASED", "F_RESEND",
    "F_SET", "F_UCAST", "FLAG_NAMES", "FLUSH", "HDR_LEN", "HRESULT", "LANE_LEN", "MAX_KLOG2", "MAX_LANES",
    "MAX_WORKERS", "NACK", "NO_WID", "PACK", "PARTIAL", "PROBE", "RESULT", "RING_ACK",
    "RING_DATA", "RING_PORT", "SA_HEADER", "SA_PORT", "SWITCH_WID", "TYPE_NAMES", "VERSION",
    "serial_newer",
    "from_scapy", "scapy_layer", "to_scapy",
]
