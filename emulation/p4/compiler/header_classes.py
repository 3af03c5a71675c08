"""Headers, header unions and structs -> generated ``__slots__`` classes with their byte codecs."""
from __future__ import annotations

from ..types import (ArrayT, Bits, BoolT, EnumT, ErrorT, HeaderT, StackT, StringT, StructT, TupleT, Ty, VarBit,
                     is_composite)
from .source_writer import Out


LANE_MIN_FIELDS = 16
_LANE_WIRE = {(8, False): "u1", (16, False): ">u2", (32, False): ">u4",
              (8, True): "i1", (16, True): ">i2", (32, True): ">i4"}


def lane_header_dtype(ty) -> str | None:
    """The numpy wire type of a *lane header*: at least ``LANE_MIN_FIELDS`` fields, all
    ``bit<W>`` (or all ``int<W>``) of one width W in 8/16/32 (an aggregation payload), else
    None.  Such headers keep their fields in one array (``_gen_lane_header_class``)."""
    if not isinstance(ty, HeaderT) or ty.varbit is not None or len(ty.fields) < LANE_MIN_FIELDS:
        return None
    kinds = {(t.width, t.signed) if isinstance(t, Bits) else None for _, _, t in ty.fields}
    if len(kinds) != 1:
        return None
    return _LANE_WIRE.get(kinds.pop())


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
        if isinstance(t, ArrayT):
            scalar = not is_composite(t.elem)
            return f"_rt.Array(lambda: {self.default_value(t.elem)}, {t.size}, {scalar})"
        if isinstance(t, TupleT):
            return "(" + "".join(self.default_value(x) + ", " for x in t.items) + ")"
        if isinstance(t, StringT):
            return "''"
        return "None"

    def gen_header_class(self, ty: HeaderT) -> None:
        if self.vectorize and lane_header_dtype(ty) is not None:
            self._gen_lane_header_class(ty)
            return
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
            nested = {p for _, p, t in ty.fields if isinstance(t, StructT)}    # struct-typed fields
            with o.block("def _copy(self):"):
                o(f"c = {ty.cls}.__new__({ty.cls})")
                o("c._valid = self._valid")
                for p in names:
                    o(f"c.{p} = self.{p}._copy()" if p in nested else f"c.{p} = self.{p}")
                o("return c")
            with o.block("def _set(self, o):"):
                o("self._valid = o._valid")
                for p in names:
                    o(f"self.{p}._set(o.{p})" if p in nested else f"self.{p} = o.{p}")
            with o.block("def _zero(self):"):
                for _, p, t in ty.fields:
                    o(f"self.{p}._set({self.default_value(t)})" if p in nested else
                      f"self.{p} = {self.default_value(t)}")
                if ty.width % 8:
                    o("self._pad = 0")
            with o.block("def _eq(self, o):"):
                conds = " and ".join(f"self.{p}._eq(o.{p})" if p in nested else f"self.{p} == o.{p}"
                                     for p in names if p != "_pad") or "True"
                o(f"return self._valid == o._valid and (not self._valid or ({conds}))")
            vb = ty.varbit
            if vb is None:
                self._gen_fixed_codec(ty, o, nb)
            else:
                self._gen_varbit_codec(ty, o, nb)
            with o.block("def _int(self):"):
                o("return int.from_bytes(self._bytes(), 'big')")
        o("")

    def _gen_lane_header_class(self, ty: HeaderT) -> None:
        """A lane header (:func:`lane_header_dtype`): the fields live in one int64 numpy array
        ``_a``, so extracting, emitting and copying it (multicast replicas) are single array
        operations, and vectorised lanes (``lanes.py``) use the array directly.  Each field
        stays readable and writable by name (a property reading ``int(_a[i])``), so all other
        generated code is unchanged.  Part of the vectorised code (off with vectorize=False, which
        keeps plain slots as the scalar reference)."""
        o = self.classes
        dt = lane_header_dtype(ty)
        k = len(ty.fields)
        self._lanes_used = True         # the module imports numpy
        with o.block(f"class {ty.cls}:"):
            o("__slots__ = ('_valid', '_a')")
            o(f"_NB = {ty.width // 8}")
            o(f"_K = {k}")
            o(f"_WIRE = np.dtype({dt!r})")
            o(f"_ZERO = np.zeros({k}, dtype=np.int64)")
            with o.block("def __init__(self):"):
                o("self._valid = False")
                o("self._a = self._ZERO.copy()")
            with o.block("def _copy(self):"):
                o(f"c = {ty.cls}.__new__({ty.cls})")
                o("c._valid = self._valid")
                o("c._a = self._a.copy()")
                o("return c")
            with o.block("def _set(self, o):"):
                o("self._valid = o._valid")
                o("self._a = o._a.copy()")
            with o.block("def _zero(self):"):
                o("self._a = self._ZERO.copy()")
            with o.block("def _eq(self, o):"):
                o("return self._valid == o._valid and (not self._valid or bool((self._a == o._a).all()))")
            with o.block("def _extract(self, buf, off):"):
                o(f"self._a = np.frombuffer(buf, self._WIRE, {k}, off).astype(np.int64)")
                o("self._valid = True")
            with o.block("def _bytes(self):"):
                o("return self._a.astype(self._WIRE).tobytes()")
            with o.block("def _int(self):"):
                o("return int.from_bytes(self._bytes(), 'big')")
        names = [p for _, p, _ in ty.fields]
        o(f"for _i, _n in enumerate({tuple(names)!r}):")
        o(f"    setattr({ty.cls}, _n, property(lambda self, _i=_i: int(self._a[_i]), "
          f"lambda self, v, _i=_i: self._a.__setitem__(_i, v)))")
        o("")

    @staticmethod
    def header_leaves(ty: HeaderT) -> list:
        """The fields of a header in wire order as (attribute path, type): a struct-typed field
        (P4_16 spec 1.2.5, 7.2.2: structs of bit<W>/int<W>/bool/serializable enums) gives its
        own fields, ``row0.alt0.valid``."""
        out: list = []

        def walk(prefix: str, fields) -> None:
            for _, p, t in fields:
                if isinstance(t, StructT):
                    walk(f"{prefix}{p}.", t.fields)
                else:
                    out.append((prefix + p, t))
        walk("", ty.fields)
        return out

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
        """Headers whose fields fall into 8/16/32/64-bit units (IPv4, UDP, payload lanes): a
        field of exactly a unit's width, or a run of unsigned sub-byte fields filling one
        (IPv4's version+ihl, flags+fragOffset).  One precompiled ``struct.Struct`` unpacks and
        packs every unit at once; runs are split and joined with shifts."""
        if len(ty.fields) < 2:
            return False
        fs = [(p, t) for _, p, t in ty.fields]
        if not all(isinstance(t, Bits) for _, t in fs):
            return False
        # split the fields into units: nxt[i] is where the unit starting at field i ends, the
        # first end from which the rest splits too (computed from the back, no recursion)
        n = len(fs)
        nxt: list[int | None] = [None] * n + [n]
        for i in range(n - 1, -1, -1):
            bits = 0
            for j in range(i, n):
                t = fs[j][1]
                if j > i and (t.signed or fs[i][1].signed):
                    break                          # a signed field is a unit on its own
                bits += t.width
                if bits > 64:
                    break
                if bits in (8, 16, 32, 64) and nxt[j + 1] is not None and (j > i or (t.width, t.signed) in self._STRUCT_CODES):
                    nxt[i] = j + 1
                    break
        if nxt[0] is None:
            return False
        units, i = [], 0
        while i < n:
            units.append(fs[i:nxt[i]])
            i = nxt[i]
        codes = [self._STRUCT_CODES[(u[0][1].width, u[0][1].signed)] if len(u) == 1
                 else self._STRUCT_CODES[(sum(t.width for _, t in u), False)] for u in units]
        self._uses_struct = True
        o(f"_S = _struct.Struct('>{''.join(codes)}')")
        with o.block("def _extract(self, buf, off):"):
            targets, splits = [], []
            for i, u in enumerate(units):
                if len(u) == 1:
                    targets.append(f"self.{u[0][0]}")
                    continue
                targets.append(f"_u{i}")
                left = sum(t.width for _, t in u)
                for p, t in u:
                    left -= t.width
                    x = f"(_u{i} >> {left})" if left else f"_u{i}"
                    splits.append(f"self.{p} = {x} & {(1 << t.width) - 1:#x}" if p != u[0][0] else f"self.{p} = {x}")
            o(f"{', '.join(targets)}, = self._S.unpack_from(buf, off)")
            for line in splits:
                o(line)
            o("self._valid = True")
        with o.block("def _bytes(self):"):
            vals = []
            for u in units:
                if len(u) == 1:
                    vals.append(f"self.{u[0][0]}")
                    continue
                left = sum(t.width for _, t in u)
                parts = []
                for p, t in u:
                    left -= t.width
                    parts.append(f"(self.{p} << {left})" if left else f"self.{p}")
                vals.append(" | ".join(parts))
            o(f"return self._S.pack({', '.join(vals)})")
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
            for p, t in self.header_leaves(ty):
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
            for p, t in self.header_leaves(ty):
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
            for p, t in reversed(self.header_leaves(ty)):
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
            for p, t in self.header_leaves(ty):
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
                    elif isinstance(t, ArrayT) and isinstance(t.elem, StructT):
                        terms.append(f"sum(e._vsize() for e in self.{p}.elems)")
                    elif isinstance(t, StackT) and t.elem.varbit is not None:
                        terms.append(f"sum(e._nbytes() for e in self.{p}.elems if e._valid)")
                    elif isinstance(t, StackT):
                        terms.append(f"{(t.elem.width + 7) // 8} * sum(1 for e in self.{p}.elems if e._valid)")
                o(f"return {' + '.join(terms) or '0'}")
        o("")
