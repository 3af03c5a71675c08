#include <core.p4>
#include <v1model.p4>
// Const entries of a ternary table mixing `@priority(N)` annotations with an entry that
// has none.  p4c gives an un-annotated entry its 1-based position as priority and, for
// BMv2, the numerically SMALLEST priority wins among matching entries.
header h_t { bit<8> k; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t {
        key = { h.h.k : ternary; }
        actions = { fwd; }
        default_action = fwd(0);
        const entries = {
            0x01 &&& 0x0F : fwd(1) @priority(3);
            0x11          : fwd(2);
            0x10 &&& 0xF0 : fwd(3) @priority(1);
        }
    }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
