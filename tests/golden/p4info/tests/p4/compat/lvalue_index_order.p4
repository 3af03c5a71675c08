#include <core.p4>
#include <v1model.p4>
// h.s[h.h.i].a = f(h.h.i): the lvalue (its index) is evaluated BEFORE the right-hand
// side, whose call changes h.h.i (BMv2/p4c: i=1 -> s[1].a = 1, then i = 0).
header h_t { bit<8> i; }
header e_t { bit<8> a; }
struct H { h_t h; e_t[2] s; }
struct M {}
bit<8> reset(inout bit<8> x) { x = 0; return 1; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); p.extract(h.s.next); p.extract(h.s.next); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 0; h.s[(bit<1>)h.h.i].a = reset(h.h.i); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
