"""Type checking and code generation: P4_16 AST -> one Python module per program.

One pass over the program does both jobs: every expression is typed (with ``file:line:col``
errors for what the language forbids) and lowered to a Python expression string in the
same step, so there is one source of truth for what an operator means.  The output is
ordinary Python source, compiled once with ``compile()``; no AST is walked per packet.

Lowering rules (P4_16 spec, section 8):
* ``bit<W>`` values are Python ints in ``[0, 2^W)``; ``int<W>`` values are Python ints in
  ``[-2^(W-1), 2^(W-1))``; every operator re-establishes that range (wrap-around,
  saturation, truncating casts).  ``bool`` is ``bool``; ``error`` and enums are ints.
* headers and structs are generated ``__slots__`` classes; a header's validity bit is
  ``_valid``; composite assignment copies in place (``dst._set(src)``), so references
  handed to actions and sub-controls keep seeing the same objects.
* parsers and controls become *factories* (one per declaration) that build one instance
  per instance path; their parameters and control-level variables are closure cells
  shared by the instance's actions, tables and ``apply``.
* ``out``/``inout`` parameters of scalar type are returned (copy-out); composite ones are
  passed by reference.

The architecture (v1model) is not known here: extern objects and extern functions are
lowered through :class:`ArchHooks`, which ``emulation/v1model/arch.py`` implements.
"""
from __future__ import annotations

import keyword
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from . import ast as A
from .errors import Loc, P4Error, P4Unsupported
from .info import (ActionInfoP, ControllerHeaderInfo, ExternInstanceInfo, HeaderFieldInfo, KeyInfoP, ParamInfo,
                   ProgramInfo, TableActionRef, TableInfo)
from .types import (ActionT, AnyT, ApplyResultT, Bits, BlockT, BoolT, EnumT, ErrorT, ExternT, HeaderT, InfInt,
                    StackT, StringT, StructT, TableT, TupleT, Ty, TypeVarT, ValueSetT, VarBit, VoidT, is_composite,
                    same)

CORE_ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort", "ParserTimeout",
               "ParserInvalidArgument"]


def pyfield(name: str) -> str:
    """Python attribute name for a P4 field."""
    if keyword.iskeyword(name) or name.startswith("_") or name in ("setValid", "setInvalid", "isValid"):
        return "f_" + name
    return name


# ====================================================================== symbols
@dataclass
class Var:
    py: str
    ty: Ty
    readonly: bool = False
    cell: bool = False          # a closure cell of an instance factory
    direction: str = ""


@dataclass
class Const:
    value: Any
    ty: Ty


@dataclass
class TypeSym:
    ty: Any                     # Ty, or a declaration (extern/parser/control/package) for generic ones


@dataclass
class ActionSym:
    decl: A.ActionDecl
    py: str
    full: str                   # control-plane name
    owner: Any = None


@dataclass
class FuncSym:
    decl: A.FunctionDecl
    py: str
    ret: Ty = None
    params: list = field(default_factory=list)   # [(name, dir, Ty)]


@dataclass
class ExternFuncSym:
    decls: list


@dataclass
class InstSym:
    py: str
    ty: Ty
    full: str
    decl: Any = None            # the Instantiation
    kind: str = ""              # extern | control | parser
    args: list = field(default_factory=list)


@dataclass
class TableSym:
    decl: A.TableDecl
    py: str
    full: str
    actions: list = field(default_factory=list)  # [(ActionSym, ActionRef)]
    applied: Any = None         # where it is applied (at most one call site per control)


class Scope:
    def __init__(self, parent: Optional["Scope"] = None):
        self.parent = parent
        self.syms: dict[str, Any] = {}

    def lookup(self, name: str):
        s = self
        while s is not None:
            v = s.syms.get(name)
            if v is not None:
                return v
            s = s.parent
        return None

    def root(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


class Out:
    def __init__(self):
        self.lines: list[str] = []
        self.ind = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.ind + line)

    @contextmanager
    def block(self, header: str):
        self(header)
        self.ind += 1
        n = len(self.lines)
        yield
        if len(self.lines) == n:
            self("pass")
        self.ind -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class FnCtx:
    """What a ``return`` needs to know in the function being generated."""
    kind: str                   # action | function | control | parser-state
    ret: Ty = VoidT()
    outs: list = field(default_factory=list)     # py names of scalar out/inout params, returned in order
    pkt: Optional[str] = None   # parser: the packet_in python name


# ====================================================================== hooks
class ArchHooks:
    """Architecture-specific lowering (implemented by the v1model architecture)."""

    prelude: tuple = ()     # lines placed at the start of the generated build()

    def extern_instance(self, comp: "Compiler", inst: InstSym, ctor_args: list, out: Out, scope: Scope) -> None:
        raise NotImplementedError

    def extern_method(self, comp: "Compiler", inst_code: str, ety: ExternT, method: str, call: A.Call,
                      scope: Scope, out: Out, as_expr: bool) -> Optional[tuple[str, Ty]]:
        raise NotImplementedError

    def extern_function(self, comp: "Compiler", name: str, call: A.Call, scope: Scope, out: Out,
                        as_expr: bool) -> Optional[tuple[str, Ty]]:
        raise NotImplementedError


# ====================================================================== compiler
class Compiler:
    def __init__(self, program: A.Program, hooks: ArchHooks, filename: str = ""):
        self.prog = program
        self.hooks = hooks
        self.glob = Scope()
        self.info = ProgramInfo(source=filename)
        self.errors_list: list[str] = list(CORE_ERRORS)
        self.match_kinds: list[str] = []
        self.classes = Out()
        self.mod = Out()            # module-level code after the classes
        self._n = 0
        self.headers: list[HeaderT] = []
        self.structs: list[StructT] = []
        self.top_actions: list[ActionSym] = []
        self.action_infos: dict[str, ActionInfoP] = {}
        self.consts_code = Out()
        self._stmt_out = Out()
        self._lv_roots: list[str] = []
        self.cur_loc: Loc | None = None
        self._loops = 0
        self._last_obj_code: dict[int, str] = {}
        self._cur_fn: FnCtx | None = None
        self._direct_insts: dict[int, InstSym] = {}
        self._factory_args: dict[str, list[str]] = {}

    # ------------------------------------------------------------ utilities
    def fresh(self, base: str = "t") -> str:
        self._n += 1
        return f"_{base}{self._n}"

    def err(self, msg: str, node: Any) -> P4Error:
        loc = node.loc if isinstance(node, A.Node) else node if isinstance(node, Loc) else None
        return P4Error(msg, loc)

    # ------------------------------------------------------------ types
    def const_int(self, e: Any, scope: Scope, what: str = "value") -> int:
        if isinstance(e, int):
            return e
        v = self.const_eval(e, scope)
        if not isinstance(v, int) or isinstance(v, bool):
            raise self.err(f"expected a compile-time constant {what}", e)
        return v

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
                if len(args) > n:
                    raise self.err(f"{t.base.name} takes {n} type argument(s), got {len(args)}", t)
                return ExternT(s.ty, args + [AnyT()] * (n - len(args)))
            if isinstance(s.ty, Ty):
                return s.ty
            return BlockT(s.ty, type(s.ty).__name__, args)
        if isinstance(t, A.TStack):
            el = self.resolve_type(t.elem, scope)
            if not isinstance(el, HeaderT):
                raise self.err(f"header stacks need a header element type, not {el}", t)
            return StackT(el, self.const_int(t.size, scope, "stack size"))
        if isinstance(t, A.TTuple):
            return TupleT([self.resolve_type(a, scope) for a in t.args])
        raise self.err("unsupported type", t)

    # ------------------------------------------------------------ constant folding
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

    # ------------------------------------------------------------ top level
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

    def _check_redecl(self, name, d, scope):
        if name in scope.syms:
            raise self.err(f"{name} is already declared", d)

    def _pyname(self, name: str) -> str:
        return name if not keyword.iskeyword(name) else name + "_"

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

    # ------------------------------------------------------------ headers and structs
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

    def default_value(self, t: Ty) -> str:
        if isinstance(t, VarBit):
            return "(0, 0)"
        if isinstance(t, Bits) or isinstance(t, (ErrorT, EnumT)):
            if isinstance(t, EnumT) and t.repr is None:
                return "0"
            return "0"
        if isinstance(t, BoolT):
            return "False"
        if isinstance(t, (HeaderT, StructT)):
            return f"{t.cls}()"
        if isinstance(t, StackT):
            return f"Stack({t.elem.cls}, {t.size})"
        if isinstance(t, TupleT):
            return "(" + "".join(self.default_value(x) + ", " for x in t.items) + ")"
        if isinstance(t, StringT):
            return "''"
        return "None"

    def gen_header_class(self, ty: HeaderT) -> None:
        o = self.classes
        names = [p for _, p, _ in ty.fields]
        nb = (ty.width + 7) // 8
        if ty.width % 8:
            names = names + ["_pad"]
        with o.block(f"class {ty.cls}:"):
            o(f"__slots__ = {tuple(['_valid'] + names)!r}")
            o(f"_NB = {nb}")
            with o.block("def __init__(self):"):
                o("self._valid = False")
                for _, p, t in ty.fields:
                    o(f"self.{p} = {self.default_value(t)}")
                if ty.width % 8:
                    o("self._pad = 0")
            with o.block("def _copy(self):"):
                o(f"c = {ty.cls}.__new__({ty.cls})")
                o("c._valid = self._valid")
                for p in names:
                    o(f"c.{p} = self.{p}")
                o("return c")
            with o.block("def _set(self, o):"):
                o("self._valid = o._valid")
                for p in names:
                    o(f"self.{p} = o.{p}")
            with o.block("def _zero(self):"):
                for _, p, t in ty.fields:
                    o(f"self.{p} = {self.default_value(t)}")
                if ty.width % 8:
                    o("self._pad = 0")
            with o.block("def _eq(self, o):"):
                conds = " and ".join(f"self.{p} == o.{p}" for p in names if p != "_pad") or "True"
                o(f"return self._valid == o._valid and (not self._valid or ({conds}))")
            vb = ty.varbit
            if vb is None:
                self._gen_fixed_codec(ty, o, nb)
            else:
                self._gen_varbit_codec(ty, o, nb)
            with o.block("def _int(self):"):
                o("return int.from_bytes(self._bytes(), 'big')")
        o("")

    @staticmethod
    def _fw(t) -> int:
        return t.width if isinstance(t, Bits) else (t.repr.width if isinstance(t, EnumT) else 1)

    def _field_from(self, x: str, t, w: int) -> str:
        if isinstance(t, Bits) and t.signed or isinstance(t, EnumT) and t.repr is not None and t.repr.signed:
            h = 1 << (w - 1)
            return f"(({x} ^ {h:#x}) - {h:#x})"
        if isinstance(t, BoolT):
            return f"bool({x})"
        return x

    def _field_to(self, x: str, t, w: int) -> str:
        if (isinstance(t, Bits) and t.signed) or (isinstance(t, EnumT) and t.repr and t.repr.signed):
            return f"({x} & {(1 << w) - 1:#x})"
        if isinstance(t, BoolT):
            return f"int({x})"
        return x

    def _gen_fixed_codec(self, ty: HeaderT, o: Out, nb: int) -> None:
        # extraction: one big integer, then shifts and masks
        with o.block("def _extract(self, buf, off):"):
            if nb:
                o(f"v = int.from_bytes(buf[off:off + {nb}], 'big')")
            total = nb * 8
            shift = total
            for _, p, t in ty.fields:
                w = self._fw(t)
                shift -= w
                x = f"(v >> {shift})" if shift else "v"
                x = f"({x} & {(1 << w) - 1:#x})" if shift + w < total else x
                o(f"self.{p} = {self._field_from(x, t, w)}")
            if shift:
                o(f"self._pad = v & {(1 << shift) - 1:#x}")
            o("self._valid = True")
        with o.block("def _bytes(self):"):
            parts = []
            shift = total
            for _, p, t in ty.fields:
                w = self._fw(t)
                shift -= w
                x = self._field_to(f"self.{p}", t, w)
                parts.append(f"({x} << {shift})" if shift else x)
            if shift:
                parts.append("self._pad")
            if nb:
                o(f"return ({' | '.join(parts) or '0'}).to_bytes({nb}, 'big')")
            else:
                o("return b''")

    def _gen_varbit_codec(self, ty: HeaderT, o: Out, nb: int) -> None:
        """Headers with a varbit field: the field holds (value, width); sizes are dynamic."""
        vmax = ty.varbit[2].max_width
        with o.block("def _extract_v(self, pkt, vbits):"):
            o(f"if vbits > {vmax}: raise ParserReject(4)")       # HeaderTooShort (P4_16 spec 12.8.2)
            o("if vbits % 8: raise ParserReject(6)")             # ParserInvalidArgument
            o(f"n = {nb} + (vbits >> 3)")
            o("off = pkt.off")
            o("if off + n > pkt.n: raise ParserReject(1)")
            o("v = int.from_bytes(pkt.buf[off:off + n], 'big')")
            o("pos = 0")
            for _, p, t in reversed(ty.fields):
                if isinstance(t, VarBit):
                    o(f"self.{p} = ((v >> pos) & ((1 << vbits) - 1), vbits)")
                    o("pos += vbits")
                else:
                    w = self._fw(t)
                    o(f"self.{p} = {self._field_from(f'((v >> pos) & {(1 << w) - 1:#x})', t, w)}")
                    o(f"pos += {w}")
            o("pkt.off = off + n")
            o("self._valid = True")
        with o.block("def _extract(self, buf, off):"):
            o("raise ParserReject(6)")
        with o.block("def _bytes(self):"):
            o("v = 0")
            o("n = 0")
            for _, p, t in ty.fields:
                if isinstance(t, VarBit):
                    o(f"fv, fw = self.{p}")
                    o("v = (v << fw) | fv")
                    o("n += fw")
                else:
                    w = self._fw(t)
                    o(f"v = (v << {w}) | {self._field_to(f'self.{p}', t, w)}")
                    o(f"n += {w}")
            o("return v.to_bytes(n >> 3, 'big')")
        with o.block("def _nbytes(self):"):
            o(f"return {nb} + (self.{ty.varbit[1]}[1] >> 3)")

    def gen_struct_class(self, ty: StructT) -> None:
        o = self.classes
        names = [p for _, p, _ in ty.fields]
        with o.block(f"class {ty.cls}:"):
            o(f"__slots__ = {tuple(names)!r}")
            with o.block("def __init__(self):"):
                for _, p, t in ty.fields:
                    o(f"self.{p} = {self.default_value(t)}")
            with o.block("def _copy(self):"):
                o(f"c = {ty.cls}.__new__({ty.cls})")
                for _, p, t in ty.fields:
                    o(f"c.{p} = self.{p}._copy()" if is_composite(t) else f"c.{p} = self.{p}")
                o("return c")
            with o.block("def _set(self, o):"):
                for _, p, t in ty.fields:
                    o(f"self.{p}._set(o.{p})" if is_composite(t) else f"self.{p} = o.{p}")
            with o.block("def _eq(self, o):"):
                conds = [f"self.{p}._eq(o.{p})" if is_composite(t) else f"self.{p} == o.{p}"
                         for _, p, t in ty.fields]
                o(f"return {' and '.join(conds) or 'True'}")
            with o.block("def _vsize(self):"):
                # bytes of the valid headers inside (BMv2's packet length follows add/remove header)
                terms = []
                for _, p, t in ty.fields:
                    if isinstance(t, HeaderT) and t.varbit is not None:
                        terms.append(f"(self.{p}._nbytes() if self.{p}._valid else 0)")
                    elif isinstance(t, HeaderT):
                        terms.append(f"({(t.width + 7) // 8} if self.{p}._valid else 0)")
                    elif isinstance(t, StructT):
                        terms.append(f"self.{p}._vsize()")
                    elif isinstance(t, StackT) and t.elem.varbit is not None:
                        terms.append(f"sum(e._nbytes() for e in self.{p}.elems if e._valid)")
                    elif isinstance(t, StackT):
                        terms.append(f"{(t.elem.width + 7) // 8} * sum(1 for e in self.{p}.elems if e._valid)")
                o(f"return {' + '.join(terms) or '0'}")
        o("")

    # ------------------------------------------------------------ names
    def cp_name(self, path: str, local: str, anns: dict) -> str:
        """The control-plane name of an object declared at ``path`` (p4c's rules for @name)."""
        if "name" in anns and anns["name"]:
            n = anns["name"][0].value.strip('"')
            if n.startswith("."):
                return n[1:]
            local = n
        return f"{path}.{local}" if path else local

    # ------------------------------------------------------------ type checks
    def check_assignable(self, to: Ty, frm: Ty, node) -> None:
        if isinstance(to, (AnyT, TypeVarT)) or isinstance(frm, (AnyT, TypeVarT)):
            return
        if isinstance(frm, InfInt) and isinstance(to, (Bits, InfInt)):
            return
        if isinstance(to, EnumT) and isinstance(frm, EnumT) and to is frm:
            return
        if isinstance(to, (HeaderT, StructT)) and isinstance(frm, TupleT):
            return
        if isinstance(to, StructT) and isinstance(frm, StructT) and frm.name == "":
            return
        if not same(to, frm):
            raise self.err(f"type mismatch: cannot use a value of type {frm} where {to} is expected", node)

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
            return f"((({code}) + {h:#x}) & {t.mask:#x}) - {h:#x}"
        return f"(({code}) & {t.mask:#x})"

    # ------------------------------------------------------------ expressions
    def expr(self, e: A.Expr, scope: Scope, want: Optional[Ty] = None) -> tuple[str, Ty]:
        code, ty = self._expr(e, scope, want)
        if want is not None and isinstance(ty, InfInt):
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

    def x_TypeMember(self, e: A.TypeMember, scope: Scope, want):
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
        raise self.err(f"{ot} has no member {e.name}", e)

    def x_Index(self, e: A.Index, scope, want):
        oc, ot = self.expr(e.obj, scope)
        if not isinstance(ot, (StackT, TupleT)):
            raise self.err(f"cannot index a value of type {ot}", e)
        ic, it = self.expr(e.index, scope)
        if isinstance(ot, TupleT):
            i = self.const_int(e.index, scope, "tuple index")
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

    def _bmv2_unmasked_shift(self, e: A.Expr, scope, to: Bits):
        """BMv2 quirk: p4c rewrites ``x * 2^k`` into ``x << k`` and does not mask shift results,
        and BMv2 evaluates expressions in arbitrary precision; so ``(bit<16>)(ihl * 4)`` with
        ``bit<4> ihl = 5`` gives 20, not 4, on BMv2 (p4c's checksum-l4-bmv2 test relies on it).
        Reproduced only for an unsigned left shift / power-of-two product directly under a
        widening cast; everywhere else arithmetic wraps as the spec says."""
        if not isinstance(e, A.Binary) or e.op not in ("<<", "*"):
            return None
        k = None
        if e.op == "<<":
            k = self.const_eval(e.r, scope)
            base = e.l
        else:
            for a, b in ((e.l, e.r), (e.r, e.l)):
                v = self.const_eval(b, scope)
                if isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0:
                    k, base = v.bit_length() - 1, a
                    break
        if not isinstance(k, int) or isinstance(k, bool) or k < 0:
            return None
        bc, bt = self.expr(base, scope)
        if not isinstance(bt, Bits) or bt.signed or to.width <= bt.width:
            return None
        return f"(({bc} << {k}) & {to.mask:#x})"

    def x_Cast(self, e: A.Cast, scope, want):
        to = self.resolve_type(e.to, scope)
        if isinstance(to, Bits) and not to.signed:
            q = self._bmv2_unmasked_shift(e.e, scope, to)
            if q is not None:
                return q, to
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

    def _operands(self, e: A.Binary, scope, want, same_type=True):
        lc, lt = self.expr(e.l, scope, None)
        rc, rt = self.expr(e.r, scope, None)
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
            if isinstance(lt, (HeaderT, StructT, StackT)):
                code = f"{lc}._eq({rc})"
                return (code if op == "==" else f"(not {code})"), BoolT()
            return f"({lc} {op} {rc})", BoolT()
        if op in ("<", ">", "<=", ">="):
            lc, lt, rc, rt = self._operands(e, scope, None)
            if not isinstance(lt, (Bits, InfInt)):
                raise self.err(f"operator {op} needs integer operands, not {lt}", e)
            return f"({lc} {op} {rc})", BoolT()
        # arithmetic and bitwise
        lc, lt, rc, rt = self._operands(e, scope, want)
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

    # ------------------------------------------------------------ lvalues
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

    # ------------------------------------------------------------ calls
    def bind_args(self, params: list, args: list, call: A.Node, what: str) -> list:
        """Match call arguments to parameters (positional or by name); defaults fill in."""
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
                if tsym.applied is not None and tsym.applied != e.loc:
                    raise self.err(f"table {tsym.decl.name} is applied more than once in this control "
                                   f"(first at {tsym.applied}); p4c refuses this for BMv2", e)
                tsym.applied = e.loc
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
                return self.call_block_apply(oc, ot, e, scope, out)
            if isinstance(ot, ExternT):
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
            if isinstance(s, ActionSym):
                params = s.decl.params
                ptypes = [self.resolve_type(p.type, scope) for p in params]
                codes, wbs = self.gen_call_args(params, ptypes, e.args, scope, e, f"action {f.name}")
                r = self.emit_call_with_outs(s.py, codes, wbs, out, False)
                if r is not None:
                    out(r)
                return None
            if isinstance(s, FuncSym):
                self.ensure_function(s, scope)
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
                counts = sorted({len(d.params) for d in s.decls} |
                                {len([p for p in d.params if p.default is None and "optional" not in p.annotations])
                                 for d in s.decls})
                if not any(len([p for p in d.params if p.default is None and "optional" not in p.annotations])
                           <= len(e.args) <= len(d.params) for d in s.decls):
                    raise self.err(f"{f.name}: wrong number of arguments: got {len(e.args)}, expected "
                                   f"{' or '.join(map(str, counts))}", e)
                return self.hooks.extern_function(self, f.name, e, scope, out, as_expr)
            raise self.err(f"{f.name} is not callable", f)
        raise self.err("this expression is not callable", e)

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

    # ------------------------------------------------------------ statements
    def stmts(self, body: list, scope: Scope, out: Out, fn: FnCtx) -> None:
        for s in body:
            self.stmt(s, scope, out, fn)

    def stmt(self, s: A.Stmt, scope: Scope, out: Out, fn: FnCtx) -> None:
        self._cur_fn = fn
        self._stmt_out = out
        self._lv_roots = []
        self.cur_loc = s.loc
        if isinstance(s, A.Assign):
            lhs = s.lhs
            if isinstance(lhs, A.Member) and self._dynamic(lhs.obj, scope):
                # the left side is evaluated first (spec 8.x: left to right): pin the object
                # (a header picked by a run-time index or a call) before the right side runs
                oc, ot = self.expr(lhs.obj, scope)
                if isinstance(ot, (HeaderT, StructT)) and ot.field(lhs.name) is not None:
                    tmp = self.fresh("lv")
                    out(f"{tmp} = {oc}")
                    fn_, fp, ft = ot.field(lhs.name)
                    rc, rt = self.expr(s.rhs, scope, ft)
                    self.check_assignable(ft, rt, s.rhs)
                    if isinstance(ft, Bits) and isinstance(rt, Bits) and ft != rt:
                        raise self.err(f"type mismatch: cannot assign {rt} to {ft}", s)
                    out(f"{tmp}.{fp}._set({rc})" if is_composite(ft) else f"{tmp}.{fp} = {rc}")
                    return
            lc, lt, assign = self.lvalue(s.lhs, scope)
            rc, rt = self.expr(s.rhs, scope, lt)
            self.check_assignable(lt, rt, s.rhs)
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
            with out.block(f"if {cc}:"):
                self.stmt_scoped(s.then, scope, out, fn)
            if s.orelse is not None:
                with out.block("else:"):
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
                self.check_assignable(ty, t, s.init)
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
            self.check_assignable(fn.ret, t, s.value)
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

    def gen_switch(self, s: A.Switch, scope, out: Out, fn: FnCtx):
        # switch on table.apply().action_run, or on a value
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
                with out.block(f"{'if' if first else 'elif'} {cond}:"):
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
            with out.block(f"{'if' if first else 'elif'} {cond}:"):
                self.stmts(case.body.stmts, Scope(scope), out, fn)
            first = False
            pending = []

    # ------------------------------------------------------------ functions and actions
    def func_params(self, params: list, scope: Scope, inner: Scope, cell: bool = False):
        """Declare parameters in ``inner``; returns (python arg names, scalar out names, [(name, dir, ty)])."""
        pys, outs, sig = [], [], []
        for p in params:
            ty = self.resolve_type(p.type, scope) if not self._is_arch_param(p) else self._arch_param_type(p, scope)
            py = "p_" + self._pyname(p.name)
            ro = p.direction in ("in", "") and not isinstance(ty, ExternT)
            if p.direction == "" and is_composite(ty):
                ro = False
            inner.syms[p.name] = Var(py, ty, readonly=ro, direction=p.direction)
            pys.append(py)
            sig.append((p.name, p.direction, ty))
            if p.direction in ("out", "inout") and not is_composite(ty) and not isinstance(ty, ExternT):
                outs.append(py)
        return pys, outs, sig

    def _arch_param_type(self, p, scope):
        s = scope.lookup(p.type.name)
        return ExternT(s.ty, []) if s is not None else AnyT()

    def ensure_function(self, s: FuncSym, scope: Scope) -> None:
        if s.ret is not None:
            return
        d = s.decl
        inner = Scope(scope)
        for tp in d.type_params:
            inner.syms[tp] = TypeSym(TypeVarT(tp))
        s.ret = self.resolve_type(d.ret, inner)
        pys, outs, sig = self.func_params(d.params, inner, inner)
        s.params = sig
        o = Out()
        o.ind = self._fn_indent
        with o.block(f"def {s.py}({', '.join(pys)}):"):
            fn = FnCtx("function", s.ret, outs)
            self.stmts(d.body.stmts, inner, o, fn)
            if outs and isinstance(s.ret, VoidT):
                o(f"return ({', '.join(outs)},)")
        self._fn_sink.append(o)

    def gen_action(self, a: ActionSym, scope: Scope, out: Out, cells: list[str]) -> None:
        d = a.decl
        seen_data = None
        for p in d.params:
            if p.direction == "":
                seen_data = p
            elif seen_data is not None:
                raise self.err(f"action {d.name}: directional parameter {p.name} follows the directionless "
                               f"parameter {seen_data.name}; directionless (action data) parameters come last", p)
        inner = Scope(scope)
        pys, outs, sig = self.func_params(d.params, scope, inner)
        for p in d.params:
            if p.direction == "":
                inner.syms[p.name].readonly = True
        with out.block(f"def {a.py}({', '.join(pys)}):"):
            if cells:
                out(f"nonlocal {', '.join(cells)}")
            fn = FnCtx("action", VoidT(), outs)
            self.stmts(d.body.stmts, inner, out, fn)
            if outs:
                out(f"return ({', '.join(outs)},)")
        # control-plane description
        data = [(p, t) for p, (_, dr, t) in zip(d.params, sig) if dr == ""]
        if a.full not in self.action_infos:
            ai = ActionInfoP(annotations=self.ann_text(d.annotations), name=a.full,
                             params=[ParamInfo(annotations=self.ann_text(p.annotations), name=p.name,
                                               width=self.bit_width(t, p)) for p, t in data])
            self.action_infos[a.full] = ai
            self.info.actions.append(ai)

    def bit_width(self, t: Ty, node) -> int:
        if isinstance(t, Bits):
            return t.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, EnumT) and t.repr is not None:
            return t.repr.width
        raise self.err(f"type {t} cannot be used here (it has no bit width)", node)

    # ------------------------------------------------------------ instances
    def instance_args(self, d, ctor_args: list, scope: Scope, call_node) -> dict:
        """Compile-time values of constructor arguments, as constants for the instance's scope."""
        params = d.ctor_params
        bound = self.bind_args(params, ctor_args, call_node, f"{d.name} constructor")
        syms = {}
        for p, a in zip(params, bound):
            ty = self.resolve_type(p.type, scope)
            if isinstance(ty, (BlockT, ExternT)):
                if not isinstance(a.value, A.CtorCall) and not isinstance(a.value, A.Path):
                    raise self.err(f"constructor parameter {p.name} needs an instance", a.value or call_node)
                syms[p.name] = ("inst", a.value, ty)
                continue
            v = self.const_eval(a.value, scope) if a.value is not None else None
            if v is None:
                raise self.err(f"constructor argument for {p.name} must be a compile-time constant", a.value or call_node)
            syms[p.name] = Const(v if not isinstance(ty, Bits) else (v & ty.mask), ty)
        return syms

    def gen_block_instance(self, d, path: str, ctor_syms: dict, scope_for_inst: Scope,
                           type_args: list | None = None) -> str:
        """Generate the factory of one parser/control instance; returns the factory's python name.
        A generic parser/control is specialised here (code is generated per instance)."""
        if d.type_params and len(type_args or ()) != len(d.type_params):
            raise P4Unsupported(f"{d.name}: a generic parser/control needs explicit type arguments here "
                                f"(<{', '.join(d.type_params)}>); inferring them is not supported", d.loc)
        fname = self.fresh("mk_" + d.name)
        o = Out()
        o.ind = 1
        scope = Scope(self.glob)
        for tp, ta in zip(d.type_params, type_args or ()):
            scope.syms[tp] = TypeSym(ta)
        inst_calls = []
        fparams, fargs = [], []
        for k, v in ctor_syms.items():
            if isinstance(v, tuple):
                _, node, ty = v
                py = "i_" + self._pyname(k)
                if isinstance(node, A.Path):
                    # an existing instance of the caller, shared: passed to the factory
                    src = scope_for_inst.lookup(node.name)
                    if not isinstance(src, InstSym) or not isinstance(src.ty, BlockT):
                        raise self.err(f"{node.name} is not a parser or control instance", node)
                    scope.syms[k] = InstSym(py, src.ty, src.full, None, "block")
                    fparams.append(py)
                    fargs.append(src.py)
                    continue
                # a constructor call as the argument: instantiate it here
                scope.syms[k] = InstSym(py, ty, f"{path}.{k}", None, "block")
                inst_calls.append((py, node, ty, f"{path}.{k}"))
            else:
                scope.syms[k] = v
        self._factory_args[fname] = fargs
        if isinstance(d, A.ControlDecl):
            self._gen_control(d, path, scope, o, fname, inst_calls, fparams)
        else:
            self._gen_parser(d, path, scope, o, fname, inst_calls, fparams)
        self._factories.append(o)
        return fname

    def _direct_invocations(self, d, path: str, scope: Scope, o: Out) -> None:
        """``Ctl.apply(...)``/``Prs.apply(...)`` on a type: one anonymous instance per call site,
        created with the enclosing instance (P4_16 spec, "direct type invocation")."""
        found = []

        def walk(x):
            if isinstance(x, A.Call) and isinstance(x.func, A.TypeMember) and x.func.name == "apply":
                found.append(x.func)
            if isinstance(x, A.Node):
                for v in vars(x).values():
                    walk(v)
            elif isinstance(x, (list, tuple)):
                for v in x:
                    walk(v)
        walk(getattr(d, "body", None))
        walk(getattr(d, "states", None))
        walk([loc for loc in d.locals if isinstance(loc, A.ActionDecl)])
        for tm in found:
            s = self.glob.lookup(tm.tname)
            bd = s.ty if isinstance(s, TypeSym) else None
            if not isinstance(bd, (A.ControlDecl, A.ParserDecl)):
                raise self.err(f"{tm.tname} is not a parser or control type", tm)
            if bd.ctor_params:
                raise self.err(f"{tm.tname} has constructor parameters: instantiate it to apply it", tm)
            fname = self.gen_block_instance(bd, f"{path}.{tm.tname}", {}, scope)
            py = self.fresh("i_" + tm.tname)
            o(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
            self._direct_insts[id(tm)] = InstSym(py, BlockT(bd, type(bd).__name__), f"{path}.{tm.tname}",
                                                 None, "block")

    def _declare_locals(self, d, path: str, scope: Scope, o: Out, cells: list, resets: list):
        for loc in d.locals:
            self.cur_loc = loc.loc
            if isinstance(loc, A.VarDecl):
                ty = self.resolve_type(loc.type, scope)
                py = self.fresh("l_" + loc.name)
                cells.append(py)
                init = None
                if loc.init is not None:
                    c, t = self.expr(loc.init, scope, ty)
                    self.check_assignable(ty, t, loc.init)
                    init = c
                o(f"{py} = {self.default_value(ty)}")
                resets.append(f"{py} = {self.default_value(ty)}")
                if init is not None:
                    resets.append(f"{py}._set({init})" if is_composite(ty) else f"{py} = {init}")
                scope.syms[loc.name] = Var(py, ty)
            elif isinstance(loc, A.ConstDecl):
                self.declare_const(loc, scope, o)
            elif isinstance(loc, A.Instantiation):
                self.gen_instantiation(loc, path, scope, o)
            elif isinstance(loc, A.ActionDecl):
                if loc.name in scope.syms:
                    raise self.err(f"{loc.name} is already declared", loc)
                full = self.cp_name(path, loc.name, loc.annotations)
                scope.syms[loc.name] = ActionSym(loc, self.fresh("a_" + loc.name), full)
            elif isinstance(loc, A.TableDecl):
                if loc.name in scope.syms:
                    raise self.err(f"{loc.name} is already declared", loc)
                full = self.cp_name(path, loc.name, loc.annotations)
                scope.syms[loc.name] = TableSym(loc, self.fresh("ap_" + loc.name), full)
            elif isinstance(loc, A.FunctionDecl):
                scope.syms[loc.name] = FuncSym(loc, self.fresh("fn_" + loc.name))
            elif isinstance(loc, A.ValueSetDecl):
                et = self.resolve_type(loc.type, scope)
                if not isinstance(et, Bits):
                    raise P4Unsupported(f"value_set<{et}>: only value sets of bit<W> are supported", loc.loc)
                size = self.const_int(loc.size, scope, "value set size")
                full = self.cp_name(path, loc.name, loc.annotations)
                py = self.fresh("vs_" + loc.name)
                o(f"{py} = X.ValueSet({full!r}, {size}, {et.width})")
                o(f"REG.externs[{full!r}] = {py}")
                self.info.externs.append(ExternInstanceInfo(annotations=self.ann_text(loc.annotations),
                                                            kind="value_set", name=full, size=size,
                                                            width=et.width))
                scope.syms[loc.name] = InstSym(py, ValueSetT(et, size), full, loc, "value_set")
            else:
                raise self.err(f"unsupported local declaration {type(loc).__name__}", loc)

    def gen_instantiation(self, loc: A.Instantiation, path: str, scope: Scope, o: Out) -> None:
        ty = self.resolve_type(loc.type, scope)
        full = self.cp_name(path, loc.name, loc.annotations)
        if loc.name in scope.syms:
            raise self.err(f"{loc.name} is already declared", loc)
        if isinstance(ty, ExternT):
            sym = InstSym(self.fresh("x_" + loc.name), ty, full, loc, "extern", loc.args)
            scope.syms[loc.name] = sym
            self.hooks.extern_instance(self, sym, loc.args, o, scope)
            return
        if isinstance(ty, BlockT) and isinstance(ty.decl, (A.ControlDecl, A.ParserDecl)):
            syms = self.instance_args(ty.decl, loc.args, scope, loc)
            fname = self.gen_block_instance(ty.decl, full, syms, scope, ty.args)
            py = self.fresh("i_" + loc.name)
            o(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
            scope.syms[loc.name] = InstSym(py, ty, full, loc, "block")
            return
        raise self.err(f"cannot instantiate {ty}", loc)

    def _inst_calls(self, inst_calls, scope, o):
        for py, node, ty, full in inst_calls:
            if isinstance(node, A.CtorCall):
                s = self.glob.lookup(node.tname)
                d = s.ty if isinstance(s, TypeSym) else None
                if not isinstance(d, (A.ControlDecl, A.ParserDecl)):
                    raise self.err(f"{node.tname} is not a parser or control", node)
                syms = self.instance_args(d, node.args, scope, node)
                fname = self.gen_block_instance(d, full, syms, scope)
                o(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
                scope.syms[[k for k, v in scope.syms.items() if isinstance(v, InstSym) and v.py == py][0]] = \
                    InstSym(py, BlockT(d, type(d).__name__), full, None, "block")
            else:
                raise self.err("instance arguments must be constructor calls", node)

    def _gen_control(self, d: A.ControlDecl, path: str, scope: Scope, o: Out, fname: str, inst_calls,
                     fparams=()) -> None:
        o(f"def {fname}({', '.join(fparams)}):")
        o.ind += 1
        self._inst_calls(inst_calls, scope, o)
        inner = scope
        pys, outs, sig = self.func_params(d.params, scope, inner)
        for p in d.params:
            v = inner.syms[p.name]
            v.cell = True
        cells = list(pys)
        if pys:
            o(f"{' = '.join(pys)} = None")
        resets: list[str] = []
        self._declare_locals(d, path, inner, o, cells, resets)
        self._direct_invocations(d, path, inner, o)
        nl = f"nonlocal {', '.join(cells)}" if cells else None
        # actions (in declaration order), then tables
        for loc in d.locals:
            if isinstance(loc, A.ActionDecl):
                self.gen_action(inner.syms[loc.name], inner, o, cells)
            elif isinstance(loc, A.FunctionDecl):
                s = inner.syms[loc.name]
                self._fn_indent, self._fn_sink = o.ind, []
                self.ensure_function(s, inner)
                for fo in self._fn_sink:
                    o.lines.extend(fo.lines)
        for loc in d.locals:
            if isinstance(loc, A.TableDecl):
                self.gen_table(inner.syms[loc.name], inner, o, path)
        with self._apply_def(pys, nl, resets, o):
            fn = FnCtx("control", VoidT(), outs)
            self.stmts(d.body.stmts, Scope(inner), o, fn)
            if outs:
                o(f"return ({', '.join(outs)},)")
        o("return apply")
        o.ind -= 1

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

    @staticmethod
    @contextmanager
    def _apply_def(pys: list, nl: Optional[str], resets: list, o: Out):
        """``def apply(...)`` of an instance with its prologue: the parameters go into the
        instance's cells and control-level variables are reset; the caller adds the body."""
        with o.block(f"def apply({', '.join(f'{p}_' for p in pys)}):"):
            for line in ([nl] if nl else []) + [f"{p} = {p}_" for p in pys] + list(resets):
                o(line)
            yield

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
            o("raise ParserReject(2)")

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

    # ------------------------------------------------------------ tables
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
            if e.op == "&" and isinstance(e.r, A.IntLit):
                # ``field & MASK : exact``: p4c's BMv2 back end keys the table on the field with a
                # mask, and control planes address the key by the field's name
                return self.key_name(e.l)
            return f"{self.key_name(e.l)} {e.op} {self.key_name(e.r)}"
        return "key"

    def gen_table(self, t: TableSym, scope: Scope, o: Out, path: str) -> None:
        d = t.decl
        self.cur_loc = d.loc
        keys = []
        kcodes = []
        for ke in d.keys:
            c, ty = self.expr(ke.expr, scope)
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
                # a selector key picks a member within a group; groups are not modelled (entries
                # name their action directly), so it takes no part in the lookup
                if "implementation" not in d.props:
                    raise self.err("a selector key needs an action_selector implementation", ke)
                continue
            if mk not in ("exact", "lpm", "ternary", "range", "optional"):
                raise self.err(f"unknown match kind {mk}", ke)
            nm = ke.annotations.get("name")
            kname = nm[0].value.strip('"') if nm else self.key_name(ke.expr)
            keys.append(KeyInfoP(annotations=self.ann_text(ke.annotations), name=kname, match_kind=mk,
                                 width=ty.width))
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
        # default action
        dflt_name, dflt_args, const_dflt = None, [], False
        if "default_action" in d.props:
            e, is_const, loc = d.props["default_action"]
            const_dflt = is_const
            fnode = e.func if isinstance(e, A.Call) else e
            if not isinstance(fnode, A.Path):
                raise self.err("default_action must name an action", e)
            s = scope.lookup(fnode.name)
            match = [x for x, _ in acts if x is s]
            if not match:
                raise self.err(f"default action {fnode.name} is not in the actions list of table {d.name}", e)
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
                # BMv2: a table without default_action uses NoAction, added implicitly
                acts.append((s, A.ActionRef(loc=d.loc, name="NoAction", annotations={})))
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
        if "implementation" in d.props:
            # action_profile / action_selector: members and groups are not modelled; the table
            # takes direct entries (action + data) like any other, which is what its default
            # action and the STF/Python control planes use
            e = d.props["implementation"][0]
            ok = isinstance(e, A.CtorCall) and e.tname in ("action_profile", "action_selector") or (
                isinstance(e, A.Path) and isinstance(scope.lookup(e.name), InstSym)
                and getattr(scope.lookup(e.name).ty, "decl", None) is not None
                and scope.lookup(e.name).ty.decl.name in ("action_profile", "action_selector"))
            if not ok:
                raise self.err("implementation must be an action_profile or action_selector", e)
        tinfo = TableInfo(annotations=self.ann_text(d.annotations), name=t.full, keys=keys,
                          actions=[TableActionRef(annotations=self.ann_text(r.annotations), name=s.full,
                                                  default_only="defaultonly" in r.annotations,
                                                  table_only="tableonly" in r.annotations) for s, r in acts],
                          default_action=dflt_name, default_args=dflt_args, const_default_action=const_dflt,
                          has_const_entries=bool(d.entries) and d.const_entries, size=size,
                          direct_counter=dc.full if dc else None, direct_meter=dm.full if dm else None)
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
        o(f"{tpy} = Table({t.full!r}, [{ka}], [{', '.join(aa)}], ({dflt_name!r}, {dflt_args!r}), "
          f"const_default={const_dflt}, const_entries={bool(d.entries) and d.const_entries}, size={size}, "
          f"direct_counter={dc.py if dc else None}, direct_meter={dm.py if dm else None})")
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
            o(f"r = {tpy}.lookup({kexpr})")
            o("r[0](*r[1])")
            o("return r")

    def const_action_data(self, params: list, args: list, scope: Scope, what: str) -> list[int]:
        """Compile-time values of action data arguments (default actions, const entries)."""
        out = []
        for p, a in zip(params, args):
            pt = self.resolve_type(p.type, scope)
            v = self.const_eval(a.value, scope)
            if v is None:
                c, _ = self.expr(a.value, scope, pt)
                try:
                    v = int(c)
                except ValueError:
                    raise self.err(f"{what} arguments must be compile-time constants", a.value) from None
            out.append(int(v) & ((1 << self.bit_width(pt, p)) - 1))
        return out

    def gen_entries(self, d: A.TableDecl, tpy: str, keys: list, acts: list, scope: Scope, o: Out) -> None:
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
            data = [p for p in s.decl.params if p.direction == ""]
            if len(en.action.args) != len(data):
                raise self.err(f"action {en.action.name} takes {len(data)} argument(s)", en)
            args = self.const_action_data(data, en.action.args, scope, "entry action")
            prio = None
            if en.priority is not None:
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

    # ------------------------------------------------------------ the whole program
    def build_module(self) -> tuple[str, list]:
        """Generate the module; returns (source, [(package param, block kind, decl, apply fn)])."""
        main = self.compile()
        pkg = main.ty
        if not isinstance(pkg, BlockT) or not isinstance(pkg.decl, A.PackageDecl):
            raise self.err("main must be an instance of a package", main.decl)
        self._factories: list[Out] = []
        body = Out()
        body.ind = 1
        # top-level actions and functions
        self._fn_indent, self._fn_sink = 1, []
        for a in self.top_actions:
            self.gen_action(a, self.glob, body, [])
        for f in getattr(self, "top_functions", []):
            self.ensure_function(f, self.glob)
        for sym in list(self.glob.syms.values()):
            # extern objects instantiated at top level (shared by every control), e.g. a register
            if isinstance(sym, InstSym) and isinstance(sym.ty, ExternT) and sym.decl is not None:
                sym.kind = "extern"
                self.hooks.extern_instance(self, sym, sym.decl.args, body, self.glob)
        blocks = []
        params = pkg.decl.params
        bound = self.bind_args(params, main.decl.args, main.decl, f"package {pkg.decl.name}")
        calls = Out()
        calls.ind = 1
        for p, a in zip(params, bound):
            node = a.value
            if isinstance(node, A.Path):
                s = self.glob.lookup(node.name)
                if not isinstance(s, InstSym) or not isinstance(s.ty, BlockT):
                    raise self.err(f"{node.name} is not a parser or control instance", node)
                d, path, cargs = s.ty.decl, s.full, s.decl.args
            elif isinstance(node, A.CtorCall):
                s = self.glob.lookup(node.tname)
                if not isinstance(s, TypeSym) or not isinstance(s.ty, (A.ControlDecl, A.ParserDecl)):
                    raise self.err(f"{node.tname} is not a parser or control declaration", node)
                d, path, cargs = s.ty, node.tname, node.args
            else:
                raise self.err(f"argument {p.name} of {pkg.decl.name} must be a parser or control", main.decl)
            syms = self.instance_args(d, cargs, self.glob, node)
            fname = self.gen_block_instance(d, path, syms, self.glob)
            py = f"blk_{p.name}"
            calls(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
            blocks.append((p.name, d, py))
        src = Out()
        src.lines.extend(self.classes.lines)
        with src.block("def build(RT, REG):"):
            for line in self.hooks.prelude:
                src(line)
            src.lines.extend(self.consts_code.lines and ["    " + ln for ln in self.consts_code.lines])
            src.lines.extend(body.lines)
            for fo in self._fn_sink:
                src.lines.extend(fo.lines)
            for fo in self._factories:
                src.lines.extend(fo.lines)
            src.lines.extend(calls.lines)
            src(f"return {{{', '.join(f'{n!r}: {py}' for n, _, py in blocks)}}}")
        return src.text(), blocks
