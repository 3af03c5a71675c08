"""Parsers: states, transitions and ``select`` key sets."""
from __future__ import annotations

from collections import Counter

from .. import nodes as A
from ..errors import P4Error, P4Unsupported
from ..types import Bits, BoolT, EnumT, ErrorT, ExternT, InfInt, StructT, Ty, ValueSetT, VoidT
from .source_writer import Out
from .symbols import Const, FnCtx, InstSym, Scope, TypeSym


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
        states: dict = {}
        for s in d.states:
            if s.name in states:
                raise self.err(f"{s.name}: duplicate state name (first at {states[s.name].loc})", s.name_loc or s)
            states[s.name] = s
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise self.err(f"{s.name}: parser state {s.name} is built in and cannot be implemented",
                               s.name_loc or s)
        if "start" not in states:
            raise self.err(f"parser {d.name} has no start state", d)
        self.check_parser_terminates(d, states)
        spy = {n: self.fresh("st_" + n) for n in states}
        # an acyclic state graph (no header-stack loop): each state calls the next one itself and
        # apply calls start, instead of the trampoline loop that guards against endless loops
        direct = not self.trace and len(states) <= 64 and _acyclic(states)
        outer_direct, self._parser_direct = getattr(self, "_parser_direct", False), direct
        # in that graph a state that only one transition leads to, and that comes next in the
        # source, is generated inside that transition instead of as a function of its own (a
        # Python call less per state: SA-ATP's five header states become one function). States
        # are still compiled in source order, so errors come in p4c's order.
        inline = {}
        if direct:
            refs = Counter(n for st in d.states for n in _successors(st))
            inline = {n: st for n, st in states.items() if n != "start" and refs[n] == 1}
        emitted: set[str] = set()
        ctx = (inline, inner, pkt, emitted, [s.name for s in d.states])
        outer_inline, self._parser_inline = getattr(self, "_parser_inline", None), ctx
        for s in d.states:
            if s.name in emitted:
                continue
            emitted.add(s.name)
            with o.block(f"def {spy[s.name]}():"):
                if nl:
                    o(nl)
                fn = FnCtx("parser-state", VoidT(), [], pkt)
                sc = Scope(inner)
                if self.trace:
                    o(f"TR.state({s.name!r})")
                    self._trace_state = s.name
                self.stmts(s.stmts, sc, o, fn)
                # (a state may have generated another parser)
                self._parser_direct, self._parser_inline = direct, ctx
                self.gen_transition(s.transition, sc, o, spy)
        self._parser_direct, self._parser_inline = outer_direct, outer_inline
        with self._apply_def(pys, nl, resets, o):
            if direct:
                o(f"{spy['start']}()")
            else:
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

    def check_parser_terminates(self, d: A.ParserDecl, states: dict) -> None:
        """Refuse a parser that can never leave its states: no path from ``start`` reaches
        ``accept`` or ``reject`` and no reachable state calls anything (a call such as
        ``extract`` or ``verify`` can still end parsing with an error).  Such a parser loops
        on every packet."""
        seen, todo = set(), ["start"]
        while todo:
            n = todo.pop()
            if n in ("accept", "reject"):
                return
            if n in seen or n not in states:
                if n not in states and n not in seen:
                    return      # an unknown state: reported with its location when generated
                continue
            seen.add(n)
            st = states[n]
            t = st.transition
            if any(not isinstance(x, (A.Assign, A.VarDecl, A.ConstDecl, A.Empty)) for x in st.stmts):
                return
            if t.state is not None:
                todo.append(t.state)
                continue
            if A.has_call(t.select):
                return      # lookahead<T>() in the select can end parsing (PacketTooShort)
            if not any(isinstance(c.keyset, A.KsDefault) or (isinstance(c.keyset, A.KsTuple) and all(
                    isinstance(k, A.KsDefault) for k in c.keyset.items)) for c in t.cases):
                return      # no case may match: parsing ends there
            todo.extend(c.state for c in t.cases)
        raise self.err(f"parser {d.name} never reaches accept or reject: its states from start loop forever", d)

    def _goto(self, name: str, spy: dict, node) -> str:
        if name == "accept":
            return "return None"
        if name == "reject":
            return "raise ParserReject(0)"
        if name not in spy:
            raise self.err(f"no state named {name}", node)
        if getattr(self, "_parser_direct", False):
            return f"return {spy[name]}()"
        return f"return {spy[name]}"

    def _to_state(self, name: str, spy: dict, node, o: Out) -> None:
        """The transition to ``name``: its state's code in place when it is inlined (see
        ``_gen_parser``), else a return of (a call of) its function."""
        ctx = getattr(self, "_parser_inline", None)
        st = ctx[0].get(name) if ctx else None
        if st is not None:
            _inline, inner, pkt, emitted, order = ctx
            if name != next((n for n in order if n not in emitted), None):
                st = None                    # not next in the source, or already generated
        if st is None:
            o(self._goto(name, spy, node))
            return
        emitted.add(name)
        sc = Scope(inner)
        self.stmts(st.stmts, sc, o, FnCtx("parser-state", VoidT(), [], pkt))
        self._parser_direct, self._parser_inline = True, ctx
        self.gen_transition(st.transition, sc, o, spy)

    def gen_transition(self, t: A.Transition, scope: Scope, o: Out, spy: dict) -> None:
        if t.state is not None:
            if self.trace:
                o(f"TR.no_switch({self._trace_state!r})")
            self._to_state(t.state, spy, t, o)
            return
        keys = []
        for i, e in enumerate(t.select):
            c, ty = self.expr(e, scope)
            if not isinstance(ty, (Bits, BoolT, EnumT, ErrorT, InfInt)):
                # p4c (type checking of SelectExpression): only scalar keys; a struct, header,
                # stack or varbit key is refused at the key
                what = "with a component of type" if not isinstance(ty, StructT) else "with type"
                raise self.err(f"expression {self.key_name(e)} {what} '{ty}' cannot be used in 'select'", e)
            k = self.fresh("k")
            o(f"{k} = {c}")
            keys.append((k, ty, e))
        if self.trace:
            o(f"TR.select_key({self._trace_state!r}, "
              f"({''.join(f'({k}, {self.trace_width(ty)}), ' for k, ty, _ in keys)}))")
        has_default = False
        for case in t.cases:
            ks = case.keyset
            items = ks.items if isinstance(ks, A.KsTuple) else [ks]
            if isinstance(ks, A.KsDefault):
                items = [ks] * len(keys)
            elif len(items) == 1 and len(keys) > 1 and isinstance(ks, A.ListExpr):
                items = ks.items
            vs = scope.lookup(ks.name) if isinstance(ks, A.Path) else None
            if isinstance(vs, InstSym) and isinstance(vs.ty, ValueSetT) and isinstance(vs.ty.elem, StructT):
                with o.block(f"if {self.struct_value_set_cond(vs, keys, ks)}:"):
                    self._to_state(case.state, spy, case, o)
                continue
            if isinstance(ks, A.Path) and len(keys) > 1 and isinstance(vs, InstSym):
                raise P4Unsupported("a value set of bit<W> matches one select key; use a value set of a "
                                    "struct to match several", ks.loc)
            if len(items) != len(keys):
                raise self.err(f"the select has {len(keys)} key(s), this case has {len(items)}", case)
            conds = []
            for (k, kty, _), it in zip(keys, items):
                try:
                    c = self.keyset_cond(k, kty, it, scope)
                except P4Error as e:
                    if type(e) is not P4Error or not e.message.startswith("type mismatch") or not t.select:
                        raise
                    # p4c reports a label of the wrong type at the select expression, the
                    # label second ("Originating from")
                    raise self.err(f"select: a case label does not match the key: {e.message} "
                                   f"(the label at {e.loc})", t.select[0]) from None
                if c != "True":
                    conds.append(c)
            if not conds:
                self._to_state(case.state, spy, case, o)
                has_default = True
                break
            with o.block(f"if {' and '.join(conds)}:"):
                self._to_state(case.state, spy, case, o)
        if not has_default:
            # no case matches: P4_16 says reject with error.NoMatch, but p4c's BMv2 JSON ends
            # the select with no transition, which BMv2 takes as accept (parser_error stays
            # NoError; checked with p4c 1.2.4.8 + BMv2 1.15.5, tests/p4/parser_select.stf)
            o("return None")

    @staticmethod
    def trace_width(ty: Ty) -> int:
        """The width the trace prints a select key with (bool: 1; enums: their representation)."""
        from ..types import BoolT
        if isinstance(ty, BoolT):
            return 1
        w = getattr(ty, "width", None) or getattr(getattr(ty, "repr", None), "width", None)
        return w if isinstance(w, int) else 32

    def struct_value_set_cond(self, vs: InstSym, keys: list, node) -> str:
        """``select(k1, k2) { vs: ... }`` with ``value_set<S>``: one key per field of S, matched
        as the fields concatenated (first key in the most significant bits)."""
        st = vs.ty.elem
        if len(keys) != len(st.fields):
            raise self.err(f"value set of {st} has {len(st.fields)} field(s), the select has {len(keys)} key(s)",
                           node)
        parts, shift = [], 0
        for (k, kty, ke), (fname, _, fty) in reversed(list(zip(keys, st.fields))):
            self.check_assignable(fty, kty, ke)
            w = self.bit_width(fty, ke)
            v = f"int({k})" if isinstance(fty, BoolT) else f"({k} & {(1 << w) - 1:#x})"
            parts.append(f"({v} << {shift})" if shift else v)
            shift += w
        return f"{vs.py}.match({' | '.join(reversed(parts))})"

    def require_constant_keyset(self, e: A.Expr, scope: Scope) -> None:
        """A select case (value, mask, range bound) must be known at compile time (p4c: "no
        function calls allowed in this context" for a call, "expression must evaluate to a
        constant" for a variable); the error is at the first such sub-expression."""
        def bad(x):
            if isinstance(x, A.Call):
                return x
            if isinstance(x, A.Path):
                s = (scope.root() if x.top else scope).lookup(x.name)
                return None if s is None or isinstance(s, (Const, TypeSym)) else x
            if isinstance(x, A.Member):
                return bad(x.obj)
            if isinstance(x, A.Node):
                for v in vars(x).values():
                    r = bad(v)
                    if r is not None:
                        return r
            elif isinstance(x, (list, tuple)):
                for v in x:
                    r = bad(v)
                    if r is not None:
                        return r
            return None
        x = bad(e)
        if isinstance(x, A.Call):
            raise self.err(f"{self.key_name(x.func)}: no function calls allowed in this context", x)
        if x is not None:
            raise self.err(f"{self.key_name(x)}: expression must evaluate to a constant", x)

    def keyset_cond(self, k: str, kty: Ty, it: A.Expr, scope: Scope) -> str:
        if isinstance(it, A.KsDefault):
            return "True"
        if isinstance(it, A.Path):
            vs = scope.lookup(it.name)
            if isinstance(vs, InstSym) and isinstance(vs.ty, ValueSetT):
                self.check_assignable(kty, vs.ty.elem, it)
                return f"{vs.py}.match({k})"
        self.require_constant_keyset(it, scope)
        if isinstance(it, A.KsRange):
            lo, hi = self.const_eval(it.lo, scope), self.const_eval(it.hi, scope)
            if isinstance(lo, int) and isinstance(hi, int) and not isinstance(lo, bool) and lo > hi \
                    and not getattr(kty, "signed", False):
                raise self.err(f"{self.key_name(it.lo)}..{self.key_name(it.hi)}: range end is less than start",
                               it.lo)
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


def _successors(st) -> list[str]:
    """The state names ``st``'s transition names, once per mention."""
    t = st.transition
    if t is None:
        return []
    if t.state is not None:
        return [t.state]
    return [c.state for c in t.cases]


def _acyclic(states: dict) -> bool:
    """No state can be reached again from itself (following every transition target)."""
    color: dict = {}
    succ = _successors

    def visit(n) -> bool:
        if n not in states:
            return True
        c = color.get(n)
        if c == 1:
            return False
        if c == 2:
            return True
        color[n] = 1
        for m in succ(states[n]):
            if not visit(m):
                return False
        color[n] = 2
        return True
    return all(visit(n) for n in states)
