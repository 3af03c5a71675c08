"""Controller arbitration (P4Runtime spec §5): streams per (device id, role), election ids,
the primary.

The highest election id of a role is its primary; every stream of the role is told where it
stands (OK for the primary, ALREADY_EXISTS for backups, NOT_FOUND when there is no primary)
and told again whenever the primary changes.  A duplicate election id is INVALID_ARGUMENT,
a wrong device id NOT_FOUND.
"""
from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import dataclass
from typing import Any

from google.rpc import code_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import set_uint128, uint128

from .errors import P4RTError


@dataclass
class Stream:
    """One open StreamChannel: what it was told to be, and its queue of outgoing messages."""
    sid: int
    device_id: int
    role: str
    election_id: int | None
    out: "queue.Queue[Any]"
    context: Any

    def send_error(self, code: int, message: str, packet: Any = None) -> None:
        """A ``StreamError`` on this stream (with the offending PacketOut, if any)."""
        m = pb.StreamMessageResponse()
        m.error.canonical_code = code
        m.error.message = message
        if packet is not None:
            m.error.packet_out.packet_out.CopyFrom(packet)
        self.out.put(m)


class Arbiter:
    def __init__(self, device_id: int):
        self.device_id = device_id
        self._lock = threading.RLock()
        self._streams: dict[int, Stream] = {}
        self._sid = itertools.count(1)

    def primary(self, role: str = "") -> Stream | None:
        with self._lock:
            cands = [s for s in self._streams.values()
                     if s.role == role and s.election_id is not None and s.election_id > 0]
            return max(cands, key=lambda s: s.election_id) if cands else None

    def check_primary(self, election: Any, role: str, has_election: bool) -> None:
        """A Write or SetForwardingPipelineConfig must come from the role's primary."""
        prim = self.primary(role)
        eid = uint128(election) if has_election else None
        if prim is None or eid != prim.election_id:
            raise P4RTError(code_pb2.PERMISSION_DENIED,
                            "not the primary controller" + (f" (election id {eid})" if eid is not None else
                                                            " (no election id)"))

    def arbitrate(self, arb: Any, stream: Stream | None, out: queue.Queue, context: Any) -> Stream | P4RTError:
        """Handle a MasterArbitrationUpdate: the (new or updated) stream, or the error ending it."""
        if arb.device_id != self.device_id:
            return P4RTError(code_pb2.NOT_FOUND, f"unknown device id {arb.device_id}")
        role = arb.role.name if arb.HasField("role") else ""
        eid = uint128(arb.election_id) if arb.HasField("election_id") else None
        with self._lock:
            if stream is not None and (stream.role != role):
                return P4RTError(code_pb2.FAILED_PRECONDITION, "a stream cannot change its role")
            if eid is not None:
                for s in self._streams.values():
                    if s is not stream and s.role == role and s.election_id == eid:
                        return P4RTError(code_pb2.INVALID_ARGUMENT,
                                         f"election id {eid} is already used by another controller")
            old_primary = self.primary(role)
            if stream is None:
                stream = Stream(next(self._sid), arb.device_id, role, eid, out, context)
                self._streams[stream.sid] = stream
            else:
                stream.election_id = eid
            new_primary = self.primary(role)
            if new_primary is not old_primary:
                self._notify_all(role)
            else:
                self._notify(stream)
        return stream

    def leave(self, stream: Stream) -> None:
        """The stream closed; if it was the primary, the others hear of the new one."""
        with self._lock:
            before = self.primary(stream.role)
            if self._streams.pop(stream.sid, None) is None:
                return
            if self.primary(stream.role) is not before:
                self._notify_all(stream.role)

    def _arb_message(self, s: Stream) -> Any:
        prim = self.primary(s.role)
        m = pb.StreamMessageResponse()
        a = m.arbitration
        a.device_id = self.device_id
        if s.role:
            a.role.name = s.role
        if prim is not None:
            set_uint128(a.election_id, prim.election_id)
        if prim is None:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "no primary controller"
        elif prim is s:
            a.status.code = code_pb2.OK
            a.status.message = "is primary"
        else:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "is backup"
        return m

    def _notify(self, s: Stream) -> None:
        s.out.put(self._arb_message(s))

    def _notify_all(self, role: str) -> None:
        for s in list(self._streams.values()):
            if s.role == role:
                self._notify(s)
