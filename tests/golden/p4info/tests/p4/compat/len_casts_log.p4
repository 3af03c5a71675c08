#include <core.p4>
#include <v1model.p4>
// packet_length = bytes received; int->bit casts sign-extend before changing signedness;
// log_msg with arguments is accepted and has no effect on the packet
header h_t { bit<8> a; bit<32> len; bit<16> s; bit<8> sl; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        h.h.len = sm.packet_length;
        int<8> neg = (int<8>)h.h.a;
        h.h.s = (bit<16>)(int<16>)neg;
        h.h.sl = (bit<8>)(neg >> 1);
        log_msg("a={} len={}", {h.h.a, sm.packet_length});
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
