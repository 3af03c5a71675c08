"""Types: syntax -> :mod:`emulation.p4.types`, assignability, and giving integer literals a width."""
from __future__ import annotations

from .. import nodes as A
from ..types import (AnyT, ArrayT, Bits, BlockT, BoolT, EnumT, ErrorT, ExternT, HeaderT, InfInt, StackT, StringT,
                     StructT, TupleT, Ty, TypeVarT, VarBit, VoidT, same)
from .symbols import Scope, TypeSym


class TypeCheckMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def resolve_type(self, t: A.TypeRef, scope: Scope, allow_generic: bool = False) -> Ty:
        if isinstance(t, A.TBit):
            w = self.const_int(t.width, scope, "width")
            if w <= 0 or (t.signed and w < 1):
                raise self.err(f"invalid width {w}", t)
            return Bits(w, t.signed)
        if isinstance(t, A.TVarBit):
            w = self.const_int(t.width, scope, "width")
            if w <= 0:
                raise self.err(f"invalid varbit width {w}", t)
            return VarBit(w)
        if isinstance(t, A.TBool):
            return BoolT()
        if isinstance(t, A.TError):
            return ErrorT()
        if isinstance(t, A.TString):
            return StringT()
        if isinstance(t, A.TVoid):
            return VoidT()
        if isinstance(t, A.TInfInt):
            return InfInt()
        if isinstance(t, A.TDontCare):
            return AnyT()
        if isinstance(t, A.TName):
            s = scope.lookup(t.name)
            if not isinstance(s, TypeSym):
                raise self.err(f"undeclared type {t.name}", t)
            if isinstance(s.ty, Ty):
                return s.ty
            d = s.ty
            if isinstance(d, A.ExternDecl):
                return ExternT(d, [AnyT()] * len(d.type_params))
            return BlockT(d, type(d).__name__)
        if isinstance(t, A.TSpecialized):
            s = scope.lookup(t.base.name)
            if not isinstance(s, TypeSym):
                raise self.err(f"undeclared type {t.base.name}", t)
            args = [self.resolve_type(a, scope) for a in t.args]
            if isinstance(s.ty, A.ExternDecl):
                n = len(s.ty.type_params)

                def inner(a):
                    return isinstance(a, ExternT) and (a.decl is s.ty or any(inner(x) for x in a.args))
                if any(inner(a) for a in args):
                    raise self.err(f"{t.base.name}: contains self '{t.base.name}' as type argument", t)
                if len(args) > n:
                    raise self.err(f"{t.base.name} takes {n} type argument(s), got {len(args)}", t)
                return ExternT(s.ty, args + [AnyT()] * (n - len(args)))
            if isinstance(s.ty, Ty):
                return s.ty
            return BlockT(s.ty, type(s.ty).__name__, args)
        if isinstance(t, A.TStack):
            el = self.resolve_type(t.elem, scope)
            n = self.const_int(t.size, scope, "stack size")
            if n < 0:
                raise self.err(f"invalid array size {n}", t.size)
            if isinstance(el, HeaderT):
                return StackT(el, n)
            if isinstance(el, (VoidT, VarBit, InfInt, StringT, ExternT, BlockT, AnyT)):
                raise self.err(f"arrays of {el} are not allowed", t)
            # an array of values (P4_16 spec 1.2.5, 8.18 generalised as in p4c): bit<8>[16], a
            # struct or a header_union element, ...
            return ArrayT(el, n)
        if isinstance(t, A.TTuple):
            return TupleT([self.resolve_type(a, scope) for a in t.args])
        raise self.err("unsupported type", t)

    def check_assignable(self, to: Ty, frm: Ty, node) -> None:
        if isinstance(to, (AnyT, TypeVarT)) or isinstance(frm, (AnyT, TypeVarT)):
            return
        if isinstance(frm, InfInt) and isinstance(to, (Bits, InfInt)):
            return
        if isinstance(to, EnumT) and isinstance(frm, EnumT) and to is frm:
            return
        if isinstance(to, (HeaderT, StructT)) and isinstance(frm, TupleT):
            if not _names_a_value(node):
                return      # a list expression { ... } initialises a struct or header
            # a value of a tuple type is not a struct (p4c: "Cannot cast implicitly type
            # 'tuple<...>' to type 'struct ...'")
            raise self.err(f"type mismatch: cannot use a value of type {frm} where {to} is expected", node)
        if isinstance(frm, EnumT) and frm.repr is not None and isinstance(to, Bits) and same(to, frm.repr):
            return      # P4_16 spec 8.11.2: a serializable enum converts implicitly to its type
        if isinstance(to, StructT) and isinstance(frm, StructT) and frm.name == "":
            return
        if not same(to, frm):
            raise self.err(f"type mismatch: cannot use a value of type {frm} where {to} is expected", node)

    def check_init(self, to: Ty, frm: Ty, node) -> None:
        """check_assignable for a value assigned or used to initialise (an assignment, a
        variable or constant, a return value): an integer does not convert implicitly to a
        serializable enum there (p4c: "values of type 'int' cannot be implicitly cast")."""
        if isinstance(to, EnumT) and getattr(node, "int_to_enum", False):
            raise self.err(f"values of type int cannot be implicitly cast to type {to}", node)
        self.check_assignable(to, frm, node)

    def unify_int(self, code: str, ty: Ty, want: Ty, node) -> tuple[str, Ty]:
        """Give an infinite-precision integer the type ``want`` (wrapping it)."""
        if isinstance(ty, InfInt) and isinstance(want, Bits):
            try:
                v = int(code, 0)
                v &= want.mask
                if want.signed and v >> (want.width - 1):
                    v -= 1 << want.width
                return str(v), want
            except ValueError:
                return self.wrap(code, want), want
        if isinstance(ty, InfInt) and isinstance(want, EnumT) and want.repr is not None:
            return code, want
        return code, ty

    @staticmethod
    def wrap(code: str, t: Bits) -> str:
        if t.signed:
            h = 1 << (t.width - 1)
            return f"(((({code}) + {h:#x}) & {t.mask:#x}) - {h:#x})"
        return f"(({code}) & {t.mask:#x})"

    def bit_width(self, t: Ty, node) -> int:
        if isinstance(t, Bits):
            return t.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, EnumT) and t.repr is not None:
            return t.repr.width
        raise self.err(f"type {t} cannot be used here (it has no bit width)", node)


def _names_a_value(node) -> bool:
    """Whether ``node`` is an expression naming a stored value (a variable, a field, an
    element), as opposed to a list/struct expression written in place."""
    node = getattr(node, "value", node) if isinstance(node, A.Arg) else node
    return isinstance(node, (A.Path, A.Member, A.Index))
