#include <core.p4>
#include <v1model.p4>
// const entries with the P4_16 1.2.4 `priority=N:` syntax; largest_priority_wins
// defaults to true: the entry with the LARGER priority wins.
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
            priority=10: 0x01 &&& 0x0F : fwd(1);
            priority=20: 0x10 &&& 0xF0 : fwd(2);
        }
    }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
