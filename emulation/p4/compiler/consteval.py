"""Constant evaluation: the compile-time value of an expression (widths, sizes, constants, enum values)."""
from __future__ import annotations

from typing import Any

from .. import nodes as A
from ..errors import P4Error
from ..types import Bits, BoolT
from .symbols import Const, Scope


class ConstEvalMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def const_int(self, e: Any, scope: Scope, what: str = "value") -> int:
        if isinstance(e, int):
            return e
        v = self.const_eval(e, scope)
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.err(f"expected a compile-time constant {what}", e)
        return v

    def const_eval(self, e: A.Expr, scope: Scope):
        """The value of a compile-time constant expression, or None."""
        if isinstance(e, A.IntLit):
            if e.width is not None:
                m = (1 << e.width) - 1
                v = e.value & m
                if e.signed and v >> (e.width - 1):
                    v -= 1 << e.width
                return v
            return e.value
        if isinstance(e, A.BoolLit):
            return e.value
        if isinstance(e, A.Path):
            s = (scope.root() if e.top else scope).lookup(e.name)
            if isinstance(s, Const):
                return s.value
            return None
        if isinstance(e, A.TypeMember):
            try:
                code, ty = self.expr(e, scope, None)
            except P4Error:
                return None
            try:
                return int(code)
            except ValueError:
                return None
        if isinstance(e, A.Unary):
            v = self.const_eval(e.e, scope)
            if v is None:
                return None
            if e.op == "-" and isinstance(v, int):
                return -v
            if e.op == "+":
                return v
            if e.op == "!" and isinstance(v, bool):
                return not v
            return None
        if isinstance(e, A.Binary):
            a, b = self.const_eval(e.l, scope), self.const_eval(e.r, scope)
            if a is None or b is None or isinstance(a, bool) or isinstance(b, bool):
                return None
            try:
                r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
                     "%": lambda: a % b, "<<": lambda: a << b, ">>": lambda: a >> b, "&": lambda: a & b,
                     "|": lambda: a | b, "^": lambda: a ^ b}[e.op]()
            except (KeyError, ZeroDivisionError):
                return None
            # typed operands wrap: let the full typing decide when widths are involved
            lt, rt = self._lit_type(e.l, scope), self._lit_type(e.r, scope)
            t = lt if isinstance(lt, Bits) else rt if isinstance(rt, Bits) else None
            if t is not None:
                r &= t.mask
                if t.signed and r >> (t.width - 1):
                    r -= 1 << t.width
            return r
        if isinstance(e, A.Cast):
            v = self.const_eval(e.e, scope)
            if v is None:
                return None
            t = self.resolve_type(e.to, scope)
            if isinstance(t, Bits):
                v = int(v) & t.mask
                if t.signed and v >> (t.width - 1):
                    v -= 1 << t.width
                return v
            if isinstance(t, BoolT):
                return bool(v)
            return None
        return None

    def _lit_type(self, e, scope):
        if isinstance(e, A.IntLit) and e.width is not None:
            return Bits(e.width, e.signed)
        if isinstance(e, A.Path):
            s = scope.lookup(e.name)
            if isinstance(s, Const):
                return s.ty
        return None
