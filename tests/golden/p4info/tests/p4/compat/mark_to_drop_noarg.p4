#include <core.p4>
#include <v1model.p4>
// The deprecated zero-argument mark_to_drop() (still declared, @deprecated, in
// p4c's v1model.p4) must be accepted; here it sits in an unused top-level action.
header h_t { bit<8> a; }
struct H { h_t h; }
struct M {}
action my_drop() { mark_to_drop(); }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
