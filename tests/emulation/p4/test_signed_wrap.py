"""Wrapped int<W> results used as operands: the generated code must keep the wrap together.

A wrapped signed sum on the right of ``*`` (or under unary ``-``) once lost its parentheses
(``a * ((b + h) & m) - h``), so ``a * (b + b)`` subtracted 2^(W-1) afterwards."""
import pytest

from emulation.v1model.load import switch_from_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { int<8> a; int<8> b; int<8> mul; int<8> neg; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; } }
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.mul = hdr.h.a * (hdr.h.b + hdr.h.b);
        hdr.h.neg = -(hdr.h.a + hdr.h.b);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _s8(x: int) -> int:
    x &= 0xFF
    return x - 256 if x & 0x80 else x


@pytest.mark.parametrize("a,b", [(0, 0), (3, 100), (-7, 77), (127, 127), (-128, -128), (5, -3)])
def test_wrapped_signed_operands(a, b):
    sw = switch_from_source(PROGRAM)
    (_port, out), = sw.process(0, bytes([a & 0xFF, b & 0xFF, 0, 0]))
    assert _s8(out[2]) == _s8(a * _s8(b + b))
    assert _s8(out[3]) == _s8(-_s8(a + b))
