#include <core.p4>
#include <v1model.p4>
// P4_16 direct type invocation: a control (or parser) type applied without an
// explicit instance, `Ctl.apply(args)` (spec 1.2+, "Direct type invocation").
header h_t { bit<16> x; }
struct H { h_t h; }
struct M {}
control Inc(inout bit<16> x) { apply { x = x + 1; } }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { Inc.apply(h.h.x); Inc.apply(h.h.x); sm.egress_spec = 0; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
