"""Parser value set entries (P4Runtime spec §9.7): a MODIFY replaces all members of a
``value_set``; a read returns the members as written."""
from __future__ import annotations

from typing import Any, Iterator

from google.rpc import code_pb2

from host_agent.match import Exact, Ternary
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_match

from .errors import P4RTError
from .state import ServerState


class ValueSets:
    def __init__(self, state: ServerState):
        self.state = state
        self._members: dict[int, Any] = {}   # value set id -> ValueSetEntry as written
        state.on_pipeline_change(self._members.clear)

    def _value_set(self, vid: int) -> Any:
        idx = self.state.need_pipeline()
        vs = idx.value_sets.get(vid)
        if vid == 0 or vs is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown value set id {vid}")
        return vs

    def write(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "value set entries can only be MODIFY'd")
        vs = self._value_set(e.value_set_id)
        name = vs.preamble.name
        if len(vs.match) != 1:
            raise P4RTError(code_pb2.UNIMPLEMENTED, f"value set {name}: only value sets of one field are supported")
        mf = vs.match[0]
        if vs.size and len(e.members) > vs.size:
            raise P4RTError(code_pb2.RESOURCE_EXHAUSTED, f"value set {name}: {len(e.members)} members, "
                            f"its size is {vs.size}")
        members: list[tuple[int, int | None]] = []
        for m in e.members:
            if len(m.match) != 1 or m.match[0].field_id != mf.id:
                raise P4RTError(code_pb2.INVALID_ARGUMENT,
                                f"value set {name}: a member needs exactly one match on field id {mf.id}")
            spec = decode_match(mf, m.match[0], f"value set {name}")
            if isinstance(spec, Exact):
                members.append((spec.value, None))
            elif isinstance(spec, Ternary):
                members.append((spec.value, spec.mask))
            else:
                raise P4RTError(code_pb2.UNIMPLEMENTED, f"value set {name}: {type(spec).__name__} members "
                                "are not supported")
        sw = self.state.device.switch
        sw.value_set_clear(name)
        for value, mask in members:
            sw.value_set_add(name, value, mask)
        self._members[vs.preamble.id] = pb.ValueSetEntry.FromString(e.SerializeToString())

    def read(self, e: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        sets = [self._value_set(e.value_set_id)] if e.value_set_id else list(idx.value_sets.values())
        for vs in sets:
            out = pb.Entity()
            written = self._members.get(vs.preamble.id)
            if written is not None:
                out.value_set_entry.CopyFrom(written)
            out.value_set_entry.value_set_id = vs.preamble.id
            yield out
