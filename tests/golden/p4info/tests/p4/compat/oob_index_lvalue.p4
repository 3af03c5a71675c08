#include <core.p4>
#include <v1model.p4>
// A run-time header-stack index that is out of range, used as an lvalue (here an
// inout argument): BMv2/p4c ignore the access (p4c turns h[i] into an if-chain over
// the valid indices), the packet is forwarded unchanged; the target raises
// "header stack index 2 out of range 0..1" and drops the packet.
header h_t { bit<8> i; }
header e_t { bit<8> a; }
struct H { h_t h; e_t[2] s; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); p.extract(h.s.next); p.extract(h.s.next); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action inc(inout bit<8> v) { v = v + 1; }
    apply { sm.egress_spec = 0; inc(h.s[h.h.i].a); h.s[h.h.i].a = 7; }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
