#include <core.p4>
#include <v1model.p4>
// shifts by >= width give 0; stack .size/.lastIndex/.last; table .miss; serializable
// enum as table key (STF uses the numeric value); egress_spec 511 drops
enum bit<8> Kind { A = 1, B = 2 }
header h_t { bit<8> k; bit<8> sh; bit<8> r1; bit<8> r2; bit<8> r3; bit<8> r4; }
header e_t { bit<8> v; }
struct H { h_t h; e_t[3] s; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); p.extract(h.s.next); p.extract(h.s.next); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action set(bit<8> v) { h.h.r3 = v; }
    table t {
        key = { h.h.k : exact @name("kind"); }
        actions = { set; @defaultonly NoAction; }
        default_action = NoAction();
    }
    apply {
        sm.egress_spec = 1;
        h.h.r1 = h.h.sh << h.h.sh;
        h.h.r2 = (bit<8>)h.s.lastIndex * 16 + (bit<8>)h.s.size;
        if (t.apply().miss) { h.h.r4 = 0xee; } else { h.h.r4 = h.s.last.v; }
        if ((Kind)h.h.k == Kind.B) { sm.egress_spec = 511; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
