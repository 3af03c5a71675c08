"""Headers, header unions and structs -> generated ``__slots__`` classes with their byte codecs."""
from __future__ import annotations

from ..types import (Bits, BoolT, EnumT, ErrorT, HeaderT, StackT, StringT, StructT, TupleT, Ty, VarBit,
                     is_composite)
from .source_writer import Out


class HeaderClassesMixin:
    """Mixin of :class:`~emulation.p4.compiler.core.Compiler` (see the module docstring)."""

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

    _STRUCT_CODES = {(8, False): "B", (16, False): "H", (32, False): "I", (64, False): "Q",
                     (8, True): "b", (16, True): "h", (32, True): "i", (64, True): "q"}

    def _gen_struct_codec(self, ty: HeaderT, o: Out) -> bool:
        """Headers made only of bit<W>/int<W> fields with W in 8/16/32/64 (payload lanes):
        one precompiled ``struct.Struct`` unpacks and packs every field at once."""
        codes = []
        for _, _, t in ty.fields:
            if not isinstance(t, Bits) or (t.width, t.signed) not in self._STRUCT_CODES:
                return False
            codes.append(self._STRUCT_CODES[(t.width, t.signed)])
        if len(codes) < 2:
            return False
        self._uses_struct = True
        names = ", ".join(f"self.{p}" for _, p, _ in ty.fields)
        o(f"_S = _struct.Struct('>{''.join(codes)}')")
        with o.block("def _extract(self, buf, off):"):
            o(f"{names}, = self._S.unpack_from(buf, off)")
            o("self._valid = True")
        with o.block("def _bytes(self):"):
            o(f"return self._S.pack({names})")
        return True

    def _gen_fixed_codec(self, ty: HeaderT, o: Out, nb: int) -> None:
        if self._gen_struct_codec(ty, o):
            return
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
