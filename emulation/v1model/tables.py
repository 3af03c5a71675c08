"""Match-action tables of the embedded target: entry storage and the per-packet lookup.

The table kind follows BMv2 (see ``v1model-semantics.md``): any ``range`` key makes a
range table, otherwise any ``ternary``/``optional`` key a ternary table (both with
priorities), otherwise one ``lpm`` key an LPM table (longest prefix wins), otherwise exact.

Priorities use the P4Runtime convention everywhere in this module: **a larger
priority wins**.  Entries of equal priority keep insertion order (earlier wins).

The hot path is :meth:`Table.lookup`, which the generated code calls with the key
values (a tuple, in key order) and which returns a prebuilt result tuple
``(action_fn, action_args, hit, action_index)`` without allocating.

Idle timeouts (tables with ``support_timeout = true``): once a control plane gives the
table a ``hit_clock`` (nanoseconds), every hit stamps the entry's ``last_hit_ns``;
:meth:`Table.idle_entries` reports each entry idle longer than its ``idle_timeout_ns``
once per idle period (a hit or a new timeout re-arms it).  Tables without a clock pay
one attribute test per hit.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from host_agent.match import Exact, Lpm, MatchSpec, Optional_, Range, Ternary


@dataclass
class KeyInfo:
    name: str          # control-plane name (``hdr.ipv4.dstAddr`` or its ``@name``)
    match_kind: str    # exact | lpm | ternary | range | optional
    width: int


@dataclass
class ActionInfo:
    name: str                       # fully qualified control-plane name
    index: int                      # position in the table's action list
    params: list[tuple[str, int]]   # (name, width) of directionless (action-data) params
    fn: Callable[..., Any] | None   # generated Python function
    default_only: bool = False
    table_only: bool = False


@dataclass
class TableEntry:
    handle: int
    match: dict[str, MatchSpec]
    action: str
    args: dict[str, int]
    priority: int | None = None
    packets: int = 0
    bytes: int = 0
    idle_timeout_ns: int = 0        # 0: the entry never ages
    last_hit_ns: int = 0            # hit_clock() at the last hit (or at insertion)
    idle_notified: bool = False     # reported idle since its last hit
    # normalised per-key (value, mask) / (lo, hi) used by ternary/range matching
    _checks: tuple = field(default=(), repr=False)
    _result: tuple = field(default=(), repr=False)
    _key: Any = field(default=None, repr=False)
    _plen: int = field(default=0, repr=False)


LPM_CACHE_MAX = 4096
_UNKNOWN = object()


def _mask(width: int) -> int:
    return (1 << width) - 1


class TableError(ValueError):
    """A malformed entry or an operation the table does not allow."""


class Table:
    """One table instance (one per control instance that declares it)."""

    def __init__(self, name: str, keys: Sequence[KeyInfo], actions: Sequence[ActionInfo],
                 default_action: tuple[str, Sequence[int]] | None = None, *,
                 const_default: bool = False, const_entries: bool = False, size: int = 1024,
                 direct_counter: Any = None, direct_meter: Any = None,
                 largest_priority_wins: bool = True):
        self.name = name
        self.keys = list(keys)
        self.actions: dict[str, ActionInfo] = {}
        for a in actions:
            self.actions[a.name] = a
        self.size = size
        self.const_default = const_default
        self.const_entries = const_entries
        self.direct_counter = direct_counter
        self.direct_meter = direct_meter
        self.largest_priority_wins = largest_priority_wins
        kinds = {k.match_kind for k in self.keys}
        if "range" in kinds:
            self.kind = "range"
        elif kinds & {"ternary", "optional"}:
            self.kind = "ternary"
        elif "lpm" in kinds:
            if sum(k.match_kind == "lpm" for k in self.keys) > 1:
                raise TableError(f"table {name}: more than one lpm key")
            self.kind = "lpm"
        else:
            self.kind = "exact"
        self._lpm_pos = next((i for i, k in enumerate(self.keys) if k.match_kind == "lpm"), -1)
        self._entries: dict[int, TableEntry] = {}
        self._next_handle = 0
        self._exact: dict[Any, TableEntry] = {}
        self._lpm: dict[int, dict[Any, TableEntry]] = {}
        self._lpm_order: list[int] = []
        # LPM results by key value (entry or None for a miss); emptied when an entry is added
        # or deleted, and when it grows past LPM_CACHE_MAX keys
        self._lpm_cache: dict[Any, TableEntry | None] = {}
        self._list: list[TableEntry] = []
        self._single = len(self.keys) == 1
        self.hit_clock: Callable[[], int] | None = None   # ns; set to track hits (idle timeouts)
        self.default_entry: TableEntry
        if default_action is None:
            default_action = ("NoAction", ())
        self._set_default(*default_action)
        self.initial_default = (self.default_entry.action, dict(self.default_entry.args))

    # ----------------------------------------------------------------- lookup
    def lookup(self, key: Any) -> tuple:
        """Look up ``key`` (a tuple in key order; for one key, the bare value).

        Returns ``(fn, args, hit, action_index)``.
        """
        kind = self.kind
        if kind == "exact":
            e = self._exact.get(key)
        elif kind == "lpm":
            e = self._lpm_cache.get(key, _UNKNOWN)      # _lookup_lpm's cache hit, inline
            if e is _UNKNOWN:
                e = self._lookup_lpm(key)
        else:
            e = self._lookup_list(key)
        if e is None:
            e = self.default_entry
        elif self.hit_clock is not None:
            e.last_hit_ns = self.hit_clock()
            e.idle_notified = False
        if self.direct_counter is not None:
            ctr = e if e is not self.default_entry else None
            if ctr is not None:
                ctr.packets += 1
                ctr.bytes += self.direct_counter.packet_bytes()
        return e._result

    def entry_for_key(self, key: Any) -> TableEntry | None:
        """The entry ``key`` matches, None on a miss; unlike :meth:`lookup` it counts nothing
        and leaves idle times alone (the per-packet trace uses it to name the entry hit)."""
        kind = self.kind
        if kind == "exact":
            return self._exact.get(key)
        if kind == "lpm":
            return self._lookup_lpm(key)
        return self._lookup_list(key)

    def _lookup_lpm(self, key: Any) -> TableEntry | None:
        cache = self._lpm_cache
        e = cache.get(key, _UNKNOWN)
        if e is _UNKNOWN:
            if len(cache) >= LPM_CACHE_MAX:
                cache.clear()
            e = cache[key] = self._search_lpm(key)
        return e

    def _search_lpm(self, key: Any) -> TableEntry | None:
        """The longest matching prefix: one dict per prefix length, longest first."""
        pos = self._lpm_pos
        w = self.keys[pos].width
        if self._single:
            for plen in self._lpm_order:
                e = self._lpm[plen].get(key >> (w - plen))
                if e is not None:
                    return e
            return None
        lpmv = key[pos]
        for plen in self._lpm_order:
            k = key[:pos] + (lpmv >> (w - plen),) + key[pos + 1:]
            e = self._lpm[plen].get(k)
            if e is not None:
                return e
        return None

    def _lookup_list(self, key: Any) -> TableEntry | None:
        if self._single:
            key = (key,)
        for e in self._list:
            for kv, (a, b, is_range) in zip(key, e._checks):
                if is_range:
                    if kv < a or kv > b:
                        break
                elif kv & b != a:
                    break
            else:
                return e
        return None

    # ---------------------------------------------------------- control plane
    def _action(self, name: str) -> ActionInfo:
        a = self.actions.get(name)
        if a is None:
            cands = [n for n in self.actions if n == name or n.endswith("." + name)]
            if len(cands) == 1:
                return self.actions[cands[0]]
            if cands:
                raise KeyError(f"table {self.name}: action name {name!r} is ambiguous: {cands}")
            raise KeyError(f"table {self.name}: no action {name!r}; it has {sorted(self.actions)}")
        return a

    def _args(self, a: ActionInfo, args: Any) -> dict[str, int]:
        if args is None:
            args = ()
        if isinstance(args, dict):
            names = [p for p, _ in a.params]
            extra = set(args) - set(names)
            if extra:
                raise TableError(f"action {a.name}: unknown parameter(s) {sorted(extra)}; it takes {names}")
            missing = [p for p in names if p not in args]
            if missing:
                raise TableError(f"action {a.name}: missing parameter(s) {missing}")
            vals = {p: int(args[p]) for p in names}
        else:
            args = list(args)
            if len(args) != len(a.params):
                raise TableError(f"action {a.name}: takes {len(a.params)} argument(s), got {len(args)}")
            vals = {p: int(v) for (p, _), v in zip(a.params, args)}
        for (p, w) in a.params:
            v = vals[p]
            if v < 0 or v >> w:
                raise TableError(f"action {a.name}: value {v:#x} of parameter {p} does not fit in {w} bits")
        return vals

    def _result_for(self, a: ActionInfo, vals: dict[str, int], hit: bool) -> tuple:
        return (a.fn, tuple(vals[p] for p, _ in a.params), hit, a.index)

    def _set_default(self, action: str, args: Any) -> None:
        a = self._action(action)
        vals = self._args(a, args)
        e = TableEntry(-1, {}, a.name, vals)
        e._result = self._result_for(a, vals, False)
        self.default_entry = e

    def set_default(self, action: str, args: Any = ()) -> None:
        if self.const_default:
            raise TableError(f"table {self.name}: the default action is const")
        a = self._action(action)
        if a.table_only:
            raise TableError(f"table {self.name}: action {a.name} is @tableonly and cannot be the default")
        self._set_default(action, args)

    def reset_default(self) -> None:
        self._set_default(self.initial_default[0], self.initial_default[1])

    def rebind(self, fns: dict[str, Callable]) -> None:
        """Point every stored result at the generated functions in ``fns`` (by action name)."""
        for a in self.actions.values():
            a.fn = fns.get(a.name, a.fn)
        for e in [self.default_entry, *self._entries.values()]:
            a = self.actions[e.action]
            e._result = self._result_for(a, e.args, e is not self.default_entry)

    def _normalise(self, match: dict[str, MatchSpec] | Sequence[MatchSpec]) -> tuple[dict, tuple, tuple]:
        if not isinstance(match, dict):
            match = list(match)
            if len(match) != len(self.keys):
                raise TableError(f"table {self.name}: {len(self.keys)} key(s), got {len(match)}")
            match = {k.name: m for k, m in zip(self.keys, match)}
        known = {k.name for k in self.keys}
        unknown = set(match) - known
        if unknown:
            raise TableError(f"table {self.name}: unknown key(s) {sorted(unknown)}; keys are {[k.name for k in self.keys]}")
        norm: dict[str, MatchSpec] = {}
        checks = []
        exact_key = []
        for k in self.keys:
            w, m = k.width, _mask(k.width)
            spec = match.get(k.name)
            kind = k.match_kind
            if isinstance(spec, int) and not isinstance(spec, bool):
                spec = Lpm(spec, w) if kind == "lpm" else Ternary(spec, m) if kind == "ternary" else \
                    Range(spec, spec) if kind == "range" else Optional_(spec) if kind == "optional" else Exact(spec)
            if spec is None:
                if kind == "exact":
                    raise TableError(f"table {self.name}: exact key {k.name} needs a value")
                spec = {"lpm": Lpm(0, 0), "ternary": Ternary(0, 0), "range": Range(0, m),
                        "optional": Optional_(None)}[kind]
            if kind == "exact":
                if not isinstance(spec, Exact):
                    raise TableError(f"table {self.name}: key {k.name} is exact, got {spec}")
                v = self._fit(k, spec.value)
                checks.append((v, m, False))
                exact_key.append(v)
            elif kind == "lpm":
                if not isinstance(spec, Lpm):
                    raise TableError(f"table {self.name}: key {k.name} is lpm, got {spec}")
                if not 0 <= spec.prefix_len <= w:
                    raise TableError(f"table {self.name}: prefix length {spec.prefix_len} out of range for {w}-bit key {k.name}")
                pm = (m >> (w - spec.prefix_len)) << (w - spec.prefix_len)
                v = self._fit(k, spec.value) & pm
                spec = Lpm(v, spec.prefix_len)
                checks.append((v, pm, False))
                exact_key.append(v >> (w - spec.prefix_len))
            elif kind == "ternary":
                if isinstance(spec, Exact):
                    spec = Ternary(spec.value, m)
                if not isinstance(spec, Ternary):
                    raise TableError(f"table {self.name}: key {k.name} is ternary, got {spec}")
                msk = self._fit(k, spec.mask)
                v = self._fit(k, spec.value) & msk
                spec = Ternary(v, msk)
                checks.append((v, msk, False))
            elif kind == "optional":
                if isinstance(spec, Exact):
                    spec = Optional_(spec.value)
                if not isinstance(spec, Optional_):
                    raise TableError(f"table {self.name}: key {k.name} is optional, got {spec}")
                if spec.value is None:
                    checks.append((0, 0, False))
                else:
                    checks.append((self._fit(k, spec.value), m, False))
            elif kind == "range":
                if isinstance(spec, Exact):
                    spec = Range(spec.value, spec.value)
                if not isinstance(spec, Range):
                    raise TableError(f"table {self.name}: key {k.name} is range, got {spec}")
                lo, hi = self._fit(k, spec.low), self._fit(k, spec.high)
                if lo > hi:
                    raise TableError(f"table {self.name}: empty range {lo}..{hi} for key {k.name}")
                checks.append((lo, hi, True))
            else:
                raise TableError(f"table {self.name}: match kind {kind!r} is not supported")
            norm[k.name] = spec
        return norm, tuple(checks), tuple(exact_key)

    def _fit(self, k: KeyInfo, v: int) -> int:
        v = int(v)
        if v < 0 or v >> k.width:
            raise TableError(f"table {self.name}: value {v:#x} does not fit in the {k.width}-bit key {k.name}")
        return v

    def add(self, match: Any, action: str, args: Any = (), priority: int | None = None,
            *, _const: bool = False) -> int:
        if self.const_entries and not _const:
            raise TableError(f"table {self.name}: entries are const")
        a = self._action(action)
        if a.default_only:
            raise TableError(f"table {self.name}: action {a.name} is @defaultonly")
        vals = self._args(a, args)
        norm, checks, ekey = self._normalise(match)
        needs_prio = self.kind in ("ternary", "range")
        if needs_prio:
            if priority is None:
                raise TableError(f"table {self.name}: a {self.kind} table needs a priority")
        elif priority is not None and not _const:
            raise TableError(f"table {self.name}: priorities are only for ternary/range/optional tables")
        if len(self._entries) >= self.size:
            raise TableError(f"table {self.name}: full ({self.size} entries)")
        h = self._next_handle
        e = TableEntry(h, norm, a.name, vals, priority if needs_prio else None)
        e._checks = checks
        e._result = self._result_for(a, vals, True)
        if self.hit_clock is not None:
            e.last_hit_ns = self.hit_clock()
        if self.kind == "exact":
            key = ekey[0] if self._single else ekey
            if key in self._exact:
                raise TableError(f"table {self.name}: an entry with the same match exists")
            self._exact[key] = e
            e._key = key
        elif self.kind == "lpm":
            plen = norm[self.keys[self._lpm_pos].name].prefix_len
            key = ekey[0] if self._single else ekey
            d = self._lpm.setdefault(plen, {})
            if key in d:
                raise TableError(f"table {self.name}: an entry with the same match exists")
            d[key] = e
            e._key, e._plen = key, plen
            self._lpm_order = sorted(self._lpm, reverse=True)
            self._lpm_cache.clear()
        else:
            for o in self._list:
                if o._checks == checks and o.priority == priority:
                    raise TableError(f"table {self.name}: an entry with the same match and priority exists")
            self._list.append(e)
            # stable sort: larger priority first; ties keep insertion order
            self._list.sort(key=lambda x: -x.priority)
        self._entries[h] = e
        self._next_handle += 1
        return h

    def find(self, match: Any, priority: int | None = None) -> TableEntry | None:
        """The entry with exactly this match (and priority), or None."""
        norm, checks, _ = self._normalise(match)
        for e in self._entries.values():
            if e._checks == checks and (self.kind not in ("ternary", "range") or e.priority == priority):
                return e
        return None

    def _entry(self, handle: int) -> TableEntry:
        e = self._entries.get(handle)
        if e is None:
            raise KeyError(f"table {self.name}: no entry with handle {handle}")
        return e

    def modify(self, handle: int, action: str, args: Any = ()) -> None:
        if self.const_entries:
            raise TableError(f"table {self.name}: entries are const")
        e = self._entry(handle)
        a = self._action(action)
        if a.default_only:
            raise TableError(f"table {self.name}: action {a.name} is @defaultonly")
        e.args = self._args(a, args)
        e.action = a.name
        e._result = self._result_for(a, e.args, True)

    def delete(self, handle: int) -> None:
        if self.const_entries:
            raise TableError(f"table {self.name}: entries are const")
        e = self._entry(handle)
        del self._entries[handle]
        if self.kind == "exact":
            del self._exact[e._key]
        elif self.kind == "lpm":
            d = self._lpm[e._plen]
            del d[e._key]
            self._lpm_cache.clear()
            if not d:
                del self._lpm[e._plen]
                self._lpm_order = sorted(self._lpm, reverse=True)
        else:
            self._list.remove(e)

    def clear(self) -> None:
        if self.const_entries:
            raise TableError(f"table {self.name}: entries are const")
        for h in list(self._entries):
            self.delete(h)

    def entries(self) -> list[TableEntry]:
        return list(self._entries.values())

    def entry(self, handle: int) -> TableEntry:
        return self._entry(handle)

    # ------------------------------------------------------------ idle timeouts
    def set_idle_timeout(self, handle: int, timeout_ns: int) -> None:
        """Give an entry an idle timeout (0: never ages) counted from its last hit (or
        insertion); an entry already reported idle may be reported again."""
        if timeout_ns < 0:
            raise TableError(f"table {self.name}: idle timeout {timeout_ns} ns is negative")
        if timeout_ns and self.hit_clock is None:
            raise TableError(f"table {self.name}: does not track hits (no support_timeout)")
        e = self._entry(handle)
        e.idle_timeout_ns = int(timeout_ns)
        e.idle_notified = False

    def idle_entries(self, now_ns: int) -> list[TableEntry]:
        """Entries idle for at least their timeout and not yet reported; marks them reported."""
        out = []
        for e in self._entries.values():
            t = e.idle_timeout_ns
            if t and not e.idle_notified and now_ns - e.last_hit_ns >= t:
                e.idle_notified = True
                out.append(e)
        return out

    def shortest_idle_timeout_ns(self) -> int:
        """The smallest non-zero idle timeout of the entries (0 if none ages)."""
        return min((e.idle_timeout_ns for e in self._entries.values() if e.idle_timeout_ns), default=0)
