"""Action profile members and groups (P4Runtime spec §9.2, §9.2.3 one-shot action selector
programming) over the target's :class:`~emulation.v1model.action_profiles.ActionProfile`.

The mapping to target members follows BMv2's P4Runtime server (PI's ``action_prof_mgr``), so
that the same Write sequence gives the same member handles, hence the same member choice per
flow, as ``simple_switch_grpc``:

* a P4Runtime member is one target member, created at INSERT; a group member of weight
  ``w`` uses ``w`` target members with the same action (copies made on demand, the member's
  own first); copies no group needs any more are deleted, last first;
* group membership updates visit the member ids in increasing order;
* a table entry with ``action_profile_action_set`` (one-shot) gets target members for each
  action, ``weight`` copies each in the order given, then a group of them; they are deleted
  with the entry.  A profile is programmed either with members/groups or one-shot, not both;
* weights must be > 0; the sum of a group's weights may not exceed its ``max_size`` (or
  the profile's ``max_group_size``); ``max_size`` cannot exceed ``max_group_size``
  (INVALID_ARGUMENT) nor change after INSERT.

Watch ports are accepted and stored, not enforced (all ports are up in this target).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from google.rpc import code_pb2

from emulation.v1model.action_profiles import GROUP, MEMBER, ActionProfileError
from emulation.v1model.tables import TableError
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.codec import decode_params, encode_params

from .errors import P4RTError
from .state import ServerState


@dataclass
class _Member:
    action: str
    args: dict[str, int]
    handles: list[int]                 # target members: [own, weight copies...]


@dataclass
class _Group:
    handle: int
    max_size: int
    weights: dict[int, int] = field(default_factory=dict)        # member id -> weight
    watch: dict[int, tuple[str, Any]] = field(default_factory=dict)


@dataclass
class _OneShot:
    group: int
    members: list[int]                 # target member handles, in creation order
    actions: list[Any]                 # the ActionProfileAction messages as written


@dataclass
class _ProfileState:
    mode: str = ""                     # "" | manual | oneshot
    members: dict[int, _Member] = field(default_factory=dict)
    groups: dict[int, _Group] = field(default_factory=dict)
    oneshots: dict[int, _OneShot] = field(default_factory=dict)   # target group handle -> one-shot


def _err(code: int, msg: str) -> P4RTError:
    return P4RTError(code, msg)


class ActionProfiles:
    """Handler of ``action_profile_member`` and ``action_profile_group`` entities, and the
    indirect part of table entries (called by :class:`~emulation.p4runtime.tables.Tables`)."""

    def __init__(self, state: ServerState):
        self.state = state
        self._profiles: dict[int, _ProfileState] = {}
        state.action_profiles = self
        state.on_pipeline_change(self._profiles.clear)

    # ------------------------------------------------------------- lookup
    def _profile(self, pid: int) -> tuple[Any, Any, _ProfileState]:
        idx = self.state.need_pipeline()
        ap = {a.preamble.id: a for a in idx.p4info.action_profiles}.get(pid)
        if ap is None:
            raise _err(code_pb2.NOT_FOUND, f"unknown action profile id {pid}")
        try:
            target = self.state.device.switch.action_profile(ap.preamble.name)
        except KeyError as e:
            raise _err(code_pb2.NOT_FOUND, f"action profile {ap.preamble.name}: {e}") from None
        return ap, target, self._profiles.setdefault(pid, _ProfileState())

    def _mode(self, ps: _ProfileState, mode: str, name: str) -> None:
        if ps.mode and ps.mode != mode and (ps.members or ps.groups or ps.oneshots):
            raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: cannot mix one-shot and "
                                                  f"member/group programming")
        ps.mode = mode

    def _action(self, ap: Any, act: Any) -> tuple[str, dict[str, int]]:
        idx = self.state.index
        a = idx.actions.get(act.action_id)
        if a is None:
            raise _err(code_pb2.NOT_FOUND, f"unknown action id {act.action_id}")
        allowed = {r.id for tid in ap.table_ids for r in idx.tables[tid].action_refs}
        if act.action_id not in allowed:
            raise _err(code_pb2.INVALID_ARGUMENT,
                       f"action {a.preamble.name} is not an action of action profile {ap.preamble.name}")
        return a.preamble.name, decode_params(a, act.params)

    @staticmethod
    def _existing(found_in: dict[int, Any], ident: int, name: str, what: str) -> Any:
        """The member or group ``ident`` that a request names, from ``found_in``; NOT_FOUND if
        profile ``name`` has none."""
        found = found_in.get(ident)
        if found is None:
            raise _err(code_pb2.NOT_FOUND, f"action profile {name}: no {what} {ident}")
        return found

    @staticmethod
    def _target(fn, *a):
        try:
            return fn(*a)
        except ActionProfileError as e:
            code = code_pb2.FAILED_PRECONDITION if "still used" in str(e) else code_pb2.INVALID_ARGUMENT
            raise _err(code, str(e)) from None
        except (TableError, KeyError, ValueError) as e:
            raise _err(code_pb2.INVALID_ARGUMENT, str(e)) from None

    # -------------------------------------------------------------- write
    def write(self, typ: int, e: Any) -> None:
        if isinstance(e, pb.ActionProfileMember):
            self._write_member(typ, e)
        else:
            self._write_group(typ, e)

    def _write_member(self, typ: int, e: Any) -> None:
        U = pb.Update
        ap, target, ps = self._profile(e.action_profile_id)
        name = ap.preamble.name
        self._mode(ps, "manual", name)
        if typ == U.INSERT:
            if e.member_id in ps.members:
                raise _err(code_pb2.ALREADY_EXISTS, f"action profile {name}: member {e.member_id} exists")
            action, args = self._action(ap, e.action)
            h = self._target(target.create_member, action, args)
            ps.members[e.member_id] = _Member(action, args, [h])
            return
        m = self._existing(ps.members, e.member_id, name, "member")
        if typ == U.MODIFY:
            action, args = self._action(ap, e.action)
            for h in m.handles:
                self._target(target.modify_member, h, action, args)
            m.action, m.args = action, args
        elif typ == U.DELETE:
            if any(e.member_id in g.weights for g in ps.groups.values()):
                raise _err(code_pb2.FAILED_PRECONDITION,
                           f"action profile {name}: member {e.member_id} is in a group")
            for h in m.handles:
                self._target(target.delete_member, h)
            del ps.members[e.member_id]

    def _write_group(self, typ: int, e: Any) -> None:
        U = pb.Update
        ap, target, ps = self._profile(e.action_profile_id)
        name = ap.preamble.name
        if not ap.with_selector:
            raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name} has no selector: it has no groups")
        self._mode(ps, "manual", name)
        if typ == U.INSERT:
            if e.group_id in ps.groups:
                raise _err(code_pb2.ALREADY_EXISTS, f"action profile {name}: group {e.group_id} exists")
            if e.max_size < 0 or ap.max_group_size and e.max_size > ap.max_group_size:
                raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: group max_size {e.max_size} "
                                                      f"is not in 0..{ap.max_group_size or 'any'}")
            self._check_members(ap, ps, e, e.max_size)
            g = _Group(self._target(target.create_group), e.max_size)
            ps.groups[e.group_id] = g
            self._set_membership(target, ps, g, e)
            return
        g = self._existing(ps.groups, e.group_id, name, "group")
        if typ == U.MODIFY:
            if e.max_size and e.max_size != g.max_size:
                raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: a group's max_size cannot change")
            self._check_members(ap, ps, e, g.max_size)
            self._set_membership(target, ps, g, e)
        elif typ == U.DELETE:
            self._target(target.delete_group, g.handle)
            del ps.groups[e.group_id]
            for mid in g.weights:
                self._purge_copies(target, ps, mid)

    def _check_members(self, ap: Any, ps: _ProfileState, e: Any, max_size: int) -> None:
        name = ap.preamble.name
        seen = set()
        total = 0
        for m in e.members:
            if m.weight <= 0:
                raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: member weights must be > 0")
            self._existing(ps.members, m.member_id, name, "member")
            if m.member_id in seen:
                raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: member {m.member_id} given twice "
                                                      f"in group {e.group_id} (use weights)")
            seen.add(m.member_id)
            total += m.weight
        limit = max_size or ap.max_group_size
        if limit and total > limit:
            raise _err(code_pb2.RESOURCE_EXHAUSTED, f"action profile {name}: group {e.group_id}: the weights "
                                                     f"add up to {total}, more than {limit}")

    def _set_membership(self, target: Any, ps: _ProfileState, g: _Group, e: Any) -> None:
        new = {m.member_id: m.weight for m in e.members}
        g.watch = {m.member_id: (m.WhichOneof("watch_kind"), getattr(m, m.WhichOneof("watch_kind")))
                   for m in e.members if m.WhichOneof("watch_kind")}
        changed = sorted(set(new) | set(g.weights))
        for mid in changed:
            cur, want = g.weights.get(mid, 0), new.get(mid, 0)
            m = ps.members[mid]
            while len(m.handles) < want:            # weight copies, made as needed
                m.handles.append(self._target(target.create_member, m.action, m.args))
            for i in range(cur - 1, want - 1, -1):
                self._target(target.remove_member_from_group, m.handles[i], g.handle)
            for i in range(cur, want):
                self._target(target.add_member_to_group, m.handles[i], g.handle)
            if want:
                g.weights[mid] = want
            else:
                g.weights.pop(mid, None)
        for mid in changed:
            self._purge_copies(target, ps, mid)

    def _purge_copies(self, target: Any, ps: _ProfileState, mid: int) -> None:
        m = ps.members.get(mid)
        if m is None:
            return
        need = max([1] + [g.weights.get(mid, 0) for g in ps.groups.values()])
        while len(m.handles) > need:
            self._target(target.delete_member, m.handles.pop())

    # ------------------------------------------------------- table entries
    def table_action(self, t: Any, entry: Any) -> tuple[str, dict[str, int]]:
        """The pseudo action (``$member``/``$group`` and the target handle) of a table entry's
        indirect action; a one-shot action set creates its members and group."""
        kind = entry.action.WhichOneof("type")
        if not t.implementation_id:
            raise _err(code_pb2.INVALID_ARGUMENT, f"table {t.preamble.name} has no action profile: "
                                                  f"{kind} is not allowed")
        ap, target, ps = self._profile(t.implementation_id)
        name = ap.preamble.name
        if kind == "action_profile_member_id":
            self._mode(ps, "manual", name)
            m = self._existing(ps.members, entry.action.action_profile_member_id, name, "member")
            return MEMBER, {"handle": m.handles[0]}
        if kind == "action_profile_group_id":
            self._mode(ps, "manual", name)
            g = self._existing(ps.groups, entry.action.action_profile_group_id, name, "group")
            return GROUP, {"handle": g.handle}
        # one-shot
        if not ap.with_selector:
            raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name} has no selector: no action sets")
        self._mode(ps, "oneshot", name)
        acts = list(entry.action.action_profile_action_set.action_profile_actions)
        if not acts:
            raise _err(code_pb2.UNIMPLEMENTED, "empty action profile action sets are not supported")
        decoded = []
        for a in acts:
            if a.weight <= 0:
                raise _err(code_pb2.INVALID_ARGUMENT, f"action profile {name}: weights must be > 0")
            decoded.append(self._action(ap, a.action))
        total = sum(a.weight for a in acts)
        if ap.max_group_size and total > ap.max_group_size:
            raise _err(code_pb2.RESOURCE_EXHAUSTED, f"action profile {name}: the weights add up to {total}, "
                                                     f"more than max_group_size {ap.max_group_size}")
        made: list[int] = []
        try:
            for a, (action, args) in zip(acts, decoded):
                for _ in range(a.weight):
                    made.append(self._target(target.create_member, action, args))
            gh = self._target(target.create_group)
        except P4RTError:
            for h in reversed(made):
                target.delete_member(h)
            raise
        for h in made:
            target.add_member_to_group(h, gh)
        ps.oneshots[gh] = _OneShot(gh, made, acts)
        return GROUP, {"handle": gh}

    def release(self, t: Any, target_ref: tuple[str, int] | None) -> None:
        """After an entry stopped pointing at ``target_ref``: delete a one-shot group and members."""
        if target_ref is None or not t.implementation_id:
            return
        ps = self._profiles.get(t.implementation_id)
        if ps is None or target_ref[0] != GROUP or target_ref[1] not in ps.oneshots:
            return
        _, target, _ = self._profile(t.implementation_id)
        os_ = ps.oneshots.pop(target_ref[1])
        for h in os_.members:
            target.remove_member_from_group(h, os_.group)
        target.delete_group(os_.group)
        for h in os_.members:
            target.delete_member(h)

    def encode_entry_action(self, t: Any, ent: Any, out: Any) -> bool:
        """Fill ``out.action`` (a TableEntry) for an entry pointing at a member/group; False for
        a direct action."""
        if ent.action not in (MEMBER, GROUP) or not t.implementation_id:
            return False
        ps = self._profiles.get(t.implementation_id, _ProfileState())
        h = ent.args["handle"]
        if ent.action == GROUP and h in ps.oneshots:
            for a in ps.oneshots[h].actions:
                out.action.action_profile_action_set.action_profile_actions.add().CopyFrom(a)
            return True
        if ent.action == GROUP:
            gid = next((i for i, g in ps.groups.items() if g.handle == h), None)
            if gid is not None:
                out.action.action_profile_group_id = gid
                return True
        else:
            mid = next((i for i, m in ps.members.items() if h in m.handles), None)
            if mid is not None:
                out.action.action_profile_member_id = mid
                return True
        return True     # made by another control plane (STF/Python): no P4Runtime id to report

    # --------------------------------------------------------------- read
    def read(self, req: Any) -> Iterator[Any]:
        idx = self.state.need_pipeline()
        pids = [req.action_profile_id] if req.action_profile_id else [a.preamble.id for a in
                                                                      idx.p4info.action_profiles]
        is_member = isinstance(req, pb.ActionProfileMember)
        for pid in pids:
            ap, _, ps = self._profile(pid)
            if is_member:
                for mid, m in sorted(ps.members.items()):
                    if req.member_id and mid != req.member_id:
                        continue
                    x = pb.Entity()
                    x.action_profile_member.action_profile_id = pid
                    x.action_profile_member.member_id = mid
                    encode_params(x.action_profile_member.action, idx.get("action", m.action), m.args)
                    yield x
            else:
                for gid, g in sorted(ps.groups.items()):
                    if req.group_id and gid != req.group_id:
                        continue
                    x = pb.Entity()
                    xg = x.action_profile_group
                    xg.action_profile_id, xg.group_id, xg.max_size = pid, gid, g.max_size
                    for mid, w in sorted(g.weights.items()):
                        gm = xg.members.add(member_id=mid, weight=w)
                        if mid in g.watch:
                            setattr(gm, *g.watch[mid])
                    yield x
