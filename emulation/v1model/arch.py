"""The v1model architecture for the code generator, and the compiled-program object.

``compile_ast`` type-checks and lowers a front-end syntax tree with :class:`V1Hooks` and
returns a :class:`Program` (:mod:`emulation.v1model.load` reads and parses the file).  Its
:meth:`Program.instantiate` builds one :class:`Datapath` (tables, externs, the six
blocks of ``V1Switch``) around a :class:`~emulation.v1model.runtime.Runtime`; the switch
(``switch.py``) drives a datapath packet by packet.

v1model's externs are lowered here (:class:`V1Hooks`), following BMv2's
``simple_switch`` (see ``v1model-semantics.md``).
"""
from __future__ import annotations

import os
from typing import Any, Optional

from emulation.p4 import nodes as A
from emulation.p4 import pyrt
from emulation.p4.compiler.core import Compiler
from emulation.p4.compiler.hooks import ArchHooks, InstSym, Out, Scope
from emulation.p4.errors import P4Error, P4Unsupported
from emulation.p4.info import ExternInstanceInfo, DigestInfo, HeaderFieldInfo, ProgramInfo
from emulation.p4.types import (AnyT, Bits, BoolT, EnumT, ExternT, HeaderT, InfInt, StackT, StructT, TupleT,
                                VarBit)

from host_agent.match import Exact, Lpm, Optional_, Range, Ternary
from . import externs as X
from .hashes import concat_fields
from .tables import ActionInfo, KeyInfo, Table

V1SWITCH_PARAMS = ("p", "vr", "ig", "eg", "ck", "dep")
_UNITS = {"packets": "packets", "bytes": "bytes", "packets_and_bytes": "packets_and_bytes"}


class DirectMeter:
    """``direct_meter<T>``: BMv2 marks packets of an unconfigured meter GREEN (0)."""

    def __init__(self, name: str, unit: str):
        self.name, self.unit = name, unit
        self.table = None

    def read(self) -> int:
        return 0


class V1Hooks(ArchHooks):
    prelude = ("HF = RT.hash_fns",)

    # ------------------------------------------------------------ instances
    def extern_instance(self, comp: Compiler, inst: InstSym, ctor_args: list, out: Out, scope: Scope) -> None:
        ety: ExternT = inst.ty
        kind = ety.decl.name
        loc = inst.decl.loc if inst.decl is not None else None
        args = [a.value for a in ctor_args]

        def enum_arg(e, what):
            if isinstance(e, A.TypeMember):
                return e.name
            raise comp.err(f"{what} must be a constant like {what}.packets", e or inst.decl)

        anns = comp.ann_text(inst.decl.annotations) if inst.decl is not None else {}
        py, full = inst.py, inst.full
        if kind == "register":
            if len(args) != 1:
                raise comp.err("register(size) takes one argument", inst.decl)
            size = comp.const_int(args[0], scope, "register size")
            t = ety.args[0] if ety.args else AnyT()
            if not isinstance(t, Bits):
                raise comp.err(f"register cells must be bit<W> or int<W>, not {t}", inst.decl)
            out(f"{py} = X.Register({full!r}, {size}, {t.width}, {t.signed}, RT.log_fn)")
            out(f"{py}_c = {py}.cells")     # the generated code reads and writes cells directly
            ety.size = size                 # a compile-time bound for the generated index checks
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="register", name=full, size=size,
                                                        width=t.width, signed=t.signed))
        elif kind == "counter":
            if len(args) != 2:
                raise comp.err("counter(size, type) takes two arguments", inst.decl)
            size = comp.const_int(args[0], scope, "counter size")
            unit = enum_arg(args[1], "CounterType")
            out(f"{py} = X.Counter({full!r}, {size}, {unit!r}, RT.plen)")
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="counter", name=full, size=size,
                                                        unit=unit))
        elif kind == "direct_counter":
            unit = enum_arg(args[0] if args else None, "CounterType")
            out(f"{py} = X.DirectCounter({full!r}, {unit!r}, RT.plen)")
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="direct_counter", name=full, unit=unit))
        elif kind == "meter":
            size = comp.const_int(args[0], scope, "meter size")
            unit = enum_arg(args[1], "MeterType")
            out(f"{py} = X.Meter({full!r}, {size}, {unit!r}, RT.plen, RT.now_us)")
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="meter", name=full, size=size,
                                                        unit=unit))
        elif kind == "direct_meter":
            unit = enum_arg(args[0] if args else None, "MeterType")
            out(f"{py} = DirectMeter({full!r}, {unit!r})")
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="direct_meter", name=full, unit=unit))
        elif kind in ("action_profile", "action_selector"):
            # members and groups are not modelled: the tables that name it take direct entries
            out(f"{py} = None")
            return
        else:
            raise P4Unsupported(f"extern {kind} is not supported by the embedded v1model target", loc)
        out(f"REG.externs[{full!r}] = {py}")

    # ------------------------------------------------------------ vectorised lanes
    def lane_array(self, ety: ExternT, method: str):
        if ety.decl.name != "register" or method not in ("read", "write"):
            return None
        t = ety.args[0] if ety.args else AnyT()
        size = getattr(ety, "size", None)
        if not isinstance(t, Bits) or size is None:
            return None
        # read(out T result, in I index); write(in I index, in T value)
        return ("read", 1, 0, t, size) if method == "read" else ("write", 0, 1, t, size)

    def lane_bank_lines(self, comp: Compiler, bank: str, insts: list[str]) -> list[str]:
        # the registers' cells become rows of the bank; the generated code's aliases follow
        return [f"{bank} = X.bank_registers(({', '.join(insts)},))"] + [f"{py}_c = {py}.cells" for py in insts]

    # ------------------------------------------------------------ methods
    def _args(self, comp, call, n, what):
        if len(call.args) != n:
            raise comp.err(f"{what} takes {n} argument(s), got {len(call.args)}", call)
        return [a.value for a in call.args]

    def extern_method(self, comp: Compiler, oc: str, ety: ExternT, method: str, call: A.Call, scope: Scope,
                      out: Out, as_expr: bool):
        kind = ety.decl.name
        if kind == "packet_in":
            return self._packet_in(comp, oc, method, call, scope, out)
        if kind == "packet_out":
            if method != "emit":
                raise comp.err(f"packet_out has no method {method}", call)
            (e,) = self._args(comp, call, 1, "emit")
            c, t = comp.expr(e, scope)
            self._emit(comp, oc, c, t, out, e)
            return None
        if kind == "register":
            t = ety.args[0] if ety.args else AnyT()
            if method == "read":
                res, idx = self._args(comp, call, 2, "register.read")
                rc, rt, assign = comp.lvalue(res, scope)
                comp.check_assignable(t, rt, res)
                ic, it = comp.expr(idx, scope, Bits(32))
                i = comp.fresh("i")
                out(f"{i} = {ic}")
                # in bounds: the cell; out of bounds: BMv2 leaves the destination as it was (logged)
                lo = f"0 <= {i} < " if isinstance(it, Bits) and it.signed else f"{i} < "
                size = getattr(ety, "size", None) or f"{oc}.size"
                cell = f"{oc}_c[{i}]"
                if comp.vectorize and isinstance(t, Bits) and t.width <= 32:
                    cell = f"int({cell})"     # the cells may be a row of a numpy register bank
                for s in assign(f"({cell} if {lo}{size} else {oc}.read({i}, {rc}))"):
                    out(s)
                return None
            if method == "write":
                idx, val = self._args(comp, call, 2, "register.write")
                ic, it = comp.expr(idx, scope, Bits(32))
                vc, vt = comp.expr(val, scope, t)
                comp.check_assignable(t, vt, val)
                i = comp.fresh("i")
                out(f"{i} = {ic}")
                lo = f"0 <= {i} < " if isinstance(it, Bits) and it.signed else f"{i} < "
                size = getattr(ety, "size", None) or f"{oc}.size"
                out(f"if {lo}{size}: {oc}_c[{i}] = {vc}")
                out(f"else: {oc}.write({i}, {vc})")
                return None
        if kind == "counter" and method == "count":
            (idx,) = self._args(comp, call, 1, "counter.count")
            ic, it = comp.expr(idx, scope, Bits(32))
            out(f"{oc}.count({ic})")
            return None
        if kind == "direct_counter" and method == "count":
            return None     # BMv2 counts every hit of the owning table anyway
        if kind == "meter" and method == "execute_meter":
            idx, res = self._args(comp, call, 2, "meter.execute_meter")
            ic, it = comp.expr(idx, scope, Bits(32))
            rc, rt, assign = comp.lvalue(res, scope)
            for s in assign(f"{oc}.execute({ic})" if not isinstance(rt, Bits) else
                            f"({oc}.execute({ic}) & {rt.mask:#x})"):
                out(s)
            return None
        if kind == "direct_meter" and method == "read":
            (res,) = self._args(comp, call, 1, "direct_meter.read")
            rc, rt, assign = comp.lvalue(res, scope)
            for s in assign(f"{oc}.read()"):
                out(s)
            return None
        raise comp.err(f"{kind} has no method {method} (or it is not supported)", call)

    def _packet_in(self, comp, oc, method, call, scope, out):
        if method == "extract":
            if len(call.args) == 2:
                e, size = call.args[0].value, call.args[1].value
                sc, st = comp.expr(size, scope, Bits(32))
                if isinstance(e, A.Member) and e.name == "next":
                    stc, stt = comp.expr(e.obj, scope)
                    if not isinstance(stt, StackT) or stt.elem.varbit is None:
                        raise comp.err("extract with a size needs a header with a varbit field", e)
                    out(f"_s = {stc}")
                    out("_h = _s.next_()")
                    out(f"_h._extract_v({oc}, {sc})")
                    out("_s.nxt += 1")
                    return None
                c, t = comp.expr(e, scope)
                if not isinstance(t, HeaderT) or t.varbit is None:
                    raise comp.err("extract with a size needs a header with a varbit field", e)
                out(f"{c}._extract_v({oc}, {sc})")
                return None
            (e,) = self._args(comp, call, 1, "extract")
            if isinstance(e, A.Member) and e.name == "next":
                sc, st = comp.expr(e.obj, scope)
                if not isinstance(st, StackT):
                    raise comp.err("next applies to header stacks", e)
                nb = (st.elem.width + 7) // 8
                out(f"_s = {sc}")
                out("_h = _s.next_()")
                out(f"_o = {oc}.off")
                out(f"if _o + {nb} > {oc}.n: raise ParserReject(1)")
                out(f"_h._extract({oc}.buf, _o)")
                out(f"{oc}.off = _o + {nb}")
                out("_s.nxt += 1")
                return None
            c, t = comp.expr(e, scope)
            if not isinstance(t, HeaderT):
                raise comp.err(f"extract needs a header, not {t}", e)
            comp.union_siblings_invalid(e, out)
            if t.varbit is not None:
                raise comp.err(f"header {t} has a varbit field: extract it with a size, extract(h, bits)", e)
            comp.lvalue(e, scope)
            nb = (t.width + 7) // 8
            out(f"_o = {oc}.off")
            out(f"if _o + {nb} > {oc}.n: raise ParserReject(1)")
            out(f"{c}._extract({oc}.buf, _o)")
            out(f"{oc}.off = _o + {nb}")
            return None
        if method == "lookahead":
            if len(call.type_args) != 1:
                raise comp.err("lookahead needs one type argument, as in lookahead<bit<16>>()", call)
            t = comp.resolve_type(call.type_args[0], scope)
            if isinstance(t, Bits):
                code = f"{oc}.peek_bits({t.width})"
                if t.signed:
                    h = 1 << (t.width - 1)
                    code = f"(({code} ^ {h:#x}) - {h:#x})"
                return code, t
            if isinstance(t, HeaderT):
                return f"_lookahead_hdr({oc}, {t.cls})", t
            if isinstance(t, BoolT):
                return f"bool({oc}.peek_bits(1))", t
            if isinstance(t, StructT) and all(isinstance(ft, Bits) for _, _, ft in t.fields):
                total = sum(ft.width for _, _, ft in t.fields)
                parts, shift = [], total
                for _, _, ft in t.fields:
                    shift -= ft.width
                    x = f"((_v >> {shift}) & {ft.mask:#x})"
                    if ft.signed:
                        h = 1 << (ft.width - 1)
                        x = f"(({x} ^ {h:#x}) - {h:#x})"
                    parts.append(x)
                return f"(lambda _v: {comp.build_composite(t, parts)})({oc}.peek_bits({total}))", t
            raise comp.err(f"lookahead of {t} is not supported", call)
        if method == "advance":
            (e,) = self._args(comp, call, 1, "advance")
            c, t = comp.expr(e, scope, Bits(32))
            out(f"{oc}.advance({c})")
            return None
        if method == "length":
            return f"{oc}.n", Bits(32)
        raise comp.err(f"packet_in has no method {method}", call)

    def _emit(self, comp, oc, c, t, out, node):
        if isinstance(t, HeaderT):
            out(f"_h = {c}")
            out(f"if _h._valid: {oc}.parts.append(_h._bytes())")
        elif isinstance(t, StackT):
            out(f"for _h in {c}.elems:")
            out(f"    if _h._valid: {oc}.parts.append(_h._bytes())")
        elif isinstance(t, StructT):
            for n, p, ft in t.fields:
                self._emit(comp, oc, f"{c}.{p}", ft, out, node)
        else:
            raise comp.err(f"emit needs a header, a header stack or a struct of headers, not {t}", node)

    # ------------------------------------------------------------ functions
    def _fields(self, comp, e, scope):
        """Code building the bytes of a field list ({a, b, c}, a header or a struct) for hashes and
        checksums: the fields concatenated bit-wise, MSB first, zero-padded at the end to a byte
        boundary (BMv2's BufBuilder).  Widths are static, so this is one shift-or expression."""
        items: list[tuple[str, int]] = []

        def add(code, t, node):
            if isinstance(t, VarBit):
                items.append((code, -1))
            elif isinstance(t, Bits):
                items.append((f"({code} & {t.mask:#x})" if t.signed else code, t.width))
            elif isinstance(t, BoolT):
                items.append((f"int({code})", 1))
            elif isinstance(t, EnumT) and t.repr is not None:
                items.append((f"({code} & {t.repr.mask:#x})", t.repr.width))
            elif isinstance(t, (HeaderT, StructT)):
                for n, p, ft in t.fields:
                    add(f"{code}.{p}", ft, node)
            elif isinstance(t, InfInt):
                raise comp.err("a field list entry needs a width (cast the constant)", node)
            else:
                raise comp.err(f"cannot use a value of type {t} in a field list", node)
        if isinstance(e, A.ListExpr):
            for it in e.items:
                c, t = comp.expr(it, scope)
                add(c, t, it)
        else:
            c, t = comp.expr(e, scope)
            add(c, t, e)
        if not items:
            return "b''"
        if any(w < 0 for _, w in items):
            # a varbit field makes the width dynamic: concatenate at run time
            pairs = ", ".join(c if w < 0 else f"({c}, {w})" for c, w in items)
            return f"_concat_fields(({pairs},))"
        total = sum(w for _, w in items)
        pad = (-total) % 8
        parts = []
        shift = total + pad
        for c, w in items:
            shift -= w
            parts.append(f"({c} << {shift})" if shift else c)
        return f"({' | '.join(parts)}).to_bytes({(total + pad) // 8}, 'big')"

    def _adhoc_field_list(self, comp, data, scope) -> int:
        """The deprecated ``resubmit(data)``/``recirculate(data)``/``clone3(.., data)``: p4c makes
        a field list of the metadata fields named in ``data``; give it a negative id."""
        items = data.items if isinstance(data, A.ListExpr) else [data]
        paths = []
        for it in items:
            chain = []
            e = it
            while isinstance(e, A.Member):
                chain.append(e.name)
                e = e.obj
            if not isinstance(e, A.Path):
                raise comp.err("the data of resubmit/recirculate/clone3 must name metadata fields", it)
            root = scope.lookup(e.name)
            rtype = getattr(root, "ty", None)
            comp.expr(it, scope)          # type-checks the reference
            t = rtype
            pyp = []
            for name in reversed(chain):
                f = t.field(name) if isinstance(t, (StructT, HeaderT)) else None
                if f is None:
                    raise comp.err(f"{t} has no field {name}", it)
                pyp.append(f[1])
                t = f[2]
            if pyp:
                paths.append((rtype, tuple(pyp)))
            elif isinstance(rtype, StructT):
                paths.extend((rtype, (p,)) for _, p, _ in rtype.fields)
        adhoc = comp.__dict__.setdefault("adhoc_field_lists", {})
        fl = -2 - len(adhoc)
        adhoc[fl] = paths
        return fl

    def _algo(self, comp, e):
        if isinstance(e, A.TypeMember) and e.tname == "HashAlgorithm":
            return e.name
        raise comp.err("expected a HashAlgorithm constant such as HashAlgorithm.crc16", e)

    def extern_function(self, comp: Compiler, name: str, call: A.Call, scope: Scope, out: Out, as_expr: bool):
        args = [a.value for a in call.args]
        n = len(args)
        if name == "mark_to_drop":
            if n == 0:
                # the deprecated form: BMv2 drops the packet in flight (its standard metadata)
                out("_m = RT.sm")
                out("_m.egress_spec = RT.drop_port")
                out("_m.mcast_grp = 0")
                return None
            c, t = comp.expr(args[0], scope)
            out(f"_m = {c}")
            out("_m.egress_spec = RT.drop_port")
            out("_m.mcast_grp = 0")
            return None
        if name == "verify":
            if n != 2:
                raise comp.err("verify(condition, error) takes two arguments", call)
            cc, ct = comp.expr(args[0], scope)
            ec, et = comp.expr(args[1], scope)
            if not isinstance(ct, BoolT):
                raise comp.err(f"the condition of verify must be bool, not {ct}", args[0])
            out(f"if not {cc}: raise ParserReject({ec})")
            return None
        if name == "hash":
            if n != 5:
                raise comp.err("hash(result, algo, base, data, max) takes five arguments", call)
            rc, rt, assign = comp.lvalue(args[0], scope)
            if not isinstance(rt, Bits):
                raise comp.err(f"the result of hash must be bit<W>, not {rt}", args[0])
            algo = self._algo(comp, args[1])
            bc, bt = comp.expr(args[2], scope, rt)
            mc, mt = comp.expr(args[4], scope, rt)
            fields = self._fields(comp, args[3], scope)
            for s in assign(f"RT.hash({algo!r}, {bc}, {fields}, {mc}, {rt.width})"):
                out(s)
            return None
        if name in ("verify_checksum", "verify_checksum_with_payload", "update_checksum",
                    "update_checksum_with_payload"):
            if n != 4:
                raise comp.err(f"{name}(condition, data, checksum, algo) takes four arguments", call)
            cc, ct = comp.expr(args[0], scope)
            if not isinstance(ct, BoolT):
                raise comp.err(f"the condition of {name} must be bool", args[0])
            fields = self._fields(comp, args[1], scope)
            algo = self._algo(comp, args[3])
            payload = " + RT.payload" if name.endswith("_with_payload") else ""
            if name.startswith("verify"):
                kc, kt = comp.expr(args[2], scope)
                if not isinstance(kt, Bits):
                    raise comp.err("the checksum field must be bit<W>", args[2])
                out(f"if {cc} and (HF[{algo!r}]({fields}{payload}) & {kt.mask:#x}) != {kc}: "
                    f"RT.cksum_error = 1")
            else:
                kc, kt, assign = comp.lvalue(args[2], scope)
                if not isinstance(kt, Bits):
                    raise comp.err("the checksum field must be bit<W>", args[2])
                with out.block(f"if {cc}:"):
                    for s in assign(f"(HF[{algo!r}]({fields}{payload}) & {kt.mask:#x})"):
                        out(s)
            return None
        if name in ("clone", "clone3", "clone_preserving_field_list"):
            sc, st = comp.expr(args[1], scope, Bits(32))
            fl = "None"
            if name == "clone_preserving_field_list":
                fl = str(comp.const_int(args[2], scope, "field list index"))
            elif name == "clone3" and n == 3:
                fl = str(self._adhoc_field_list(comp, args[2], scope))
            out(f"RT.clone({sc}, {fl})")
            return None
        if name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            fl = comp.const_int(args[0], scope, "field list index")
            out(f"RT.{name.split('_')[0]}({fl})")
            return None
        if name in ("resubmit", "recirculate"):
            fl = self._adhoc_field_list(comp, args[0], scope) if n == 1 else -1
            out(f"RT.{name}({fl})")
            return None
        if name == "truncate":
            c, t = comp.expr(args[0], scope, Bits(32))
            out(f"RT.truncate({c})")
            return None
        if name == "random":
            rc, rt, assign = comp.lvalue(args[0], scope)
            lc, lt = comp.expr(args[1], scope, rt)
            hc, ht = comp.expr(args[2], scope, rt)
            for s in assign(f"RT.random({lc}, {hc})"):
                out(s)
            return None
        if name == "digest":
            if n != 2:
                raise comp.err("digest(receiver, data) takes two arguments", call)
            rc, rtt = comp.expr(args[0], scope, Bits(32))
            want = comp.resolve_type(call.type_args[0], scope) if call.type_args else None
            dc, dt = comp.expr(args[1], scope, want if isinstance(want, StructT) else None)
            if isinstance(dt, StructT):
                tname = dt.name
                fields = "{" + ", ".join(f"{n!r}: {dc}.{p}" for n, p, _ in dt.fields) + "}"
                if not any(d.name == tname for d in comp.info.digests):
                    comp.info.digests.append(DigestInfo(tname, [HeaderFieldInfo(n, t.width if isinstance(t, Bits)
                                                                                else 1) for n, _, t in dt.fields]))
            elif isinstance(dt, TupleT):
                tname = "tuple"
                fields = "{" + ", ".join(f"'f{i}': {dc}[{i}]" for i in range(len(dt.items))) + "}"
            else:
                raise comp.err(f"digest data must be a struct, not {dt}", args[1])
            out(f"RT.digest({tname!r}, {rc}, {fields})")
            return None
        if name == "log_msg":
            fc, ft = comp.expr(args[0], scope)
            vals = "()"
            if n == 2:
                if isinstance(args[1], A.ListExpr):
                    vals = "(" + "".join(comp.expr(it, scope)[0] + ", " for it in args[1].items) + ")"
                else:
                    vals = "(" + comp.expr(args[1], scope)[0] + ",)"
            out(f"if RT.log_fn is not None: RT.log_msg({fc}, {vals})")
            return None
        if name in ("assert", "assume"):
            cc, ct = comp.expr(args[0], scope)
            if not isinstance(ct, BoolT):
                raise comp.err(f"{name} needs a bool condition", args[0])
            out(f"if not {cc}: RT.assert_fail({name!r}, {str(call.loc)!r})")
            return None
        raise P4Unsupported(f"extern function {name} is not supported by the embedded v1model target", call.loc)


def _lookahead_hdr(pkt: pyrt.PacketIn, cls):
    h = cls()
    nb = cls._NB
    if pkt.off + nb > pkt.n:
        raise pyrt.ParserReject(pyrt.PacketTooShort)
    h._extract(pkt.buf, pkt.off)
    return h


# ================================================================== programs
class Registry:
    def __init__(self):
        self.tables: dict[str, Table] = {}
        self.externs: dict[str, Any] = {}


class Program:
    """A compiled v1model program: generated Python source plus its control-plane description."""

    def __init__(self, source: str, info: ProgramInfo, blocks: list, field_lists: dict, hdr_cls: str,
                 meta_cls: str, sm_cls: str, errors: list[str], filename: str):
        self.source = source
        self.info = info
        self.blocks = blocks
        self.field_lists = field_lists
        self.errors = errors
        self.filename = filename
        ns: dict[str, Any] = {
            "X": X, "Table": Table, "KeyInfo": KeyInfo, "ActionInfo": ActionInfo, "Exact": Exact, "Lpm": Lpm,
            "Ternary": Ternary, "Range": Range, "Optional_": Optional_, "Stack": pyrt.Stack,
            "ParserReject": pyrt.ParserReject, "P4Exit": pyrt.P4Exit, "_rt": pyrt, "DirectMeter": DirectMeter,
            "_lookahead_hdr": _lookahead_hdr, "__name__": "p4gen", "_concat_fields": concat_fields,
        }
        code = compile(source, f"<p4:{os.path.basename(filename)}>", "exec")
        exec(code, ns)
        self.ns = ns
        self.hdr_cls, self.meta_cls, self.sm_cls = ns[hdr_cls], ns[meta_cls], ns[sm_cls]
        # what the switch must maintain per packet: skipped when the program never reads it
        self.uses_packet_length = ".packet_length" in source
        self.uses_timestamps = "_global_timestamp" in source

    def instantiate(self, rt: Any) -> "Datapath":
        return Datapath(self, rt)


class Datapath:
    """One instance of a program: its tables, externs and the six V1Switch blocks."""

    def __init__(self, program: Program, rt: Any):
        self.program = program
        self.rt = rt
        reg = Registry()
        blocks = program.ns["build"](rt, reg)
        self.tables = reg.tables
        self.externs = reg.externs
        for t in self.tables.values():
            for o in (t.direct_counter, t.direct_meter):
                if o is not None:
                    o.table = t.name
        names = [n for n, _, _ in program.blocks]
        self._p, self._vr, self._ig, self._eg, self._ck, self._dep = (blocks[n] for n in names)
        self.H, self.M, self.SM = program.hdr_cls, program.meta_cls, program.sm_cls

    def new_phv(self):
        return (self.H(), self.M(), self.SM())

    def copy_phv(self, phv):
        return (phv[0]._copy(), phv[1]._copy(), phv[2]._copy())

    def parse(self, data: bytes, phv) -> int:
        pkt = pyrt.PacketIn(data)
        try:
            self._p(pkt, phv[0], phv[1], phv[2])
        except pyrt.ParserReject as e:
            phv[2].parser_error = e.code
        return pkt.off

    def verify_checksum(self, phv, payload: bytes = b"") -> None:
        rt = self.rt
        rt.cksum_error = 0
        rt.payload = payload
        self._vr(phv[0], phv[1])
        if rt.cksum_error:
            phv[2].checksum_error = 1

    def ingress(self, phv) -> None:
        self.rt.sm = phv[2]
        try:
            self._ig(phv[0], phv[1], phv[2])
        except pyrt.P4Exit:
            pass

    def egress(self, phv) -> None:
        self.rt.sm = phv[2]
        try:
            self._eg(phv[0], phv[1], phv[2])
        except pyrt.P4Exit:
            pass

    def compute_checksum(self, phv, payload: bytes = b"") -> None:
        self.rt.payload = payload
        self._ck(phv[0], phv[1])

    def deparse(self, phv, payload: bytes) -> bytes:
        po = pyrt.PacketOut()
        self._dep(po, phv[0])
        po.parts.append(payload)
        return b"".join(po.parts)

    def save_fields(self, meta, fl: Optional[int]):
        """Values of field list ``fl`` (attribute paths into the user metadata), copied."""
        if fl is None:
            return None
        out = []
        for path in self.program.field_lists.get(fl, ()):
            obj = meta
            for a in path[:-1]:
                obj = getattr(obj, a)
            v = getattr(obj, path[-1])
            out.append((path, v._copy() if hasattr(v, "_copy") else v))
        return out

    def restore_fields(self, meta, saved) -> None:
        for path, v in saved or ():
            obj = meta
            for a in path[:-1]:
                obj = getattr(obj, a)
            setattr(obj, path[-1], v)


def _field_lists(meta: StructT, adhoc: dict) -> dict[int, list[tuple]]:
    """Field lists: ``@field_list(N)`` annotations on user metadata fields, plus the ones made
    from the data argument of the deprecated resubmit/recirculate/clone3 (negative ids)."""
    out: dict[int, list[tuple]] = {}
    for n, p, t in meta.fields:
        anns = meta.field_annotations.get(n, {})
        body = anns.get("field_list")
        if body is None:
            continue
        for tok in body:
            if tok.type == "INTEGER":
                out.setdefault(int(tok.value, 0), []).append((p,))
    for fl, paths in adhoc.items():
        out[fl] = [path for root, path in paths if root is meta]
    return out


def compile_ast(prog: A.Program, filename: str, vectorize: Optional[bool] = None) -> Program:
    """Lower a parsed program; ``vectorize`` switches the vectorised lanes (None: the
    ``SAATP_P4_VECTORIZE`` environment variable, on by default)."""
    comp = Compiler(prog, V1Hooks(), filename, vectorize=vectorize)
    try:
        return _compile_ast(comp, prog, filename)
    except (P4Error, RecursionError):
        raise
    except Exception as e:  # a front-end bug must still point at the program, never a bare traceback
        raise P4Error(f"internal compiler error ({type(e).__name__}: {e}) near here; "
                      f"this construct is probably not supported yet", comp.cur_loc) from e


def _compile_ast(comp: Compiler, prog: A.Program, filename: str) -> Program:
    source, blocks = comp.build_module()
    if len(blocks) != 6 or tuple(n for n, _, _ in blocks) != V1SWITCH_PARAMS:
        names = [n for n, _, _ in blocks]
        raise P4Error(f"main must be a V1Switch(parser, verifyChecksum, ingress, egress, computeChecksum, "
                      f"deparser) package (got parameters {names})", prog.decls[-1].loc if prog.decls else None)
    pdecl = blocks[0][1]
    if not isinstance(pdecl, A.ParserDecl) or len(pdecl.params) != 4:
        raise P4Error("the V1Switch parser must take (packet_in, out H, inout M, inout standard_metadata_t)",
                      pdecl.loc)
    g = comp.glob
    htype = comp.resolve_type(pdecl.params[1].type, g)
    mtype = comp.resolve_type(pdecl.params[2].type, g)
    smtype = comp.resolve_type(pdecl.params[3].type, g)
    for t, what in ((htype, "headers"), (mtype, "metadata"), (smtype, "standard metadata")):
        if not isinstance(t, StructT):
            raise P4Error(f"the parser's {what} parameter must be a struct", pdecl.loc)
    comp.info.arch = "v1model"
    return Program(source, comp.info, blocks, _field_lists(mtype, getattr(comp, "adhoc_field_lists", {})),
                   htype.cls, mtype.cls, smtype.cls,
                   comp.errors_list, filename)
