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

import re

from dataclasses import dataclass, field


class StructuredText(str):
    """The text of a structured annotation (``@a[k = v]``; tokens joined by spaces), which
    P4Info lists in ``structured_annotations``."""
    structured = True


@dataclass
class Annotated:
    # annotation name -> raw body text ("" when the annotation has no body), in source order
    annotations: dict[str, str] = field(default_factory=dict)
    # where p4c's front end leaves the declaration once it has inlined the parser/control
    # instances: (index of the block among main's arguments, index among that block's locals,
    # index among an inlined instance's locals, ...); () for a top-level declaration
    order: tuple = ()


@dataclass
class ParamInfo(Annotated):
    name: str = ""
    width: int = 0
    enum: str = ""          # the serializable enum it is declared with, if any
    type_name: str = ""     # the ``type`` (new type) it is declared with, if any


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
    enum: str = ""          # the key's serializable enum type, if any
    type_name: str = ""     # the key's ``type`` (new type), if any
    is_error: bool = False  # the key is of type ``error``
    position: int = -1      # index among all the table's key elements (``selector`` ones included)


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
    # where the table is applied (filled while the controls' apply blocks are compiled); an
    # empty list: never applied, which p4c's front end removes ("Table t is not used;
    # removing"); None: not known
    applied_sites: list | None = None
    # the annotations of every key element in order, ``selector`` ones included (p4c numbers
    # match fields over all key elements)
    key_annotations: list = field(default_factory=list)


@dataclass
class TypeDesc:
    """A P4 type as P4Info's ``P4DataTypeSpec`` describes it (p4c's TypeSpecConverter): the
    register cells, the digest data.  ``kind`` is one of bit, int, varbit, bool, error, enum,
    serializable_enum, new_type, struct, header, header_union, header_stack,
    header_union_stack, tuple."""
    kind: str
    name: str = ""          # struct, header, header_union, enum, serializable_enum, new_type
    width: int = 0          # bit/int/varbit (its maximum), a serializable enum's underlying bit<W>
    size: int = 0           # stacks
    # struct/header/header_union: [(field name, TypeDesc)] (a header's struct-typed fields
    # flattened to ``s.f``); tuple and stacks: [("", item or element type)]
    fields: list = field(default_factory=list)
    members: list = field(default_factory=list)   # enum: names; serializable enum: (name, value)


def type_desc(ty: object) -> "TypeDesc | None":
    """The :class:`TypeDesc` of a resolved type (``None`` for a type P4Info cannot describe)."""
    from .types import Bits, BoolT, EnumT, ErrorT, HeaderT, StackT, StructT, TupleT, VarBit
    if isinstance(ty, Bits):
        if ty.newtype:
            return TypeDesc("new_type", ty.newtype)
        return TypeDesc("int" if ty.signed else "bit", width=ty.width)
    if isinstance(ty, VarBit):
        return TypeDesc("varbit", width=ty.max_width)
    if isinstance(ty, BoolT):
        return TypeDesc("bool")
    if isinstance(ty, ErrorT):
        return TypeDesc("error")
    if isinstance(ty, EnumT):
        if ty.repr is not None:
            return TypeDesc("serializable_enum", ty.name, width=ty.repr.width,
                            members=[(m, ty.values.get(m, 0)) for m in ty.members])
        return TypeDesc("enum", ty.name, members=list(ty.members))
    if isinstance(ty, HeaderT):
        flat: list = []

        def walk(prefix, fields):
            for n, _, ft in fields:
                if isinstance(ft, StructT):
                    walk(f"{prefix}{n}.", ft.fields)
                else:
                    flat.append((prefix + n, type_desc(ft)))
        walk("", ty.fields)
        return TypeDesc("header", ty.name, fields=flat)
    if isinstance(ty, StructT):
        return TypeDesc("header_union" if ty.union else "struct", ty.name,
                        fields=[(n, type_desc(ft)) for n, _, ft in ty.fields])
    if isinstance(ty, StackT):
        elem = type_desc(ty.elem)
        kind = "header_union_stack" if elem is not None and elem.kind == "header_union" else "header_stack"
        return TypeDesc(kind, size=ty.size, fields=[("", elem)])
    if isinstance(ty, TupleT):
        return TypeDesc("tuple", fields=[("", type_desc(t)) for t in ty.items])
    return None


@dataclass
class ValueSetField(Annotated):
    """A field of the struct a ``value_set<S>`` matches (one P4Info ``match`` each)."""
    name: str = ""
    width: int = 0


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
    type_desc: "TypeDesc | None" = None   # registers: the cell type as declared (``register<T>``)
    # value sets of a struct: its fields (None: a value set of bit<W>)
    fields: "list[ValueSetField] | None" = None


@dataclass
class HeaderFieldInfo:
    name: str
    width: int
    enum: str = ""          # the serializable enum it is declared with, if any
    annotations: dict = field(default_factory=dict)
    is_bool: bool = False
    signed: bool = False
    type_name: str = ""     # the ``type`` (new type) it is declared with, if any


@dataclass
class ControllerHeaderInfo(Annotated):
    name: str = ""          # the @controller_header("packet_in") value
    type_name: str = ""     # the P4 header type
    fields: list[HeaderFieldInfo] = field(default_factory=list)


@dataclass
class DigestInfo:
    name: str               # the struct type name used in digest<T>
    fields: list[HeaderFieldInfo] = field(default_factory=list)
    type_desc: "TypeDesc | None" = None   # the type T, nested types included


@dataclass
class SerializableEnumInfo:
    """A serializable enum (``enum bit<W> E { A = 1, ... }``), for P4Info ``type_info``."""
    name: str
    width: int
    members: list[tuple[str, int]] = field(default_factory=list)   # (name, value), in order


@dataclass
class NewTypeInfo:
    """A ``type`` declaration (``type bit<9> Port_t``), for P4Info ``type_info.new_types``."""
    name: str
    width: int
    signed: bool = False
    annotations: dict = field(default_factory=dict)
    # ``@p4runtime_translation("uri", W)`` (or ``string``): the controller sees W bits / a string
    translation_uri: str | None = None
    sdn_bitwidth: int | None = None       # None with a translation: ``sdn_string``


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
    action_call_sites: dict = field(default_factory=dict)   # such an action -> order of its first caller
    calls_extern_functions: bool = False
    new_types: dict = field(default_factory=dict)       # name -> NewTypeInfo
    error_members: list = field(default_factory=list)  # the ``error`` members in declaration order
    main_annotations: dict = field(default_factory=dict)   # annotations of ``main`` (@pkginfo ...)
    # parser/control instances declared by name in a parser or control (``Sub() s;``), and those
    # of them the program uses (applies, or passes to a constructor): p4c's front end removes an
    # unused instance ("unused instance"), with the tables, actions and externs inside it
    block_instances: list = field(default_factory=list)
    used_instances: set = field(default_factory=set)

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


def new_type_info(name: str, width: int, signed: bool, annotations: dict[str, str]) -> NewTypeInfo:
    """The :class:`NewTypeInfo` of ``type bit<W> name`` with its annotations (raw text bodies).

    ``@p4runtime_translation("uri", W)`` or ``@p4runtime_translation("uri", string)`` makes
    the controller see W bits or a string (P4Runtime spec, "Translation of port numbers";
    p4c ``typeSpecConverter.cpp``)."""
    info = NewTypeInfo(name, width, signed, dict(annotations))
    body = annotations.get("p4runtime_translation")
    if body is not None:
        uri, _, ctype = body.partition(",")
        info.translation_uri = uri.strip().strip('"')
        ctype = ctype.strip()
        # the controller type: a width (legacy form), bit<W> (the annotation text keeps the
        # tokens' spacing, "bit < 32 >") or string
        m = re.fullmatch(r"bit\s*<\s*(\w+)\s*>|(\w+)", ctype)
        w = (m.group(1) or m.group(2)) if m else None
        info.sdn_bitwidth = None if ctype == "string" or w is None else int(w, 0)
    return info


def header_field_info(name: str, ty: object, annotations: dict[str, str] | None = None) -> HeaderFieldInfo:
    """The P4Info view of a field of a controller header or a digest struct (its resolved type
    ``ty``): the width (a serializable enum's underlying ``bit<W>``, one bit for ``bool``),
    and what p4c's TypeSpecConverter names (bool, signedness, serializable enum, new type)."""
    from .types import Bits, BoolT, EnumT
    if isinstance(ty, Bits):
        return HeaderFieldInfo(name, ty.width, "", dict(annotations or {}), signed=ty.signed,
                               type_name=ty.newtype)
    if isinstance(ty, EnumT) and ty.repr is not None:
        return HeaderFieldInfo(name, ty.repr.width, ty.name, dict(annotations or {}))
    return HeaderFieldInfo(name, 1, "", dict(annotations or {}), is_bool=isinstance(ty, BoolT))


def controller_header_fields(fields: list, annotations: dict) -> list[HeaderFieldInfo]:
    """The fields of a ``@controller_header`` header as P4Info lists them: p4c flattens a
    struct-typed field ``s`` into ``s.f`` fields (control-plane/flattenHeader.cpp), each with
    the annotations along its path (the innermost win).  ``fields`` are the header's
    (name, pyname, type); ``annotations`` its fields' annotation texts by name."""
    from .types import StructT
    out: list[HeaderFieldInfo] = []

    def text(anns: dict) -> dict:
        return {k: " ".join(t.value for t in v) if isinstance(v, list) else v for k, v in anns.items()}

    def walk(prefix: str, flds: list, anns_of, inherited: dict) -> None:
        for n, _, t in flds:
            merged = dict(inherited)
            merged.update(anns_of(n))
            if isinstance(t, StructT) and not t.union:
                merged.update(text(t.annotations or {}))
                walk(f"{prefix}{n}.", t.fields, lambda m, t=t: text(t.field_annotations.get(m, {})), merged)
            else:
                out.append(header_field_info(prefix + n, t, merged))
    walk("", fields, lambda n: dict(annotations.get(n, {})), {})
    return out


def key_type_info(ty: object) -> dict:
    """What P4Info says about a table key's type beyond its width (``KeyInfoP`` fields)."""
    from .types import Bits, EnumT, ErrorT
    return {"enum": ty.name if isinstance(ty, EnumT) and ty.repr is not None else "",
            "type_name": ty.newtype if isinstance(ty, Bits) else "",
            "is_error": isinstance(ty, ErrorT)}
