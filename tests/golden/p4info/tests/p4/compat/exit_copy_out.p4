#include <core.p4>
#include <v1model.p4>
// `exit` inside an action called directly with an inout argument: the argument is
// still copied back (BMv2/p4c: the write `val = 2` is visible after exit).
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action set_and_exit(inout bit<8> val) { val = 2; exit; }
    apply { sm.egress_spec = 0; set_and_exit(h.h.a); h.h.b = 9; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
