"""Calls: argument binding by position or name, copy-in/copy-out of ``out``/``inout``
arguments, actions, functions, methods, ``apply`` of tables and sub-blocks, extern calls
(through the architecture hooks).
"""
from __future__ import annotations

from typing import Optional

from .. import nodes as A
from ..errors import P4Error
from ..types import (AnyT, ApplyResultT, Bits, BlockT, BoolT, EnumT, ExternT, HeaderT, InfInt, StackT, StructT,
                     TableT, TypeVarT, VarBit, VoidT, is_composite)
from .source_writer import Out
from .symbols import ActionSym, Const, ExternFuncSym, FuncSym, InstSym, Scope, TypeSym, Var


def _exclusive(a: tuple, b: tuple) -> bool:
    """Whether two branch paths (see ``StatementsMixin.in_branch``) can never both run: at the
    first place they differ, they are different branches of the same if or switch."""
    for x, y in zip(a, b):
        if x != y:
            return x[0] == y[0]
    return False


class CallsMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def specialize_function(self, s: FuncSym, e: A.Call, scope: Scope) -> FuncSym:
        """A generic function is compiled once per list of type arguments (P4_16 spec 6.8.1):
        the call's explicit ones, else those of the arguments whose parameter type is a bare
        type parameter.  If some stay unknown, the generic body is used as it is."""
        tps = s.decl.type_params
        if e.type_args:
            if len(e.type_args) != len(tps):
                raise self.err(f"{s.decl.name} takes {len(tps)} type argument(s), got {len(e.type_args)}", e)
            targs = [self.resolve_type(t, scope) for t in e.type_args]
        else:
            bound: dict = {}
            for p, a in zip(s.decl.params, e.args):
                tn = getattr(p.type, "name", None)
                if tn in tps and tn not in bound and getattr(a, "name", None) in (None, p.name):
                    _, at = self.expr(a.value, scope)
                    if isinstance(at, (Bits, BoolT, StructT, HeaderT, EnumT)):
                        bound[tn] = at
            if len(bound) != len(tps):
                return s
            targs = [bound[t] for t in tps]
        key = tuple(str(t) for t in targs)
        spec = s.specs.get(key)
        if spec is None:
            spec = FuncSym(s.decl, self.fresh(s.py), type_args=dict(zip(tps, targs)))
            s.specs[key] = spec
        return spec

    def bind_args(self, params: list, args: list, call: A.Node, what: str, decl: A.Node | None = None) -> list:
        """Match call arguments to parameters (positional or by name); defaults fill in.
        ``decl``: a package's declaration, where p4c reports a wrong argument count (the
        instantiation comes second, as "Originating from")."""
        if any(a.name for a in args):
            by = {a.name: a for a in args}
            out = []
            for p in params:
                a = by.pop(p.name, None)
                if a is None:
                    if p.default is not None:
                        a = A.Arg(loc=call.loc, value=p.default)
                    elif p.direction == "out" or "optional" in p.annotations:
                        a = A.Arg(loc=call.loc, value=None)
                    else:
                        raise self.err(f"{what}: missing argument for parameter {p.name}", call)
                out.append(a)
            if by:
                raise self.err(f"{what}: no parameter named {next(iter(by))}", call)
            return out
        if len(args) > len(params):
            if decl is not None:
                raise self.err(f"{what}: {len(args)} arguments supplied while {len(params)} are expected "
                               f"(the instantiation at {call.loc})", decl)
            raise self.err(f"{what}: too many arguments: expected {len(params)}, got {len(args)}", call)
        out = list(args)
        for p in params[len(args):]:
            if p.default is not None:
                out.append(A.Arg(loc=call.loc, value=p.default))
            elif "optional" in p.annotations:
                out.append(A.Arg(loc=call.loc, value=None))
            else:
                raise self.err(f"{what}: expected {len(params)} argument(s), got {len(args)}", call)
        return out

    def gen_call_args(self, params: list, ptypes: list, args: list, scope: Scope, call: A.Node, what: str):
        """Code for the arguments and the write-backs of scalar out/inout arguments."""
        bound = self.bind_args(params, args, call, what)
        codes, writebacks = [], []
        for p, pt, a in zip(params, ptypes, bound):
            d = p.direction
            if a.value is None:
                if d in ("out", "inout") and not is_composite(pt):
                    codes.append(self.default_value(pt))
                    writebacks.append(None)
                    continue
                codes.append(self.default_value(pt) if pt is not None else "None")
                continue
            if d in ("out", "inout"):
                rc, rt, assign = self.lvalue(a.value, scope)
                if isinstance(a.value, A.Path):
                    self._lv_roots.append(rc)
                self.check_assignable(pt, rt, a.value) if not isinstance(pt, (AnyT, TypeVarT)) else None
                if isinstance(pt, Bits) and isinstance(rt, Bits) and pt != rt:
                    raise self.err(f"{what}: argument for {p.name} has type {rt}, expected {pt}", a.value)
                codes.append(rc if d == "inout" or is_composite(rt) else self.default_value(rt))
                if not is_composite(rt):
                    writebacks.append(assign)
            else:
                c, t = self.expr(a.value, scope, pt if not isinstance(pt, (AnyT, TypeVarT)) else None)
                if pt is not None and not isinstance(pt, (AnyT, TypeVarT)):
                    self.check_assignable(pt, t, a.value)
                    if is_composite(t) and d == "in":
                        pass
                codes.append(c)
        return codes, writebacks

    def emit_call_with_outs(self, fn_code: str, codes: list, writebacks: list, out: Out, has_ret: bool,
                            expr_ctx: bool = False) -> str:
        call = f"{fn_code}({', '.join(codes)})"
        wbs = [w for w in writebacks]
        if not wbs:
            return call
        if expr_ctx:
            # a call with copy-out inside an expression: wrap call + write-backs in a helper defined
            # just before the statement being generated, so evaluation order (and ||/&& short
            # circuits) stay as written
            o = self._stmt_out
            hname = self.fresh("cx")
            roots = sorted(set(self._lv_roots))
            with o.block(f"def {hname}():"):
                if roots:
                    o(f"nonlocal {', '.join(roots)}")
                r = self.emit_call_with_outs(fn_code, codes, writebacks, o, has_ret)
                o(f"return {r}" if r is not None else "return None")
            return f"{hname}()"
        tmp = self.fresh("r")
        exc = self.fresh("x")
        # an ``exit`` inside the callee still copies its out/inout arguments back
        out("try:")
        out(f"    {tmp} = {call}")
        out(f"    {exc} = None")
        out("except P4Exit as _e:")
        out(f"    {tmp} = {'(None,) + ' if has_ret else ''}_e.outs")
        out(f"    {exc} = _e")
        k = 1 if has_ret else 0
        for w in wbs:
            if w is not None:
                for s in w(f"{tmp}[{k}]"):
                    out(s)
            k += 1
        cur = self._cur_fn
        if cur is not None and cur.outs:
            # leaving this function too: carry its own out values to its caller
            out(f"if {exc} is not None: raise P4Exit(({', '.join(cur.outs)},))")
        else:
            out(f"if {exc} is not None: raise P4Exit()")
        return f"{tmp}[0]" if has_ret else None

    def call(self, e: A.Call, scope: Scope, out: Optional[Out], as_expr: bool):
        f = e.func
        if out is None:
            out = Out()     # expression context: calls with write-backs are refused below
            expr_ctx = True
        else:
            expr_ctx = False
        if isinstance(f, A.TypeMember) and id(f) not in self._direct_insts:
            m = self.shadowed_type_member(f, scope)
            if m is not None:
                f = m
                e = A.Call(loc=e.loc, func=m, args=e.args, type_args=e.type_args)
        # method calls
        if isinstance(f, A.Member):
            name = f.name
            # table.apply()
            try:
                oc, ot = self.expr(f.obj, scope)
            except P4Error:
                raise
            if isinstance(ot, TableT):
                if name != "apply":
                    raise self.err(f"a table has no method {name}", e)
                tsym = ot.table
                kind = getattr(self._cur_fn, "kind", None)
                if kind in ("action", "function"):
                    # p4c (type checking): only a control's apply block (and what it calls) may
                    # apply a table
                    raise self.err(f"{self.key_name(f.obj)}.apply: tables cannot be invoked from {kind}s", e)
                # BMv2 runs a control as a graph of tables: p4c refuses a program with a path
                # from a table back to itself, so one table may be applied at several places
                # only when they exclude each other (then/else of an if, cases of a switch)
                here = tuple(self.branch_path)
                for loc, path in tsym.applied:
                    if loc != e.loc and not _exclusive(path, here):
                        raise self.err(f"table {tsym.decl.name} is applied more than once on one path "
                                       f"through this control (first at {loc}); p4c refuses this for BMv2", e)
                tsym.applied.append((e.loc, here))
                return f"{ot.table.py}()", ApplyResultT(ot.table)
            if isinstance(ot, StructT) and ot.union and name == "isValid":
                return "(" + " or ".join(f"{oc}.{p}._valid" for _, p, _ in ot.fields) + ")", BoolT()
            if isinstance(ot, HeaderT):
                if name == "isValid":
                    return f"{oc}._valid", BoolT()
                if name == "setValid":
                    out(f"_h = {oc}")
                    out("if not _h._valid: _h._zero(); _h._valid = True")
                    self.union_siblings_invalid(f.obj, out)
                    return None
                if name == "setInvalid":
                    out(f"{oc}._valid = False")
                    return None
                if name in ("minSizeInBits", "maxSizeInBits"):
                    return str(ot.width), InfInt()
                if name in ("minSizeInBytes", "maxSizeInBytes"):
                    return str(ot.width // 8), InfInt()
                raise self.err(f"a header has no method {name}", e)
            if isinstance(ot, StackT):
                if name in ("push_front", "pop_front"):
                    if len(e.args) != 1:
                        raise self.err(f"{name} takes one argument", e)
                    n = self.const_int(e.args[0].value, scope, "count")
                    out(f"{oc}.{name}({n})")
                    return None
                raise self.err(f"a header stack has no method {name}", e)
            if isinstance(ot, StructT) and name in ("minSizeInBits", "minSizeInBytes"):
                raise self.err(f"{name} on a struct is not supported", e)
            if isinstance(ot, BlockT) and name == "apply":
                if isinstance(f.obj, A.Path):
                    inst = scope.lookup(f.obj.name)
                    if isinstance(inst, InstSym):
                        self.info.used_instances.add(inst.full)
                return self.call_block_apply(oc, ot, e, scope, out)
            if isinstance(ot, ExternT):
                if ot.decl.name == "packet_in" and name == "lookahead" and len(e.type_args) == 1:
                    self._fixed_width_type_arg(e.type_args[0], scope)
                e = self._positional(e, [m for m in ot.decl.methods if m.name == name and not m.is_ctor],
                                     f"{ot.decl.name}.{name}")
                md = self._extern_method_decl(ot, name, e)
                if md is not None:
                    self._untyped_int_for_type_var(md, e, scope)
                e, scope = self._dontcare_outs(e, md, ot, scope, out)
                r = self.hooks.extern_method(self, oc, ot, name, e, scope, out, as_expr)
                return r
            raise self.err(f"{ot} has no method {name}", e)
        if isinstance(f, A.TypeMember) and id(f) in self._direct_insts:
            inst = self._direct_insts[id(f)]
            return self.call_block_apply(inst.py, inst.ty, e, scope, out)
        if isinstance(f, A.Path):
            s = (scope.root() if f.top else scope).lookup(f.name)
            if s is None:
                raise self.err(f"{f.name}: undeclared identifier", f)
            if isinstance(s, TypeSym) and s.func is not None:
                s = s.func
            if isinstance(s, ActionSym):
                if getattr(getattr(self, "_cur_fn", None), "kind", None) == "parser-state":
                    # p4c (type checking): a parser may not call an action (spec 13: a parser
                    # state holds declarations, assignments, method and function calls)
                    raise self.err(f"{f.name}: action calls are not allowed within parsers", e)
                if getattr(getattr(self, "_cur_fn", None), "kind", None) == "control":
                    self.info.actions_called_from_apply.add(s.full)
                    # (P4Info order: the block that calls it, for a top-level action)
                    self.info.action_call_sites.setdefault(s.full, getattr(self, "_cp_order", ()))
                params = s.decl.params
                ptypes = [self.resolve_type(p.type, scope) for p in params]
                if not s.decl.body.stmts and not any(A.has_call(a.value) for a in e.args if a.value is not None):
                    # an action that does nothing: p4c inlines it and its copy-in/copy-out of
                    # plain lvalues disappears, so the arguments are not even evaluated (p4c
                    # sample gauntlet_index_5-bmv2: a run-time stack index out of range there
                    # does not reach BMv2)
                    self.gen_call_args(params, ptypes, e.args, scope, e, f"action {f.name}")   # type checks
                    return None
                codes, wbs = self.gen_call_args(params, ptypes, e.args, scope, e, f"action {f.name}")
                r = self.emit_call_with_outs(s.py, codes, wbs, out, False)
                if r is not None:
                    out(r)
                return None
            if isinstance(s, FuncSym):
                if s.decl.type_params:
                    s = self.specialize_function(s, e, scope)
                saved = self._cur_fn, self._stmt_out, self._lv_roots, self.cur_loc
                self.ensure_function(s, scope)      # may compile the callee's body now
                self._cur_fn, self._stmt_out, self._lv_roots, self.cur_loc = saved
                cv = self.constant_return(s)
                if cv is not None:
                    # p4c inlines the function and propagates the constant it returns: the call
                    # then counts as that constant where p4c needs one (a divisor, a shift)
                    e.const_value = cv
                params = s.decl.params
                codes, wbs = self.gen_call_args(params, [t for _, _, t in s.params], e.args, scope, e,
                                                f"function {f.name}")
                has_ret = not isinstance(s.ret, VoidT)
                r = self.emit_call_with_outs(s.py, codes, wbs, out if not expr_ctx else None, has_ret, expr_ctx)
                if has_ret:
                    return r, s.ret
                if r is not None:
                    out(r)
                return None
            if isinstance(s, ExternFuncSym):
                e = self._positional(e, s.decls, f.name)
                counts = sorted({len(d.params) for d in s.decls} |
                                {len([p for p in d.params if p.default is None and "optional" not in p.annotations])
                                 for d in s.decls})
                if not any(len([p for p in d.params if p.default is None and "optional" not in p.annotations])
                           <= len(e.args) <= len(d.params) for d in s.decls):
                    raise self.err(f"{f.name}: wrong number of arguments: got {len(e.args)}, expected "
                                   f"{' or '.join(map(str, counts))}", e)
                for d in s.decls:
                    if len([p for p in d.params if p.default is None and "optional" not in p.annotations]) \
                            <= len(e.args) <= len(d.params):
                        self._untyped_int_for_type_var(d, e, scope)
                        break
                kind = getattr(getattr(self, "_cur_fn", None), "kind", None)
                if f.name == "verify" and kind in ("action", "function", "control"):
                    # core.p4's verify ends parsing with an error: p4c allows it only inside a
                    # parser (P4_16 spec 12.7)
                    raise self.err("verify: may only be invoked in parsers", e)
                if kind == "action":
                    self._action_calls_extern = True
                elif kind != "parser-state":
                    self.info.calls_extern_functions = True
                return self.hooks.extern_function(self, f.name, e, scope, out, as_expr)
            raise self.err(f"{f.name} is not callable", f)
        raise self.err("this expression is not callable", e)

    def _untyped_int_for_type_var(self, decl, call: A.Call, scope: Scope) -> None:
        """A generic extern function or method whose type variable only an integer without a
        width binds (hash(r, algo, 0, data, 0xFFFF): T and M): p4c cannot infer a width for it
        ("could not infer a width"), reported at the argument."""
        if call.type_args or not decl.type_params:
            return
        tvars = set(decl.type_params)
        untyped, typed = {}, set()
        for p, a in zip(decl.params, call.args):
            if not isinstance(p.type, A.TName) or p.type.name not in tvars or a.value is None:
                continue
            v = a.value
            while isinstance(v, A.Unary) and v.op in ("-", "+"):
                v = v.e
            if isinstance(v, A.IntLit) and v.width is None:
                untyped.setdefault(p.type.name, a.value)
            elif isinstance(v, A.Path) and isinstance(scope.lookup(v.name), Const) \
                    and isinstance(scope.lookup(v.name).ty, InfInt):
                untyped.setdefault(p.type.name, a.value)
            else:
                typed.add(p.type.name)
        for tv, node in untyped.items():
            if tv not in typed:
                raise self.err("could not infer a width for an integer without one passed as a "
                               f"parameter of generic type {tv} (give it a width, as in 16w0)", node)

    def _fixed_width_type_arg(self, ta, scope: Scope) -> None:
        """core.p4's lookahead<T> needs a T of fixed width (spec 12.8.4): p4c refuses a varbit,
        or a header or struct holding one, at the type argument."""
        def has_varbit(t, seen=()):
            if isinstance(t, VarBit):
                return True
            if isinstance(t, (HeaderT, StructT)) and id(t) not in seen:
                return any(has_varbit(ft, seen + (id(t),)) for _, _, ft in t.fields)
            if isinstance(t, StackT):
                return has_varbit(t.elem, seen)
            return False
        t = self.resolve_type(ta, scope)
        if has_varbit(t):
            raise self.err(f"{t}: type argument must be a fixed-width type", ta)

    def constant_return(self, fs) -> Optional[int]:
        """The compile-time value every ``return`` of function ``fs`` gives, or None."""
        vals = []

        def walk(x):
            if isinstance(x, A.Return):
                vals.append(self.const_eval(x.value, self.glob) if x.value is not None else None)
            elif isinstance(x, A.Node):
                for v in vars(x).values():
                    walk(v)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)
        walk(fs.decl.body)
        if vals and all(isinstance(v, int) and not isinstance(v, bool) for v in vals) and len(set(vals)) == 1:
            return vals[0]
        return None

    def _positional(self, call: A.Call, decls: list, what: str) -> A.Call:
        """A call of an extern function or method with named arguments (``verify_checksum(
        condition = c, data = d, ...)``), rewritten with its arguments in declaration order so
        that the architecture sees positional arguments (P4_16 spec 1.2.5, 6.8.1)."""
        if not any(a.name for a in call.args):
            return call
        if not all(a.name for a in call.args):
            raise self.err(f"{what}: either all arguments are named or none is", call)
        names = {a.name for a in call.args}
        for d in decls:
            pnames = [p.name for p in d.params]
            if names <= set(pnames):
                bound = self.bind_args(d.params, call.args, call, what)
                # trailing optional parameters left out stay left out
                while bound and bound[-1].value is None and d.params[len(bound) - 1].name not in names:
                    bound.pop()
                args = [A.Arg(loc=a.loc, value=a.value) for a in bound]
                return A.Call(loc=call.loc, func=call.func, type_args=call.type_args, args=args)
        raise self.err(f"{what}: no declaration has parameters named {', '.join(sorted(names))}", call)

    @staticmethod
    def _extern_method_decl(ety: ExternT, name: str, call: A.Call):
        """The declaration of method ``name`` of extern ``ety`` that takes as many arguments as
        ``call`` gives (None if there is none: the architecture reports it)."""
        for m in ety.decl.methods:
            if m.name == name and not m.is_ctor:
                need = len([p for p in m.params if p.default is None and "optional" not in p.annotations])
                if need <= len(call.args) <= len(m.params):
                    return m
        return None

    def _dontcare_outs(self, call: A.Call, decl, ety: Optional[ExternT], scope: Scope, out: Out):
        """``_`` as the argument of an ``out`` parameter (``pkt.extract<H>(_)``): the callee writes
        a fresh variable that nothing reads (P4_16 spec 1.2.5, 6.7 / 8.x "don't care").  Returns
        the call with those arguments replaced, and the scope that declares the variables."""
        if decl is None or not any(a.value is None and a.name is None for a in call.args):
            return call, scope
        inner = Scope(scope)
        tmap = {}
        for tp, ta in zip(decl.type_params, call.type_args or ()):
            tmap[tp] = ta
        if ety is not None:
            for tp, ta in zip(ety.decl.type_params, ety.args):
                if not isinstance(ta, AnyT):
                    inner.syms[tp] = TypeSym(ta)
        for tp, ta in tmap.items():
            inner.syms[tp] = TypeSym(self.resolve_type(ta, scope))
        args = []
        for i, a in enumerate(call.args):
            if a.value is None and a.name is None and i < len(decl.params) and \
                    decl.params[i].direction in ("out", "inout"):
                p = decl.params[i]
                if isinstance(p.type, A.TName) and (p.type.name in decl.type_params or (
                        ety is not None and p.type.name in ety.decl.type_params)) and \
                        not isinstance(inner.syms.get(p.type.name), TypeSym):
                    raise self.err(f"the type of '_' for parameter {p.name} is not known here: give the "
                                   f"type argument explicitly", a)
                ty = self.resolve_type(p.type, inner)
                tmp = self.fresh("dc")
                out(f"{tmp} = {self.default_value(ty)}")
                inner.syms[tmp] = Var(tmp, ty)
                args.append(A.Arg(loc=a.loc, value=A.Path(loc=a.loc, name=tmp)))
            else:
                args.append(a)
        return A.Call(loc=call.loc, func=call.func, type_args=call.type_args, args=args), inner

    def union_siblings_invalid(self, hexpr: A.Expr, out: Out) -> None:
        """After a header_union member becomes valid, the other members become invalid (spec 8.20)."""
        if isinstance(hexpr, A.Member) and isinstance(hexpr.obj.type, StructT) and hexpr.obj.type.union:
            u = hexpr.obj.type
            base = self._last_obj_code.get(id(hexpr.obj))
            if base is None:
                return
            for n, p, _ in u.fields:
                if n != hexpr.name:
                    out(f"{base}.{p}._valid = False")

    def call_block_apply(self, oc: str, ot: BlockT, e: A.Call, scope: Scope, out: Out):
        d = ot.decl
        params = d.params
        pscope = scope
        if getattr(d, "type_params", None) and ot.args:
            pscope = Scope(scope)
            for tp, ta in zip(d.type_params, ot.args):
                pscope.syms[tp] = TypeSym(ta)
        ptypes = [self.resolve_type(p.type, pscope) if not self._is_arch_param(p) else AnyT() for p in params]
        codes, wbs = self.gen_call_args(params, ptypes, e.args, scope, e, f"{d.name}.apply")
        r = self.emit_call_with_outs(oc, codes, wbs, out, False)
        if r is not None:
            out(r)
        return None

    def _is_arch_param(self, p) -> bool:
        return isinstance(p.type, A.TName) and p.type.name in ("packet_in", "packet_out")
