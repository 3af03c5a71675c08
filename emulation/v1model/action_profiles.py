"""Action profiles, action selectors and the indirect tables that use them, as BMv2 runs them.

v1model's ``action_profile(size)`` and ``action_selector(algo, size, outputWidth)`` hold
*members* (an action with its data); a selector also holds *groups* of members.  A table
with ``implementation = ...`` (an :class:`IndirectTable`) stores in each entry a member
handle or a group handle instead of an action.  The rules, learnt from BMv2's
``src/bm_sim/action_profile.cpp`` and ``match_tables.cpp`` (our own code):

* member and group handles are the lowest free integers (BMv2's ``HandleMgr``), so a
  handle freed by a delete is given to the next member/group created;
* a member used by a table entry or a group cannot be deleted, nor a group used by a
  table entry; deleting a group takes its members out of it;
* an entry cannot point at an empty group (BMv2 ``EMPTY_GRP``); a group that becomes
  empty later makes the lookup run no action;
* **member choice** (``ActionProfile::choose_from_group``): the selector hashes the values
  of the table's ``selector`` keys, concatenated bit-wise as a field list (BMv2's
  ``BufBuilder``, :func:`~emulation.v1model.hashes.concat_fields`), with its algorithm, and
  takes member number ``hash % n`` of the group's ``n`` member handles in increasing
  order.  ``outputWidth`` plays no part (BMv2 ignores it);
* a miss runs the table's default entry, which may be a member or a group too.

A weighted member (P4Runtime) is one BMv2 member per unit of weight, as the P4Runtime
server of BMv2 (PI) programs it: :mod:`emulation.p4runtime.action_profiles` does that.

For the STF runner and the Python API, ``add`` with a direct action on an indirect table
creates a member for it (and deletes it with the entry).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .hashes import concat_fields
from .tables import ActionInfo, Table, TableError

MEMBER, GROUP = "$member", "$group"   # the pseudo actions of indirect entries: args {"handle": h}
_PSEUDO = {n: ActionInfo(n, -1, [("handle", 32)], None) for n in (MEMBER, GROUP)}


def _noop() -> None:
    return None


# what a lookup that lands on an empty group runs (BMv2's ``empty_action``)
EMPTY_RESULT = (_noop, (), True, -1)


def _handle(args: Any) -> int:
    """The handle of a pseudo action's arguments (``{"handle": h}`` or ``[h]``)."""
    if isinstance(args, dict):
        return int(args["handle"])
    (h,) = args
    return int(h)


class ActionProfileError(TableError):
    """An action profile operation BMv2 refuses (unknown or busy handle, empty group...)."""


@dataclass
class Member:
    handle: int
    action: str
    args: dict[str, int]
    argt: tuple = ()            # the action data in parameter order (what the action function takes)


@dataclass
class Group:
    handle: int
    members: list[int] = field(default_factory=list)   # member handles, increasing


def _lowest_free(used: dict) -> int:
    h = 0
    while h in used:
        h += 1
    return h


class ActionProfile:
    """One ``action_profile`` or ``action_selector`` instance (``algorithm`` None: no selector)."""

    def __init__(self, name: str, size: int, algorithm: str | None = None, rt: Any = None):
        self.name = name
        self.size = size
        self.algorithm = algorithm
        self.rt = rt
        self.tables: list[IndirectTable] = []
        self.actions: dict[str, ActionInfo] = {}
        self.members: dict[int, Member] = {}
        self.groups: dict[int, Group] = {}
        self._member_refs: dict[int, int] = {}    # entries and groups pointing at a member
        self._group_refs: dict[int, int] = {}     # entries pointing at a group

    @property
    def with_selector(self) -> bool:
        return self.algorithm is not None

    def attach(self, table: IndirectTable) -> None:
        self.tables.append(table)
        for n, a in table.actions.items():
            self.actions.setdefault(n, a)

    # ------------------------------------------------------------- members
    def _table(self) -> IndirectTable:
        if not self.tables:
            raise ActionProfileError(f"action profile {self.name}: no table uses it")
        return self.tables[0]

    def _member_action(self, action: str, args: Any) -> tuple[str, dict[str, int], tuple]:
        t = self._table()
        a = Table._action(t, action)
        if a.default_only:
            raise ActionProfileError(f"action profile {self.name}: action {a.name} is @defaultonly")
        vals = t._args(a, args)
        return a.name, vals, tuple(vals[p] for p, _ in a.params)

    def create_member(self, action: str, args: Any = ()) -> int:
        name, vals, argt = self._member_action(action, args)
        if len(self.members) >= self.size > 0:
            raise ActionProfileError(f"action profile {self.name}: full ({self.size} members)")
        h = _lowest_free(self.members)
        self.members[h] = Member(h, name, vals, argt)
        self._member_refs[h] = 0
        return h

    def modify_member(self, handle: int, action: str, args: Any = ()) -> None:
        m = self.member(handle)
        m.action, m.args, m.argt = self._member_action(action, args)

    def delete_member(self, handle: int) -> None:
        self.member(handle)
        if self._member_refs.get(handle):
            raise ActionProfileError(f"action profile {self.name}: member {handle} is still used")
        del self.members[handle]
        del self._member_refs[handle]

    def member(self, handle: int) -> Member:
        m = self.members.get(handle)
        if m is None:
            raise ActionProfileError(f"action profile {self.name}: no member with handle {handle}")
        return m

    # -------------------------------------------------------------- groups
    def _need_selector(self) -> None:
        if not self.with_selector:
            raise ActionProfileError(f"action profile {self.name} has no selector: it has no groups")

    def create_group(self) -> int:
        self._need_selector()
        h = _lowest_free(self.groups)
        self.groups[h] = Group(h)
        self._group_refs[h] = 0
        return h

    def delete_group(self, handle: int) -> None:
        g = self.group(handle)
        if self._group_refs.get(handle):
            raise ActionProfileError(f"action profile {self.name}: group {handle} is still used")
        for m in g.members:
            self._member_refs[m] -= 1
        del self.groups[handle]
        del self._group_refs[handle]

    def group(self, handle: int) -> Group:
        self._need_selector()
        g = self.groups.get(handle)
        if g is None:
            raise ActionProfileError(f"action profile {self.name}: no group with handle {handle}")
        return g

    def add_member_to_group(self, member: int, group: int) -> None:
        self.member(member)
        g = self.group(group)
        if member in g.members:
            raise ActionProfileError(f"action profile {self.name}: member {member} is already in group {group}")
        g.members.append(member)
        g.members.sort()
        self._member_refs[member] += 1

    def remove_member_from_group(self, member: int, group: int) -> None:
        self.member(member)
        g = self.group(group)
        if member not in g.members:
            raise ActionProfileError(f"action profile {self.name}: member {member} is not in group {group}")
        g.members.remove(member)
        self._member_refs[member] -= 1

    # --------------------------------------------------- references from tables
    def ref(self, kind: str, handle: int, delta: int) -> None:
        """Count a table entry (or default entry) pointing at a member/group (``delta`` +1/-1)."""
        if kind == GROUP:
            g = self.group(handle)
            if delta > 0 and not g.members:
                raise ActionProfileError(f"action profile {self.name}: group {handle} is empty")
            self._group_refs[handle] += delta
        else:
            self.member(handle)
            self._member_refs[handle] += delta

    def reset(self) -> None:
        """Forget every member and group (the tables' entries must be gone)."""
        self.members.clear()
        self.groups.clear()
        self._member_refs.clear()
        self._group_refs.clear()

    # --------------------------------------------------------------- lookup
    def selector_hash(self, fields: Sequence[tuple[int, int]]) -> int:
        """The selector's hash of the ``selector`` key values ``(value, width)``."""
        return self.rt.hash_fns[self.algorithm](concat_fields(fields))

    def choose(self, group: int, fields: Sequence[tuple[int, int]]) -> int | None:
        """The member a packet with these selector key values gets from ``group`` (None: empty)."""
        g = self.groups.get(group)
        if g is None or not g.members:
            return None
        n = len(g.members)
        return g.members[self.selector_hash(fields) % n if n > 1 else 0]


class IndirectTable(Table):
    """A table whose entries point at members/groups of an :class:`ActionProfile`.

    Entries use the pseudo actions ``$member``/``$group`` with one argument ``handle``;
    ``add`` with a real action creates a member for the entry (the STF and Python forms).
    The generated code calls :meth:`lookup_indirect` with the values of the selector keys.
    """

    def __init__(self, *args: Any, profile: ActionProfile, **kw: Any):
        self.profile = profile
        self._auto: set[int] = set()       # entry handles whose member was created by add()
        super().__init__(*args, **kw)
        profile.attach(self)

    # pseudo actions --------------------------------------------------------
    def _action(self, name: str) -> ActionInfo:
        p = _PSEUDO.get(name)
        return p if p is not None else super()._action(name)

    def _result_for(self, a: ActionInfo, vals: dict[str, int], hit: bool) -> tuple:
        if a.name in _PSEUDO:
            return (None, (a.name, vals["handle"]), hit, -1)
        return super()._result_for(a, vals, hit)

    def rebind(self, fns: dict[str, Callable]) -> None:
        for a in self.actions.values():
            a.fn = fns.get(a.name, a.fn)
        for e in [self.default_entry, *self._entries.values()]:
            e._result = self._result_for(self._action(e.action), e.args, e is not self.default_entry)

    # lookup ------------------------------------------------------------------
    def lookup_indirect(self, key: Any, selector: Sequence[tuple[int, int]] = ()) -> tuple:
        """``lookup`` resolved through the profile: ``(fn, args, hit, action_index)``."""
        r = self.lookup(key)
        if r[3] != -1:
            return r                      # a direct default action
        kind, h = r[1]
        prof = self.profile
        if kind == GROUP:
            h = prof.choose(h, selector)
            if h is None:
                return EMPTY_RESULT
        m = prof.members.get(h)
        if m is None:
            return EMPTY_RESULT
        a = self.actions[m.action]
        return (a.fn, m.argt, r[2], a.index)

    # entries -------------------------------------------------------------------
    def add(self, match: Any, action: str, args: Any = (), priority: int | None = None,
            *, _const: bool = False) -> int:
        if action in _PSEUDO:
            kind, h = action, _handle(args)
            self.profile.ref(kind, h, +1)
            try:
                return super().add(match, action, {"handle": h}, priority, _const=_const)
            except Exception:
                self.profile.ref(kind, h, -1)
                raise
        m = self.profile.create_member(action, args)
        try:
            eh = self.add(match, MEMBER, {"handle": m}, priority, _const=_const)
        except Exception:
            self.profile.delete_member(m)
            raise
        self._auto.add(eh)
        return eh

    def add_member_entry(self, match: Any, member: int, priority: int | None = None) -> int:
        return self.add(match, MEMBER, {"handle": member}, priority)

    def add_group_entry(self, match: Any, group: int, priority: int | None = None) -> int:
        return self.add(match, GROUP, {"handle": group}, priority)

    def _release(self, e: Any, auto: bool) -> None:
        if e.action in _PSEUDO:
            self.profile.ref(e.action, e.args["handle"], -1)
            if auto:
                self.profile.delete_member(e.args["handle"])

    def modify(self, handle: int, action: str, args: Any = ()) -> None:
        e = self._entry(handle)
        old_action, old_args, auto = e.action, dict(e.args), handle in self._auto
        if action not in _PSEUDO:
            m = self.profile.create_member(action, args)
            try:
                self.modify(handle, MEMBER, {"handle": m})
            except Exception:
                self.profile.delete_member(m)
                raise
            self._auto.add(handle)
            return
        h = _handle(args)
        self.profile.ref(action, h, +1)
        try:
            super().modify(handle, action, {"handle": h})
        except Exception:
            self.profile.ref(action, h, -1)
            raise
        self._auto.discard(handle)
        self._release(_Old(old_action, old_args), auto)

    def delete(self, handle: int) -> None:
        e = self._entry(handle)
        super().delete(handle)
        self._release(e, handle in self._auto)
        self._auto.discard(handle)

    def set_default(self, action: str, args: Any = ()) -> None:
        old = self.default_entry
        if action in _PSEUDO:
            h = _handle(args)
            self.profile.ref(action, h, +1)
            try:
                super().set_default(action, {"handle": h})
            except Exception:
                self.profile.ref(action, h, -1)
                raise
        else:
            super().set_default(action, args)
        self._release(old, False)

    def reset_default(self) -> None:
        old = self.default_entry
        super().reset_default()
        self._release(old, False)

    def entry_target(self, e: Any) -> tuple[str, int] | None:
        """``($member|$group, handle)`` of an entry, or None for a direct action."""
        return (e.action, e.args["handle"]) if e.action in _PSEUDO else None


@dataclass
class _Old:
    action: str
    args: dict
