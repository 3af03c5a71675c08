"""Blocks: functions, actions, instantiations and controls become closures of an instance
factory (one per declaration, one instance per instance path).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Optional

from .. import nodes as A
from ..errors import P4Unsupported
from ..info import ActionInfoP, ExternInstanceInfo, ParamInfo, ValueSetField
from ..types import AnyT, Bits, BlockT, BoolT, EnumT, ExternT, StructT, TypeVarT, ValueSetT, VoidT, is_composite
from .declarations import serializable_enum_name
from .source_writer import Out
from .symbols import ActionSym, Const, FnCtx, FuncSym, InstSym, Scope, TableSym, TypeSym, Var


class BlocksMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

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
            inner.syms[tp] = TypeSym(s.type_args.get(tp) or TypeVarT(tp))
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

    def _check_control_plane_params(self, d, scope: Scope) -> None:
        """The directionless parameters of a table's actions come from the control plane: p4c
        (P4Runtime serializer) allows only bit<W>, int<W>, bool, a ``type`` or a serializable
        enum there, and reports it at the parameter before the action bodies' own errors."""
        for loc in d.locals:
            if not isinstance(loc, A.TableDecl):
                continue
            for ref in loc.actions:
                s = scope.lookup(ref.name)
                if not isinstance(s, ActionSym):
                    continue
                for p in s.decl.params:
                    if p.direction:
                        continue
                    ty = self.resolve_type(p.type, scope)
                    if not (isinstance(ty, (Bits, BoolT)) or (isinstance(ty, EnumT) and ty.repr is not None)):
                        raise self.err(f"Action parameter {p.name} has a type which is not bit<>, int<>, bool, "
                                       f"type or serializable enum", p)

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
            if self.trace:
                out(f"TR.action({a.full!r})")
            self._action_calls_extern = False
            outer_top, self._lane_top_body = self._lane_top_body, d.body.stmts   # (lanes.py: liveness)
            self.stmts(d.body.stmts, inner, out, fn)
            self._lane_top_body = outer_top
            if outs:
                out(f"return ({', '.join(outs)},)")
        # control-plane description
        data = [(p, t) for p, (_, dr, t) in zip(d.params, sig) if dr == ""]
        self.claim_cp_name("action", a.full, d)
        if a.full not in self.action_infos:
            ai = ActionInfoP(annotations=self.ann_text(d.annotations), name=a.full,
                             order=getattr(self, "_cp_item", ()),
                             params=[ParamInfo(annotations=self.ann_text(p.annotations), name=p.name,
                                               width=self.bit_width(t, p), enum=serializable_enum_name(t),
                                               type_name=getattr(t, "newtype", ""))
                                     for p, t in data],
                             calls_extern_functions=self._action_calls_extern)
            self.action_infos[a.full] = ai
            self.info.actions.append(ai)

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
        self.blocks_compiled.add(d.name)
        # P4Info order (info.Annotated.order): a block instance declared in a block takes the
        # slot of its declaration (p4c inlines it there); main's blocks count in order
        outer_order, slot = getattr(self, "_cp_order", ()), getattr(self, "_cp_slot", None)
        self._cp_slot = None
        if slot is None:
            slot = (getattr(self, "_cp_top", 0),)
            self._cp_top = slot[0] + 1
        self._cp_order = slot
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
                    self.info.used_instances.add(src.full)
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
        self._cp_order = outer_order
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
            self._cp_slot = getattr(self, "_cp_order", ()) + (-1, len(self._direct_insts))
            fname = self.gen_block_instance(bd, f"{path}.{tm.tname}", {}, scope)
            py = self.fresh("i_" + tm.tname)
            o(f"{py} = {fname}({', '.join(self._factory_args[fname])})")
            self._direct_insts[id(tm)] = InstSym(py, BlockT(bd, type(bd).__name__), f"{path}.{tm.tname}",
                                                 None, "block")

    def _declare_locals(self, d, path: str, scope: Scope, o: Out, cells: list, resets: list):
        prev = None
        for idx, loc in enumerate(d.locals):
            # P4Info order (info.Annotated.order) of what this declaration adds
            self._cp_tag(prev)
            prev = (len(self.info.externs), getattr(self, "_cp_order", ()) + (idx,))
            self.cur_loc = loc.loc
            if isinstance(loc, A.VarDecl):
                ty = self.resolve_type(loc.type, scope)
                py = self.fresh("l_" + loc.name)
                cells.append(py)
                init = None
                pre = Out()     # helpers of calls with copy-out in the initialiser, run in apply
                if loc.init is not None:
                    saved = (getattr(self, "_stmt_out", None), getattr(self, "_lv_roots", []),
                             getattr(self, "_cur_fn", None))
                    self._stmt_out, self._lv_roots, self._cur_fn = pre, [], FnCtx("control", VoidT(), [])
                    try:
                        c, t = self.expr(loc.init, scope, ty)
                    finally:
                        self._stmt_out, self._lv_roots, self._cur_fn = saved
                    self.check_init(ty, t, loc.init)
                    init = c
                o(f"{py} = {self.default_value(ty)}")
                resets.extend(pre.lines)
                resets.append(f"{py} = {self.default_value(ty)}")
                if init is not None:
                    resets.append(f"{py}._set({init})" if is_composite(ty) else f"{py} = {init}")
                scope.syms[loc.name] = Var(py, ty)
            elif isinstance(loc, A.ConstDecl):
                self.declare_const(loc, scope, o)
            elif isinstance(loc, A.Instantiation):
                self._cp_slot = prev[1]      # a block instance: its locals take this slot
                self.gen_instantiation(loc, path, scope, o)
                self._cp_slot = None
            elif isinstance(loc, A.ActionDecl):
                if loc.name in scope.syms:
                    raise self.err(f"{loc.name} is already declared", loc)
                self.check_no_block_params(loc.params, [])
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
                if isinstance(et, StructT) and not et.union and et.fields:
                    # a value set of a struct matches as many select keys as the struct has
                    # fields; its members are the fields concatenated, first field first (as
                    # p4c's BMv2 back end lays out the parse_vset)
                    width = sum(self.bit_width(ft, loc) for _, _, ft in et.fields)
                    for fname, fann in et.field_annotations.items():
                        mk = " ".join(t.value for t in fann.get("match", ()))
                        if mk and mk not in ("exact", "ternary", "lpm"):
                            raise P4Unsupported(f"value_set<{et}>: field {fname} has @match({mk}); the members "
                                                f"of a value set here are value/mask pairs (exact, ternary, lpm)",
                                                loc.loc)
                elif isinstance(et, Bits):
                    width = et.width
                else:
                    raise P4Unsupported(f"value_set<{et}>: only value sets of bit<W> or of structs of "
                                        f"bit<W> fields are supported", loc.loc)
                size = self.const_int(loc.size, scope, "value set size")
                full = self.cp_name(path, loc.name, loc.annotations)
                py = self.fresh("vs_" + loc.name)
                o(f"{py} = X.ValueSet({full!r}, {size}, {width})")
                o(f"REG.externs[{full!r}] = {py}")
                vs_fields = None
                if isinstance(et, StructT):
                    vs_fields = [ValueSetField(annotations=self.ann_text(et.field_annotations.get(fname, {})),
                                               name=fname, width=self.bit_width(ft, loc))
                                 for fname, _, ft in et.fields]
                self.info.externs.append(ExternInstanceInfo(annotations=self.ann_text(loc.annotations),
                                                            kind="value_set", name=full, size=size,
                                                            width=width, fields=vs_fields))
                scope.syms[loc.name] = InstSym(py, ValueSetT(et, size), full, loc, "value_set")
            else:
                raise self.err(f"unsupported local declaration {type(loc).__name__}", loc)
        self._cp_tag(prev)

    def _cp_tag(self, prev) -> None:
        """Give the extern instances a local declaration added (value sets, externs) its order."""
        if prev is not None:
            for ei in self.info.externs[prev[0]:]:
                if not ei.order:
                    ei.order = prev[1]

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
            self.info.block_instances.append(full)     # (P4Info: unused instances are left out)
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
        outer_banks = (self._lane_banks, self._lane_bank_lines, self._lane_fallbacks, self._lane_cells,
                       self._lane_fb_indent)
        self._lane_banks, self._lane_bank_lines = {}, []     # register banks of vectorised lanes
        # the scalar code of vectorised lane groups, as functions beside the actions (lanes.py)
        self._lane_fallbacks, self._lane_cells, self._lane_fb_indent = [], set(cells), o.ind
        self._check_control_plane_params(d, inner)
        # actions (in declaration order), then tables
        for idx, loc in enumerate(d.locals):
            self._cp_item = getattr(self, "_cp_order", ()) + (idx,)
            if isinstance(loc, A.ActionDecl):
                self.gen_action(inner.syms[loc.name], inner, o, cells)
            elif isinstance(loc, A.FunctionDecl):
                s = inner.syms[loc.name]
                self._fn_indent, self._fn_sink = o.ind, []
                self.ensure_function(s, inner)
                for fo in self._fn_sink:
                    o.lines.extend(fo.lines)
        for idx, loc in enumerate(d.locals):
            self._cp_item = getattr(self, "_cp_order", ()) + (idx,)
            if isinstance(loc, A.TableDecl):
                self.gen_table(inner.syms[loc.name], inner, o, path)
        self._cp_item = ()
        with self._apply_def(pys, nl, resets, o):
            fn = FnCtx("control", VoidT(), outs)
            self.stmts(d.body.stmts, Scope(inner), o, fn)
            if outs:
                o(f"return ({', '.join(outs)},)")
        for line in self._lane_bank_lines:
            o(line)
        for fb in self._lane_fallbacks:
            o.lines.extend(fb.lines)
        (self._lane_banks, self._lane_bank_lines, self._lane_fallbacks, self._lane_cells,
         self._lane_fb_indent) = outer_banks
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
