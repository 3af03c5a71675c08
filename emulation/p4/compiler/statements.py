"""Statements: assignment, calls, ``if``, ``switch``, loops, ``return``/``exit``, local declarations."""
from __future__ import annotations

import contextlib
import copy
import linecache
import os

from .. import nodes as A
from ..errors import P4Error
from ..types import ApplyResultT, Bits, BlockT, BoolT, EnumT, ErrorT, ExternT, VoidT, is_composite
from .source_writer import Out
from .symbols import FnCtx, Scope, TableSym, Var


class StatementsMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def stmts(self, body: list, scope: Scope, out: Out, fn: FnCtx) -> None:
        if self.stmts_with_lanes(body, scope, out, fn):
            return
        for s in body:
            self.stmt(s, scope, out, fn)

    def stmt(self, s: A.Stmt, scope: Scope, out: Out, fn: FnCtx) -> None:
        self._cur_fn = fn
        self._stmt_out = out
        self._lv_roots = []
        self.cur_loc = s.loc
        if isinstance(s, A.Assign):
            if s.compound and A.has_call(s.lhs):
                s, scope = self.hoist_compound_target(s, scope, out)
            # p4c (1.2.4.8) and BMv2: the right side and its copy-outs run first, then the
            # left side is evaluated (a run-time index sees what the call wrote)
            lc, lt, assign = self.lvalue(s.lhs, scope)
            rc, rt = self.expr(s.rhs, scope, lt)
            self.check_init(lt, rt, s.rhs)
            if isinstance(lt, Bits) and isinstance(rt, Bits) and lt != rt:
                raise self.err(f"type mismatch: cannot assign {rt} to {lt}", s)
            for line in assign(rc):
                out(line)
        elif isinstance(s, A.CallStmt):
            r = self.call(s.call, scope, out, as_expr=False)
            if r is not None and r[0] and r[0] != "None":
                out(r[0])
        elif isinstance(s, A.If):
            cc, ct = self.expr(s.cond, scope)
            if not isinstance(ct, BoolT):
                raise self.err(f"the condition of if must be bool, not {ct}", s.cond)
            if self.trace:
                cc = self.trace_condition(s, cc)
            with out.block(f"if {cc}:"), self.in_branch(s, 0):
                self.stmt_scoped(s.then, scope, out, fn)
            if s.orelse is not None:
                with out.block("else:"), self.in_branch(s, 1):
                    self.stmt_scoped(s.orelse, scope, out, fn)
        elif isinstance(s, A.Block):
            self.stmts(s.stmts, Scope(scope), out, fn)
        elif isinstance(s, A.VarDecl):
            if s.name in scope.syms:
                raise self.err(f"{s.name} is already declared in this block", s)
            ty = self.resolve_type(s.type, scope)
            if isinstance(ty, (ExternT, BlockT)):
                raise self.err(f"{s.name}: cannot declare a variable of type {ty} (instantiate it instead)", s)
            py = self.fresh("v_" + s.name)
            if s.init is not None:
                c, t = self.expr(s.init, scope, ty)
                self.check_init(ty, t, s.init)
                if isinstance(ty, Bits) and isinstance(t, Bits) and ty != t:
                    raise self.err(f"type mismatch: cannot initialize {ty} with {t}", s.init)
                if is_composite(ty):
                    out(f"{py} = {self.default_value(ty)}")
                    out(f"{py}._set({c})")
                else:
                    out(f"{py} = {c}")
            else:
                out(f"{py} = {self.default_value(ty)}")
            scope.syms[s.name] = Var(py, ty)
        elif isinstance(s, A.ConstDecl):
            if s.name in scope.syms:
                raise self.err(f"{s.name} is already declared in this block", s)
            self.declare_const(s, scope, out)
        elif isinstance(s, A.Exit):
            out(f"raise P4Exit(({', '.join(fn.outs)},))" if fn.outs else "raise P4Exit()")
        elif isinstance(s, A.Return):
            self.gen_return(s, scope, out, fn)
        elif isinstance(s, A.Empty):
            pass
        elif isinstance(s, A.Switch):
            self.gen_switch(s, scope, out, fn)
        elif isinstance(s, A.For):
            inner = Scope(scope)
            for st in s.inits:
                self.stmt(st, inner, out, fn)
            first = self.fresh("first")
            out(f"{first} = True")
            with out.block("while True:"):
                with out.block(f"if not {first}:"):
                    for st in s.updates:
                        self.stmt(st, inner, out, fn)
                out(f"{first} = False")
                if s.cond is not None:
                    cc, ct = self.expr(s.cond, inner)
                    if not isinstance(ct, BoolT):
                        raise self.err(f"the condition of for must be bool, not {ct}", s.cond)
                    out(f"if not {cc}: break")
                self._loops += 1
                self.stmt_scoped(s.body, inner, out, fn)
                self._loops -= 1
        elif isinstance(s, A.ForRange):
            # for (T x in lo .. hi): both bounds included (P4_16 v1.2.5)
            inner = Scope(scope)
            ty = self.resolve_type(s.type, scope)
            lc, lt = self.expr(s.lo, scope, ty)
            hc, ht = self.expr(s.hi, scope, ty)
            self.check_assignable(ty, lt, s.lo)
            self.check_assignable(ty, ht, s.hi)
            py = self.fresh("v_" + s.name)
            inner.syms[s.name] = Var(py, ty)
            with out.block(f"for {py} in range({lc}, ({hc}) + 1):"):
                self._loops += 1
                self.stmt_scoped(s.body, inner, out, fn)
                self._loops -= 1
        elif isinstance(s, (A.Break, A.Continue)):
            if not self._loops:
                raise self.err(f"{'break' if isinstance(s, A.Break) else 'continue'} outside a loop", s)
            out("break" if isinstance(s, A.Break) else "continue")
        else:
            raise self.err(f"unsupported statement {type(s).__name__}", s)

    def _dynamic(self, e, scope) -> bool:
        """Does evaluating ``e`` involve a run-time stack index or a call?"""
        if isinstance(e, A.Call):
            return True
        if isinstance(e, A.Index):
            return self.const_eval(e.index, scope) is None or self._dynamic(e.obj, scope)
        if isinstance(e, (A.Member, A.Slice)):
            return self._dynamic(e.obj, scope)
        return False

    def trace_condition(self, s: A.If, cc: str) -> str:
        """The condition ``cc`` wrapped in a call that traces it as BMv2 does:
        ``file(line) Condition "source text" (node_N) is true``.  The text is the parenthesised
        condition as written on the ``if`` line; node ids count this program's conditions."""
        self._trace_nodes += 1
        loc = s.loc
        text = ""
        if loc is not None and loc.file:
            line = linecache.getline(loc.file, loc.line)
            i = line.find("(", max(loc.col - 1, 0))
            depth = 0
            for j in range(max(i, 0), len(line) if i >= 0 else 0):
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                if depth == 0:
                    text = line[i + 1:j]
                    break
            else:
                text = line[i + 1:] if i >= 0 else ""     # continues on the next line(s)
        node = f"node_{self._trace_nodes}"
        text = text.strip()
        # BMv2 without source information prints the node's name in place of the text
        where = f"{os.path.basename(loc.file)}({loc.line}) " if text else ""
        return f"TR.condition({where!r}, {text or node!r}, {node!r}, {cc})"

    def stmt_scoped(self, s, scope, out, fn):
        if isinstance(s, A.Block):
            self.stmts(s.stmts, Scope(scope), out, fn)
        else:
            self.stmt(s, Scope(scope), out, fn)

    def gen_return(self, s: A.Return, scope, out: Out, fn: FnCtx):
        if fn.kind == "parser-state":
            raise self.err("return is not allowed in a parser state", s)
        vals = []
        if s.value is not None:
            if isinstance(fn.ret, VoidT):
                raise self.err("this function returns no value", s)
            c, t = self.expr(s.value, scope, fn.ret)
            self.check_init(fn.ret, t, s.value)
            vals.append(c)
        elif not isinstance(fn.ret, VoidT):
            raise self.err(f"return needs a value of type {fn.ret}", s)
        vals += fn.outs
        if not vals:
            out("return")
        elif len(vals) == 1 and not fn.outs:
            out(f"return {vals[0]}")
        else:
            out(f"return ({', '.join(vals)},)")

    @contextlib.contextmanager
    def in_branch(self, stmt: A.Stmt, which: int):
        """Code generated inside branch ``which`` of ``stmt`` (an if's then/else, a switch case):
        ``self.branch_path`` tells whether two places can both run for one packet."""
        self.branch_path.append((id(stmt), which))
        try:
            yield
        finally:
            self.branch_path.pop()

    def hoist_compound_target(self, s: A.Assign, scope: Scope, out: Out):
        """``a[f(x)].g op= e``: the target is evaluated once (p4c: SideEffectOrdering, then
        RemoveOpAssign copies the target), so run-time indices that call something are computed
        into temporaries first; returns the rewritten statement and the scope of the temporaries."""
        inner = Scope(scope)

        def hoist(x):
            if isinstance(x, A.Index):
                obj = hoist(x.obj)
                idx = x.index
                if A.has_call(idx):
                    c, t = self.expr(idx, inner)
                    tmp = self.fresh("ix")
                    out(f"{tmp} = {c}")
                    inner.syms[tmp] = Var(tmp, t)
                    idx = A.Path(loc=idx.loc, name=tmp)
                return A.Index(loc=x.loc, obj=obj, index=idx)
            if isinstance(x, A.Member):
                return A.Member(loc=x.loc, obj=hoist(x.obj), name=x.name)
            if isinstance(x, A.Slice):
                return A.Slice(loc=x.loc, obj=hoist(x.obj), hi=x.hi, lo=x.lo)
            return x
        lhs = hoist(s.lhs)
        rhs = A.Binary(loc=s.rhs.loc, op=s.rhs.op, l=copy.deepcopy(lhs), r=s.rhs.r)
        return A.Assign(loc=s.loc, lhs=lhs, rhs=rhs, compound=s.compound), inner

    def check_switch_labels(self, s: A.Switch, scope) -> None:
        """p4c's rules for switch labels (frontend type checking): no label after ``default``
        (reported at the switch, as p4c does) and no label twice (at the duplicate)."""
        seen_default = False
        seen: dict = {}
        for case in s.cases:
            if case.label == "default":
                if seen_default:
                    raise self.err("switch label default follows 'default' label, which is not allowed", s)
                seen_default = True
                continue
            name = self.key_name(case.label) if isinstance(case.label, A.Node) else str(case.label)
            if seen_default:
                raise self.err(f"switch label {name} follows 'default' label, which is not allowed", s)
            if isinstance(case.label, A.Path) and isinstance(s.expr, A.Member) and s.expr.name == "action_run":
                key = case.label.name
            else:
                try:
                    key = self.const_eval(case.label, scope)
                except P4Error:     # not a constant: the type check below reports it
                    key = None
                if key is None and isinstance(case.label, A.TypeMember):
                    key = (case.label.tname, case.label.name)
            if key is not None:
                if key in seen:
                    raise self.err(f"{name}: 'switch' label duplicates {seen[key]}", case.label)
                seen[key] = name

    def gen_switch(self, s: A.Switch, scope, out: Out, fn: FnCtx):
        # switch on table.apply().action_run, or on a value
        self.check_switch_labels(s, scope)
        if isinstance(s.expr, A.Member) and s.expr.name == "action_run":
            c, t = self.expr(s.expr, scope)
            if not isinstance(t, ApplyResultT):
                raise self.err("action_run of something that is not a table", s.expr)
            tab: TableSym = t.table
            names = {}
            for i, (asym, ref) in enumerate(tab.actions):
                names[asym.decl.name] = i
                names[ref.name] = i
            tmp = self.fresh("ar")
            out(f"{tmp} = {c}")
            pending: list = []
            first = True
            for case in s.cases:
                if case.label == "default":
                    pending.append(None)
                else:
                    if not isinstance(case.label, A.Path) or case.label.name not in names:
                        lbl = getattr(case.label, "name", "?")
                        raise self.err(f"{lbl} is not an action of table {tab.decl.name}", case.label)
                    pending.append(names[case.label.name])
                if case.body is None:
                    continue
                if None in pending:
                    cond = "True"
                else:
                    cond = " or ".join(f"{tmp} == {i}" for i in pending)
                with out.block(f"{'if' if first else 'elif'} {cond}:"), self.in_branch(s, id(case)):
                    self.stmts(case.body.stmts, Scope(scope), out, fn)
                first = False
                pending = []
            return
        c, t = self.expr(s.expr, scope)
        if not isinstance(t, (Bits, EnumT, ErrorT)):
            raise self.err(f"cannot switch on a value of type {t}", s.expr)
        tmp = self.fresh("sw")
        out(f"{tmp} = {c}")
        pending = []
        first = True
        for case in s.cases:
            if case.label == "default":
                pending.append(None)
            else:
                lc, lt = self.expr(case.label, scope, t)
                self.check_assignable(t, lt, case.label)
                pending.append(lc)
            if case.body is None:
                continue
            cond = "True" if None in pending else " or ".join(f"{tmp} == {x}" for x in pending)
            with out.block(f"{'if' if first else 'elif'} {cond}:"), self.in_branch(s, id(case)):
                self.stmts(case.body.stmts, Scope(scope), out, fn)
            first = False
            pending = []
