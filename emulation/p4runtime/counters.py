"""Counter entries (indexed counters) and direct counter entries (per table entry)."""
from __future__ import annotations

from typing import Any, Iterator

from google.rpc import code_pb2

from host_agent.p4runtime import p4info_pb2 as p4i
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_matches

from .errors import P4RTError
from .state import ServerState
from .tables import entry_to_pb, lookup_table


class Counters:
    def __init__(self, state: ServerState):
        self.state = state

    def _counter(self, cid: int) -> Any:
        idx = self.state.need_pipeline()
        c = idx.counters.get(cid)
        if c is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown counter id {cid}")
        return c

    def write(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "counter entries can only be MODIFY'd")
        c = self._counter(e.counter_id)
        if not e.HasField("index"):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "writing all indices of a counter at once is not supported")
        i = e.index.index
        if not 0 <= i < c.size:
            raise P4RTError(code_pb2.OUT_OF_RANGE, f"counter {c.preamble.name}: index {i} out of range 0..{c.size - 1}")
        self.state.device.switch.counter_write(c.preamble.name, i, e.data.packet_count, e.data.byte_count)

    def read(self, e: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        cs = [self._counter(e.counter_id)] if e.counter_id else list(idx.counters.values())
        for c in cs:
            if e.HasField("index"):
                if not 0 <= e.index.index < c.size:
                    raise P4RTError(code_pb2.OUT_OF_RANGE, f"counter {c.preamble.name}: index {e.index.index} "
                                    f"out of range 0..{c.size - 1}")
                indices = [e.index.index]
            else:
                indices = range(c.size)
            for i in indices:
                pk, by = self.state.device.switch.counter_read(c.preamble.name, i)
                ent = pb.Entity()
                ce = ent.counter_entry
                ce.counter_id = c.preamble.id
                ce.index.index = i
                if c.spec.unit in (p4i.CounterSpec.PACKETS, p4i.CounterSpec.BOTH):
                    ce.data.packet_count = pk
                if c.spec.unit in (p4i.CounterSpec.BYTES, p4i.CounterSpec.BOTH):
                    ce.data.byte_count = by
                yield ent


class DirectCounters:
    def __init__(self, state: ServerState):
        self.state = state

    def _direct_table(self, e: Any) -> tuple[Any, Any]:
        t, tab = lookup_table(self.state, e.table_entry.table_id)
        if not len(t.direct_resource_ids) or not any(
                r in self.state.index.direct_counters for r in t.direct_resource_ids):
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name} has no direct counter")
        return t, tab

    def write(self, typ: int, e: Any) -> None:
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, "direct counter entries can only be MODIFY'd")
        t, tab = self._direct_table(e)
        ent = tab.find(decode_matches(t, e.table_entry.match), e.table_entry.priority or None)
        if ent is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"table {t.preamble.name}: no entry with this match")
        ent.packets, ent.bytes = e.data.packet_count, e.data.byte_count

    def read(self, e: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        if e.table_entry.table_id:
            tables = [self._direct_table(e)[0]]
        else:
            tables = [t for t in idx.tables.values()
                      if any(r in idx.direct_counters for r in t.direct_resource_ids)]
        for t in tables:
            _, tab = lookup_table(self.state, t.preamble.id)
            if len(e.table_entry.match):
                one = tab.find(decode_matches(t, e.table_entry.match), e.table_entry.priority or None)
                ents = [one] if one is not None else []
            else:
                ents = tab.entries()
            for ent in ents:
                out = pb.Entity()
                dc = out.direct_counter_entry
                dc.table_entry.CopyFrom(entry_to_pb(self.state, t, ent))
                dc.table_entry.ClearField("action")
                dc.data.packet_count, dc.data.byte_count = ent.packets, ent.bytes
                yield out
