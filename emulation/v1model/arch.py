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

import marshal
import os
import re
from typing import Any, Optional

from emulation.p4 import nodes as A
from emulation.p4 import pyrt
from emulation.p4.builder import _int_literal
from emulation.p4.compiler.core import Compiler
from emulation.p4.compiler.hooks import ArchHooks, InstSym, Out, Scope
from emulation.p4.errors import P4Error, P4NotRunnable, P4Unsupported
from emulation.p4.info import ExternInstanceInfo, DigestInfo, ProgramInfo, header_field_info, type_desc
from emulation.p4.types import (AnyT, ArrayT, Bits, BoolT, EnumT, ExternT, HeaderT, InfInt, StackT, StructT, TupleT,
                                VarBit)

from host_agent.match import Exact, Lpm, Optional_, Range, Ternary
from . import externs as X
from .hashes import CSUM16_INT_CODE, concat_fields
from . import action_profiles as AP
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
            t = declared = ety.args[0] if ety.args else AnyT()
            if isinstance(t, EnumT) and t.repr is not None:
                t = t.repr      # a serializable enum's cells hold its underlying bit<W>
            if isinstance(t, StructT) and inst.decl is not None and _register_accessed(comp.prog, inst.decl.name):
                # p4c's mid end refuses the read/write of a struct-typed register before its
                # back end sees the declaration: report it there (p4c error test issue1777-bmv2)
                ety.struct_cells = True
                out(f"{py} = None")
                return
            if not isinstance(t, Bits):
                raise comp.err(f"register cells must be bit<W> or int<W>, not {t}", inst.decl)
            out(f"{py} = X.Register({full!r}, {size}, {t.width}, {t.signed}, RT.log_fn)")
            out(f"{py}_c = {py}.cells")     # the generated code reads and writes cells directly
            ety.size = size                 # a compile-time bound for the generated index checks
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="register", name=full, size=size,
                                                        width=t.width, signed=t.signed,
                                                        type_desc=type_desc(declared)))
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
            # members, groups and selector hashing: emulation/v1model/action_profiles.py
            if kind == "action_profile":
                if len(args) != 1:
                    raise comp.err("action_profile(size) takes one argument", inst.decl or loc)
                size, algo = comp.const_int(args[0], scope, "action profile size"), None
            else:
                if len(args) != 3:
                    raise comp.err("action_selector(algorithm, size, outputWidth) takes three arguments",
                                   inst.decl or loc)
                algo = self._algo(comp, args[0])
                size = comp.const_int(args[1], scope, "action selector size")
                comp.const_int(args[2], scope, "action selector output width")
            out(f"{py} = AP.ActionProfile({full!r}, {size}, {algo!r}, RT)")
            comp.info.externs.append(ExternInstanceInfo(annotations=anns, kind="action_profile", name=full,
                                                        size=size, algorithm=algo))
        elif kind == "Checksum16":
            # deprecated, stateless: get() is the ones' complement checksum of its data
            if args:
                raise comp.err("Checksum16() takes no arguments", inst.decl or loc)
            out(f"{py} = {full!r}")
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
        if kind == "Checksum16" and method == "get":
            # BMv2 (p4c lowers it to a csum16 calculation): RFC 1071 over the data's bytes
            (e,) = self._args(comp, call, 1, "Checksum16.get")
            return f"(HF['csum16']({self._fields(comp, e, scope)}) & 0xffff)", Bits(16)
        if kind == "register":
            t = ety.args[0] if ety.args else AnyT()
            if getattr(ety, "struct_cells", False) and method in ("read", "write") and len(call.args) == 2:
                arg = call.args[0].value if method == "read" else call.args[1].value
                what = "writing to" if method == "read" else "reading from"
                raise comp.err(f"{comp.key_name(arg)}: {what} a structure is not supported on this target "
                               f"(register cells of type {t})", arg)
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
                    if comp.trace:
                        out(f"TR.extract({_header_name(e.obj)!r} + '[' + str(_s.nxt) + ']')")
                    out("_s.nxt += 1")
                    return None
                c, t = comp.expr(e, scope)
                if not isinstance(t, HeaderT) or t.varbit is None:
                    raise comp.err("extract with a size needs a header with a varbit field", e)
                out(f"{c}._extract_v({oc}, {sc})")
                if comp.trace:
                    out(f"TR.extract({_header_name(e)!r})")
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
                if comp.trace:
                    out(f"TR.extract({_header_name(e.obj)!r} + '[' + str(_s.nxt) + ']')")
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
            if comp.trace:
                out(f"TR.extract({_header_name(e)!r})")
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
            paths = _header_leaves(t) if isinstance(t, StructT) and not t.union else None
            if paths:
                # a struct of headers (and header stacks): each header is extracted, valid,
                # from where the previous one ends; the packet does not advance (p4c sample
                # issue2465-bmv2: lookahead<struct { h1[3] h; }>)
                nb = sum(h.width // 8 for h, _ in paths)
                steps = tuple(p for _, p in paths)
                return f"_lookahead_into({oc}, {comp.default_value(t)}, {steps!r}, {nb})", t
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
            if comp.trace:
                out(f"if _h._valid: TR.deparse({_header_name(node)!r}); {oc}.parts.append(_h._bytes())")
            else:
                out(f"if _h._valid: {oc}.parts.append(_h._bytes())")
        elif isinstance(t, StackT):
            out(f"for _h in {c}.elems:")
            if comp.trace:
                out(f"    if _h._valid: TR.deparse({_header_name(node)!r}); {oc}.parts.append(_h._bytes())")
            else:
                out(f"    if _h._valid: {oc}.parts.append(_h._bytes())")
        elif isinstance(t, StructT):
            for n, p, ft in t.fields:
                self._emit(comp, oc, f"{c}.{p}", ft, out, node)
        elif isinstance(t, ArrayT) and isinstance(t.elem, StructT) and t.elem.union:
            for i in range(t.size):     # a stack of header unions: each element's valid member
                self._emit(comp, oc, f"{c}.elems[{i}]", t.elem, out, node)
        else:
            raise comp.err(f"emit needs a header, a header stack or a struct of headers, not {t}", node)

    # ------------------------------------------------------------ functions
    def _fields(self, comp, e, scope, as_int: bool = False):
        """Code building the bytes of a field list ({a, b, c}, a header or a struct) for hashes and
        checksums: the fields concatenated bit-wise, MSB first, zero-padded at the end to a byte
        boundary (BMv2's BufBuilder).  Widths are static, so this is one shift-or expression.
        With ``as_int``: ``([(code, bit shift), ...], length in bytes)`` (the integer is the
        sum of ``code << shift``, the last byte's padding included), or None when a varbit
        makes the length dynamic.  Fields of one header are read through one local
        (``_fq := p_hdr.ipv4``) instead of walking the path again for each field."""
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
            if as_int:
                return None
            # a varbit field makes the width dynamic: concatenate at run time
            pairs = ", ".join(c if w < 0 else f"({c}, {w})" for c, w in items)
            return f"_concat_fields(({pairs},))"
        items = _hoist_common_path(items)
        total = sum(w for _, w in items)
        pad = (-total) % 8
        parts = []
        shift = total + pad
        for c, w in items:
            shift -= w
            parts.append(f"({c} << {shift})" if shift else c)
        if as_int:
            out, shift = [], total + pad
            for c, w in items:
                shift -= w
                out.append((c, shift))
            return out, (total + pad) // 8
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
            algo = self._algo(comp, args[3])
            payload = " + RT.payload" if name.endswith("_with_payload") else ""
            as_int = self._fields(comp, args[1], scope, as_int=True) if algo == "csum16" and not payload else None
            if as_int is not None:
                # RFC 1071 without a bytes object: 2**16 == 1 (mod 0xFFFF), so the field list's
                # integer is congruent to the sum of its fields each shifted by (offset mod 16)
                # bits (an odd byte count pads one zero byte: 8 more), and that sum of
                # non-negative terms is 0 exactly when every field is (see hashes.csum16_int)
                fields_at, nbytes = as_int
                odd = 8 if nbytes & 1 else 0
                terms = []
                for c, sh in fields_at:
                    k = (sh + odd) % 16
                    terms.append(f"({c} << {k})" if k else c)
                call_code = CSUM16_INT_CODE.format(n=" + ".join(terms))
            else:
                fields = self._fields(comp, args[1], scope)
                call_code = f"HF[{algo!r}]({fields}{payload})"
            if name.startswith("verify"):
                kc, kt = comp.expr(args[2], scope)
                if not isinstance(kt, Bits):
                    raise comp.err("the checksum field must be bit<W>", args[2])
                out(f"if {cc} and ({call_code} & {kt.mask:#x}) != {kc}: "
                    f"RT.cksum_error = 1")
            else:
                kc, kt, assign = comp.lvalue(args[2], scope)
                if not isinstance(kt, Bits):
                    raise comp.err("the checksum field must be bit<W>", args[2])
                with out.block(f"if {cc}:"):
                    for s in assign(f"({call_code} & {kt.mask:#x})"):
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
                    comp.info.digests.append(DigestInfo(tname, [header_field_info(n, t) for n, _, t in dt.fields],
                                                        type_desc=type_desc(dt)))
            elif isinstance(dt, TupleT):
                # p4c names the digest of a list after no type: "digest_<n>", n counting the
                # call sites (control-plane/p4RuntimeArchStandard.cpp, getDigestCall)
                sites = comp.__dict__.setdefault("_digest_sites", {})
                tname = sites.setdefault(id(call), f"digest_{len(sites)}")
                fields = "{" + ", ".join(f"'f{i}': {dc}[{i}]" for i in range(len(dt.items))) + "}"
                if not any(d.name == tname for d in comp.info.digests):
                    comp.info.digests.append(DigestInfo(tname, [header_field_info(f"f{i}", t)
                                                                for i, t in enumerate(dt.items)],
                                                        type_desc=type_desc(dt)))
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


def _header_name(e: Any) -> str:
    """The name BMv2 logs a header by: the header instance (``hdr.ipv4`` -> ``ipv4``;
    ``hdr.s[1]`` -> ``s[1]``)."""
    if isinstance(e, A.Member):
        return e.name
    if isinstance(e, A.Index):
        idx = e.index.value if isinstance(e.index, A.IntLit) else "?"
        return f"{_header_name(e.obj)}[{idx}]"
    if isinstance(e, A.Path):
        return e.name
    return "header"


def _register_accessed(prog, name: str) -> bool:
    """Whether the program calls ``name.read(...)`` or ``name.write(...)`` anywhere."""
    def walk(x):
        if isinstance(x, A.Call) and isinstance(x.func, A.Member) and x.func.name in ("read", "write") \
                and isinstance(x.func.obj, A.Path) and x.func.obj.name == name:
            return True
        if isinstance(x, A.Node):
            return any(walk(v) for v in vars(x).values())
        if isinstance(x, (list, tuple)):
            return any(walk(v) for v in x)
        return False
    return walk(prog)


def _header_leaves(t, path=()):
    """``[(header type, access path)]`` of a struct whose members are all headers, header
    stacks or such structs, each header of a whole number of bytes (else None); a path step is
    a field's Python name or an index into a stack."""
    out = []
    for _, py, ft in t.fields:
        if isinstance(ft, HeaderT):
            hs = [(ft, path + (py,))]
        elif isinstance(ft, StackT):
            hs = [(ft.elem, path + (py, i)) for i in range(ft.size)]
        elif isinstance(ft, StructT) and not ft.union:
            hs = _header_leaves(ft, path + (py,))
            if hs is None:
                return None
        else:
            return None
        if any(h.width % 8 or any(not isinstance(x, Bits) for _, _, x in h.fields) for h, _ in hs):
            return None
        out.extend(hs)
    return out


def _lookahead_into(pkt: pyrt.PacketIn, obj, paths, nb: int):
    """lookahead<T> of a struct of headers: the headers of ``obj`` (a fresh T) at ``paths``
    are extracted one after the other from the packet's current offset, which stays."""
    if pkt.off + nb > pkt.n:
        raise pyrt.ParserReject(pyrt.PacketTooShort)
    off = pkt.off
    for path in paths:
        h = obj
        for step in path:
            h = h.elems[step] if isinstance(step, int) else getattr(h, step)
        h._extract(pkt.buf, off)
        off += h._NB
    return obj


def _lookahead_hdr(pkt: pyrt.PacketIn, cls):
    h = cls()
    nb = cls._NB
    if pkt.off + nb > pkt.n:
        raise pyrt.ParserReject(pyrt.PacketTooShort)
    h._extract(pkt.buf, pkt.off)
    return h


# ================================================================== programs
_PATH_FIELD = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\.([A-Za-z_]\w*)$")


def _hoist_common_path(items: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Field-list items that are plain attribute paths under one prefix (``p_hdr.ipv4.ttl``...)
    read the prefix once: the first becomes ``(_fq := p_hdr.ipv4).ttl``, the rest ``_fq.x``
    (attribute reads have no side effects, and ``|`` evaluates left to right)."""
    prefixes: dict[str, int] = {}
    for c, _w in items:
        m = _PATH_FIELD.match(c)
        if m:
            prefixes[m.group(1)] = prefixes.get(m.group(1), 0) + 1
    if not prefixes:
        return items
    best, count = max(prefixes.items(), key=lambda kv: kv[1])
    if count < 3:
        return items
    out, first = [], True
    for c, w in items:
        m = _PATH_FIELD.match(c)
        if m and m.group(1) == best:
            c = f"(_fq := {best}).{m.group(2)}" if first else f"_fq.{m.group(2)}"
            first = False
        out.append((c, w))
    return out


PacketIn, PacketOut, ParserReject, P4Exit = pyrt.PacketIn, pyrt.PacketOut, pyrt.ParserReject, pyrt.P4Exit


class Registry:
    def __init__(self):
        self.tables: dict[str, Table] = {}
        self.externs: dict[str, Any] = {}


class Program:
    """A compiled v1model program: generated Python source plus its control-plane description.

    It pickles to its generated code (a marshalled code object, valid for this Python
    version) and description, never to its live namespace: unpickling runs the code again.
    The front end's declarations in ``blocks`` are left out of the pickle (only the block
    names and what was derived from the declarations are kept); the on-disk compile cache
    (:mod:`~emulation.v1model.compile_cache`) relies on this."""

    def __init__(self, source: str, info: ProgramInfo, blocks: list, field_lists: dict, hdr_cls: str,
                 meta_cls: str, sm_cls: str, errors: list[str], filename: str):
        self.source = source
        self.info = info
        self.blocks = blocks
        self.field_lists = field_lists
        self.errors = errors
        self.filename = filename
        self.traced = False
        self.code = compile(source, f"<p4:{os.path.basename(filename)}>", "exec")
        self._run(hdr_cls, meta_cls, sm_cls)
        # controls whose apply block is empty: the per-packet path does not call them
        self.empty_blocks = {n for n, decl, *_ in blocks
                             if isinstance(decl, A.ControlDecl) and decl.body is not None and not decl.body.stmts}
        # what the switch must maintain per packet: skipped when the program never reads it.
        # Looked for in the blocks (``build``), not in the struct classes, which name every
        # field; a whole-struct copy or comparison reads every field, so it counts as a use.
        body = source[source.find("\ndef build("):]
        whole = any(op in body for op in ("._set(", "._copy()", "._eq("))
        self.uses_packet_length = whole or ".packet_length" in body
        self.uses_timestamps = whole or "_global_timestamp" in body

    def _run(self, hdr_cls: str, meta_cls: str, sm_cls: str) -> None:
        """Execute the generated code in a fresh namespace; look up the three struct classes."""
        ns: dict[str, Any] = {
            "X": X, "AP": AP, "Table": Table, "IndirectTable": AP.IndirectTable, "KeyInfo": KeyInfo, "ActionInfo": ActionInfo, "Exact": Exact, "Lpm": Lpm,
            "Ternary": Ternary, "Range": Range, "Optional_": Optional_, "Stack": pyrt.Stack,
            "ParserReject": pyrt.ParserReject, "P4Exit": pyrt.P4Exit, "_rt": pyrt, "DirectMeter": DirectMeter,
            "_lookahead_hdr": _lookahead_hdr, "_lookahead_into": _lookahead_into, "__name__": "p4gen", "_concat_fields": concat_fields,
        }
        exec(self.code, ns)
        self.ns = ns
        self.struct_class_names = (hdr_cls, meta_cls, sm_cls)
        self.hdr_cls, self.meta_cls, self.sm_cls = ns[hdr_cls], ns[meta_cls], ns[sm_cls]

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("ns", "code", "hdr_cls", "meta_cls", "sm_cls")}
        state["blocks"] = [(n, None, *rest) for n, _decl, *rest in self.blocks]
        state["code"] = marshal.dumps(self.code)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        self.__dict__.update(state)
        self.code = marshal.loads(state["code"])
        self._run(*state["struct_class_names"])

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
        skip = set() if getattr(program, "traced", False) else getattr(program, "empty_blocks", set())
        self._vr_live, self._eg_live, self._ck_live = "vr" not in skip, "eg" not in skip, "ck" not in skip

    def new_phv(self):
        return (self.H(), self.M(), self.SM())

    def copy_phv(self, phv):
        return (phv[0]._copy(), phv[1]._copy(), phv[2]._copy())

    def front(self, data: bytes, phv, want_base: bool = True, on_parsed=None, run: bool = True) -> tuple:
        """Parse (a parser error goes to ``parser_error``), verify checksums and run ingress, in
        one call (the per-packet path).  Returns ``(payload, base)``; ``base`` is the packet's
        length minus its valid headers' bytes (0 unless ``want_base``).  ``on_parsed(sm)`` runs
        between checksum verification and ingress (the tracer); ``run=False`` only parses."""
        hdr, meta, sm = phv
        pkt = PacketIn(data)
        try:
            self._p(pkt, hdr, meta, sm)
        except ParserReject as e:
            sm.parser_error = e.code
        off = pkt.off
        payload = data[off:] if off else data
        base = len(data) - hdr._vsize() if want_base else 0
        if not run:
            return payload, base
        rt = self.rt
        if self._vr_live:
            rt.cksum_error = 0
            rt.payload = payload
            self._vr(hdr, meta)
            if rt.cksum_error:
                sm.checksum_error = 1
        if on_parsed is not None:
            on_parsed(sm)
        rt.sm = sm
        try:
            self._ig(hdr, meta, sm)
        except P4Exit:
            pass
        return payload, base

    def egress(self, phv) -> None:
        if not self._eg_live:
            return
        self.rt.sm = phv[2]
        try:
            self._eg(phv[0], phv[1], phv[2])
        except P4Exit:
            pass

    def back(self, phv, payload: bytes) -> bytes:
        """Compute checksums and deparse: the bytes that leave."""
        hdr = phv[0]
        if self._ck_live:
            self.rt.payload = payload
            self._ck(hdr, phv[1])
        po = PacketOut()
        parts = po.parts
        self._dep(po, hdr)
        if payload:
            parts.append(payload)
        return b"".join(parts) if len(parts) != 1 else parts[0]

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


def _field_list_ids(comp: Compiler, body: list, loc) -> list[int]:
    """The ids named by one ``@field_list(...)`` annotation body: integer literals or compile-time
    constants (``const`` declarations, serializable enum members such as ``FieldLists.fl1``),
    comma-separated, as p4c evaluates them (the p4lang tutorials' flowcache names its list
    ``FL_PACKET_IN``)."""
    groups: list[list] = [[]]
    for tok in body:
        if tok.type == "COMMA":
            groups.append([])
        else:
            groups[-1].append(tok)
    ids = []
    for g in groups:
        kinds = [t.type for t in g]
        text = "".join(t.value for t in g) if len(g) <= 3 else " ".join(t.value for t in g)
        if kinds == ["INTEGER"]:
            ids.append(_int_literal(g[0].value)[0])
            continue
        if kinds == ["IDENTIFIER"]:
            e = A.Path(loc=loc, name=g[0].value)
        elif kinds == ["DOT", "IDENTIFIER"]:
            e = A.Path(loc=loc, name=g[1].value, top=True)
        elif len(g) == 3 and kinds[1] == "DOT" and kinds[0] in ("IDENTIFIER", "TYPE_IDENTIFIER"):
            e = A.TypeMember(loc=loc, tname=g[0].value, name=g[2].value)
        else:
            raise P4Error(f"@field_list({text}): expected integer constants", loc)
        v = comp.const_eval(e, comp.glob)
        if not isinstance(v, int) or isinstance(v, bool):
            raise P4Error(f"@field_list({text}): {text} is not a compile-time integer constant", loc)
        ids.append(v)
    return ids


def _field_lists(comp: Compiler, meta: StructT, adhoc: dict) -> dict[int, list[tuple]]:
    """Field lists: ``@field_list(id, ...)`` annotations on user metadata fields (also on fields of
    nested structs, which p4c flattens), plus the ones made from the data argument of the
    deprecated resubmit/recirculate/clone3 (negative ids)."""
    out: dict[int, list[tuple]] = {}
    decls = {d.name: d for d in comp.prog.decls if isinstance(d, A.StructDecl)}

    def walk(st: StructT, prefix: tuple) -> None:
        fdecls = {f.name: f for f in getattr(decls.get(st.name), "fields", ())}
        for n, p, t in st.fields:
            body = st.field_annotations.get(n, {}).get("field_list")
            if body is not None:
                loc = getattr(fdecls.get(n), "loc", None)
                for fl in _field_list_ids(comp, body, loc):
                    out.setdefault(fl, []).append(prefix + (p,))
            elif isinstance(t, StructT):
                walk(t, prefix + (p,))
    walk(meta, ())
    for fl, paths in adhoc.items():
        out[fl] = [path for root, path in paths if root is meta]
    return out


def compile_ast(prog: A.Program, filename: str, vectorize: Optional[bool] = None, trace: bool = False) -> Program:
    """Lower a parsed program; ``vectorize`` switches the vectorised lanes (None: the
    ``SAATP_P4_VECTORIZE`` environment variable, on by default); ``trace`` adds the calls that
    print BMv2-style per-packet lines (:mod:`~emulation.v1model.trace`; a switch with a log)."""
    comp = Compiler(prog, V1Hooks(), filename, vectorize=vectorize, trace=trace)
    try:
        return _compile_ast(comp, prog, filename)
    except (P4Error, RecursionError):
        raise
    except Exception as e:  # a front-end bug must still point at the program, never a bare traceback
        raise P4Error(f"internal compiler error ({type(e).__name__}: {e}) near here; "
                      f"this construct is probably not supported yet", comp.cur_loc) from e


def _main_loc(prog: A.Program):
    for d in prog.decls:
        if getattr(d, "name", None) == "main":
            return d.loc
    return prog.decls[-1].loc if prog.decls else None


def _compile_ast(comp: Compiler, prog: A.Program, filename: str) -> Program:
    source, blocks = comp.build_module()
    if len(blocks) != 6 or tuple(n for n, _, _ in blocks) != V1SWITCH_PARAMS:
        names = [n for n, _, _ in blocks]
        # p4c's front end accepts any package as main; only its BMv2 back end wants a V1Switch
        raise P4NotRunnable(f"main is not a V1Switch(parser, verifyChecksum, ingress, egress, computeChecksum, "
                            f"deparser) package (got parameters {names}): the program passes the front end, "
                            f"but cannot run on the v1model target", _main_loc(prog))
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
    program = Program(source, comp.info, blocks, _field_lists(comp, mtype, getattr(comp, "adhoc_field_lists", {})),
                      htype.cls, mtype.cls, smtype.cls,
                      comp.errors_list, filename)
    program.traced = comp.trace      # the generated code calls RT.tracer (trace.py)
    return program
