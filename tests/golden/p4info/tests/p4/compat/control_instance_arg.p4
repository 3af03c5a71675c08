#include <core.p4>
#include <v1model.p4>
// A control instance passed as a constructor argument of another control
// (`Twice(inc) twice;` with `control Twice(...)(IncT c)`): both applications of the
// parameter run the same instance.
header h_t { bit<8> x; }
struct H { h_t h; }
struct M {}
control IncT(inout bit<8> x);
control Inc(inout bit<8> x) { apply { x = x + 1; } }
control Twice(inout bit<8> x)(IncT c) { apply { c.apply(x); c.apply(x); } }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    Inc() inc;
    Twice(inc) twice;
    apply { sm.egress_spec = 0; twice.apply(h.h.x); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
