"""Tables: keys, actions, default actions, const entries and their control-plane description."""
from __future__ import annotations

import linecache
import re

from .. import nodes as A
from ..info import KeyInfoP, TableActionRef, TableInfo, key_type_info
from ..types import Bits, BoolT, EnumT, ErrorT, HeaderT, InfInt
from .source_writer import Out
from .symbols import ActionSym, FnCtx, InstSym, Scope, TableSym, Var


def _is_true(prop) -> bool:
    """A table property set to the literal ``true`` (``support_timeout = true``)."""
    return prop is not None and isinstance(prop[0], A.BoolLit) and prop[0].value


def _literal_as_p4c_prints(e: A.IntLit) -> str:
    """p4c's ``Constant::toString``: the value in the base of the source text, no width."""
    text = linecache.getline(e.loc.file, e.loc.line)[max(e.loc.col - 1, 0):]
    m = re.match(r"(?:\d+[ws])?0([xXbBoO])", text)
    base = m.group(1).lower() if m else ""
    return {"x": f"0x{e.value:x}", "b": f"0b{e.value:b}", "o": f"0o{e.value:o}"}.get(base, str(e.value))


class TablesMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def key_name(self, e: A.Expr) -> str:
        """The key's control-plane name: the expression as written (p4c's convention)."""
        if isinstance(e, A.Path):
            return e.name
        if isinstance(e, A.Member):
            return f"{self.key_name(e.obj)}.{e.name}"
        if isinstance(e, A.Index):
            return f"{self.key_name(e.obj)}[{self.key_name(e.index)}]"
        if isinstance(e, A.Slice):
            return f"{self.key_name(e.obj)}[{self.key_name(e.hi)}:{self.key_name(e.lo)}]"
        if isinstance(e, A.IntLit):
            return str(e.value) if e.width is None else f"{e.width}{'s' if e.signed else 'w'}{e.value}"
        if isinstance(e, A.Call):
            return f"{self.key_name(e.func)}()"
        if isinstance(e, A.TypeMember):
            return f"{e.tname}.{e.name}"
        if isinstance(e, A.Cast):
            return self.key_name(e.e)
        if isinstance(e, A.Binary):
            if isinstance(e.r, A.IntLit):
                # p4c names ``field & 32w0xff00ff`` "field & 0xff00ff": a constant in the base it
                # was written in, without its width
                return f"{self.key_name(e.l)} {e.op} {_literal_as_p4c_prints(e.r)}"
            return f"{self.key_name(e.l)} {e.op} {self.key_name(e.r)}"
        return "key"

    def check_key_nameable(self, e: A.Expr) -> None:
        """p4c names a key without ``@name`` after its expression only when it is built from
        names, members, indexing, constants, slices, ``&`` and ``isValid()`` (frontends/p4/
        tableKeyNames); any other expression (a cast, ``+``, a call, ...) needs ``@name``.  The
        error is at the innermost such expression, where p4c reports it."""
        def walk(x) -> None:
            if isinstance(x, (A.Path, A.IntLit)):
                return
            if isinstance(x, A.Member):
                return walk(x.obj)
            if isinstance(x, A.Index):
                walk(x.obj)
                return walk(x.index)
            if isinstance(x, A.Slice):
                walk(x.obj)
                walk(x.hi)
                return walk(x.lo)
            if isinstance(x, A.Binary) and x.op == "&":
                walk(x.l)
                return walk(x.r)
            if isinstance(x, A.Call) and isinstance(x.func, A.Member) and x.func.name == "isValid" and not x.args:
                return walk(x.func.obj)
            for sub in (getattr(x, "e", None), getattr(x, "l", None), getattr(x, "r", None)):
                if isinstance(sub, A.Node):
                    walk(sub)
            raise self.err("complex key expression requires a @name annotation", x)
        walk(e)

    def gen_table(self, t: TableSym, scope: Scope, o: Out, path: str) -> None:
        d = t.decl
        self.cur_loc = d.loc
        self.claim_cp_name("table", t.full, d)
        # one table declaration in two control instances: each instance is a table of its own,
        # so an absolute @name(".t") gives two tables one P4Info name (p4c: "Name 't' is used
        # for multiple table objects in the P4Info message")
        seen = self.__dict__.setdefault("_cp_table_paths", {})
        first = seen.setdefault(t.full, path)
        if first != path:
            raise self.err(f"Name '{t.full}' is used for multiple table objects in the P4Info message "
                           f"(table {d.name} in {first} and in {path})", d)
        if d.key_after_entries:
            # p4c types the entries with the key: the key must be declared first ("Could not
            # find type for table key")
            raise self.err(f"table {d.name}: its key is declared after its entries; declare the key first",
                           d.key_loc or d)
        keys = []
        kcodes = []
        sel_codes = []      # (code, width, validity code or None) of the ``selector`` keys, hashed by the selector
        for kpos, ke in enumerate(d.keys):
            c, ty = self.expr(ke.expr, scope)
            kty = ty
            if isinstance(ty, BoolT):
                c, ty = f"int({c})", Bits(1)
            elif isinstance(ty, EnumT) and ty.repr is not None:
                ty = ty.repr
            elif isinstance(ty, ErrorT):
                ty = Bits(32)
            elif isinstance(ty, Bits) and ty.signed:
                c, ty = f"({c} & {ty.mask:#x})", Bits(ty.width)
            if not isinstance(ty, Bits):
                raise self.err(f"a table key must be bit<W>, int<W>, bool or a serializable enum, not {ty}", ke.expr)
            mk = ke.match_kind
            if mk == "selector":
                # a selector key takes no part in the match: the action selector hashes it to
                # pick a member of a group (emulation/v1model/action_profiles.py)
                if "implementation" not in d.props:
                    raise self.err("a selector key needs an action_selector implementation", ke)
                # BMv2 builds the hash input as a field list: a field of an invalid header
                # contributes no bits (calculations.cpp, BufBuilder)
                valid = None
                if isinstance(ke.expr, A.Member):
                    oc, ot = self.expr(ke.expr.obj, scope)
                    if isinstance(ot, HeaderT):
                        valid = f"{oc}._valid"
                sel_codes.append((c, ty.width, valid))
                continue
            if mk not in ("exact", "lpm", "ternary", "range", "optional"):
                raise self.err(f"unknown match kind {mk}", ke)
            nm = ke.annotations.get("name")
            if not nm:
                self.check_key_nameable(ke.expr)
            kname = nm[0].value.strip('"') if nm else self.key_name(ke.expr)
            keys.append(KeyInfoP(annotations=self.ann_text(ke.annotations), name=kname, match_kind=mk,
                                 width=ty.width, position=kpos, **key_type_info(kty)))
            kcodes.append(c)
        if sum(k.match_kind == "lpm" for k in keys) > 1:
            raise self.err(f"table {d.name} has more than one lpm key", d)
        # actions
        acts = []
        wrappers = []
        for i, ref in enumerate(d.actions):
            s = scope.lookup(ref.name)
            if not isinstance(s, ActionSym):
                raise self.err(f"{ref.name} is not an action", ref)
            acts.append((s, ref))
            params = s.decl.params
            nbound = len(ref.args or [])
            dir_params = [p for p in params if p.direction != ""]
            if nbound != len(dir_params) and nbound != 0 or (nbound == 0 and dir_params):
                raise self.err(f"action {ref.name}: {len(dir_params)} directional argument(s) must be given "
                               f"in the actions list", ref)
            if nbound:
                wname = self.fresh("ta")
                data = [p for p in params if p.direction == ""]
                dnames = [f"d{j}" for j in range(len(data))]
                with o.block(f"def {wname}({', '.join(dnames)}):"):
                    args = list(ref.args) + [A.Arg(loc=ref.loc, value=A.Path(loc=ref.loc, name=f"\0{n}"))
                                             for n in dnames]
                    sc = Scope(scope)
                    for p, n in zip(data, dnames):
                        sc.syms[f"\0{n}"] = Var(n, self.resolve_type(p.type, scope), readonly=True)
                    self.stmt(A.CallStmt(loc=ref.loc, call=A.Call(loc=ref.loc, func=A.Path(loc=ref.loc, name=ref.name),
                                                                      args=args)), sc, o, FnCtx("action"))
                wrappers.append(wname)
            else:
                wrappers.append(s.py)
        t.actions = acts
        # p4c type-checks the entries before the default action: an entry with a @defaultonly
        # action is reported first
        for en in d.entries or ():
            es = scope.lookup(en.action.name)
            if any(x is es and "defaultonly" in r.annotations for x, r in acts):
                raise self.err(f"{en.action.name}: action marked with @defaultonly used in a table entry", en)
        # default action
        dflt_name, dflt_args, const_dflt = None, [], False
        implicit_ref = None
        if "default_action" in d.props:
            e, is_const, loc = d.props["default_action"]
            const_dflt = is_const
            fnode = e.func if isinstance(e, A.Call) else e
            if not isinstance(fnode, A.Path):
                raise self.err("default_action must name an action", e)
            s = (scope.root() if fnode.top else scope).lookup(fnode.name)
            match = [x for x, _ in acts if x is s]
            if not match and any(r.name == fnode.name for _, r in acts):
                # ``.b`` names the top-level action b, not a local b in the actions list
                raise self.err(f".{fnode.name} and {fnode.name} refer to different actions (the default "
                               f"action of table {d.name} must be one of its actions)", e)
            if not match:
                raise self.err(f"default action {fnode.name} is not in the actions list of table {d.name}", e)
            if any(x is s and "tableonly" in r.annotations for x, r in acts):
                raise self.err(f"{fnode.name}: action marked with @tableonly used as the default action", e)
            dflt_name = s.full
            if isinstance(e, A.Call):
                data = [p for p in s.decl.params if p.direction == ""]
                given = [a for a in e.args]
                ndir = len([p for p in s.decl.params if p.direction != ""])
                given = given[ndir:] if len(given) == len(s.decl.params) else given
                if len(given) != len(data):
                    raise self.err(f"default action {fnode.name} takes {len(data)} action data argument(s)", e)
                dflt_args = self.const_action_data(data, given, scope, "default action")
            elif [p for p in s.decl.params if p.direction == ""]:
                raise self.err(f"default action {fnode.name} needs its action data arguments", e)
        else:
            s = scope.lookup("NoAction")
            if isinstance(s, ActionSym) and not any(x is s for x, _ in acts):
                # BMv2: a table without default_action uses NoAction, added implicitly; p4c's
                # front end (CreateBuiltins) adds it as ``@defaultonly NoAction``, which P4Info
                # shows (the BMv2 JSON does not restrict it, so the table here does not either)
                implicit_ref = A.ActionRef(loc=d.loc, name="NoAction", annotations={})
                acts.append((s, implicit_ref))
                wrappers.append(s.py)
            dflt_name = "NoAction"
        size = 1024
        if "size" in d.props:
            size = self.const_int(d.props["size"][0], scope, "table size")
        dc = dm = None
        for pn in ("counters", "meters"):
            if pn in d.props:
                e = d.props[pn][0]
                s = scope.lookup(e.name) if isinstance(e, A.Path) else None
                if not isinstance(s, InstSym):
                    raise self.err(f"{pn} must name a direct counter/meter instance", e)
                if pn == "counters":
                    dc = s
                else:
                    dm = s
        impl = None         # the action profile/selector instance (InstSym) of an indirect table
        if "implementation" in d.props:
            impl = self.table_implementation(d, t.full, scope, o)
            if sel_codes and impl.ty.decl.name != "action_selector":
                raise self.err("selector keys need an action_selector implementation",
                               d.props["implementation"][0])
        tinfo = TableInfo(annotations=self.ann_text(d.annotations), name=t.full, keys=keys,
                          order=getattr(self, "_cp_item", ()),
                          actions=[TableActionRef(annotations=self.ann_text(r.annotations), name=s.full,
                                                  default_only="defaultonly" in r.annotations
                                                  or r is implicit_ref,
                                                  table_only="tableonly" in r.annotations) for s, r in acts],
                          default_action=dflt_name, default_args=dflt_args, const_default_action=const_dflt,
                          has_const_entries=bool(d.entries) and d.const_entries,
                          has_initial_entries=bool(d.entries), size=size,
                          support_timeout=_is_true(d.props.get("support_timeout")),
                          direct_counter=dc.full if dc else None, direct_meter=dm.full if dm else None,
                          implementation=impl.full if impl else None, applied_sites=t.applied,
                          key_annotations=[self.ann_text(ke.annotations) for ke in d.keys])
        self.info.tables.append(tinfo)
        for ei in self.info.externs:
            if dc is not None and ei.name == dc.full or dm is not None and ei.name == dm.full:
                ei.table = t.full
        tpy = self.fresh("T_" + d.name)
        ka = ", ".join(f"KeyInfo({k.name!r}, {k.match_kind!r}, {k.width})" for k in keys)
        aa = []
        for i, ((s, r), w) in enumerate(zip(acts, wrappers)):
            data = [(p.name, self.bit_width(self.resolve_type(p.type, scope), p)) for p in s.decl.params
                    if p.direction == ""]
            aa.append(f"ActionInfo({s.full!r}, {i}, {data!r}, {w}, {'defaultonly' in r.annotations}, "
                      f"{'tableonly' in r.annotations})")
        tcls, tprof = ("IndirectTable", f", profile={impl.py}") if impl else ("Table", "")
        o(f"{tpy} = {tcls}({t.full!r}, [{ka}], [{', '.join(aa)}], ({dflt_name!r}, {dflt_args!r}), "
          f"const_default={const_dflt}, const_entries={bool(d.entries) and d.const_entries}, size={size}, "
          f"direct_counter={dc.py if dc else None}, direct_meter={dm.py if dm else None}{tprof})")
        o(f"REG.tables[{t.full!r}] = {tpy}")
        if d.entries:
            self.gen_entries(d, tpy, keys, acts, scope, o)
        if len(kcodes) == 1:
            kexpr = kcodes[0]
        elif kcodes:
            kexpr = "(" + ", ".join(kcodes) + ")"
        else:
            kexpr = "()"
        with o.block(f"def {t.py}():"):
            if self.trace:
                o(f"_k = {kexpr}")
                o(f"TR.table_lookup({tpy}, _k)")
                kexpr = "_k"
            if impl is not None:
                sel = "".join(f"({c}, {w}), " if v is None else f"(({c}, {w}) if {v} else (0, 0)), "
                              for c, w, v in sel_codes)
                o(f"r = {tpy}.lookup_indirect({kexpr}, ({sel}))")
            else:
                o(f"r = {tpy}.lookup({kexpr})")
            if self.trace:
                o(f"TR.table_result({tpy}, r)")
            o("r[0](*r[1])")
            o("return r")

    def table_implementation(self, d: A.TableDecl, table_full: str, scope: Scope, o: Out) -> InstSym:
        """The ``implementation`` of a table: a named action_profile/action_selector instance, or
        one constructed in the property (then named after the table, as p4c names it)."""
        e = d.props["implementation"][0]
        kinds = ("action_profile", "action_selector")
        if isinstance(e, A.Path):
            s = scope.lookup(e.name)
            if isinstance(s, InstSym) and getattr(s.ty, "decl", None) is not None and s.ty.decl.name in kinds:
                return s
        elif isinstance(e, A.CtorCall) and e.tname in kinds:
            ty = self.resolve_type(A.TName(loc=e.loc, name=e.tname), scope)
            # p4c names a profile constructed in the property after the property's @name, as
            # written (P4Runtime refuses one without: "anonymous table property"), and gives it
            # the property's annotations (control-plane/p4RuntimeArchHandler.cpp)
            anns = getattr(d, "prop_annotations", {}).get("implementation") or {}
            name = " ".join(t.value for t in anns.get("name", ())).strip()
            full = name[1:-1] if len(name) >= 2 and name[0] == name[-1] == '"' else table_full
            s = InstSym(self.fresh("x_" + d.name + "_impl"), ty, full, None, "extern", e.args)
            n = len(self.info.externs)
            self.hooks.extern_instance(self, s, e.args, o, scope)
            for ei in self.info.externs[n:]:
                ei.annotations = self.ann_text(anns)
                ei.order = getattr(self, "_cp_item", ())     # p4c lists it with its table
            return s
        raise self.err("implementation must be an action_profile or action_selector", e)

    def const_action_data(self, params: list, args: list, scope: Scope, what: str) -> list[int]:
        """Compile-time values of action data arguments (default actions, const entries)."""
        out = []
        for p, a in zip(params, args):
            pt = self.resolve_type(p.type, scope)
            _, at = self.expr(a.value, scope, pt)
            if not isinstance(at, InfInt):
                # a typed argument must have the parameter's type (no implicit cast of bit<W>
                # to a serializable enum, nor between widths)
                self.check_assignable(pt, at, a.value)
            v = self.const_eval(a.value, scope)
            if v is None:
                c, _ = self.expr(a.value, scope, pt)
                try:
                    v = int(c)
                except ValueError:
                    raise self.err(f"{what} arguments must be compile-time constants", a.value) from None
            out.append(int(v) & ((1 << self.bit_width(pt, p)) - 1))
        return out

    def check_entry_priorities(self, d: A.TableDecl, scope: Scope) -> None:
        """p4c's rules for ``priority=`` in (non-const) ``entries`` (frontends/p4/entryPriorities):
        priorities need a key that is not all exact/lpm, the first entry must then have one,
        and the computed priorities (each entry without one gets the previous one minus
        ``priority_delta``, or plus it with ``largest_priority_wins = false``) must not leave
        the range of an unsigned 64-bit number."""
        if d.const_entries or not d.entries:
            return None     # priorities in const entries: refused as a BMv2 limit (bmv2_limits)
        top = (1 << 64) - 1
        largest = True
        if "largest_priority_wins" in d.props:
            v = self.const_eval(d.props["largest_priority_wins"][0], scope)
            largest = bool(v) if v is not None else True
        delta = 1
        if "priority_delta" in d.props:
            e = d.props["priority_delta"][0]
            delta = self.const_int(e, scope, "priority_delta")
            if not 0 <= delta <= top:
                raise self.err("priority_delta must be a positive value", e)
        given = [en for en in d.entries if en.priority is not None]
        cur = 1
        if not given:
            if 1 + delta * len(d.entries) > top:
                raise self.err(f"{d.name}: overflow in priority computation", d)
            return None
        if all(k.match_kind in ("exact", "lpm") for k in d.keys):
            raise self.err("the key match types do not require priorities, but some entries specify one",
                           d.key_loc or d)
        prios = []
        for i, en in enumerate(d.entries):
            if en.priority is not None:
                cur = self.const_int(en.priority, scope, "priority")
                if cur < 0:
                    raise self.err("a priority must be a positive value", en.priority)
            elif i == 0:
                raise self.err("the first entry must have a priority (later ones follow from it)", en)
            prios.append(cur if largest else -cur)      # the tables here: a larger number wins
            nxt = cur - delta if largest else cur + delta
            if not 0 <= nxt <= top:
                raise self.err(f"{d.name}: overflow in priority computation", d)
            cur = nxt
        return prios

    def gen_entries(self, d: A.TableDecl, tpy: str, keys: list, acts: list, scope: Scope, o: Out) -> None:
        for en in d.entries:
            # p4c resolves every name before it checks types: an unknown action comes first
            if not isinstance(scope.lookup(en.action.name), ActionSym):
                raise self.err(f"could not find declaration for {en.action.name} (an action)", en.action)
        if not d.keys:
            raise self.err(f"entries cannot be specified for a table with no key ({d.name})", d.name_loc or d)
        derived = self.check_entry_priorities(d, scope)
        n = len(d.entries)
        explicit = any(en.priority is not None or "priority" in en.annotations for en in d.entries)
        annotated = any("priority" in en.annotations for en in d.entries)
        for i, en in enumerate(d.entries):
            ks = en.keyset
            items = ks.items if isinstance(ks, A.KsTuple) else [ks]
            if isinstance(ks, A.ListExpr):
                items = ks.items
            if isinstance(ks, A.KsDefault) and len(keys) > 1:
                items = [ks] * len(keys)
            if len(items) != len(keys):
                raise self.err(f"the entry has {len(items)} key value(s), the table has {len(keys)} key(s)", en)
            specs = []
            for k, it in zip(keys, items):
                specs.append(self.entry_spec(k, it, scope))
            s = scope.lookup(en.action.name)
            if not any(x is s for x, _ in acts):
                raise self.err(f"{en.action.name} is not an action of table {d.name}", en)
            if any(x is s and "defaultonly" in r.annotations for x, r in acts):
                # p4c (type checking of entries): a @defaultonly action cannot be an entry's action
                raise self.err(f"{en.action.name}: action marked with @defaultonly used in a table entry", en)
            data = [p for p in s.decl.params if p.direction == ""]
            if len(en.action.args) != len(data):
                raise self.err(f"action {en.action.name} takes {len(data)} argument(s)", en)
            args = self.const_action_data(data, en.action.args, scope, "entry action")
            prio = None
            if derived is not None:
                prio = derived[i]
            elif en.priority is not None:
                prio = self.const_int(en.priority, scope, "priority")
            elif "priority" in en.annotations:
                # the @priority annotation carries BMv2's convention (a smaller number wins);
                # the table here lets a larger priority win, so negate it
                prio = -int(en.annotations["priority"][0].value, 0)
            needs = any(k.match_kind in ("ternary", "range", "optional") for k in keys)
            if needs and prio is None:
                if annotated:
                    prio = -(i + 1)     # p4c: an un-annotated entry's priority is its 1-based position
                else:
                    prio = n - i if not explicit else 1
            if not needs:
                prio = None
            o(f"{tpy}.add([{', '.join(specs)}], {s.full!r}, {args!r}, {prio!r}, _const=True)")

    def entry_spec(self, k: KeyInfoP, it: A.Expr, scope: Scope) -> str:
        w = k.width
        m = (1 << w) - 1
        kind = k.match_kind

        def val(e):
            v = self.const_eval(e, scope)
            if v is None:
                c, t = self.expr(e, scope, Bits(w))
                try:
                    v = int(c)
                except ValueError:
                    raise self.err("entry key values must be compile-time constants", e) from None
            if isinstance(v, bool):
                v = int(v)
            return v & m
        if isinstance(it, A.KsDefault):
            return {"exact": None, "lpm": "Lpm(0, 0)", "ternary": "Ternary(0, 0)", "range": f"Range(0, {m})",
                    "optional": "Optional_(None)"}.get(kind) or self._bad_default(it)
        if isinstance(it, A.KsMask):
            v, mk = val(it.value), val(it.mask)
            if kind == "lpm":
                plen = bin(mk).count("1")
                if mk != ((m >> (w - plen)) << (w - plen)) if plen else mk != 0:
                    raise self.err("an lpm entry needs a prefix mask", it)
                return f"Lpm({v & mk}, {plen})"
            if kind in ("ternary",):
                return f"Ternary({v & mk}, {mk})"
            raise self.err(f"a mask is not allowed for a {kind} key", it)
        if isinstance(it, A.KsRange):
            if kind != "range":
                raise self.err(f"a range is not allowed for a {kind} key", it)
            return f"Range({val(it.lo)}, {val(it.hi)})"
        v = val(it)
        return {"exact": f"Exact({v})", "lpm": f"Lpm({v}, {w})", "ternary": f"Ternary({v}, {m})",
                "range": f"Range({v}, {v})", "optional": f"Optional_({v})"}[kind]

    def _bad_default(self, it):
        raise self.err("an exact key cannot be a wildcard", it)
