"""Values on the P4Runtime wire, shared by the client and the server.

* Bytestrings (P4Runtime spec §8.4): an unsigned value travels as big-endian bytes.  The
  canonical form is the shortest one (0 is one zero byte); a receiver also accepts the
  zero-padded form, as long as the value fits the field's bit width.
* 128-bit election ids (``p4.v1.Uint128``: ``high``/``low``).
* Table keys: a match spec of :mod:`host_agent.match` <-> a ``p4.v1.FieldMatch``, with
  the spec's rules on what a receiver must refuse (§9.1.1: don't-care matches are omitted,
  LPM trailing bits and ternary bits outside the mask are 0, ...).
* Action parameters: ``{name: value}`` <-> ``p4.v1.Action.params``.

Decoding errors are :class:`CodecError` (a ``ValueError``); the server answers them with
INVALID_ARGUMENT.
"""
from __future__ import annotations

from typing import Any, Iterable

from host_agent.match import Exact, Lpm, Optional_, Range, Ternary

from . import p4info_pb2 as p4i
from . import p4runtime_pb2 as pb


class CodecError(ValueError):
    """A value the P4Runtime specification does not allow here."""


# ------------------------------------------------------------------ bytestrings
def encode_bytes(v: int, width: int | None = None) -> bytes:
    """Canonical bytestring: the shortest big-endian form (0 is one zero byte).

    A negative value is taken modulo ``2**width`` (two's complement of that width)."""
    v = int(v)
    if v < 0:
        v &= (1 << width) - 1 if width else 0
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


def decode_bytes(b: bytes, width: int, what: str) -> int:
    """A bytestring as an int: canonical or zero-padded, must fit ``width`` bits (0: any)."""
    if len(b) == 0:
        raise CodecError(f"{what}: empty bytestring")
    v = int.from_bytes(b, "big")
    if width and v >> width:
        raise CodecError(f"{what}: bytestring provided does not fit within {width} bits")
    return v


# ------------------------------------------------------------------ election ids
def uint128(msg: Any) -> int:
    """A ``p4.v1.Uint128`` as an int."""
    return (msg.high << 64) | msg.low


def set_uint128(msg: Any, v: int) -> None:
    msg.high, msg.low = v >> 64, v & ((1 << 64) - 1)


# ------------------------------------------------------------------ table keys
# P4Info match type -> the FieldMatch oneof member that carries it
MATCH_KINDS = {p4i.MatchField.EXACT: "exact", p4i.MatchField.LPM: "lpm", p4i.MatchField.TERNARY: "ternary",
               p4i.MatchField.RANGE: "range", p4i.MatchField.OPTIONAL: "optional"}


def as_spec(spec: Any) -> Any:
    """Shorthands of a match spec: a plain int is :class:`Exact`, a pair is :class:`Lpm`."""
    if isinstance(spec, int) and not isinstance(spec, bool):
        return Exact(spec)
    if isinstance(spec, tuple):
        return Lpm(*spec)
    return spec


def is_dont_care(spec: Any, width: int) -> bool:
    """Whether a spec matches every value (the spec says such a match is omitted)."""
    spec = as_spec(spec)
    return ((isinstance(spec, Lpm) and spec.prefix_len == 0)
            or (isinstance(spec, Ternary) and spec.mask == 0)
            or (isinstance(spec, Range) and spec.low == 0 and spec.high == (1 << width) - 1)
            or (isinstance(spec, Optional_) and spec.value is None))


def encode_match(field_id: int, spec: Any) -> Any:
    """One ``p4.v1.FieldMatch`` for a match spec, as given (don't-cares included)."""
    spec = as_spec(spec)
    fm = pb.FieldMatch(field_id=field_id)
    if isinstance(spec, Exact):
        fm.exact.value = encode_bytes(spec.value)
    elif isinstance(spec, Lpm):
        fm.lpm.value = encode_bytes(spec.value)
        fm.lpm.prefix_len = spec.prefix_len
    elif isinstance(spec, Ternary):
        fm.ternary.value = encode_bytes(spec.value)
        fm.ternary.mask = encode_bytes(spec.mask)
    elif isinstance(spec, Range):
        fm.range.low = encode_bytes(spec.low)
        fm.range.high = encode_bytes(spec.high)
    elif isinstance(spec, Optional_):
        fm.optional.value = encode_bytes(spec.value)
    else:
        raise TypeError(f"bad match spec {spec!r}")
    return fm


def encode_matches(table: Any, match: dict[str, Any]) -> list[Any]:
    """The FieldMatches of an entry's ``{key name: spec}``, in P4Info order, don't-cares omitted."""
    out = []
    for mf in table.match_fields:
        spec = match.get(mf.name)
        if spec is None or is_dont_care(spec, mf.bitwidth):
            continue
        out.append(encode_match(mf.id, spec))
    return out


def decode_match(mf: Any, fm: Any, what: str) -> Any:
    """One FieldMatch as a match spec, refused when the spec forbids it (``mf``: P4Info field)."""
    w = mf.bitwidth
    kind = fm.WhichOneof("field_match_type")
    expected = MATCH_KINDS.get(mf.match_type)
    if kind != expected:
        raise CodecError(f"{what}: expected a {expected} match, got {kind}")
    if kind == "exact":
        return Exact(decode_bytes(fm.exact.value, w, what))
    if kind == "lpm":
        v = decode_bytes(fm.lpm.value, w, what)
        plen = fm.lpm.prefix_len
        if plen == 0:
            raise CodecError(f"{what}: a prefix length of 0 is a don't-care match and must be omitted")
        if not 0 < plen <= w:
            raise CodecError(f"{what}: prefix length {plen} out of range 1..{w}")
        if v & ((1 << (w - plen)) - 1):
            raise CodecError(f"{what}: LPM value has bits set beyond the prefix length {plen}")
        return Lpm(v, plen)
    if kind == "ternary":
        v = decode_bytes(fm.ternary.value, w, what)
        m = decode_bytes(fm.ternary.mask, w, what + " (mask)")
        if m == 0:
            raise CodecError(f"{what}: a ternary mask of 0 is a don't-care match and must be omitted")
        if v & ~m:
            raise CodecError(f"{what}: ternary value has bits set outside the mask (value & ~mask != 0)")
        return Ternary(v, m)
    if kind == "range":
        lo = decode_bytes(fm.range.low, w, what + " (low)")
        hi = decode_bytes(fm.range.high, w, what + " (high)")
        if lo > hi:
            raise CodecError(f"{what}: range low {lo} > high {hi}")
        if lo == 0 and hi == (1 << w) - 1:
            raise CodecError(f"{what}: a full range is a don't-care match and must be omitted")
        return Range(lo, hi)
    return Optional_(decode_bytes(fm.optional.value, w, what))


def decode_matches(table: Any, field_matches: Iterable[Any]) -> dict[str, Any]:
    """An entry's FieldMatches as ``{key name: spec}``: ids known, none twice, exact keys present."""
    fields = {m.id: m for m in table.match_fields}
    out: dict[str, Any] = {}
    seen = set()
    tn = table.preamble.name
    for fm in field_matches:
        mf = fields.get(fm.field_id)
        if mf is None:
            raise CodecError(f"table {tn}: unknown match field id {fm.field_id}")
        if fm.field_id in seen:
            raise CodecError(f"table {tn}: match field {mf.name} given twice")
        seen.add(fm.field_id)
        out[mf.name] = decode_match(mf, fm, f"table {tn}, field {mf.name}")
    for mf in table.match_fields:
        if mf.match_type == p4i.MatchField.EXACT and mf.id not in seen:
            raise CodecError(f"table {tn}: exact match field {mf.name} is missing")
    return out


# ------------------------------------------------------------------ action parameters
def encode_params(action_msg: Any, action: Any, args: dict[str, int]) -> None:
    """Fill ``p4.v1.Action`` ``action_msg`` for P4Info ``action`` with the ``args`` it names."""
    action_msg.action_id = action.preamble.id
    for p in action.params:
        if p.name in args:
            action_msg.params.add(param_id=p.id, value=encode_bytes(args[p.name]))


def decode_params(action: Any, params: Iterable[Any]) -> dict[str, int]:
    """``p4.v1.Action.params`` as ``{name: value}``: ids known, none twice, none missing."""
    by_id = {p.id: p for p in action.params}
    an = action.preamble.name
    args: dict[str, int] = {}
    for p in params:
        pi = by_id.get(p.param_id)
        if pi is None:
            raise CodecError(f"action {an}: unknown parameter id {p.param_id}")
        if pi.name in args:
            raise CodecError(f"action {an}: parameter {pi.name} given twice")
        args[pi.name] = decode_bytes(p.value, pi.bitwidth, f"action {an}, parameter {pi.name}")
    missing = [p.name for p in action.params if p.name not in args]
    if missing:
        raise CodecError(f"action {an}: missing parameter(s) {missing}")
    return args
