"""Semantic types of P4_16 as the type checker and code generator see them."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


class Ty:
    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@dataclass(frozen=True)
class Bits(Ty):
    width: int
    signed: bool = False
    # the ``type`` declaration this is the type of (``type bit<9> Port_t``), for P4Info only:
    # it takes no part in equality, hashing or repr, so the type checker sees bit<W>
    newtype: str = field(default="", compare=False, repr=False)

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"

    @property
    def mask(self) -> int:
        return (1 << self.width) - 1


@dataclass(frozen=True)
class VarBit(Ty):
    """varbit<N>: a value is the pair (value, current width in bits)."""
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class InfInt(Ty):
    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolT(Ty):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringT(Ty):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidT(Ty):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorT(Ty):
    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindT(Ty):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class AnyT(Ty):
    """An unconstrained type (a type argument left to inference, ``_``)."""

    def __str__(self) -> str:
        return "_"


@dataclass(eq=False)
class EnumT(Ty):
    name: str
    members: list
    repr: Optional[Bits] = None          # serializable enums
    values: dict = field(default_factory=dict)   # member -> int

    def __str__(self) -> str:
        return self.name


def _wire_width(t: "Ty") -> int:
    """Bits a header field takes on the wire (a varbit: 0, its size is dynamic; a struct-typed
    field: the sum of its fields)."""
    if isinstance(t, Bits):
        return t.width
    if isinstance(t, EnumT) and t.repr:
        return t.repr.width
    if isinstance(t, VarBit):
        return 0
    if isinstance(t, StructT):
        return sum(_wire_width(ft) for _, _, ft in t.fields)
    return 1


@dataclass(eq=False)
class HeaderT(Ty):
    name: str
    fields: list            # list[(p4name, pyname, Ty)]
    annotations: dict = field(default_factory=dict)
    cls: str = ""           # generated class name

    def __str__(self) -> str:
        return self.name

    @property
    def width(self) -> int:
        return sum(_wire_width(t) for _, _, t in self.fields)

    @property
    def varbit(self):
        for f in self.fields:
            if isinstance(f[2], VarBit):
                return f
        return None

    def field(self, name: str):
        for f in self.fields:
            if f[0] == name:
                return f
        return None


@dataclass(eq=False)
class StructT(Ty):
    name: str
    fields: list
    annotations: dict = field(default_factory=dict)
    cls: str = ""
    field_annotations: dict = field(default_factory=dict)   # p4name -> annotations
    union: bool = False     # header_union: at most one member header is valid

    def __str__(self) -> str:
        return self.name

    def field(self, name: str):
        for f in self.fields:
            if f[0] == name:
                return f
        return None


@dataclass(eq=False)
class StackT(Ty):
    elem: HeaderT
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class ArrayT(Ty):
    """``T[n]`` whose element is not a header: an array of values (bit<W>, structs, header
    unions, ...) indexed like a header stack but without nextIndex, push/pop or extraction."""
    elem: Ty
    size: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.size}]"


@dataclass(eq=False)
class TupleT(Ty):
    items: list

    def __str__(self) -> str:
        return "tuple<" + ", ".join(map(str, self.items)) + ">"


@dataclass(eq=False)
class ExternT(Ty):
    decl: Any
    args: list = field(default_factory=list)

    def __str__(self) -> str:
        return self.decl.name


@dataclass(eq=False)
class BlockT(Ty):
    """A parser or control type (declaration), or a package."""
    decl: Any
    kind: str = ""
    args: list = field(default_factory=list)     # type arguments of a generic parser/control

    def __str__(self) -> str:
        return self.decl.name


@dataclass(eq=False)
class ValueSetT(Ty):
    """A parser value set of ``elem`` values (a keyset in select)."""
    elem: Ty
    size: int = 0

    def __str__(self) -> str:
        return f"value_set<{self.elem}>"


@dataclass(eq=False)
class TableT(Ty):
    table: Any

    def __str__(self) -> str:
        return "table"


@dataclass(eq=False)
class ApplyResultT(Ty):
    table: Any


@dataclass(eq=False)
class ActionT(Ty):
    decl: Any


@dataclass(eq=False)
class TypeVarT(Ty):
    name: str

    def __str__(self) -> str:
        return self.name


def is_scalar(t: Ty) -> bool:
    return isinstance(t, (Bits, VarBit, InfInt, BoolT, ErrorT, EnumT, StringT, MatchKindT, AnyT, TypeVarT))


def is_composite(t: Ty) -> bool:
    return isinstance(t, (HeaderT, StructT, StackT, ArrayT))


def same(a: Ty, b: Ty) -> bool:
    if isinstance(a, (AnyT, TypeVarT)) or isinstance(b, (AnyT, TypeVarT)):
        return True
    return a == b if not isinstance(a, (EnumT, HeaderT, StructT, StackT, ArrayT, TupleT, ExternT)) else (
        a is b or (isinstance(a, StackT) and isinstance(b, StackT) and a.elem is b.elem and a.size == b.size)
        or (isinstance(a, ArrayT) and isinstance(b, ArrayT) and a.size == b.size and same(a.elem, b.elem))
        or (isinstance(a, TupleT) and isinstance(b, TupleT) and len(a.items) == len(b.items)
            and all(same(x, y) for x, y in zip(a.items, b.items))))
