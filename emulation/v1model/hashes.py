"""v1model hash and checksum algorithms, bit-compatible with BMv2 (``src/bm_sim/calculations.cpp``).

Facts (see ``/work/shared/design/v1model-semantics.md``, section *hash*):

* ``crc16``  = CRC-16/ARC      (poly 0x8005, reflected in/out, init 0, xorout 0)
* ``crc32``  = CRC-32/ISO-HDLC (poly 0x04C11DB7, reflected, init = xorout = 0xFFFFFFFF; zlib's CRC)
* ``crc16_custom`` / ``crc32_custom`` (and BMv2's ``crc8_custom``/``crc64_custom``) default to the
  parameters above (crc8: poly 0x07, init 0, no reflection; crc64: poly 0x1B, reflected) and take
  keyword parameters ``poly``, ``init``, ``xor_out``, ``reflect_in``, ``reflect_out`` so that a
  control plane can reconfigure them.  The model is the Rocksoft/Williams one BMv2 uses: the
  register runs MSB first, ``init`` is loaded unreflected, input bytes are bit-reversed when
  ``reflect_in``, and the final register is bit-reversed when ``reflect_out`` before ``xor_out``.
* ``csum16`` = RFC 1071 ones'-complement of the ones'-complement sum of big-endian 16-bit words,
  an odd trailing byte padded with a zero byte.
* ``identity`` = the first <= 8 bytes read as a big-endian integer.
* ``xor16`` / ``xor32`` = XOR of big-endian 16/32-bit words, a short tail padded with zeros at the end.
* ``crcCCITT`` = CRC-16/CCITT-FALSE (poly 0x1021, init 0xFFFF, no reflection).

``random`` is not here: the caller (``Runtime.hash_bytes``) handles it.

:func:`concat_fields` builds the hash input the way BMv2's ``BufBuilder`` deparses a field list:
fields concatenated bit-wise, MSB first, without per-field padding, then zero-padded at the end
to a byte boundary.
"""
from __future__ import annotations

import binascii
import zlib
from functools import lru_cache
from typing import Callable, Sequence

__all__ = ["HASHES", "concat_fields", "crc", "crc16", "crc32", "crc16_custom", "crc32_custom",
           "crc8_custom", "crc64_custom", "csum16", "identity", "xor16", "xor32", "crc_ccitt",
           "CRC_DEFAULTS"]

# 8-bit reversal table
_REV8 = bytes(int(f"{i:08b}"[::-1], 2) for i in range(256))


def _reflect(v: int, width: int) -> int:
    return int(format(v, f"0{width}b")[::-1], 2) if width else 0


@lru_cache(maxsize=64)
def _direct_table(width: int, poly: int) -> tuple[int, ...]:
    """Table for the MSB-first register: remainder of each byte followed by zeros."""
    top = 1 << (width - 1)
    mask = (1 << width) - 1
    tab = []
    for b in range(256):
        r = b << (width - 8)
        for _ in range(8):
            r = ((r << 1) ^ poly) if r & top else (r << 1)
        tab.append(r & mask)
    return tuple(tab)


@lru_cache(maxsize=64)
def _reflected_table(width: int, poly: int) -> tuple[int, ...]:
    """Table for the LSB-first (reflected) register with the reversed polynomial."""
    rpoly = _reflect(poly, width)
    tab = []
    for b in range(256):
        r = b
        for _ in range(8):
            r = (r >> 1) ^ rpoly if r & 1 else r >> 1
        tab.append(r)
    return tuple(tab)


def crc(data: bytes, width: int, poly: int, init: int = 0, xor_out: int = 0,
        reflect_in: bool = False, reflect_out: bool = False) -> int:
    """Generic CRC in the Rocksoft model (as BMv2's ``crc_custom``), ``width`` in 8..64."""
    if not 8 <= width <= 64:
        raise ValueError(f"CRC width {width} is not supported (8..64)")
    mask = (1 << width) - 1
    poly &= mask
    init &= mask
    xor_out &= mask
    if reflect_in and reflect_out:
        # both reflected: run the reflected register (equivalent, no per-byte reversal)
        tab = _reflected_table(width, poly)
        r = _reflect(init, width)
        for b in data:
            r = tab[(r ^ b) & 0xFF] ^ (r >> 8)
        return r ^ xor_out
    tab = _direct_table(width, poly)
    r = init
    sh = width - 8
    if reflect_in:
        data = bytes(data).translate(_REV8)
    for b in data:
        r = tab[((r >> sh) ^ b) & 0xFF] ^ ((r << 8) & mask)
    if reflect_out:
        r = _reflect(r, width)
    return r ^ xor_out


# BMv2's default configurations of the *_custom calculations (calculations.cpp)
CRC_DEFAULTS: dict[str, dict] = {
    "crc8_custom": dict(poly=0x07, init=0x00, xor_out=0x00, reflect_in=False, reflect_out=False),
    "crc16_custom": dict(poly=0x8005, init=0x0000, xor_out=0x0000, reflect_in=True, reflect_out=True),
    "crc32_custom": dict(poly=0x04C11DB7, init=0xFFFFFFFF, xor_out=0xFFFFFFFF, reflect_in=True,
                         reflect_out=True),
    "crc64_custom": dict(poly=0x1B, init=0, xor_out=0, reflect_in=True, reflect_out=True),
}

_ARC_TAB = _reflected_table(16, 0x8005)


def crc16(data: bytes) -> int:
    """CRC-16/ARC (BMv2 ``crc16``)."""
    r = 0
    tab = _ARC_TAB
    for b in data:
        r = tab[(r ^ b) & 0xFF] ^ (r >> 8)
    return r


def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC (BMv2 ``crc32``), i.e. zlib's CRC-32."""
    return zlib.crc32(data) & 0xFFFFFFFF


def _custom(width: int, name: str, fast: Callable[[bytes], int] | None):
    d = CRC_DEFAULTS[name]

    def fn(data: bytes, poly: int | None = None, init: int | None = None, xor_out: int | None = None,
           reflect_in: bool | None = None, reflect_out: bool | None = None) -> int:
        p = d["poly"] if poly is None else poly
        i = d["init"] if init is None else init
        x = d["xor_out"] if xor_out is None else xor_out
        ri = d["reflect_in"] if reflect_in is None else bool(reflect_in)
        ro = d["reflect_out"] if reflect_out is None else bool(reflect_out)
        if fast is not None and (p, i, x, ri, ro) == (d["poly"], d["init"], d["xor_out"],
                                                      d["reflect_in"], d["reflect_out"]):
            return fast(data)
        return crc(data, width, p, i, x, ri, ro)
    fn.__name__ = name
    fn.__doc__ = f"BMv2 ``{name}``: a {width}-bit CRC, by default {d}; keyword arguments override."
    return fn


crc8_custom = _custom(8, "crc8_custom", None)
crc16_custom = _custom(16, "crc16_custom", crc16)
crc32_custom = _custom(32, "crc32_custom", crc32)
crc64_custom = _custom(64, "crc64_custom", None)


def crc_ccitt(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (BMv2 ``crcCCITT``): binascii's CRC-CCITT with init 0xFFFF."""
    return binascii.crc_hqx(data, 0xFFFF)


def csum16(data: bytes) -> int:
    """RFC 1071 Internet checksum of ``data`` (odd length padded with a zero byte).

    Uses 2**16 == 1 (mod 0xFFFF): the ones'-complement sum of the 16-bit words is congruent
    to the whole buffer read as one big-endian integer, modulo 0xFFFF.  The end-around-carry
    sum is 0 only when every word is 0, and 0xFFFF for any other multiple of 0xFFFF.
    """
    if len(data) & 1:
        data = bytes(data) + b"\x00"
    n = int.from_bytes(data, "big")
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    return ~s & 0xFFFF


def csum16_int(n: int) -> int:
    """:func:`csum16` of the bytes whose big-endian value is ``n`` (an even number of bytes;
    the generated code shifts odd-length field lists left by 8, which is the padding byte)."""
    s = n % 0xFFFF
    if s == 0 and n:
        s = 0xFFFF
    return ~s & 0xFFFF


# csum16_int as an expression of the generated code, ``{n}`` the sum (a call costs as much as
# the arithmetic); tests/emulation/v1model/test_checksum_fields.py checks the two agree
CSUM16_INT_CODE = "(~((_cs := {n}) % 0xFFFF or (0xFFFF if _cs else 0)) & 0xFFFF)"


def identity(data: bytes) -> int:
    """BMv2 ``identity``: the first (at most) 8 bytes, big-endian."""
    return int.from_bytes(data[:8], "big")


def _xor_words(data: bytes, nbytes: int) -> int:
    rem = len(data) % nbytes
    if rem:
        data = bytes(data) + b"\x00" * (nbytes - rem)
    n = len(data) // nbytes
    if n == 0:
        return 0
    x = int.from_bytes(data, "big")
    bits = nbytes * 8
    # fold: XOR the low h words into the rest until one word is left
    while n > 1:
        h = n // 2
        x = (x >> (bits * h)) ^ (x & ((1 << (bits * h)) - 1))
        n -= h
    return x


def xor16(data: bytes) -> int:
    """BMv2 ``xor16``: XOR of big-endian 16-bit words, an odd tail byte padded at the end."""
    return _xor_words(data, 2)


def xor32(data: bytes) -> int:
    """BMv2 ``xor32``: XOR of big-endian 32-bit words, a short tail padded at the end."""
    return _xor_words(data, 4)


HASHES: dict[str, Callable[..., int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "crc8_custom": crc8_custom,
    "crc16_custom": crc16_custom,
    "crc32_custom": crc32_custom,
    "crc64_custom": crc64_custom,
    "crcCCITT": crc_ccitt,
    "csum16": csum16,
    "identity": identity,
    "xor16": xor16,
    "xor32": xor32,
}


def concat_fields(fields: Sequence[tuple[int, int]]) -> bytes:
    """Concatenate ``(value, width_bits)`` pairs bit-wise, MSB first, zero-padded at the end.

    Values are masked to their width (BMv2 fields never hold more bits than their width).
    """
    acc = 0
    total = 0
    try:
        for v, w in fields:
            acc = (acc << w) | (v & ((1 << w) - 1))
            total += w
    except ValueError:
        raise ValueError(f"negative field width in {list(fields)!r}") from None
    pad = -total & 7
    return (acc << pad).to_bytes((total + pad) >> 3, "big")
