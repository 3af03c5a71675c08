#include <core.p4>
#include <v1model.p4>
// BMv2 (p4c-bm2-ss) evaluates (bit<16>)(h.x * 4) with h.x : bit<4> = 5 as 20,
// i.e. the product is NOT wrapped to 4 bits before the widening cast
// (observed in p4c's checksum-l4-bmv2 STF: l4Len = totalLen - (bit<16>)(ihl*4)).
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
