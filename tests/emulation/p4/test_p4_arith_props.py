"""Property tests: P4_16 bit-vector arithmetic on the embedded target against exact integer models.

For a few widths, a generated P4 program reads operands from a packet, applies every
operator, and writes the results back into the packet; hypothesis draws operands and
the test checks each result against the spec's definition (P4_16 spec section 8:
wrap-around modulo 2^W, two's complement for int<W>, saturation, shifts by >= W give 0,
arithmetic >> on int<W>, truncating/extending casts, slices and concatenation).
"""
from __future__ import annotations

import functools

import pytest
from hypothesis import given, settings, strategies as st

from emulation.v1model.load import switch_from_source
from emulation.v1model.switch import Switch

UNSIGNED_OPS = {
    "add": "a + b", "sub": "a - b", "mul": "a * b", "band": "a & b", "bor": "a | b", "bxor": "a ^ b",
    "neg": "-a", "inv": "~a", "sadd": "a |+| b", "ssub": "a |-| b", "shl": "a << sh", "shr": "a >> sh",
    "shlc": "a << 3", "shrc": "a >> 3",
}
SIGNED_OPS = dict(UNSIGNED_OPS)


def _prog(w: int, signed: bool) -> str:
    t = f"{'int' if signed else 'bit'}<{w}>"
    ops = SIGNED_OPS if signed else UNSIGNED_OPS
    in_fields = [f"{t} a;", f"{t} b;", "bit<8> sh;"]
    in_w = 2 * w + 8
    if in_w % 8:
        in_fields.append(f"bit<{(-in_w) % 8}> pad;")
    out_fields = [f"{t} {n};" for n in ops]
    out_fields += ["bit<8> cmp;", f"bit<{2 * w}> cat;", f"bit<{w}> asbits;", f"bit<{w - 1}> sl;"]
    out_w = len(ops) * w + 8 + 2 * w + w + (w - 1)
    if out_w % 8:
        out_fields.append(f"bit<{(-out_w) % 8}> pad;")
    assigns = "\n".join(f"        h.o.{n} = {e};" for n, e in ops.items())
    return f"""
#include <core.p4>
#include <v1model.p4>
header in_t {{ {' '.join(in_fields)} }}
header out_t {{ {' '.join(out_fields)} }}
struct headers {{ in_t i; out_t o; }}
struct meta_t {{ }}
parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(h.i); transition accept; }}
}}
control VC(inout headers h, inout meta_t m) {{ apply {{ }} }}
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {{
    apply {{
        {t} a = h.i.a;
        {t} b = h.i.b;
        bit<8> sh = h.i.sh;
        h.o.setValid();
{assigns}
        bit<8> c = 0;
        if (a < b) {{ c = c | 1; }}
        if (a <= b) {{ c = c | 2; }}
        if (a > b) {{ c = c | 4; }}
        if (a >= b) {{ c = c | 8; }}
        if (a == b) {{ c = c | 16; }}
        if (a != b) {{ c = c | 32; }}
        h.o.cmp = c;
        h.o.cat = (bit<{w}>)a ++ (bit<{w}>)b;
        h.o.asbits = (bit<{w}>)a;
        h.o.sl = ((bit<{w}>)a)[{w - 1}:1];
        sm.egress_spec = 1;
    }}
}}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers h, inout meta_t m) {{ apply {{ }} }}
control D(packet_out pkt, in headers h) {{ apply {{ pkt.emit(h.o); }} }}
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""


@functools.lru_cache(maxsize=None)
def _switch(w: int, signed: bool) -> Switch:
    return switch_from_source(_prog(w, signed), f"arith_{w}_{signed}.p4")


def _fields_of(data: bytes, widths: list[int]) -> list[int]:
    total = len(data) * 8
    v = int.from_bytes(data, "big")
    out = []
    pos = total
    for w in widths:
        pos -= w
        out.append((v >> pos) & ((1 << w) - 1))
    return out


def _model(a: int, b: int, sh: int, w: int, signed: bool) -> dict[str, int]:
    m = (1 << w) - 1

    def wrap(x):
        x &= m
        if signed and x >> (w - 1):
            x -= 1 << w
        return x

    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, m)

    def shl(x, n):
        return 0 if n >= w else wrap(x << n)

    def shr(x, n):
        if signed:
            return x >> min(n, w)          # arithmetic: sign bits fill in
        return 0 if n >= w else x >> n
    return {
        "add": wrap(a + b), "sub": wrap(a - b), "mul": wrap(a * b), "band": wrap(a & b), "bor": wrap(a | b),
        "bxor": wrap(a ^ b), "neg": wrap(-a), "inv": wrap(~a), "sadd": min(max(a + b, lo), hi),
        "ssub": min(max(a - b, lo), hi), "shl": shl(a, sh), "shr": shr(a, sh), "shlc": shl(a, 3),
        "shrc": shr(a, 3),
    }


CASES = [(8, False), (16, False), (12, False), (32, False), (8, True), (16, True), (12, True)]


@pytest.mark.parametrize("w,signed", CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_arithmetic_matches_integer_model(w, signed, data):
    if signed:
        vals = st.integers(-(1 << (w - 1)), (1 << (w - 1)) - 1)
    else:
        vals = st.integers(0, (1 << w) - 1)
    a = data.draw(vals, "a")
    b = data.draw(vals, "b")
    sh = data.draw(st.integers(0, 255), "sh")
    sw = _switch(w, signed)
    m = (1 << w) - 1
    in_w = 2 * w + 8
    pad = (-in_w) % 8
    raw = (((a & m) << (w + 8 + pad)) | ((b & m) << (8 + pad)) | (sh << pad)).to_bytes((in_w + pad) // 8, "big")
    out = sw.process(0, raw)
    assert len(out) == 1 and out[0][0] == 1
    names = list(UNSIGNED_OPS)
    widths = [w] * len(names) + [8, 2 * w, w, w - 1]
    got = _fields_of(out[0][1][: (sum(widths) + 7) // 8], widths)
    model = _model(a, b, sh, w, signed)
    for n, g in zip(names, got):
        assert g == model[n] & m, f"{n}: a={a} b={b} sh={sh}: got {g:#x}, expected {model[n] & m:#x}"
    cmp = got[len(names)]
    exp_cmp = (a < b) | (a <= b) << 1 | (a > b) << 2 | (a >= b) << 3 | (a == b) << 4 | (a != b) << 5
    assert cmp == exp_cmp
    assert got[len(names) + 1] == ((a & m) << w) | (b & m)
    assert got[len(names) + 2] == a & m
    assert got[len(names) + 3] == (a & m) >> 1


@settings(max_examples=80, deadline=None)
@given(v=st.integers(0, 0xFFFF))
def test_casts_between_widths_and_signedness(v):
    prog = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<16> v; }
header o_t { bit<8> narrow; bit<32> wide; int<32> sext; bit<32> sext_bits; int<8> s8; bit<16> back; }
struct headers { h_t h; o_t o; }
struct meta_t { }
parser P(packet_in pkt, out headers h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.h); transition accept; }
}
control VC(inout headers h, inout meta_t m) { apply { } }
control I(inout headers h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        h.o.setValid();
        h.o.narrow = (bit<8>)h.h.v;
        h.o.wide = (bit<32>)h.h.v;
        int<16> s = (int<16>)h.h.v;
        h.o.sext = (int<32>)s;
        h.o.sext_bits = (bit<32>)(int<32>)s;
        h.o.s8 = (int<8>)s;
        h.o.back = (bit<16>)s;
        sm.egress_spec = 2;
    }
}
control E(inout headers h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers h) { apply { pkt.emit(h.o); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
"""
    sw = _cast_switch(prog)
    (port, data), = sw.process(0, v.to_bytes(2, "big"))
    narrow, wide, sext, sext_bits, s8, back = _fields_of(data[:16], [8, 32, 32, 32, 8, 16])
    signed16 = v - (1 << 16) if v >> 15 else v
    assert narrow == v & 0xFF
    assert wide == v
    assert sext == signed16 & 0xFFFFFFFF            # sign extension of int<16> -> int<32>
    assert sext_bits == signed16 & 0xFFFFFFFF
    assert s8 == v & 0xFF                            # narrowing int truncates
    assert back == v


@functools.lru_cache(maxsize=None)
def _cast_switch(prog: str) -> Switch:
    return switch_from_source(prog, "casts.p4")
