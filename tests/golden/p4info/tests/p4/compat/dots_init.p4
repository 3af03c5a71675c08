#include <core.p4>
#include <v1model.p4>
// `...` in a struct initializer (P4_16 1.2.2): unnamed fields get their default value (0)
header h_t { bit<8> a; bit<8> b; }
struct S { bit<8> x; bit<8> y; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        S s = { x = 7, ... };
        h.h.b = s.x + s.y;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
