"""The P4_16 abstract syntax tree: plain dataclasses, one per construct.

Every node has ``loc`` (a :class:`~emulation.p4.errors.Loc`).  :mod:`.builder` makes them
from lark's parse tree; the compiler (:mod:`emulation.p4.compiler`) types and lowers them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from .errors import Loc


@dataclass
class Node:
    loc: Loc = field(default=None, repr=False, compare=False)  # type: ignore[assignment]


Annotations = dict  # name -> list of tokens (body)


# ------------------------------------------------------------------ types (syntax)
@dataclass
class TypeRef(Node):
    pass


@dataclass
class TBit(TypeRef):
    width: Any = 1          # int or Expr (constant)
    signed: bool = False


@dataclass
class TVarBit(TypeRef):
    width: Any = 0


@dataclass
class TInfInt(TypeRef):
    pass


@dataclass
class TBool(TypeRef):
    pass


@dataclass
class TError(TypeRef):
    pass


@dataclass
class TString(TypeRef):
    pass


@dataclass
class TVoid(TypeRef):
    pass


@dataclass
class TDontCare(TypeRef):
    pass


@dataclass
class TName(TypeRef):
    name: str = ""


@dataclass
class TSpecialized(TypeRef):
    base: TName = None
    args: list = field(default_factory=list)


@dataclass
class TStack(TypeRef):
    elem: TypeRef = None
    size: Any = None


@dataclass
class TTuple(TypeRef):
    args: list = field(default_factory=list)


# ------------------------------------------------------------------ expressions
@dataclass
class Expr(Node):
    type: Any = field(default=None, repr=False, compare=False)


@dataclass
class IntLit(Expr):
    value: int = 0
    width: Optional[int] = None
    signed: bool = False


@dataclass
class BoolLit(Expr):
    value: bool = False


@dataclass
class StrLit(Expr):
    value: str = ""


@dataclass
class Path(Expr):
    name: str = ""
    top: bool = False       # ".name"


@dataclass
class Member(Expr):
    obj: Expr = None
    name: str = ""


@dataclass
class TypeMember(Expr):
    tname: str = ""         # a type name (enum, error, ...) or "error"
    name: str = ""


@dataclass
class Index(Expr):
    obj: Expr = None
    index: Expr = None


@dataclass
class Slice(Expr):
    obj: Expr = None
    hi: Expr = None
    lo: Expr = None


@dataclass
class Call(Expr):
    func: Expr = None
    args: list = field(default_factory=list)       # list[Arg]
    type_args: list = field(default_factory=list)


@dataclass
class Arg(Node):
    value: Any = None       # Expr or None for "_"
    name: Optional[str] = None


@dataclass
class CtorCall(Expr):
    tname: str = ""
    args: list = field(default_factory=list)
    type_args: list = field(default_factory=list)


@dataclass
class Unary(Expr):
    op: str = ""            # ! ~ - +
    e: Expr = None


@dataclass
class Binary(Expr):
    op: str = ""
    l: Expr = None
    r: Expr = None


@dataclass
class Cond(Expr):
    c: Expr = None
    t: Expr = None
    f: Expr = None


@dataclass
class Cast(Expr):
    to: TypeRef = None
    e: Expr = None


@dataclass
class ListExpr(Expr):
    items: list = field(default_factory=list)


@dataclass
class StructExpr(Expr):
    items: list = field(default_factory=list)       # list[(name, Expr)]
    rest: bool = False                              # ends in "...": other fields get defaults


@dataclass
class InvalidExpr(Expr):
    pass


# keysets (select cases, table entries)
@dataclass
class KsMask(Expr):
    value: Expr = None
    mask: Expr = None


@dataclass
class KsRange(Expr):
    lo: Expr = None
    hi: Expr = None


@dataclass
class KsDefault(Expr):
    pass


@dataclass
class KsTuple(Expr):
    items: list = field(default_factory=list)


# ------------------------------------------------------------------ statements
@dataclass
class Stmt(Node):
    pass


@dataclass
class Assign(Stmt):
    lhs: Expr = None
    rhs: Expr = None
    compound: str = ""      # "+" for "a += b" (rhs is then the Binary a + b)


@dataclass
class CallStmt(Stmt):
    call: Expr = None


@dataclass
class If(Stmt):
    cond: Expr = None
    then: Stmt = None
    orelse: Optional[Stmt] = None


@dataclass
class Block(Stmt):
    stmts: list = field(default_factory=list)


@dataclass
class Exit(Stmt):
    pass


@dataclass
class Return(Stmt):
    value: Optional[Expr] = None


@dataclass
class Empty(Stmt):
    pass


@dataclass
class For(Stmt):
    inits: list = field(default_factory=list)
    cond: Optional[Expr] = None
    updates: list = field(default_factory=list)
    body: Stmt = None


@dataclass
class ForRange(Stmt):
    type: Any = None
    name: str = ""
    lo: Expr = None
    hi: Expr = None
    body: Stmt = None


@dataclass
class Break(Stmt):
    pass


@dataclass
class Continue(Stmt):
    pass


@dataclass
class SwitchCase(Node):
    label: Any = None       # Expr or "default"
    body: Optional[Block] = None


@dataclass
class Switch(Stmt):
    expr: Expr = None
    cases: list = field(default_factory=list)


# ------------------------------------------------------------------ declarations
@dataclass
class Decl(Node):
    name: str = ""
    annotations: dict = field(default_factory=dict)


@dataclass
class Param(Decl):
    direction: str = ""     # "", in, out, inout
    type: TypeRef = None
    default: Optional[Expr] = None
    name_loc: Any = None    # where its name is written


@dataclass
class ConstDecl(Decl, Stmt):
    type: TypeRef = None
    value: Expr = None


@dataclass
class VarDecl(Decl, Stmt):
    type: TypeRef = None
    init: Optional[Expr] = None


@dataclass
class Instantiation(Decl):
    type: TypeRef = None
    args: list = field(default_factory=list)


@dataclass
class Field(Decl):
    type: TypeRef = None


@dataclass
class HeaderDecl(Decl):
    fields: list = field(default_factory=list)


@dataclass
class StructDecl(Decl):
    fields: list = field(default_factory=list)
    union: bool = False         # header_union


@dataclass
class EnumDecl(Decl):
    members: list = field(default_factory=list)     # list[str]


@dataclass
class SerEnumDecl(Decl):
    type: TypeRef = None
    members: list = field(default_factory=list)     # list[(str, Expr)]


@dataclass
class TypedefDecl(Decl):
    type: TypeRef = None
    newtype: bool = False


@dataclass
class ErrorDecl(Decl):
    members: list = field(default_factory=list)


@dataclass
class MatchKindDecl(Decl):
    members: list = field(default_factory=list)


@dataclass
class FunctionDecl(Decl):
    ret: TypeRef = None
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)
    body: Block = None


@dataclass
class Method(Decl):
    ret: TypeRef = None
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)
    is_ctor: bool = False
    abstract: bool = False


@dataclass
class ExternDecl(Decl):
    type_params: list = field(default_factory=list)
    methods: list = field(default_factory=list)


@dataclass
class ExternFunction(Decl):
    ret: TypeRef = None
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)


@dataclass
class PackageDecl(Decl):
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)


@dataclass
class BlockTypeDecl(Decl):          # parser/control type declarations (no body)
    kind: str = ""
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)


@dataclass
class SelectCase(Node):
    keyset: Expr = None
    state: str = ""


@dataclass
class Transition(Node):
    state: Optional[str] = None         # direct
    select: list = field(default_factory=list)      # list[Expr] (select expressions)
    cases: list = field(default_factory=list)       # list[SelectCase]
    implicit: bool = False      # no transition statement in the source: goes to reject


@dataclass
class ParserState(Decl):
    stmts: list = field(default_factory=list)
    transition: Transition = None
    name_loc: Any = None        # where its name is written


@dataclass
class ValueSetDecl(Decl):
    type: TypeRef = None
    size: Expr = None


@dataclass
class ParserDecl(Decl):
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)
    ctor_params: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    states: list = field(default_factory=list)


@dataclass
class ActionDecl(Decl):
    params: list = field(default_factory=list)
    body: Block = None


@dataclass
class KeyElem(Node):
    expr: Expr = None
    match_kind: str = ""
    annotations: dict = field(default_factory=dict)


@dataclass
class ActionRef(Node):
    name: str = ""
    args: Optional[list] = None
    annotations: dict = field(default_factory=dict)


@dataclass
class Entry(Node):
    keyset: Expr = None
    action: ActionRef = None
    priority: Optional[Expr] = None
    annotations: dict = field(default_factory=dict)


@dataclass
class TableDecl(Decl):
    keys: list = field(default_factory=list)
    actions: list = field(default_factory=list)
    entries: Optional[list] = None
    const_entries: bool = False
    props: dict = field(default_factory=dict)       # name -> (Expr, is_const, loc)
    key_loc: Any = None                             # where the ``key`` property is written
    key_after_entries: bool = False                 # ``entries`` written before ``key``
    prop_annotations: dict = field(default_factory=dict)   # property name -> its annotations
    name_loc: Any = None                            # where its name is written


@dataclass
class ControlDecl(Decl):
    type_params: list = field(default_factory=list)
    params: list = field(default_factory=list)
    ctor_params: list = field(default_factory=list)
    locals: list = field(default_factory=list)
    body: Block = None


@dataclass
class Program(Node):
    decls: list = field(default_factory=list)


def has_call(x: Any) -> bool:
    """Whether a syntax tree (a node, or a list of them) contains a call anywhere."""
    if isinstance(x, Call):
        return True
    if isinstance(x, Node):
        return any(has_call(v) for v in vars(x).values())
    if isinstance(x, (list, tuple)):
        return any(has_call(v) for v in x)
    return False
