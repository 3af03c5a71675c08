#include <core.p4>
#include <v1model.p4>
// A run-time header-stack index used as an lvalue (here an inout argument). In range, the
// element is updated. Out of range (i = 2), BMv2 1.15.5 aborts: simple_switch dies with
// std::out_of_range (checked with p4c 1.2.4.8 + BMv2), and so does the embedded target
// (P4RuntimeError); the STF sends only the in-range packet, since no output can be
// expected after an abort; tests/emulation/v1model/test_bmv2_limits.py checks the abort.
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
