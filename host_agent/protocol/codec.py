"""The SA-ATP fast path: header and payload <-> bytes with ``struct`` and numpy.

Everything here is derived from :data:`.layout.SA_HEADER`: the :class:`Header` dataclass has
one attribute per field (table order, table defaults), the ``struct`` format groups fields
that share bytes into one unit, and :meth:`Header.pack`/:meth:`Header.unpack` are compiled
once from the table into straight-line functions (as :mod:`dataclasses` builds ``__init__``),
so the data plane pays no per-field loop.  The payload is K = 2**klog2 lanes of
:data:`.layout.PAYLOAD_LANE` (int32, big-endian), converted by numpy.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from types import MappingProxyType
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from .layout import (ENUM, F_PAYLOAD, FIELD, FLAGS, HDR_LEN, HEX, LANE_LEN, MAX_KLOG2,
                     PAYLOAD_LANE, SA_HEADER, VERSION, HeaderField)


class WireError(ValueError):
    """Malformed SA-ATP bytes."""


# ---------------------------------------------------------------- struct units
_FORMAT_CHARS = {8: "B", 16: "H", 32: "I", 64: "Q"}


@dataclass(frozen=True)
class StructUnit:
    """Fields packed into one ``struct`` item (one field, or sub-byte fields sharing bytes)."""
    fields: tuple[HeaderField, ...]

    @property
    def bits(self) -> int:
        return sum(f.bits for f in self.fields)

    @property
    def format(self) -> str:
        c = _FORMAT_CHARS[self.bits]
        if len(self.fields) == 1 and self.fields[0].signed:
            c = c.lower()
        return c

    def shifts(self) -> list[tuple[HeaderField, int]]:
        """Each field with its shift inside the unit (the first field is most significant)."""
        out, left = [], self.bits
        for f in self.fields:
            left -= f.bits
            out.append((f, left))
        return out


def struct_units(fields: Sequence[HeaderField]) -> list[StructUnit]:
    """Group consecutive fields into units of 8, 16, 32 or 64 bits."""
    units, run = [], []
    for f in fields:
        run.append(f)
        bits = sum(g.bits for g in run)
        if bits % 8 == 0:
            if bits not in _FORMAT_CHARS:
                raise ValueError(f"fields {', '.join(g.name for g in run)} take {bits} bits: "
                                 "a struct unit is 8, 16, 32 or 64 bits")
            if len(run) > 1 and any(g.signed for g in run):
                raise ValueError(f"signed field shares bytes: {', '.join(g.name for g in run)}")
            units.append(StructUnit(tuple(run)))
            run = []
    if run:
        raise ValueError(f"fields {', '.join(g.name for g in run)} end mid-byte")
    return units


def struct_format(fields: Sequence[HeaderField]) -> str:
    return "!" + "".join(u.format for u in struct_units(fields))


HEADER_UNITS = struct_units(SA_HEADER)
HEADER_STRUCT = struct.Struct(struct_format(SA_HEADER))
assert HEADER_STRUCT.size == HDR_LEN

LANE_DTYPE = np.dtype(f">{'i' if PAYLOAD_LANE.signed else 'u'}{LANE_LEN}")   # on the wire
NATIVE_LANE_DTYPE = LANE_DTYPE.newbyteorder("=")                             # in memory


def _byte_fields() -> dict[str, tuple[int, np.dtype]]:
    """Byte offset and big-endian numpy type of every header field that fills whole bytes."""
    out, bit = {}, 0
    for f in SA_HEADER:
        if bit % 8 == 0 and f.bits in (8, 16, 32):
            out[f.name] = (bit // 8, np.dtype(f">{'i' if f.signed else 'u'}{f.bits // 8}"))
        bit += f.bits
    return out


# name -> (byte offset, big-endian dtype): lets numpy write one field of many packets at once
BYTE_FIELDS = MappingProxyType(_byte_fields())


def data_packets(h: "Header", q: np.ndarray, out: np.ndarray, pool: int, set_flag: int) -> np.ndarray:
    """Every DATA packet of an int32 vector ``q`` at once, into ``out`` (uint8, at least
    ``c x (HDR_LEN + 4K)`` bytes, reused between calls): row ``seq`` is ``h`` with ``seq``,
    ``slot = seq mod pool``, ``set_flag`` in ``flags`` when ``(seq // pool)`` is odd and the
    valid-lane count of the chunk, followed by lanes ``seq*K .. seq*K+K-1`` of ``q`` (zero
    padded). Returns the ``(c, HDR_LEN + 4K)`` view. The same bytes as :func:`pack` per chunk,
    without a Python step per chunk."""
    k = h.k
    n = len(q)
    c = max(1, -(-n // k))
    row = HDR_LEN + LANE_LEN * k
    rows = out[:c * row].reshape(c, row)
    rows[:, :HDR_LEN] = np.frombuffer(h.pack(), dtype=np.uint8)
    seqs = np.arange(c, dtype=np.int64)

    def put(name: str, values) -> None:
        off, dt = BYTE_FIELDS[name]
        rows[:, off:off + dt.itemsize] = np.asarray(values).astype(dt).view(np.uint8).reshape(c, dt.itemsize)
    put("seq", seqs)
    put("slot", seqs % pool)
    put("flags", np.where((seqs // pool) & 1, h.flags | set_flag, h.flags & ~set_flag & 0xFF))
    nvalid = np.full(c, k)
    nvalid[-1] = n - (c - 1) * k
    put("nvalid", nvalid)
    pay = rows[:, HDR_LEN:].view(LANE_DTYPE)
    full = n // k
    pay[:full] = q[:full * k].reshape(full, k)
    if full < c:
        rest = n - full * k
        pay[full, :rest] = q[full * k:]
        pay[full, rest:] = 0
    return rows


@lru_cache(maxsize=None)
def payload_struct(k: int) -> struct.Struct:
    """``struct`` format of a payload of ``k`` lanes (for callers holding Python ints)."""
    return struct.Struct("!" + str(k) + StructUnit((PAYLOAD_LANE,)).format)


# ---------------------------------------------------------------- compiled pack/unpack
def _pack_expr(unit: StructUnit, obj: str) -> str:
    if len(unit.fields) == 1:
        f = unit.fields[0]
        return f"{obj}.{f.name} & {f.mask:#x}" if f.wraps else f"{obj}.{f.name}"
    return " | ".join(f"(({obj}.{f.name} & {f.mask:#x}) << {sh})" for f, sh in unit.shifts())


def _unpack_exprs(unit: StructUnit, var: str) -> list[str]:
    if len(unit.fields) == 1:
        return [var]
    return [f"({var} >> {sh}) & {f.mask:#x}" for f, sh in unit.shifts()]


def compile_codec(units: Sequence[StructUnit], st: struct.Struct) -> tuple[Callable, Callable]:
    """``(pack(obj) -> bytes, unpack(make, buf, off) -> make(*fields))`` for these units.

    The functions are generated as source from the units and compiled once; ``make`` gets
    the field values in table order.
    """
    items = ", ".join(_pack_expr(u, "obj") for u in units)
    names = [f"u{i}" for i in range(len(units))]
    args = ", ".join(e for u, v in zip(units, names) for e in _unpack_exprs(u, v))
    src = (f"def pack(obj):\n    return _pack({items})\n"
           f"def unpack(make, buf, off):\n"
           f"    {', '.join(names)}, = _unpack_from(buf, off)\n"
           f"    return make({args})\n")
    ns = {"_pack": st.pack, "_unpack_from": st.unpack_from}
    exec(compile(src, f"<codec for {len(units)} struct units>", "exec"), ns)
    return ns["pack"], ns["unpack"]


_pack_header, _unpack_header = compile_codec(HEADER_UNITS, HEADER_STRUCT)


# ---------------------------------------------------------------- pretty-printer
def format_field(f: HeaderField, value: int) -> str:
    if f.kind == HEX:
        return f"{value:#x}"
    if f.kind == FLAGS:
        return "|".join(n for bit, n in f.names.items() if value & bit) or "0"
    if f.kind == ENUM:
        return f.names.get(value, str(value))
    return str(value)


def format_header(h) -> str:
    """One line: ``TYPE[field=value ...]`` over the table's ``show`` fields."""
    body = " ".join(f"{f.name}={format_field(f, getattr(h, f.name))}"
                    for f in SA_HEADER if f.show)
    return f"{format_field(FIELD['type'], h.type)}[{body}]"


# ---------------------------------------------------------------- the header
def _table_fields(cls):
    """Give ``cls`` one dataclass field per row of :data:`SA_HEADER` (in table order)."""
    cls.__annotations__ = {f.name: "int" for f in SA_HEADER}
    for f in SA_HEADER:
        setattr(cls, f.name, f.default)
    return dataclass(cls)


@_table_fields
class Header:
    """One SA-ATP header; its attributes are the fields of :data:`.layout.SA_HEADER`."""

    def pack(self) -> bytes:
        return _pack_header(self)

    @classmethod
    def unpack(cls, b: bytes | memoryview, off: int = 0) -> "Header":
        if len(b) - off < HDR_LEN:
            raise WireError(f"SA-ATP header needs {HDR_LEN} bytes, got {len(b) - off}")
        return _unpack_header(cls, b, off)

    def copy(self, **kw) -> "Header":
        return replace(self, **kw)

    @property
    def k(self) -> int:
        return 1 << self.klog2

    def __str__(self) -> str:
        return format_header(self)


# ---------------------------------------------------------------- header + payload
def pack(h: Header, values: np.ndarray | None = None) -> bytes:
    """SA-ATP header (+ payload) bytes: the UDP payload of one packet.

    ``values`` must have exactly ``2**h.klog2`` int32 elements when given; the PAYLOAD flag
    is set or cleared to match.
    """
    if values is None:
        h.flags &= ~F_PAYLOAD
        return h.pack()
    v = np.asarray(values)
    if v.shape != (h.k,):
        raise WireError(f"payload must have K={h.k} elements, got shape {v.shape}")
    h.flags |= F_PAYLOAD
    return h.pack() + v.astype(LANE_DTYPE, copy=False).tobytes()


def unpack(b: bytes | memoryview, off: int = 0) -> tuple[Header, np.ndarray | None]:
    """Parse SA-ATP bytes; the payload is a native int32 array (or None).

    Raises :class:`WireError` on a short buffer, a wrong version, or a length that does not
    match the PAYLOAD flag and ``klog2``.
    """
    h = Header.unpack(b, off)
    if h.version != VERSION:
        raise WireError(f"unsupported SA-ATP version {h.version}")
    if h.klog2 > MAX_KLOG2:
        raise WireError(f"klog2 {h.klog2} out of range")
    rest = len(b) - off - HDR_LEN
    if h.flags & F_PAYLOAD:
        need = LANE_LEN * h.k
        if rest != need:
            raise WireError(f"payload of {rest} bytes, expected {need} (K={h.k})")
        vals = np.frombuffer(b, dtype=LANE_DTYPE, count=h.k,
                             offset=off + HDR_LEN).astype(NATIVE_LANE_DTYPE)
        return h, vals
    if rest != 0:
        raise WireError(f"{rest} trailing bytes after a header-only packet")
    return h, None

