"""Packet I/O over the stream: PacketOut from the primary into the CPU port, packets the
pipeline sends to the CPU port up to the primary as PacketIn (the ``@controller_header``
headers' fields as metadata, by P4Info id)."""
from __future__ import annotations

from typing import Any

from google.rpc import code_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import CodecError, decode_bytes, encode_bytes

from .arbitration import Arbiter, Stream
from .device import DeviceConfigError, PacketIn
from .errors import P4RTError
from .state import ServerState


class PacketIO:
    def __init__(self, state: ServerState, arbiter: Arbiter):
        self.state = state
        self.arbiter = arbiter

    def packet_out(self, pkt: Any, s: Stream) -> None:
        """A PacketOut from stream ``s``; failures go back to it as stream errors."""
        if self.arbiter.primary(s.role) is not s:
            s.send_error(code_pb2.PERMISSION_DENIED, "packet-out from a backup controller", pkt)
            return
        idx = self.state.index
        if idx is None:
            s.send_error(code_pb2.FAILED_PRECONDITION, "no pipeline", pkt)
            return
        meta = {}
        hdr = idx.cpm.get("packet_out")
        try:
            for m in pkt.metadata:
                md = next((x for x in hdr.metadata if x.id == m.metadata_id), None) if hdr else None
                if md is None:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, f"unknown packet_out metadata id {m.metadata_id}")
                meta[md.name] = decode_bytes(m.value, md.bitwidth, f"packet_out metadata {md.name}")
            self.state.device.packet_out(pkt.payload, meta)
        except P4RTError as e:
            s.send_error(e.code, e.message, pkt)
        except (CodecError, DeviceConfigError, ValueError) as e:
            s.send_error(code_pb2.INVALID_ARGUMENT, str(e), pkt)

    def on_packet_in(self, pin: PacketIn) -> None:
        """Device listener: a packet for the controller, sent to the primary (if any)."""
        prim = self.arbiter.primary("")
        idx = self.state.index
        if prim is None or idx is None:
            return
        m = pb.StreamMessageResponse()
        m.packet.payload = pin.payload
        hdr = idx.cpm.get("packet_in")
        if hdr is not None:
            for md in hdr.metadata:
                if md.name in pin.metadata:
                    e = m.packet.metadata.add()
                    e.metadata_id = md.id
                    e.value = encode_bytes(pin.metadata[md.name])
        prim.out.put(m)
