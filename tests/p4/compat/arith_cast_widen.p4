#include <core.p4>
#include <v1model.p4>
// (bit<16>)(h.x * 4) with h.x : bit<4> = 5: the product is a bit<4> and wraps to 4 before
// the widening cast, as P4_16 says. p4c 1.2.4.8 + BMv2 1.15.5 give 4 (checked with the real
// tools); an older p4c rewrote the product into an unmasked shift and BMv2 gave 20.
header h_t { bit<4> x; bit<4> pad; bit<16> r; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { h.h.r = (bit<16>)(h.h.x * 4); sm.egress_spec = 0; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
