"""Top-level declarations: errors, match kinds, types, constants, externs, blocks, actions,
functions and instantiations enter the global scope (``compile`` walks them in order).
"""
from __future__ import annotations

from .. import nodes as A
from ..errors import Loc, P4Error
from ..info import ControllerHeaderInfo, HeaderFieldInfo
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
        if not isinstance(main, InstSym):
            raise P4Error("the program has no 'main' package instantiation", Loc(self.info.source, 1, 1))
        return main

    def declare_global(self, d: A.Node) -> None:
        g = self.glob
        self.cur_loc = d.loc
        if isinstance(d, A.ErrorDecl):
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
            g.syms[name] = TypeSym(EnumT(name, list(d.members), None, {m: i for i, m in enumerate(d.members)}))
        elif isinstance(d, A.SerEnumDecl):
            self._check_redecl(name, d, g)
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
        elif isinstance(d, A.TypedefDecl):
            self._check_redecl(name, d, g)
            g.syms[name] = TypeSym(self.resolve_type(d.type, g))
        elif isinstance(d, A.ConstDecl):
            self.declare_const(d, g, self.consts_code)
        elif isinstance(d, A.ExternDecl):
            g.syms[name] = TypeSym(d)
        elif isinstance(d, A.ExternFunction):
            s = g.syms.get(name)
            if isinstance(s, ExternFuncSym):
                s.decls.append(d)
            else:
                g.syms[name] = ExternFuncSym([d])
        elif isinstance(d, (A.ParserDecl, A.ControlDecl, A.PackageDecl, A.BlockTypeDecl)):
            if name in g.syms and isinstance(g.syms[name], TypeSym) and isinstance(g.syms[name].ty, A.BlockTypeDecl) \
                    and not isinstance(d, A.BlockTypeDecl):
                pass
            elif name in g.syms:
                raise self.err(f"{name} is already declared", d)
            g.syms[name] = TypeSym(d)
        elif isinstance(d, A.ActionDecl):
            self._check_redecl(name, d, g)
            full = self.cp_name("", d.name, d.annotations)
            sym = ActionSym(d, "a_" + self._pyname(name), full)
            g.syms[name] = sym
            self.top_actions.append(sym)
        elif isinstance(d, A.FunctionDecl):
            self._check_redecl(name, d, g)
            sym = FuncSym(d, "fn_" + self._pyname(name))
            g.syms[name] = sym
            self.top_functions = getattr(self, "top_functions", [])
            self.top_functions.append(sym)
        elif isinstance(d, A.Instantiation):
            ty = self.resolve_type(d.type, g)
            g.syms[name] = InstSym("inst_" + self._pyname(name), ty, name, d,
                                   "package" if isinstance(ty, BlockT) and isinstance(ty.decl, A.PackageDecl) else "")
        else:
            raise self.err(f"unsupported declaration {type(d).__name__}", d)

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
        self.check_assignable(ty, ety, d.value)
        if isinstance(ty, Bits) and isinstance(v, int) and not isinstance(v, bool):
            v &= ty.mask
            if ty.signed and v >> (ty.width - 1):
                v -= 1 << ty.width
        elif isinstance(ty, (EnumT, ErrorT)):
            v = int(code)
        scope.syms[d.name] = Const(v, ty)

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
                raise self.err("a header can have only one varbit field", f)
            if isinstance(d, A.HeaderDecl) and not isinstance(ft, (Bits, BoolT, VarBit)) and not (
                    isinstance(ft, EnumT) and ft.repr is not None):
                raise self.err(f"header field {f.name} must be bit<W>, int<W>, bool or a serializable enum, "
                               f"not {ft}", f)
            if isinstance(ft, (ExternT, BlockT, StringT)):
                raise self.err(f"field {f.name} cannot have type {ft}", f)
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
                    fields=[HeaderFieldInfo(n, t.width if isinstance(t, Bits) else 1) for n, _, t in fields]))
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

    @staticmethod
    def ann_text(anns: dict) -> dict:
        return {k: " ".join(t.value for t in v) for k, v in anns.items()}
