"""Expressions: type each one and lower it to a Python expression string (``x_<Node>`` per
construct), plus l-values (a reader and a writer for assignment targets).
"""
from __future__ import annotations

from typing import Callable, Optional

from .. import nodes as A
from ..types import (ActionT, AnyT, ArrayT, ApplyResultT, Bits, BoolT, EnumT, ErrorT, HeaderT, InfInt, StackT,
                     StringT, StructT, TableT, TupleT, Ty, is_composite, same)
from .symbols import ActionSym, Const, InstSym, Scope, TableSym, TypeSym, Var


class ExpressionsMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def expr(self, e: A.Expr, scope: Scope, want: Optional[Ty] = None) -> tuple[str, Ty]:
        code, ty = self._expr(e, scope, want)
        if want is not None and isinstance(ty, InfInt):
            if isinstance(want, EnumT):
                e.int_to_enum = True    # refused where the value is assigned (check_init)
            code, ty = self.unify_int(code, ty, want, e)
        e.type = ty
        if isinstance(ty, StructT) and ty.union:
            self._last_obj_code[id(e)] = code
        return code, ty

    def _expr(self, e: A.Expr, scope: Scope, want: Optional[Ty]) -> tuple[str, Ty]:
        m = getattr(self, "x_" + type(e).__name__, None)
        if m is None:
            raise self.err(f"unsupported expression ({type(e).__name__})", e)
        return m(e, scope, want)

    def x_IntLit(self, e: A.IntLit, scope, want):
        if e.width is None:
            return str(e.value), InfInt()
        t = Bits(e.width, e.signed)
        v = e.value
        if v > t.mask or (e.signed and v > (1 << (e.width - 1)) and v != e.value):
            pass
        v &= t.mask
        if t.signed and v >> (t.width - 1):
            v -= 1 << t.width
        return str(v), t

    def x_BoolLit(self, e, scope, want):
        return ("True" if e.value else "False"), BoolT()

    def x_StrLit(self, e, scope, want):
        return repr(e.value), StringT()

    def x_Path(self, e: A.Path, scope: Scope, want):
        s = (scope.root() if e.top else scope).lookup(e.name)
        if s is None:
            raise self.err(f"{e.name}: undeclared identifier", e)
        if isinstance(s, Var):
            return s.py, s.ty
        if isinstance(s, Const):
            v = s.value
            if isinstance(v, bool):
                return ("True" if v else "False"), s.ty
            return str(v), s.ty
        if isinstance(s, InstSym):
            return s.py, s.ty
        if isinstance(s, TableSym):
            return s.py, TableT(s)
        if isinstance(s, ActionSym):
            return s.py, ActionT(s)
        if isinstance(s, TypeSym):
            raise self.err(f"{e.name} is a type, not a value", e)
        return e.name, AnyT()

    def shadowed_type_member(self, e: A.TypeMember, scope: Scope):
        """``p.f`` where the lexer saw a type name ``p`` that the scope binds to a value (a
        parameter or local named like a type, ``parser p(packet_in p, ...)``): the innermost
        declaration wins (P4_16 spec 6.3), so it is the member ``f`` of that value."""
        if e.tname == "error":
            return None
        s = scope.lookup(e.tname)
        if s is None or isinstance(s, TypeSym):
            return None
        return A.Member(loc=e.loc, obj=A.Path(loc=e.loc, name=e.tname), name=e.name)

    def x_TypeMember(self, e: A.TypeMember, scope: Scope, want):
        m = self.shadowed_type_member(e, scope)
        if m is not None:
            return self.x_Member(m, scope, want)
        if e.tname == "error":
            if e.name not in self.errors_list:
                raise self.err(f"error.{e.name}: no such error", e)
            return str(self.errors_list.index(e.name)), ErrorT()
        s = scope.lookup(e.tname)
        if isinstance(s, TypeSym) and isinstance(s.ty, EnumT):
            t = s.ty
            if e.name not in t.values:
                raise self.err(f"{e.tname}.{e.name}: no such member", e)
            return str(t.values[e.name]), t
        if isinstance(s, TypeSym) and isinstance(s.ty, ErrorT):
            return self.x_TypeMember(A.TypeMember(loc=e.loc, tname="error", name=e.name), scope, want)
        raise self.err(f"{e.tname}.{e.name}: {e.tname} is not an enum", e)

    def x_Member(self, e: A.Member, scope: Scope, want):
        # table.apply().hit / .miss / .action_run
        if isinstance(e.obj, A.Call):
            oc, ot = self.expr(e.obj, scope)
            if isinstance(ot, ApplyResultT):
                if e.name == "hit":
                    return f"{oc}[2]", BoolT()
                if e.name == "miss":
                    return f"(not {oc}[2])", BoolT()
                if e.name == "action_run":
                    return f"{oc}[3]", ot
                raise self.err(f"a table apply result has no member {e.name}", e)
        oc, ot = self.expr(e.obj, scope)
        if isinstance(ot, (HeaderT, StructT)):
            f = ot.field(e.name)
            if f is None:
                raise self.err(f"{ot} has no field {e.name}", e)
            return f"{oc}.{f[1]}", f[2]
        if isinstance(ot, StackT):
            if e.name == "next":
                return f"{oc}.next_()", ot.elem
            if e.name == "last":
                return f"{oc}.last()", ot.elem
            if e.name == "size":
                return str(ot.size), Bits(32)
            if e.name == "lastIndex":
                return f"(({oc}.nxt - 1) & 0xffffffff)", Bits(32)
            raise self.err(f"a header stack has no member {e.name}", e)
        if isinstance(ot, ArrayT):
            if e.name == "size":
                return str(ot.size), Bits(32)
            raise self.err(f"an array of {ot.elem} has no member {e.name} (next, last and lastIndex "
                           f"are for header stacks)", e)
        raise self.err(f"{ot} has no member {e.name}", e)

    def x_Index(self, e: A.Index, scope, want):
        oc, ot = self.expr(e.obj, scope)
        if not isinstance(ot, (StackT, TupleT, ArrayT)):
            raise self.err(f"cannot index a value of type {ot}", e)
        ic, it = self.expr(e.index, scope)
        if isinstance(ot, TupleT):
            i = self.const_int(e.index, scope, "tuple index")
            if not 0 <= i < len(ot.items):
                raise self.err(f"index {i} out of bounds for a tuple of {len(ot.items)} item(s)", e.index)
            return f"{oc}[{i}]", ot.items[i]
        if not isinstance(it, (Bits, InfInt)):
            raise self.err(f"a stack index must be an integer, not {it}", e.index)
        try:
            i = int(ic)
            if not 0 <= i < ot.size:
                raise self.err(f"index {i} out of bounds for a stack of size {ot.size}", e.index)
            return f"{oc}.elems[{i}]", ot.elem
        except ValueError:
            return f"{oc}.at({ic})", ot.elem

    def x_Slice(self, e: A.Slice, scope, want):
        oc, ot = self.expr(e.obj, scope)
        if not isinstance(ot, Bits):
            raise self.err(f"cannot slice a value of type {ot}", e)
        hi = self.const_int(e.hi, scope, "slice bound")
        lo = self.const_int(e.lo, scope, "slice bound")
        if not (0 <= lo <= hi < ot.width):
            raise self.err(f"slice [{hi}:{lo}] out of range for {ot}", e)
        w = hi - lo + 1
        src = f"({oc} & {ot.mask:#x})" if ot.signed else oc
        code = f"(({src} >> {lo}) & {(1 << w) - 1:#x})" if lo else f"({src} & {(1 << w) - 1:#x})"
        return code, Bits(w)

    def x_Cast(self, e: A.Cast, scope, want):
        to = self.resolve_type(e.to, scope)
        c, t = self.expr(e.e, scope, to if isinstance(to, Bits) else None)
        if isinstance(to, Bits):
            if isinstance(t, InfInt) or (isinstance(t, Bits) and t == to):
                return self.unify_int(c, t, to, e)[0] if isinstance(t, InfInt) else c, to
            if isinstance(t, Bits):
                if t.signed and not to.signed:
                    return f"({c} & {to.mask:#x})", to
                if not t.signed and to.signed:
                    # zero-extend/truncate to the new width, then reinterpret
                    h = 1 << (to.width - 1)
                    inner = f"({c} & {to.mask:#x})" if t.width > to.width else c
                    return f"(({inner} ^ {h:#x}) - {h:#x})", to
                if t.signed and to.signed:
                    return (c if to.width >= t.width else self.wrap(c, to)), to
                return (c if to.width >= t.width else f"({c} & {to.mask:#x})"), to
            if isinstance(t, BoolT):
                if to.width != 1 or to.signed:
                    raise self.err(f"cannot cast bool to {to}", e)
                return f"int({c})", to
            if isinstance(t, EnumT) and t.repr is not None:
                return (c if to == t.repr else self.wrap(c, to)), to
            raise self.err(f"cannot cast {t} to {to}", e)
        if isinstance(to, BoolT):
            if isinstance(t, Bits) and t.width == 1 and not t.signed:
                return f"({c} != 0)", to
            if isinstance(t, BoolT):
                return c, to
            if isinstance(t, InfInt):
                return f"({c} != 0)", to
            raise self.err(f"cannot cast {t} to bool", e)
        if isinstance(to, EnumT) and to.repr is not None and isinstance(t, (Bits, InfInt)):
            return c, to
        if isinstance(to, InfInt):
            return c, to
        if same(to, t):
            return c, to
        raise self.err(f"cannot cast {t} to {to}", e)

    def x_Unary(self, e: A.Unary, scope, want):
        c, t = self.expr(e.e, scope, want if e.op != "!" else None)
        if e.op == "!":
            if not isinstance(t, BoolT):
                raise self.err(f"operator ! needs a bool, not {t}", e)
            return f"(not {c})", BoolT()
        if isinstance(t, InfInt):
            try:
                v = int(c)
                return str({"-": -v, "+": v, "~": ~v}[e.op]), t
            except ValueError:
                return f"({e.op}{c})", t
        if not isinstance(t, Bits):
            raise self.err(f"operator {e.op} needs a bit<W> or int<W> operand, not {t}", e)
        if e.op == "+":
            return c, t
        if e.op == "-":
            return self.wrap(f"-{c}", t), t
        if e.op == "~":
            return (f"(~{c})" if t.signed else f"({c} ^ {t.mask:#x})"), t
        raise self.err(f"unknown operator {e.op}", e)

    def _operands(self, e: A.Binary, scope, want, same_type=True, arith=False):
        lc, lt = self.expr(e.l, scope, None)
        rc, rt = self.expr(e.r, scope, None)
        if arith or not (isinstance(lt, EnumT) and isinstance(rt, EnumT)):
            # P4_16 spec 8.11.2: a serializable enum converts implicitly to its underlying type
            # in arithmetic and comparisons (E.a + 1 is a bit<W>, which is not an E)
            if isinstance(lt, EnumT) and lt.repr is not None:
                lt = lt.repr
            if isinstance(rt, EnumT) and rt.repr is not None:
                rt = rt.repr
        if isinstance(lt, InfInt) and not isinstance(rt, InfInt):
            lc, lt = self.unify_int(lc, lt, rt, e.l)
        elif isinstance(rt, InfInt) and not isinstance(lt, InfInt):
            rc, rt = self.unify_int(rc, rt, lt, e.r)
        elif isinstance(lt, InfInt) and isinstance(rt, InfInt) and isinstance(want, Bits):
            lc, lt = self.unify_int(lc, lt, want, e.l)
            rc, rt = self.unify_int(rc, rt, want, e.r)
        if same_type and not same(lt, rt) and not (isinstance(lt, InfInt) or isinstance(rt, InfInt)):
            raise self.err(f"type mismatch: operator {e.op} on {lt} and {rt}", e)
        return lc, lt, rc, rt

    def x_Binary(self, e: A.Binary, scope, want):
        op = e.op
        if op in ("&&", "||"):
            lc, lt = self.expr(e.l, scope)
            rc, rt = self.expr(e.r, scope)
            if not isinstance(lt, BoolT) or not isinstance(rt, BoolT):
                raise self.err(f"operator {op} needs bool operands, not {lt} and {rt}", e)
            return f"({lc} {'and' if op == '&&' else 'or'} {rc})", BoolT()
        if op == "++":
            lc, lt = self.expr(e.l, scope)
            rc, rt = self.expr(e.r, scope)
            if not isinstance(lt, Bits) or not isinstance(rt, Bits):
                raise self.err(f"operator ++ needs bit<W>/int<W> operands, not {lt} and {rt}", e)
            t = Bits(lt.width + rt.width, lt.signed)
            lu = f"({lc} & {lt.mask:#x})" if lt.signed else lc
            ru = f"({rc} & {rt.mask:#x})" if rt.signed else rc
            code = f"(({lu} << {rt.width}) | {ru})"
            if t.signed:
                h = 1 << (t.width - 1)
                code = f"(({code} ^ {h:#x}) - {h:#x})"
            return code, t
        if op in ("<<", ">>"):
            lc, lt = self.expr(e.l, scope, want)
            rc, rt = self.expr(e.r, scope)
            if isinstance(rt, Bits) and rt.signed:
                raise self.err("the shift amount must be unsigned", e.r)
            if not isinstance(rt, (Bits, InfInt)):
                raise self.err(f"the shift amount must be an unsigned integer, not {rt}", e.r)
            if isinstance(rt, InfInt) and rc.lstrip("-").isdigit() and int(rc) < 0:
                raise self.err(f"the shift amount must not be negative ({rc})", e.r)
            if isinstance(lt, InfInt):
                try:
                    v = int(lc) << int(rc) if op == "<<" else int(lc) >> int(rc)
                    return str(v), lt
                except ValueError:
                    if isinstance(rt, Bits):
                        raise self.err("shifting an infinite-precision integer by a non-constant needs a typed "
                                       "left operand", e)
                    return f"({lc} {op} {rc})", lt
            if not isinstance(lt, Bits):
                raise self.err(f"operator {op} needs a bit<W>/int<W> left operand, not {lt}", e)
            try:
                n = int(rc)
                if op == "<<":
                    return ("0" if n >= lt.width else self.wrap(f"{lc} << {n}", lt)), lt
                return (f"({lc} >> {n})" if n < lt.width or lt.signed else "0"), lt
            except ValueError:
                if op == "<<":
                    return f"(({lc} << {rc}) & {lt.mask:#x} if {rc} < {lt.width} else 0)" if not lt.signed else \
                        f"({self.wrap(f'{lc} << {rc}', lt)} if {rc} < {lt.width} else 0)", lt
                return f"({lc} >> {rc})", lt
        if op in ("==", "!="):
            lc, lt, rc, rt = self._operands(e, scope, None)
            if isinstance(lt, (HeaderT, StructT, StackT, ArrayT)):
                code = f"{lc}._eq({rc})"
                return (code if op == "==" else f"(not {code})"), BoolT()
            return f"({lc} {op} {rc})", BoolT()
        if op in ("<", ">", "<=", ">="):
            lc, lt, rc, rt = self._operands(e, scope, None, arith=True)
            if not isinstance(lt, (Bits, InfInt)):
                raise self.err(f"operator {op} needs integer operands, not {lt}", e)
            return f"({lc} {op} {rc})", BoolT()
        # arithmetic and bitwise
        if op in ("/", "%"):
            # P4_16 spec 8.7/8.8: / and % on untyped integers are defined on positive values
            # only (p4c: "not defined on negative numbers")
            for side in (e.l, e.r):
                v = self.const_eval(side, scope)
                if isinstance(v, int) and not isinstance(v, bool) and v < 0 and \
                        not isinstance(self._lit_type(side, scope), Bits):
                    raise self.err(f"{op}: not defined on negative numbers", e)
        lc, lt, rc, rt = self._operands(e, scope, want, arith=True)
        t = lt if isinstance(lt, Bits) else rt
        if isinstance(lt, InfInt) and isinstance(rt, InfInt):
            try:
                a, b = int(lc), int(rc)
                v = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "/": lambda: a // b,
                     "%": lambda: a % b, "&": lambda: a & b, "|": lambda: a | b, "^": lambda: a ^ b}[op]()
                return str(v), lt
            except (ValueError, KeyError):
                return f"({lc} {op if op != '/' else '//'} {rc})", lt
            except ZeroDivisionError:
                raise self.err("division by zero", e) from None
        if not isinstance(t, Bits):
            raise self.err(f"operator {op} needs bit<W>/int<W> operands, not {lt} and {rt}", e)
        if op == "+":
            return self.wrap(f"{lc} + {rc}", t), t
        if op == "-":
            return self.wrap(f"{lc} - {rc}", t), t
        if op == "*":
            return self.wrap(f"{lc} * {rc}", t), t
        if op in ("/", "%"):
            if t.signed:
                raise self.err(f"operator {op} is only defined on unsigned values", e)
            # p4c (midend CompileTimeOperations, after constant folding and strength reduction):
            # a division or modulo left in the program is an error; only constants and a
            # divisor that is a power of two (a shift or a mask) remain computable
            try:
                d = int(rc)
            except ValueError:
                d = getattr(e.r, "const_value", None)     # a call of a function returning a constant
            consts = d is not None and (lc.lstrip("-").isdigit() or getattr(e.l, "const_value", None) is not None)
            if not consts and (d is None or d <= 0 or d & (d - 1)):
                raise self.err(f"{op}: could not evaluate expression at compilation time (p4c computes a "
                               f"division or modulo only on constants or by a power of two)", e)
            return f"_rt.{'div' if op == '/' else 'mod'}({lc}, {rc})", t
        if op in ("&", "|", "^"):
            return f"({lc} {op} {rc})", t
        if op == "|+|":
            if t.signed:
                lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
                return f"min(max({lc} + {rc}, {lo}), {hi})", t
            return f"min({lc} + {rc}, {t.mask:#x})", t
        if op == "|-|":
            if t.signed:
                lo, hi = -(1 << (t.width - 1)), (1 << (t.width - 1)) - 1
                return f"min(max({lc} - {rc}, {lo}), {hi})", t
            return f"max({lc} - {rc}, 0)", t
        raise self.err(f"unknown operator {op}", e)

    def x_Cond(self, e: A.Cond, scope, want):
        cc, ct = self.expr(e.c, scope)
        if not isinstance(ct, BoolT):
            raise self.err(f"the condition of ?: must be bool, not {ct}", e.c)
        tc, tt = self.expr(e.t, scope, None)
        fc, ft = self.expr(e.f, scope, tt if isinstance(tt, Bits) else None)
        if isinstance(tt, InfInt) and isinstance(ft, Bits):
            tc, tt = self.unify_int(tc, tt, ft, e.t)
        elif isinstance(tt, InfInt) and isinstance(ft, InfInt) and isinstance(want, Bits):
            tc, tt = self.unify_int(tc, tt, want, e.t)
            fc, ft = self.unify_int(fc, ft, want, e.f)
        if not same(tt, ft) and not isinstance(ft, InfInt):
            raise self.err(f"type mismatch in ?: between {tt} and {ft}", e)
        return f"({tc} if {cc} else {fc})", tt

    def x_ListExpr(self, e: A.ListExpr, scope, want):
        if isinstance(want, (HeaderT, StructT)):
            if len(e.items) != len(want.fields):
                raise self.err(f"{want} has {len(want.fields)} fields, the initializer has {len(e.items)}", e)
            vals = []
            for (fn, fp, ft), it in zip(want.fields, e.items):
                c, t = self.expr(it, scope, ft)
                self.check_assignable(ft, t, it)
                vals.append(c)
            return self.build_composite(want, vals), want
        items = []
        tys = []
        wants = want.items if isinstance(want, TupleT) and len(want.items) == len(e.items) else [None] * len(e.items)
        for it, w in zip(e.items, wants):
            c, t = self.expr(it, scope, w)
            items.append(c)
            tys.append(t)
        return "(" + "".join(c + ", " for c in items) + ")", TupleT(tys)

    def x_StructExpr(self, e: A.StructExpr, scope, want):
        if not isinstance(want, (HeaderT, StructT)):
            raise self.err("a struct initializer needs a known struct or header type here", e)
        given = dict(e.items)
        vals = []
        for fn, fp, ft in want.fields:
            if fn not in given and e.rest:
                vals.append(self.default_value(ft))      # "..." : the other fields get defaults
                continue
            if fn not in given:
                raise self.err(f"the initializer does not set field {fn} of {want}", e)
            c, t = self.expr(given[fn], scope, ft)
            self.check_assignable(ft, t, given[fn])
            vals.append(c)
        extra = set(given) - {f[0] for f in want.fields}
        if extra:
            raise self.err(f"{want} has no field {sorted(extra)[0]}", e)
        return self.build_composite(want, vals), want

    def build_composite(self, t, vals: list[str]) -> str:
        fn = f"_mk_{t.cls}"
        if not hasattr(self, "_mk_done"):
            self._mk_done = set()
        if fn not in self._mk_done:
            self._mk_done.add(fn)
            o = self.classes
            args = [f"a{i}" for i in range(len(t.fields))]
            with o.block(f"def {fn}({', '.join(args)}):"):
                o(f"x = {t.cls}()")
                for (n, p, ft), a in zip(t.fields, args):
                    o(f"x.{p}._set({a})" if is_composite(ft) else f"x.{p} = {a}")
                if isinstance(t, HeaderT):
                    o("x._valid = True")
                o("return x")
            o("")
        return f"{fn}({', '.join(vals)})"

    def x_InvalidExpr(self, e, scope, want):
        if not isinstance(want, HeaderT):
            raise self.err("{#} needs a header type here", e)
        return f"{want.cls}()", want

    def x_CtorCall(self, e, scope, want):
        raise self.err(f"{e.tname}(...): constructor calls are only allowed in instantiations", e)

    def x_Call(self, e: A.Call, scope, want):
        r = self.call(e, scope, None, as_expr=True)
        if r is None:
            raise self.err("this call has no value", e)
        return r

    def x_KsDefault(self, e, scope, want):
        raise self.err("default/_ is only allowed in a select case or an entry", e)

    def lvalue(self, e: A.Expr, scope: Scope) -> tuple[str, Ty, Callable[[str], list[str]]]:
        """(read code, type, assign(code) -> statements) for an assignable expression."""
        if isinstance(e, A.Path):
            s = scope.lookup(e.name)
            if isinstance(s, Var):
                if s.readonly:
                    raise self.err(f"{e.name} is read-only (an 'in' parameter, a constant or action data) "
                                   f"and cannot be assigned", e)
                if is_composite(s.ty):
                    return s.py, s.ty, lambda v, p=s.py: [f"{p}._set({v})"]
                return s.py, s.ty, lambda v, p=s.py: [f"{p} = {v}"]
            if s is None:
                raise self.err(f"{e.name}: undeclared identifier", e)
            raise self.err(f"{e.name} cannot be assigned", e)
        if isinstance(e, A.Member):
            self.lvalue(e.obj, scope) if not isinstance(e.obj, A.Index) else None
            code, ty = self.expr(e, scope)
            if isinstance(e.obj.type, StackT) and e.name in ("size", "lastIndex"):
                raise self.err(f"{e.name} of a header stack cannot be assigned", e)
            if is_composite(ty):
                return code, ty, lambda v, c=code: [f"{c}._set({v})"]
            return code, ty, lambda v, c=code: [f"{c} = {v}"]
        if isinstance(e, A.Index):
            self.lvalue(e.obj, scope)
            code, ty = self.expr(e, scope)
            if isinstance(e.obj.type, ArrayT) and not is_composite(ty):
                # a scalar cell: written through the array (run-time index: bounds-checked put)
                if code.endswith("]"):
                    return code, ty, lambda v, c=code: [f"{c} = {v}"]
                oc, _ = self.expr(e.obj, scope)
                ic, _ = self.expr(e.index, scope)
                return code, ty, lambda v, b=oc, i=ic: [f"{b}.put({i}, {v})"]
            return code, ty, lambda v, c=code: [f"{c}._set({v})"]
        if isinstance(e, A.Slice):
            icode, ity, iassign = self.lvalue(e.obj, scope)
            code, ty = self.expr(e, scope)
            hi = self.const_int(e.hi, scope)
            lo = self.const_int(e.lo, scope)
            w = hi - lo + 1
            fm = ((1 << w) - 1) << lo

            def assign(v, icode=icode, ity=ity):
                base = f"({icode} & {ity.mask:#x})" if ity.signed else icode
                new = f"(({base} & {ity.mask ^ fm:#x}) | ((({v}) << {lo}) & {fm:#x}))"
                if ity.signed:
                    h = 1 << (ity.width - 1)
                    new = f"(({new} ^ {h:#x}) - {h:#x})"
                return iassign(new)
            return code, ty, assign
        raise self.err("this expression cannot be assigned", e)
