"""Parsers: states, transitions and ``select`` key sets."""
from __future__ import annotations

from .. import nodes as A
from ..errors import P4Unsupported
from ..types import Bits, BoolT, ExternT, Ty, ValueSetT, VoidT
from .source_writer import Out
from .symbols import FnCtx, InstSym, Scope


class ParsersMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def _gen_parser(self, d: A.ParserDecl, path: str, scope: Scope, o: Out, fname: str, inst_calls,
                    fparams=()) -> None:
        o(f"def {fname}({', '.join(fparams)}):")
        o.ind += 1
        self._inst_calls(inst_calls, scope, o)
        inner = scope
        pys, outs, sig = self.func_params(d.params, scope, inner)
        pkt = None
        for p, (n, dr, t) in zip(pys, sig):
            if isinstance(t, ExternT) and t.decl.name == "packet_in":
                pkt = p
        cells = list(pys)
        if pys:
            o(f"{' = '.join(pys)} = None")
        resets: list[str] = []
        self._declare_locals(d, path, inner, o, cells, resets)
        self._direct_invocations(d, path, inner, o)
        nl = f"nonlocal {', '.join(cells)}" if cells else None
        states = {s.name: s for s in d.states}
        if "start" not in states:
            raise self.err(f"parser {d.name} has no start state", d)
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise self.err(f"state {s.name} cannot be redefined", s)
        spy = {n: self.fresh("st_" + n) for n in states}
        for s in d.states:
            with o.block(f"def {spy[s.name]}():"):
                if nl:
                    o(nl)
                fn = FnCtx("parser-state", VoidT(), [], pkt)
                sc = Scope(inner)
                self.stmts(s.stmts, sc, o, fn)
                self.gen_transition(s.transition, sc, o, spy)
        with self._apply_def(pys, nl, resets, o):
            o(f"st = {spy['start']}")
            o("n = 0")
            with o.block("while st is not None:"):
                o("st = st()")
                o("n += 1")
                o("if n > 100000: raise ParserReject(5)")
            if outs:
                o(f"return ({', '.join(outs)},)")
        o("return apply")
        o.ind -= 1

    def _goto(self, name: str, spy: dict, node) -> str:
        if name == "accept":
            return "return None"
        if name == "reject":
            return "raise ParserReject(0)"
        if name not in spy:
            raise self.err(f"no state named {name}", node)
        return f"return {spy[name]}"

    def gen_transition(self, t: A.Transition, scope: Scope, o: Out, spy: dict) -> None:
        if t.state is not None:
            o(self._goto(t.state, spy, t))
            return
        keys = []
        for i, e in enumerate(t.select):
            c, ty = self.expr(e, scope)
            if isinstance(ty, BoolT):
                c, ty = f"int({c})", Bits(1)
            k = self.fresh("k")
            o(f"{k} = {c}")
            keys.append((k, ty, e))
        has_default = False
        for case in t.cases:
            ks = case.keyset
            items = ks.items if isinstance(ks, A.KsTuple) else [ks]
            if isinstance(ks, A.KsDefault):
                items = [ks] * len(keys)
            elif len(items) == 1 and len(keys) > 1 and isinstance(ks, A.ListExpr):
                items = ks.items
            if isinstance(ks, A.Path) and len(keys) > 1 and isinstance(scope.lookup(ks.name), InstSym):
                raise P4Unsupported("a value set matching several select keys at once is not supported", ks.loc)
            if len(items) != len(keys):
                raise self.err(f"the select has {len(keys)} key(s), this case has {len(items)}", case)
            conds = []
            for (k, kty, _), it in zip(keys, items):
                c = self.keyset_cond(k, kty, it, scope)
                if c != "True":
                    conds.append(c)
            if not conds:
                o(self._goto(case.state, spy, case))
                has_default = True
                break
            with o.block(f"if {' and '.join(conds)}:"):
                o(self._goto(case.state, spy, case))
        if not has_default:
            # no case matches: P4_16 says reject with error.NoMatch, but p4c's BMv2 JSON ends
            # the select with no transition, which BMv2 takes as accept (parser_error stays
            # NoError; checked with p4c 1.2.4.8 + BMv2 1.15.5, tests/p4/parser_select.stf)
            o("return None")

    def keyset_cond(self, k: str, kty: Ty, it: A.Expr, scope: Scope) -> str:
        if isinstance(it, A.KsDefault):
            return "True"
        if isinstance(it, A.Path):
            vs = scope.lookup(it.name)
            if isinstance(vs, InstSym) and isinstance(vs.ty, ValueSetT):
                self.check_assignable(kty, vs.ty.elem, it)
                return f"{vs.py}.match({k})"
        if isinstance(it, A.KsMask):
            vc, vt = self.expr(it.value, scope, kty)
            mc, mt = self.expr(it.mask, scope, kty)
            return f"({k} & {mc}) == ({vc} & {mc})"
        if isinstance(it, A.KsRange):
            lc, lt = self.expr(it.lo, scope, kty)
            hc, ht = self.expr(it.hi, scope, kty)
            return f"{lc} <= {k} <= {hc}"
        c, t = self.expr(it, scope, kty)
        self.check_assignable(kty, t, it)
        return f"{k} == {c}"
