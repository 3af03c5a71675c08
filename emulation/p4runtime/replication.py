"""The packet replication engine's entries: multicast groups and clone sessions.

The target keeps its own replication state; the P4Runtime entries as written are kept
here too, so that reads return them as the controller wrote them."""
from __future__ import annotations

from typing import Any, Iterator

from google.rpc import code_pb2

from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_bytes

from .errors import P4RTError
from .state import ServerState


def _replicas(reps: Any) -> list[tuple[int, int]]:
    out = []
    for r in reps:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            port = decode_bytes(r.port, 32, "replica port")
        else:
            port = r.egress_port
        if port >= 511:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"replica port {port} out of range 0..510")
        out.append((port, r.instance))
    if len(set(out)) != len(out):
        raise P4RTError(code_pb2.INVALID_ARGUMENT, "duplicate replicas (port, instance)")
    return out


class Replication:
    def __init__(self, state: ServerState):
        self.state = state
        self._mc_groups: dict[int, Any] = {}
        self._clone_sessions: dict[int, Any] = {}
        state.on_pipeline_change(self._reset)

    def _reset(self) -> None:
        self._mc_groups.clear()
        self._clone_sessions.clear()

    def write(self, typ: int, e: Any) -> None:
        kind = e.WhichOneof("type")
        if kind == "multicast_group_entry":
            self._write_group(typ, e.multicast_group_entry)
        elif kind == "clone_session_entry":
            self._write_clone_session(typ, e.clone_session_entry)
        else:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "empty packet replication engine entry")

    def _write_group(self, typ: int, g: Any) -> None:
        U = pb.Update
        sw = self.state.device.switch
        mgid = g.multicast_group_id
        if not 0 < mgid < 1 << 16:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"multicast group id {mgid} out of range 1..65535")
        if typ == U.INSERT:
            if mgid in self._mc_groups:
                raise P4RTError(code_pb2.ALREADY_EXISTS, f"multicast group {mgid} exists")
            reps = _replicas(g.replicas)
            sw.mc_group_create(mgid)
            sw.mc_set_group(mgid, reps)
            self._mc_groups[mgid] = pb.MulticastGroupEntry.FromString(g.SerializeToString())
        elif typ == U.MODIFY:
            if mgid not in self._mc_groups:
                raise P4RTError(code_pb2.NOT_FOUND, f"no multicast group {mgid}")
            sw.mc_set_group(mgid, _replicas(g.replicas))
            self._mc_groups[mgid] = pb.MulticastGroupEntry.FromString(g.SerializeToString())
        elif typ == U.DELETE:
            if mgid not in self._mc_groups:
                raise P4RTError(code_pb2.NOT_FOUND, f"no multicast group {mgid}")
            sw.mc_set_group(mgid, [])
            sw.mc_group_delete(mgid)
            del self._mc_groups[mgid]

    def _write_clone_session(self, typ: int, c: Any) -> None:
        U = pb.Update
        sw = self.state.device.switch
        sid = c.session_id
        if typ == U.DELETE:
            if sid not in self._clone_sessions:
                raise P4RTError(code_pb2.NOT_FOUND, f"no clone session {sid}")
            sw.mirroring_delete(sid)
            del self._clone_sessions[sid]
            return
        if typ == U.INSERT and sid in self._clone_sessions:
            raise P4RTError(code_pb2.ALREADY_EXISTS, f"clone session {sid} exists")
        if typ == U.MODIFY and sid not in self._clone_sessions:
            raise P4RTError(code_pb2.NOT_FOUND, f"no clone session {sid}")
        reps = _replicas(c.replicas)
        if c.packet_length_bytes:
            raise P4RTError(code_pb2.UNIMPLEMENTED, "clone session truncation (packet_length_bytes) "
                            "is not supported (as on BMv2)")
        if len(reps) != 1:
            raise P4RTError(code_pb2.UNIMPLEMENTED, "clone sessions with other than one replica are not supported")
        sw.mirroring_add(sid, egress_port=reps[0][0])
        self._clone_sessions[sid] = pb.CloneSessionEntry.FromString(c.SerializeToString())

    def read(self, e: Any) -> Iterator[Any]:
        kind = e.WhichOneof("type")
        if kind == "multicast_group_entry":
            want = e.multicast_group_entry.multicast_group_id
            for mgid, g in sorted(self._mc_groups.items()):
                if want in (0, mgid):
                    ent = pb.Entity()
                    ent.packet_replication_engine_entry.multicast_group_entry.CopyFrom(g)
                    yield ent
        elif kind == "clone_session_entry":
            want = e.clone_session_entry.session_id
            for sid, c in sorted(self._clone_sessions.items()):
                if want in (0, sid):
                    ent = pb.Entity()
                    ent.packet_replication_engine_entry.clone_session_entry.CopyFrom(c)
                    yield ent
