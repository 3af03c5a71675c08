"""Top-level declarations: errors, match kinds, types, constants, externs, blocks, actions,
functions and instantiations enter the global scope (``compile`` walks them in order).
"""
from __future__ import annotations

from .. import nodes as A
from ..errors import Loc, P4Error, P4NotRunnable
from ..info import (ControllerHeaderInfo, SerializableEnumInfo, StructuredText, controller_header_fields,
                    new_type_info)
from ..types import Bits, BlockT, BoolT, EnumT, ErrorT, ExternT, HeaderT, StringT, StructT, Ty, VarBit
from .source_writer import Out
from .symbols import ActionSym, Const, ExternFuncSym, FuncSym, InstSym, Scope, TypeSym, Var, pyfield


class DeclarationsMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

    def compile(self) -> tuple[str, dict]:
        g = self.glob
        for d in self.prog.decls:
            self.declare_global(d)
        main = g.syms.get("main")
        if main is not None and not isinstance(main, InstSym):
            # p4c: the name 'main' is kept for the package instance the target runs
            d = next((d for d in self.prog.decls if getattr(d, "name", None) == "main"), None)
            raise self.err("main: must be a package instantiation", d)
        if not isinstance(main, InstSym):
            # p4c type-checks every declaration: report an error inside the program before
            # saying that it has no main (nothing is instantiated, so compile each block once)
            self.check_unused_blocks()
            raise P4NotRunnable("the program has no 'main' package instantiation", Loc(self.info.source, 1, 1))
        return main

    def check_unused_blocks(self, only: set[str] | None = None) -> None:
        """Compile top-level actions, functions and every parser/control that needs no
        constructor or type arguments (those named in ``only``, if given), only for their
        errors (the code is dropped)."""
        self._factories, self._fn_indent, self._fn_sink = [], 1, []
        body = Out()
        body.ind = 1
        for a in self.top_actions:
            self.gen_action(a, self.glob, body, [])
        for f in getattr(self, "top_functions", []):
            if not f.decl.type_params:      # a generic one is compiled per call (its type arguments)
                self.ensure_function(f, self.glob)
        for d in self.prog.decls:
            if isinstance(d, (A.ControlDecl, A.ParserDecl)) and not d.ctor_params and not d.type_params \
                    and (only is None or d.name in only):
                self.gen_block_instance(d, d.name, {}, self.glob)

    def check_blocks_main_skips(self) -> None:
        """p4c type-checks every parser and control, instantiated or not: the ones ``main``
        never reaches (and that need no constructor or type arguments) are compiled by a second,
        throw-away compiler, only for their errors."""
        skipped = {d.name for d in self.prog.decls
                   if isinstance(d, (A.ControlDecl, A.ParserDecl)) and not d.ctor_params and not d.type_params
                   and d.name not in self.blocks_compiled}
        if not skipped:
            return
        other = type(self)(self.prog, type(self.hooks)(), self.info.source, vectorize=False)
        for d in self.prog.decls:
            other.declare_global(d)
        other.check_unused_blocks(skipped)

    def declare_global(self, d: A.Node) -> None:
        g = self.glob
        self.cur_loc = d.loc
        if isinstance(d, A.ErrorDecl):
            self._check_unique_members(d, d.members, "error")
            for m in d.members:
                if m not in self.errors_list:
                    self.errors_list.append(m)
            return
        if isinstance(d, A.MatchKindDecl):
            self.match_kinds.extend(d.members)
            return
        name = d.name
        if isinstance(d, (A.HeaderDecl, A.StructDecl)):
            self._check_redecl(name, d, g)
            ty = self.declare_fields_type(d, g)
            g.syms[name] = TypeSym(ty)
        elif isinstance(d, A.EnumDecl):
            self._check_redecl(name, d, g)
            self._check_unique_members(d, d.members, f"enum {name}")
            g.syms[name] = TypeSym(EnumT(name, list(d.members), None, {m: i for i, m in enumerate(d.members)}))
        elif isinstance(d, A.SerEnumDecl):
            self._check_redecl(name, d, g)
            self._check_unique_members(d, [m for m, _ in d.members], f"enum {name}")
            if isinstance(d.type, A.TName) and d.type.name in self._newtype_names():
                # p4c: a serializable enum's type is bit<W> or int<W> (a typedef of one), never a
                # ``type`` (P4_16 spec 7.2.1)
                raise self.err(f"{d.type.name}: Illegal type for enum; only bit<> and int<> are allowed", d.type)
            rt = self.resolve_type(d.type, g)
            if not isinstance(rt, Bits):
                raise self.err(f"a serializable enum needs a bit<W> or int<W> type, not {rt}", d)
            vals = {}
            for m, e in d.members:
                v = self.const_eval(e, g)
                if not isinstance(v, int):
                    raise self.err(f"enum member {m} needs a constant value", e)
                vals[m] = v & rt.mask if not rt.signed else v
            g.syms[name] = TypeSym(EnumT(name, [m for m, _ in d.members], rt, vals))
            self.info.serializable_enums.append(SerializableEnumInfo(
                name, rt.width, [(m, vals[m] & rt.mask) for m, _ in d.members]))
        elif isinstance(d, A.TypedefDecl):
            self._check_redecl(name, d, g)
            if d.newtype or (isinstance(d.type, A.TName) and d.type.name in self._newtype_names()):
                self._newtype_names().add(name)     # a ``type``, or a typedef of one
            ty = self.resolve_type(d.type, g)
            if d.newtype and not isinstance(ty, (Bits, BoolT)):
                # P4_16 spec 7.6 (``type``): only base types or other ``type`` names; p4c: "`type'
                # can only be applied to base types"
                raise self.err(f"{name}: 'type' can only be applied to base types, not {ty}", d)
            if d.newtype and isinstance(ty, Bits):
                # P4Info names a ``type`` (``type_name``, ``type_info.new_types``)
                ty = Bits(ty.width, ty.signed, name)
                self.info.new_types[name] = new_type_info(name, ty.width, ty.signed, self.ann_text(d.annotations))
            g.syms[name] = TypeSym(ty)
        elif isinstance(d, A.ConstDecl):
            self._check_redecl(name, d, g)
            self.declare_const(d, g, self.consts_code)
        elif isinstance(d, A.ExternDecl):
            self._check_method_overloads(d)
            for m in d.methods:
                self.check_no_block_params(m.params, list(d.type_params) + list(m.type_params))
            g.syms[name] = TypeSym(d)
        elif isinstance(d, A.ExternFunction):
            self.check_no_block_params(d.params, d.type_params)
            s = g.syms.get(name)
            if isinstance(s, TypeSym) and isinstance(s.ty, (A.ParserDecl, A.ControlDecl)):
                if s.func is None:
                    s.func = ExternFuncSym([])
                s.func.decls.append(d)
            elif isinstance(s, ExternFuncSym):
                s.decls.append(d)
            else:
                g.syms[name] = ExternFuncSym([d])
        elif isinstance(d, (A.ParserDecl, A.ControlDecl, A.PackageDecl, A.BlockTypeDecl)):
            self._check_decl_params(d)
            if name in g.syms and isinstance(g.syms[name], TypeSym) and isinstance(g.syms[name].ty, A.BlockTypeDecl) \
                    and not isinstance(d, A.BlockTypeDecl):
                pass
            elif name in g.syms and not (isinstance(g.syms[name], ExternFuncSym)
                                         and isinstance(d, (A.ParserDecl, A.ControlDecl))):
                raise self.err(f"{name} is already declared", d)
            # (a parser or control may take an extern function's name, as p4c's
            # issue1653-complex-bmv2.p4 does with verify_checksum: calls still reach the function)
            prev = g.syms.get(name)
            g.syms[name] = TypeSym(d, func=prev if isinstance(prev, ExternFuncSym) else None)
        elif isinstance(d, A.ActionDecl):
            self._check_redecl(name, d, g)
            self.check_no_block_params(d.params, [])
            full = self.cp_name("", d.name, d.annotations)
            sym = ActionSym(d, "a_" + self._pyname(name), full)
            g.syms[name] = sym
            self.top_actions.append(sym)
        elif isinstance(d, A.FunctionDecl):
            self._check_redecl(name, d, g)
            self.check_no_block_params(d.params, getattr(d, "type_params", []))
            sym = FuncSym(d, "fn_" + self._pyname(name))
            g.syms[name] = sym
            self.top_functions = getattr(self, "top_functions", [])
            self.top_functions.append(sym)
        elif isinstance(d, A.Instantiation):
            ty = self.resolve_type(d.type, g)
            # (a top-level instance's control-plane name follows its @name, as p4c names it)
            g.syms[name] = InstSym("inst_" + self._pyname(name), ty, self.cp_name("", name, d.annotations), d,
                                   "package" if isinstance(ty, BlockT) and isinstance(ty.decl, A.PackageDecl) else "")
        else:
            raise self.err(f"unsupported declaration {type(d).__name__}", d)

    def _check_decl_params(self, d) -> None:
        """Parameters of a parser, control, package or their types: a name is not also a type
        parameter's, and a string or extern object is passed without a direction (P4_16 spec
        6.8: extern objects are directionless; p4c: "a parameter with type string cannot have a
        direction")."""
        tps = set(getattr(d, "type_params", []) or [])
        for p in list(d.params) + list(getattr(d, "ctor_params", []) or []):
            where = getattr(p, "name_loc", None) or p.loc
            if p.name in tps:
                raise P4Error(f"{p.name}: duplicate name: {d.name} has a type parameter {p.name}", where)
            if not p.direction or getattr(p.type, "name", None) in tps:
                continue
            try:
                ty = self.resolve_type(p.type, self.glob)
            except P4Error:
                continue    # reported where the declaration is used, with the right type arguments
            if isinstance(ty, (StringT, ExternT)):
                raise P4Error(f"{p.name}: a parameter with type {ty} cannot have a direction", where)

    def check_no_block_params(self, params, type_params) -> None:
        """A parser, control or package is passed only as a constructor parameter of a parser,
        control or package (P4_16 spec 10.3): an action, function or extern (method or
        constructor) parameter cannot have such a type (p4c: "parameter cannot have type")."""
        tps = set(type_params or [])
        for p in params:
            if getattr(p.type, "name", None) in tps:
                continue
            try:
                ty = self.resolve_type(p.type, self.glob)
            except P4Error:
                continue
            if isinstance(ty, BlockT):
                kind = getattr(ty.decl, "kind", "") or type(ty.decl).__name__.replace("Decl", "").lower()
                raise P4Error(f"{p.name}: parameter cannot have type {kind} {ty}",
                              getattr(p, "name_loc", None) or p.loc)

    def _check_unique_members(self, d, members, what: str) -> None:
        """Members of an error, enum or serializable enum declaration are distinct names."""
        seen = set()
        for m in members:
            if m in seen:
                raise P4Error(f"{m}: duplicate member of {what}", getattr(m, "loc", None) or d.loc)
            seen.add(m)

    def _check_method_overloads(self, d: A.ExternDecl) -> None:
        """Methods of one extern that share a name must differ in their number of parameters:
        calls pick the overload by argument count (p4c: "Ambiguous method ... with N parameters")."""
        seen: dict = {}
        for m in getattr(d, "methods", []) or []:
            if any(p.default is not None or "optional" in p.annotations for p in m.params):
                continue
            key = (m.name, len(m.params))
            if key in seen:
                raise self.err(f"ambiguous method {m.name} of extern {d.name}: two declarations with "
                               f"{len(m.params)} parameter(s) (the other is at {m.loc})", seen[key])
            seen[key] = m

    def declare_const(self, d: A.ConstDecl, scope: Scope, out: Out) -> None:
        ty = self.resolve_type(d.type, scope)
        v = self.const_eval(d.value, scope)
        if v is None:
            # a structured constant (e.g. a tuple or a struct): evaluate as an expression
            code, ety = self.expr(d.value, scope, ty)
            py = self.fresh("c_" + d.name)
            out(f"{py} = {code}")
            scope.syms[d.name] = Var(py, ty, readonly=True)
            return
        code, ety = self.expr(d.value, scope, ty)
        self.check_init(ty, ety, d.value)
        if isinstance(ty, Bits) and isinstance(v, int) and not isinstance(v, bool):
            v &= ty.mask
            if ty.signed and v >> (ty.width - 1):
                v -= 1 << ty.width
        elif isinstance(ty, (EnumT, ErrorT)):
            v = int(code)
        scope.syms[d.name] = Const(v, ty)

    def _newtype_names(self) -> set:
        """Names declared with ``type`` (and typedefs of them)."""
        if not hasattr(self, "_newtypes"):
            self._newtypes = set()
        return self._newtypes

    def _check_match_annotation(self, f) -> None:
        """``@match(k)`` on a field (a value set's struct) names a match kind (p4c: "value must
        be a match_kind")."""
        body = f.annotations.get("match")
        if body is None:
            return
        text = "".join(getattr(t, "value", str(t)) for t in body)
        if not (len(body) == 1 and text in self.match_kinds):
            raise self.err(f"{text}: value must be a match_kind", f)

    def declare_fields_type(self, d, scope) -> Ty:
        fields = []
        fann = {}
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise self.err(f"duplicate field {f.name}", f)
            seen.add(f.name)
            ft = self.resolve_type(f.type, scope)
            if isinstance(ft, VarBit) and not isinstance(d, A.HeaderDecl):
                raise self.err("varbit fields are only allowed in headers", f)
            if isinstance(ft, VarBit) and any(isinstance(t, VarBit) for _, _, t in fields):
                first = next(x for x, (_, _, t) in zip(d.fields, fields) if isinstance(t, VarBit))
                # (p4c: at the first of them, "x and u: multiple varbit fields in a header")
                raise self.err(f"{first.name} and {f.name}: multiple varbit fields in a header; a header can "
                               "have only one varbit field", first)
            if isinstance(d, A.HeaderDecl) and not isinstance(ft, (Bits, BoolT, VarBit)) and not (
                    isinstance(ft, EnumT) and ft.repr is not None) and not self._flat_struct(ft):
                raise self.err(f"header field {f.name} must be bit<W>, int<W>, bool or a serializable enum, "
                               f"not {ft}", f)
            if isinstance(ft, (ExternT, BlockT, StringT)):
                raise self.err(f"field {f.name} cannot have type {ft}", f)
            self._check_match_annotation(f)
            fields.append((f.name, pyfield(f.name), ft))
            fann[f.name] = f.annotations
        cls = ("H_" if isinstance(d, A.HeaderDecl) else "S_") + d.name
        if isinstance(d, A.HeaderDecl):
            ty = HeaderT(d.name, fields, d.annotations, cls)
            w = ty.width
            if w % 8 and ty.varbit is not None:
                raise self.err(f"header {d.name} with a varbit field is {w} bits long without it; "
                               f"such headers must be a whole number of bytes", d)
            # like p4c's BMv2 back end, a header that is not a whole number of bytes gets hidden
            # padding bits at its end (kept from the packet, emitted back, zero after setValid)
            self.headers.append(ty)
            self.gen_header_class(ty)
            if "controller_header" in d.annotations:
                body = d.annotations["controller_header"]
                nm = body[0].value.strip('"') if body else ""
                self.info.controller_headers.append(ControllerHeaderInfo(
                    annotations=self.ann_text(d.annotations), name=nm, type_name=d.name,
                    fields=controller_header_fields(fields, {n: self.ann_text(fann[n]) for n, _, _ in fields})))
        else:
            union = getattr(d, "union", False)
            if union:
                cls = "U_" + d.name
                for fn_, _, ft in fields:
                    if not isinstance(ft, HeaderT):
                        raise self.err(f"header_union member {fn_} must be a header, not {ft}", d)
            ty = StructT(d.name, fields, d.annotations, cls, fann, union)
            self.structs.append(ty)
            self.gen_struct_class(ty)
        return ty

    def _flat_struct(self, t) -> bool:
        """A struct that may be a header field (P4_16 spec 1.2.5, 7.2.2): its fields, nested
        structs included, are bit<W>, int<W>, bool or serializable enums."""
        return isinstance(t, StructT) and not t.union and all(
            isinstance(ft, (Bits, BoolT)) or (isinstance(ft, EnumT) and ft.repr is not None) or self._flat_struct(ft)
            for _, _, ft in t.fields)

    @staticmethod
    def ann_text(anns: dict) -> dict:
        # a structured annotation's text is marked as such (P4Info lists it apart)
        return {k: (StructuredText if getattr(v, "structured", False) else str)(" ".join(t.value for t in v))
                for k, v in anns.items()}


def serializable_enum_name(t: Ty) -> str:
    """The name of a serializable enum type (``enum bit<8> E``), ``""`` for any other type."""
    return t.name if isinstance(t, EnumT) and t.repr is not None else ""
