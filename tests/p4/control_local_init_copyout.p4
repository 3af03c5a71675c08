// A control-level variable initialised with a function call that has an inout argument:
// the initialisers run, in order, each time the control is applied (before its apply block),
// and the call's copy-out reaches the header field.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct headers { h_t h; }
struct meta_t { }

bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return x + 10;
}

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> first = hdr.h.a;
    bit<8> got = bump(hdr.h.a);
    apply {
        hdr.h.b = first;
        hdr.h.c = got;
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
