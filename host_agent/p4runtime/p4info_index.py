"""Name/id look-ups over a P4Info message, used by the client and the server."""
from __future__ import annotations

from typing import Any


class P4InfoIndex:
    """Objects of a P4Info by id (``tables``, ``actions``...) and by name or alias (``get``)."""

    def __init__(self, p4info: Any):
        self.p4info = p4info
        self.tables = {t.preamble.id: t for t in p4info.tables}
        self.actions = {a.preamble.id: a for a in p4info.actions}
        self.counters = {c.preamble.id: c for c in p4info.counters}
        self.direct_counters = {c.preamble.id: c for c in p4info.direct_counters}
        self.meters = {c.preamble.id: c for c in p4info.meters}
        self.registers = {r.preamble.id: r for r in p4info.registers}
        self.digests = {d.preamble.id: d for d in p4info.digests}
        self.value_sets = {v.preamble.id: v for v in p4info.value_sets}
        self.cpm = {c.preamble.name: c for c in p4info.controller_packet_metadata}
        self._by_name: dict[tuple[str, str], Any] = {}
        for kind, objs in (("table", p4info.tables), ("action", p4info.actions),
                           ("counter", p4info.counters), ("direct_counter", p4info.direct_counters),
                           ("meter", p4info.meters), ("register", p4info.registers),
                           ("digest", p4info.digests), ("value_set", p4info.value_sets),
                           ("controller_packet_metadata", p4info.controller_packet_metadata)):
            for o in objs:
                self._by_name[(kind, o.preamble.name)] = o
                self._by_name.setdefault((kind, o.preamble.alias), o)

    def get(self, kind: str, name: str) -> Any:
        o = self._by_name.get((kind, name))
        if o is None:
            raise KeyError(f"no {kind} named {name!r} in the P4Info")
        return o

    def id(self, kind: str, name: str) -> int:
        return self.get(kind, name).preamble.id
