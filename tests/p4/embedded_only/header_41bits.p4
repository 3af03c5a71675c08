#include <core.p4>
#include <v1model.p4>
// a header whose width is not a multiple of 8 bits (41 bits); the STF output keeps the
// packet length. Embedded target only: p4c 1.2.4.8's BMv2 back end refuses it ("BMv2 target
// only supports headers with fields totaling a multiple of 8 bits"), and so does the
// target unless --allow-target-extensions.
header h_t { bit<8> e; bit<16> t; bit<8> l; bit<8> r; bit<1> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = (bit<9>)h.h.e; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
