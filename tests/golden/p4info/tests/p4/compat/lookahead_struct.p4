#include <core.p4>
#include <v1model.p4>
// lookahead<T>() where T is a struct (of bit fields), also used as a bare statement:
// a packet shorter than T sets parser_error = PacketTooShort.
struct Two { bit<8> a; bit<16> b; }
header h_t { bit<8> a; bit<16> b; bit<8> c; }
struct H { h_t h; }
struct M { bit<16> peek; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.lookahead<Two>();
        m.peek = p.lookahead<Two>().b;
        p.extract(h.h);
        transition accept;
    }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error != error.NoError) { mark_to_drop(sm); return; }
        sm.egress_spec = 0;
        h.h.c = m.peek[7:0];
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
