"""What a compiled program exposes to control planes: its tables, actions and externs.

The code generator fills a :class:`ProgramInfo` while it lowers the program; the
P4Info generator, the P4Runtime server, the STF runner and the Python control-plane
API all read this one description (they never look at the AST).

Names are *fully qualified control-plane names* as p4c forms them: the instance path
of the enclosing control followed by the object's local name, e.g. ``MyIngress.ipv4_lpm``
or ``MyIngress.sub.t``; an ``@name("x")`` annotation replaces the local name (and a
leading ``.`` in it makes the name global, as in p4c).  Top-level actions keep their
bare name (``NoAction``).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Annotated:
    # annotation name -> raw body text ("" when the annotation has no body), in source order
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class ParamInfo(Annotated):
    name: str = ""
    width: int = 0
    enum: str = ""          # the serializable enum it is declared with, if any


@dataclass
class ActionInfoP(Annotated):
    name: str = ""                       # fully qualified control-plane name
    params: list[ParamInfo] = field(default_factory=list)   # directionless (action data) params
    calls_extern_functions: bool = False   # its body calls an extern function (P4Info type_info)


@dataclass
class KeyInfoP(Annotated):
    name: str = ""          # the key expression as written (``hdr.ipv4.dstAddr``) or its @name
    match_kind: str = ""    # exact | lpm | ternary | range | optional
    width: int = 0


@dataclass
class TableActionRef(Annotated):
    name: str = ""          # fully qualified action name
    default_only: bool = False
    table_only: bool = False


@dataclass
class TableInfo(Annotated):
    name: str = ""
    keys: list[KeyInfoP] = field(default_factory=list)
    actions: list[TableActionRef] = field(default_factory=list)
    default_action: str = "NoAction"
    default_args: list[int] = field(default_factory=list)
    const_default_action: bool = False
    has_const_entries: bool = False
    has_initial_entries: bool = False     # ``entries = {...}``, const or not
    support_timeout: bool = False         # ``support_timeout = true``: entries can age (idle timeout)
    size: int = 1024
    direct_counter: str | None = None     # name of the direct_counter bound to the table
    direct_meter: str | None = None
    implementation: str | None = None     # the action profile/selector of an indirect table


@dataclass
class ExternInstanceInfo(Annotated):
    kind: str = ""          # counter | direct_counter | register | meter | direct_meter | action_profile ...
    name: str = ""
    size: int = 0           # 0 for direct objects
    unit: str = ""          # counters/meters: packets | bytes | packets_and_bytes
    width: int = 0          # registers: cell width
    signed: bool = False    # registers: int<W> cells
    table: str | None = None  # direct objects: the owning table
    algorithm: str | None = None  # action profiles: the selector's hash algorithm (None: no selector)


@dataclass
class HeaderFieldInfo:
    name: str
    width: int
    enum: str = ""          # the serializable enum it is declared with, if any


@dataclass
class ControllerHeaderInfo(Annotated):
    name: str = ""          # the @controller_header("packet_in") value
    type_name: str = ""     # the P4 header type
    fields: list[HeaderFieldInfo] = field(default_factory=list)


@dataclass
class DigestInfo:
    name: str               # the struct type name used in digest<T>
    fields: list[HeaderFieldInfo] = field(default_factory=list)


@dataclass
class SerializableEnumInfo:
    """A serializable enum (``enum bit<W> E { A = 1, ... }``), for P4Info ``type_info``."""
    name: str
    width: int
    members: list[tuple[str, int]] = field(default_factory=list)   # (name, value), in order


@dataclass
class ProgramInfo:
    source: str = ""        # main file path
    arch: str = "v1model"
    tables: list[TableInfo] = field(default_factory=list)
    actions: list[ActionInfoP] = field(default_factory=list)
    externs: list[ExternInstanceInfo] = field(default_factory=list)
    controller_headers: list[ControllerHeaderInfo] = field(default_factory=list)
    digests: list[DigestInfo] = field(default_factory=list)
    serializable_enums: list[SerializableEnumInfo] = field(default_factory=list)
    # what p4c's P4Info depends on beyond the declarations: actions a control's apply block
    # calls directly (p4c lists an action only if a table or an apply block uses it), and
    # whether a control calls an extern function (p4c then writes an empty ``type_info``)
    actions_called_from_apply: set[str] = field(default_factory=set)
    calls_extern_functions: bool = False

    def table(self, name: str) -> TableInfo:
        for t in self.tables:
            if t.name == name:
                return t
        raise KeyError(name)

    def action(self, name: str) -> ActionInfoP:
        for a in self.actions:
            if a.name == name:
                return a
        raise KeyError(name)
