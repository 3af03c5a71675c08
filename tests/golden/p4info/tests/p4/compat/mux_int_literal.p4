#include <core.p4>
#include <v1model.p4>
// (c ? 2 : 3w1): the int literal 2 takes the type of the other arm (bit<3>);
// the outer cast to bit<16> must not be pushed into the ?: arms.
header h_t { bit<8> c; bit<16> r; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { h.h.r = (bit<16>)-((h.h.c == 1) ? 2 : 3w1); sm.egress_spec = 0; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
