"""STF commands for action profiles and selectors (a saatp extension of p4c's STF format).

p4c's STF runner has no commands for action profiles; these follow ``simple_switch_CLI``'s
names, and the handles are the ones BMv2 gives (the lowest free number, see
:mod:`emulation.v1model.action_profiles`), so the same sequence run through
``simple_switch_CLI`` builds the same state::

    act_prof_create_member PROFILE ACTION(PARAM:VALUE, ...)     (member 0, 1, 2...)
    act_prof_modify_member PROFILE MEMBER ACTION(PARAM:VALUE, ...)
    act_prof_delete_member PROFILE MEMBER
    act_prof_create_group PROFILE                               (group 0, 1, 2...)
    act_prof_delete_group PROFILE GROUP
    act_prof_add_member_to_group PROFILE MEMBER GROUP
    act_prof_remove_member_from_group PROFILE MEMBER GROUP

``PROFILE`` is the profile's name or the name of a table that uses it (an anonymous
``implementation = action_selector(...)`` has its table's name).  Table entries and the
default entry point at a member or a group with the pseudo actions ``$member(HANDLE)`` and
``$group(HANDLE)``::

    add ecmp dstAddr:10.0.0.0/8 $group(0)
    setdefault ecmp $member(2)

``add`` with an ordinary action on such a table creates a member for the entry.
"""
from __future__ import annotations

from typing import Any

from .parser import ActProf, Command

INDIRECT_ACTIONS = ("$member", "$group")


def indirect_action(runner: Any, c: Command, action: str, args: list) -> tuple[str, dict[str, int]]:
    """``$member(H)`` / ``$group(H)`` as the table's pseudo action and its argument."""
    if len(args) != 1 or args[0][0] is not None:
        raise runner.err(c, f"{action}(HANDLE) takes one handle")
    return action.lower(), {"handle": int(args[0][1])}


def run_action_profile_command(runner: Any, c: ActProf) -> None:
    sw = runner.sw
    prof = runner.call(c, sw.action_profile, c.profile)
    if c.action is not None:
        ti = runner.table_info(c, prof.tables[0].name) if prof.tables else None
        if ti is None:
            raise runner.err(c, f"action profile {prof.name}: no table uses it")
        action = runner.action_name(c, ti, c.action)
        args = runner.action_args(c, action, c.args)
    op, n = c.op, c.ints
    if op == "act_prof_create_member":
        h = runner.call(c, prof.create_member, action, args)
        runner._log(f"  {prof.name}: member {h} = {action}{args}")
    elif op == "act_prof_modify_member":
        runner.call(c, prof.modify_member, n[0], action, args)
    elif op == "act_prof_delete_member":
        runner.call(c, prof.delete_member, n[0])
    elif op == "act_prof_create_group":
        h = runner.call(c, prof.create_group)
        runner._log(f"  {prof.name}: group {h}")
    elif op == "act_prof_delete_group":
        runner.call(c, prof.delete_group, n[0])
    elif op == "act_prof_add_member_to_group":
        runner.call(c, prof.add_member_to_group, n[0], n[1])
    elif op == "act_prof_remove_member_from_group":
        runner.call(c, prof.remove_member_from_group, n[0], n[1])
