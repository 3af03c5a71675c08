#include <core.p4>
#include <v1model.p4>
// An extern instance declared at top level (outside any control) and used from two
// controls: p4c/BMv2 accept it (one shared register array).
header h_t { bit<8> idx; bit<8> add; bit<8> res; }
struct H { h_t h; }
struct M {}
register<bit<8>>(256) r;
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 0; r.write((bit<32>)h.h.idx, 0x2a); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        bit<8> t;
        r.read(t, (bit<32>)h.h.idx);
        t = t + h.h.add;
        r.write((bit<32>)h.h.idx, t);
        h.h.res = t;
    }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
