"""v1model hash/checksum algorithms (emulation/v1model/hashes.py) against known vectors and
independent reference models."""
from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from emulation.v1model.hashes import (HASHES, concat_fields, crc, crc16, crc16_custom, crc32,
                                      crc32_custom, csum16, identity, xor16, xor32)

CHECK = b"123456789"


# ---------------------------------------------------------------- CRC check values
# (width, poly, init, refin, refout, xorout, check) from the CRC catalogue (reveng)
CATALOGUE = [
    ("CRC-16/ARC", 16, 0x8005, 0x0000, True, True, 0x0000, 0xBB3D),
    ("CRC-16/MODBUS", 16, 0x8005, 0xFFFF, True, True, 0x0000, 0x4B37),
    ("CRC-16/UMTS", 16, 0x8005, 0x0000, False, False, 0x0000, 0xFEE8),
    ("CRC-16/IBM-3740", 16, 0x1021, 0xFFFF, False, False, 0x0000, 0x29B1),
    ("CRC-16/KERMIT", 16, 0x1021, 0x0000, True, True, 0x0000, 0x2189),
    ("CRC-16/IBM-SDLC", 16, 0x1021, 0xFFFF, True, True, 0xFFFF, 0x906E),
    ("CRC-16/XMODEM", 16, 0x1021, 0x0000, False, False, 0x0000, 0x31C3),
    ("CRC-16/TMS37157", 16, 0x1021, 0x89EC, True, True, 0x0000, 0x26B1),
    ("CRC-16/SPI-FUJITSU", 16, 0x1021, 0x1D0F, False, False, 0x0000, 0xE5CC),
    ("CRC-32/ISO-HDLC", 32, 0x04C11DB7, 0xFFFFFFFF, True, True, 0xFFFFFFFF, 0xCBF43926),
    ("CRC-32/BZIP2", 32, 0x04C11DB7, 0xFFFFFFFF, False, False, 0xFFFFFFFF, 0xFC891918),
    ("CRC-32/MPEG-2", 32, 0x04C11DB7, 0xFFFFFFFF, False, False, 0x00000000, 0x0376E6E7),
    ("CRC-32/ISCSI", 32, 0x1EDC6F41, 0xFFFFFFFF, True, True, 0xFFFFFFFF, 0xE3069283),
    ("CRC-32/CKSUM", 32, 0x04C11DB7, 0x00000000, False, False, 0xFFFFFFFF, 0x765E7680),
    ("CRC-8/SMBUS", 8, 0x07, 0x00, False, False, 0x00, 0xF4),
    ("CRC-8/MAXIM-DOW", 8, 0x31, 0x00, True, True, 0x00, 0xA1),
    ("CRC-64/ECMA-182", 64, 0x42F0E1EBA9EA3693, 0, False, False, 0, 0x6C40DF5F0B497347),
    ("CRC-64/XZ", 64, 0x42F0E1EBA9EA3693, (1 << 64) - 1, True, True, (1 << 64) - 1, 0x995DC9BBDF1939FA),
]


@pytest.mark.parametrize("name,w,poly,init,ri,ro,xo,check", CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_crc_catalogue(name, w, poly, init, ri, ro, xo, check):
    assert crc(CHECK, w, poly, init, xo, ri, ro) == check


def test_v1model_named_crcs():
    assert HASHES["crc16"](CHECK) == 0xBB3D
    assert HASHES["crc32"](CHECK) == 0xCBF43926
    assert HASHES["crc16_custom"](CHECK) == 0xBB3D
    assert HASHES["crc32_custom"](CHECK) == 0xCBF43926
    assert HASHES["crc8_custom"](CHECK) == 0xF4          # BMv2 default crc8: poly 7, no reflection
    assert HASHES["crcCCITT"](CHECK) == 0x29B1
    assert crc16(b"") == 0 and crc32(b"") == 0


def test_custom_crc_reconfigured():
    # the control plane may reconfigure the *_custom calculations
    assert crc16_custom(CHECK, poly=0x1021, init=0xFFFF, xor_out=0, reflect_in=False,
                        reflect_out=False) == 0x29B1
    assert crc16_custom(CHECK, init=0xFFFF) == 0x4B37      # MODBUS = ARC with init 0xFFFF
    assert crc32_custom(CHECK, poly=0x1EDC6F41) == 0xE3069283
    assert crc32_custom(CHECK, reflect_in=False, reflect_out=False) == 0xFC891918


def _crc_bitwise(data: bytes, w: int, poly: int, init: int, xo: int, ri: bool, ro: bool) -> int:
    """Bit-at-a-time reference of the Rocksoft model (independent of the table code)."""
    mask = (1 << w) - 1
    r = init
    for byte in data:
        bits = [(byte >> i) & 1 for i in range(8)] if ri else [(byte >> (7 - i)) & 1 for i in range(8)]
        for bit in bits:
            top = (r >> (w - 1)) & 1
            r = (r << 1) & mask
            if top ^ bit:
                r ^= poly
    if ro:
        r = int(format(r, f"0{w}b")[::-1], 2)
    return r ^ xo


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=40), w=st.sampled_from([8, 16, 32]), poly=st.integers(0, 2**32 - 1),
       init=st.integers(0, 2**32 - 1), xo=st.integers(0, 2**32 - 1), ri=st.booleans(), ro=st.booleans())
def test_crc_matches_bitwise_reference(data, w, poly, init, xo, ri, ro):
    m = (1 << w) - 1
    poly, init, xo = poly & m, init & m, xo & m
    assert crc(data, w, poly, init, xo, ri, ro) == _crc_bitwise(data, w, poly, init, xo, ri, ro)


def test_crc_rejects_bad_width():
    with pytest.raises(ValueError):
        crc(b"x", 4, 0x3)


# ---------------------------------------------------------------- csum16 (RFC 1071)
def test_csum16_rfc1071_example():
    # RFC 1071 section 3: words 0001 f203 f4f5 f6f7 sum (with carries) to ddf2; checksum = ~ddf2
    assert csum16(bytes.fromhex("0001f203f4f5f6f7")) == (~0xDDF2 & 0xFFFF)


def test_csum16_ipv4_header():
    # a classic IPv4 header (Wikipedia "IPv4 header checksum" example); checksum field = b861
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert csum16(hdr) == 0xB861
    with_ck = hdr[:10] + b"\xb8\x61" + hdr[12:]
    assert csum16(with_ck) == 0


def test_csum16_edge_cases():
    assert csum16(b"") == 0xFFFF
    assert csum16(b"\x00\x00\x00") == 0xFFFF
    assert csum16(b"\xff\xff") == 0x0000          # sum is 0xffff (negative zero)
    assert csum16(b"\xff\xff\xff\xff") == 0x0000
    assert csum16(b"\x01") == 0xFEFF              # odd byte padded at the END: word 0x0100


def _csum16_ref(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = 0
    for (w,) in struct.iter_unpack("!H", data):
        s += w
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_csum16_matches_reference_and_verifies(data):
    c = csum16(data)
    assert c == _csum16_ref(data)
    if len(data) % 2 == 0:
        # appending the checksum makes the whole buffer verify to 0
        assert csum16(data + c.to_bytes(2, "big")) == 0


# ---------------------------------------------------------------- identity / xor
def test_identity():
    assert identity(b"\x12\x34") == 0x1234
    assert identity(bytes(range(1, 11))) == 0x0102030405060708   # only the first 8 bytes
    assert identity(b"") == 0


@given(st.integers(0, 0xFFF))
def test_identity_of_12_bit_field_is_shifted(v):
    # BufBuilder pads at the end: a 12-bit input v becomes the 2 bytes v<<4
    assert identity(concat_fields([(v, 12)])) == v << 4


def _xor_ref(data: bytes, n: int) -> int:
    if len(data) % n:
        data += b"\x00" * (n - len(data) % n)
    x = 0
    for i in range(0, len(data), n):
        x ^= int.from_bytes(data[i:i + n], "big")
    return x


def test_xor16_examples():
    assert xor16(bytes.fromhex("12345678")) == 0x1234 ^ 0x5678
    assert xor16(bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert xor16(b"") == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_xor_matches_reference(data):
    assert xor16(data) == _xor_ref(data, 2)
    assert xor32(data) == _xor_ref(data, 4)


# ---------------------------------------------------------------- concat_fields
def test_concat_fields_examples():
    assert concat_fields([(0xA, 4), (0xB, 4)]) == b"\xab"
    assert concat_fields([(1, 1), (0, 1), (1, 1)]) == b"\xa0"
    assert concat_fields([(0x1FF, 9)]) == b"\xff\x80"
    assert concat_fields([(0xFFFF, 8)]) == b"\xff"          # masked to the width
    assert concat_fields([]) == b""
    assert concat_fields([(5, 0), (0x12, 8)]) == b"\x12"
    with pytest.raises(ValueError):
        concat_fields([(1, -1)])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 70).flatmap(lambda w: st.tuples(st.integers(0, 2**w - 1), st.just(w))),
                max_size=12))
def test_concat_fields_bitstring_reference(fields):
    bits = "".join(format(v, f"0{w}b") for v, w in fields)
    bits += "0" * (-len(bits) % 8)
    ref = bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))
    assert concat_fields(fields) == ref


def test_ipv4_checksum_via_field_list():
    # the tutorials' update_checksum field list (checksum field left out) over concat_fields
    f = [(4, 4), (5, 4), (0, 8), (0x73, 16), (0, 16), (2, 3), (0, 13), (0x40, 8), (0x11, 8),
         (0xC0A80001, 32), (0xC0A800C7, 32)]
    assert csum16(concat_fields(f)) == 0xB861
