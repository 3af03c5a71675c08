"""Symbols and scopes: what a name means where it is used, and fresh Python names."""
from __future__ import annotations

import keyword
from dataclasses import dataclass, field
from typing import Any, Optional

from .. import nodes as A
from ..errors import Loc, P4Error
from ..types import Ty, VoidT


CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort", "ParserTimeout",
               "ParserInvalidArgument"]


def pyfield(name: str) -> str:
    """Python attribute name for a P4 field."""
    if keyword.iskeyword(name) or name.startswith("_") or name in ("setValid", "setInvalid", "isValid"):
        return "f_" + name
    return name


@dataclass
class Var:
    py: str
    ty: Ty
    readonly: bool = False
    cell: bool = False          # a closure cell of an instance factory
    direction: str = ""


@dataclass
class Const:
    value: Any
    ty: Ty


@dataclass
class TypeSym:
    ty: Any                     # Ty, or a declaration (extern/parser/control/package) for generic ones
    func: Any = None            # an extern function of the same name (p4c allows both): what calls reach


@dataclass
class ActionSym:
    decl: A.ActionDecl
    py: str
    full: str                   # control-plane name
    owner: Any = None


@dataclass
class FuncSym:
    decl: A.FunctionDecl
    py: str
    ret: Ty = None
    params: list = field(default_factory=list)   # [(name, dir, Ty)]
    type_args: dict = field(default_factory=dict)    # a generic function's specialisation: name -> Ty
    specs: dict = field(default_factory=dict)        # a generic function: type arguments -> FuncSym


@dataclass
class ExternFuncSym:
    decls: list


@dataclass
class InstSym:
    py: str
    ty: Ty
    full: str
    decl: Any = None            # the Instantiation
    kind: str = ""              # extern | control | parser
    args: list = field(default_factory=list)


@dataclass
class TableSym:
    decl: A.TableDecl
    py: str
    full: str
    actions: list = field(default_factory=list)  # [(ActionSym, ActionRef)]
    applied: list = field(default_factory=list)     # [(loc, branch path)] of its apply calls


class Scope:
    def __init__(self, parent: Optional["Scope"] = None):
        self.parent = parent
        self.syms: dict[str, Any] = {}

    def lookup(self, name: str):
        s = self
        while s is not None:
            v = s.syms.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def root(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


@dataclass
class FnCtx:
    """What a ``return`` needs to know in the function being generated."""
    kind: str                   # action | function | control | parser-state
    ret: Ty = VoidT()
    outs: list = field(default_factory=list)     # py names of scalar out/inout params, returned in order
    pkt: Optional[str] = None   # parser: the packet_in python name


class SymbolsMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def fresh(self, base: str = "t") -> str:
        self._n += 1
        return f"_{base}{self._n}"

    def err(self, msg: str, node: Any) -> P4Error:
        loc = node.loc if isinstance(node, A.Node) else node if isinstance(node, Loc) else None
        if loc is None or loc.line == 0:
            loc = self.cur_loc     # never '<unknown>': the declaration being compiled
        return P4Error(msg, loc)

    def _check_redecl(self, name, d, scope):
        if name in scope.syms:
            raise self.err(f"{name} is already declared", d)

    def _pyname(self, name: str) -> str:
        return name if not keyword.iskeyword(name) else name + "_"

    def claim_cp_name(self, kind: str, full: str, d: Any) -> None:
        """Two different declarations of one kind (action, table) must not get the same
        control-plane name (p4c: "conflicting control plane name", reported at the one that
        comes later in the source)."""
        prev = self.cp_decls.setdefault((kind, full), d)
        if prev is d:
            return
        a, b = sorted((prev, d), key=lambda x: (x.loc.file, x.loc.line, x.loc.col))
        raise self.err(f"{d.name}: conflicting control plane name: {full} (also the name of the {kind} "
                       f"declared at {a.loc})", b)

    def cp_name(self, path: str, local: str, anns: dict) -> str:
        """The control-plane name of an object declared at ``path`` (p4c's rules for @name)."""
        if "name" in anns and anns["name"]:
            n = anns["name"][0].value.strip('"')
            if n.startswith("."):
                return n[1:]
            local = n
        return f"{path}.{local}" if path else local
