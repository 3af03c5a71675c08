"""Table entries (P4Runtime spec §9.1): insert/modify/delete, the default entry (MODIFY with
``is_default_action``), reads with wildcards, and the P4Runtime form of a target entry.

Validation as the spec asks: exact keys present, don't-care keys omitted, ternary
``value & ~mask == 0``, LPM trailing bits 0 (see :mod:`host_agent.p4runtime.codec`);
a priority > 0 exactly for tables with ternary/range/optional keys; actions among the
table's, ``@defaultonly``/``@tableonly`` scopes respected; const tables and const default
actions refused.  Idle timeouts: ``idle_timeout_ns`` only in tables that support them
(INVALID_ARGUMENT elsewhere); MODIFY sets the entry's timeout to the one it carries (0
stops ageing); reads return it, and ``time_since_last_hit`` when the request sets it
(notifications: :mod:`emulation.p4runtime.idle_timeout`).
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from google.rpc import code_pb2

from emulation.v1model.tables import TableError
from host_agent.p4runtime import p4info_pb2 as p4i
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_matches, decode_params, encode_matches, encode_params

from .errors import P4RTError
from .idle_timeout import supports_idle_timeout
from .state import ServerState


def lookup_table(state: ServerState, table_id: int) -> tuple[Any, Any]:
    """(P4Info table, the switch's table) of a table id."""
    idx = state.need_pipeline()
    t = idx.tables.get(table_id)
    if t is None:
        raise P4RTError(code_pb2.NOT_FOUND, f"unknown table id {table_id}")
    try:
        return t, state.device.switch.table(t.preamble.name)
    except KeyError as e:
        raise P4RTError(code_pb2.NOT_FOUND, f"table {t.preamble.name}: {e}") from None


def needs_priority(t: Any) -> bool:
    MF = p4i.MatchField
    return any(m.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for m in t.match_fields)


def entry_to_pb(state: ServerState, t: Any, ent: Any, *, default: bool = False, counters: bool = False,
                since_hit_ns: int | None = None) -> Any:
    """A target table entry as a ``p4.v1.TableEntry`` (canonical bytestrings);
    ``since_hit_ns``: the switch's time, to fill ``time_since_last_hit``."""
    idx = state.index
    out = pb.TableEntry(table_id=t.preamble.id)
    if default:
        out.is_default_action = True
    else:
        out.match.extend(encode_matches(t, ent.match))
        if ent.priority:
            out.priority = ent.priority
        if t.is_const_table:
            out.is_const = True
    profiles = getattr(state, "action_profiles", None)
    if profiles is not None and profiles.encode_entry_action(t, ent, out):
        pass    # a member, a group or a one-shot action set (action_profiles.py)
    else:
        a = idx.get("action", ent.action) if idx else None
        if a is not None:
            encode_params(out.action.action, a, ent.args)
    if not default and getattr(ent, "idle_timeout_ns", 0):
        out.idle_timeout_ns = ent.idle_timeout_ns
    if since_hit_ns is not None and not default:
        out.time_since_last_hit.elapsed_ns = max(0, since_hit_ns - getattr(ent, "last_hit_ns", since_hit_ns))
    if counters and not default and len(t.direct_resource_ids):
        out.counter_data.packet_count = getattr(ent, "packets", 0)
        out.counter_data.byte_count = getattr(ent, "bytes", 0)
    return out


class Tables:
    def __init__(self, state: ServerState, on_idle_timeout: Callable[[], None] | None = None):
        self.state = state
        self.on_idle_timeout = on_idle_timeout   # called when an entry gets an idle timeout

    # ------------------------------------------------------------ actions
    def _action(self, t: Any, act: Any, *, default: bool) -> tuple[str, dict[str, int]]:
        idx = self.state.need_pipeline()
        tn = t.preamble.name
        refs = {r.id: r for r in t.action_refs}
        r = refs.get(act.action_id)
        a = idx.actions.get(act.action_id)
        if a is None:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown action id {act.action_id}")
        if r is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is not one of its actions")
        if not default and r.scope == p4i.ActionRef.DEFAULT_ONLY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is @defaultonly")
        if default and r.scope == p4i.ActionRef.TABLE_ONLY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: action {a.preamble.name} is @tableonly")
        return a.preamble.name, decode_params(a, act.params)

    def _table_action(self, t: Any, entry: Any, *, default: bool) -> tuple[str, dict[str, int]]:
        kind = entry.action.WhichOneof("type")
        if kind is None:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name}: the entry has no action")
        if kind != "action":
            if default:
                raise P4RTError(code_pb2.UNIMPLEMENTED, f"table {t.preamble.name}: {kind} as the default "
                                                        f"action is not supported")
            return self.state.action_profiles.table_action(t, entry)
        if t.implementation_id and not default:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name} has an action profile: its "
                                                       f"entries name a member, a group or an action set")
        return self._action(t, entry.action.action, default=default)

    # -------------------------------------------------------------- write
    def write(self, typ: int, e: Any) -> None:
        U = pb.Update
        t, tab = lookup_table(self.state, e.table_id)
        tn = t.preamble.name
        if e.is_default_action:
            self._write_default(typ, t, tab, e)
            return
        if t.is_const_table:
            raise P4RTError(code_pb2.PERMISSION_DENIED, f"table {tn} is const")
        ages = supports_idle_timeout(t)
        if e.idle_timeout_ns and not ages:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn} does not support idle timeouts "
                                                       f"(no support_timeout = true)")
        if e.idle_timeout_ns < 0:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: idle_timeout_ns {e.idle_timeout_ns} is negative")
        if e.HasField("meter_config"):
            raise P4RTError(code_pb2.UNIMPLEMENTED, "direct meter configs in table entries are not supported")
        match = decode_matches(t, e.match)
        prio = e.priority
        if needs_priority(t):
            if prio <= 0:
                raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: entries need a priority > 0")
        elif prio != 0:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: priority must be 0 (no ternary/range/optional keys)")
        prio_arg = prio if prio else None
        try:
            existing = tab.find(match, prio_arg)
        except (TableError, KeyError, ValueError) as ex:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None
        try:
            if typ == U.INSERT:
                if existing is not None:
                    raise P4RTError(code_pb2.ALREADY_EXISTS, f"table {tn}: an entry with this match exists")
                if len(tab.entries()) >= t.size > 0:
                    raise P4RTError(code_pb2.RESOURCE_EXHAUSTED, f"table {tn} is full ({t.size} entries)")
                name, args = self._table_action(t, e, default=False)
                try:
                    h = tab.add(match, name, args, prio_arg)
                except Exception:
                    self._release(t, name, args)
                    raise
                if e.HasField("counter_data"):
                    ent = tab.entry(h)
                    ent.packets, ent.bytes = e.counter_data.packet_count, e.counter_data.byte_count
                if e.idle_timeout_ns:
                    self._set_idle_timeout(tab, h, e.idle_timeout_ns)
            elif typ == U.MODIFY:
                if existing is None:
                    raise P4RTError(code_pb2.NOT_FOUND, f"table {tn}: no entry with this match")
                old = (existing.action, dict(existing.args))
                name, args = self._table_action(t, e, default=False)
                try:
                    tab.modify(existing.handle, name, args)
                except Exception:
                    self._release(t, name, args)
                    raise
                self._release(t, *old)
                if e.HasField("counter_data"):
                    existing.packets, existing.bytes = e.counter_data.packet_count, e.counter_data.byte_count
                if ages and e.idle_timeout_ns != getattr(existing, "idle_timeout_ns", 0):
                    self._set_idle_timeout(tab, existing.handle, e.idle_timeout_ns)
            elif typ == U.DELETE:
                if existing is None:
                    raise P4RTError(code_pb2.NOT_FOUND, f"table {tn}: no entry with this match")
                old = (existing.action, dict(existing.args))
                tab.delete(existing.handle)
                self._release(t, *old)
        except (TableError, KeyError, ValueError) as ex:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None

    def _release(self, t: Any, action: str, args: dict) -> None:
        """An entry no longer points at ``action``: a one-shot group of it goes away."""
        if t.implementation_id and "handle" in args:
            self.state.action_profiles.release(t, (action, args["handle"]))

    def _set_idle_timeout(self, tab: Any, handle: int, timeout_ns: int) -> None:
        tab.set_idle_timeout(handle, timeout_ns)
        if timeout_ns and self.on_idle_timeout is not None:
            self.on_idle_timeout()

    def _write_default(self, typ: int, t: Any, tab: Any, e: Any) -> None:
        tn = t.preamble.name
        if typ != pb.Update.MODIFY:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: the default entry can only be MODIFY'd")
        if len(e.match) or e.priority:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: the default entry has no match or priority")
        if e.idle_timeout_ns:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, f"table {tn}: the default entry cannot have an idle timeout")
        if t.const_default_action_id:
            raise P4RTError(code_pb2.PERMISSION_DENIED, f"table {tn}: the default action is const")
        try:
            if e.HasField("action"):
                name, args = self._table_action(t, e, default=True)
                tab.set_default(name, args)
            else:
                tab.reset_default()
        except (TableError, KeyError, ValueError) as ex:
            raise P4RTError(code_pb2.INVALID_ARGUMENT, str(ex)) from None

    # --------------------------------------------------------------- read
    def read(self, req: Any) -> Iterator[Any]:
        for te in self._read_entries(req):
            x = pb.Entity()
            x.table_entry.CopyFrom(te)
            yield x

    def _read_entries(self, req: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        if req.table_id and req.table_id not in idx.tables:
            raise P4RTError(code_pb2.NOT_FOUND, f"unknown table id {req.table_id}")
        tables = [idx.tables[req.table_id]] if req.table_id else list(idx.tables.values())
        counters = req.HasField("counter_data")
        since_hit = req.HasField("time_since_last_hit")
        for t in tables:
            _, tab = lookup_table(self.state, t.preamble.id)
            clock = getattr(tab, "hit_clock", None) if since_hit else None
            now = clock() if clock is not None else None
            if req.is_default_action:
                yield entry_to_pb(self.state, t, tab.default_entry, default=True)
                continue
            if len(req.match):
                if not req.table_id:
                    raise P4RTError(code_pb2.INVALID_ARGUMENT, "a match needs a table id")
                match = decode_matches(t, req.match)
                ent = tab.find(match, req.priority or None)
                if ent is not None:
                    yield entry_to_pb(self.state, t, ent, counters=counters, since_hit_ns=now)
                continue
            for ent in tab.entries():
                if req.priority and ent.priority != req.priority:
                    continue
                yield entry_to_pb(self.state, t, ent, counters=counters, since_hit_ns=now)
