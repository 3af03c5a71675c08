#include <core.p4>
#include <v1model.p4>
// a header whose width is not a multiple of 8 bits (41 bits): p4c/BMv2 accept it
// (p4c's table-entries-*-bmv2 tests use one); the STF output keeps the packet length.
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
