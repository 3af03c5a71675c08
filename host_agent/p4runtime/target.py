"""The embedded ``Switch`` control-plane calls that :class:`host_agent.controller.Controller`
uses, carried out over P4Runtime, so the SA-ATP controller programs a switch process
(``saatp switch`` or BMv2) in Mininet exactly as it programs the in-process target.

Covered: ``table_add`` (match as a list in key order, action data as a list in parameter
order), ``table_modify``, ``table_set_default``, ``mc_set_group``, ``register(name).size``,
``register_read``, ``counter_read``.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Sequence


class P4RuntimeTarget:
    def __init__(self, client):
        self.c = client
        self.idx = client._idx()
        self._entries: dict[int, tuple[str, dict, int]] = {}
        self._next = 1
        self._groups: set[int] = set()

    def _match(self, table: str, match: Sequence[Any] | dict) -> dict:
        if isinstance(match, dict):
            return match
        t = self.idx.get("table", table)
        if len(match) != len(t.match_fields):
            raise ValueError(f"table {table}: {len(t.match_fields)} key fields, got {len(match)} values")
        return {mf.name: v for mf, v in zip(t.match_fields, match)}

    def _params(self, action: str, args: Sequence[int] | dict) -> dict:
        if isinstance(args, dict):
            return args
        a = self.idx.get("action", action)
        if len(args) != len(a.params):
            raise ValueError(f"action {action}: {len(a.params)} parameters, got {len(args)}")
        return {p.name: int(v) for p, v in zip(a.params, args)}

    def table_add(self, table: str, action: str, match, args=(), priority: int | None = None) -> int:
        m = self._match(table, match)
        self.c.insert(table, m, action, self._params(action, args), priority or 0)
        h = self._next
        self._next += 1
        self._entries[h] = (table, m, priority or 0)
        return h

    def table_modify(self, table: str, handle: int, action: str, args=()) -> None:
        t, m, prio = self._entries[handle]
        self.c.modify(t, m, action, self._params(action, args), prio)

    def table_set_default(self, table: str, action: str, args=()) -> None:
        self.c.set_default(table, action, self._params(action, args))

    def mc_set_group(self, mgid: int, replicas: Sequence[tuple[int, int]]) -> None:
        self.c.multicast_group(mgid, list(replicas), "MODIFY" if mgid in self._groups else "INSERT")
        self._groups.add(mgid)

    def register(self, name: str) -> Any:
        return SimpleNamespace(size=self.idx.get("register", name).size)

    def register_read(self, name: str, index: int) -> int:
        return self.c.read_register(name, index).get(index, 0)

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self.c.read_counter(name, index).get(index, (0, 0))
