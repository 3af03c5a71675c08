#include <core.p4>
// header_union: the parser extracts one member depending on a selector; the deparser
// emits only the valid member (BMv2 semantics).
#include <v1model.p4>
header A { bit<8> a; }
header B { bit<16> b; }
header_union U { A a; B b; }
header T { bit<8> t; }
struct H { T t; U u; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.t); transition select(h.t.t) { 1: pa; default: pb; } }
    state pa { p.extract(h.u.a); transition accept; }
    state pb { p.extract(h.u.b); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        if (h.u.a.isValid()) { h.u.a.a = h.u.a.a + 1; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.t); p.emit(h.u); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
