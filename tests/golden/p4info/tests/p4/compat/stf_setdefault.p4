#include <core.p4>
#include <v1model.p4>
// STF control plane: `setdefault` with action arguments replaces the default action
header h_t { bit<8> k; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port, bit<8> v) { sm.egress_spec = port; h.h.v = v; }
    table t {
        key = { h.h.k : exact; }
        actions = { fwd; }
        default_action = fwd(0, 0);
    }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
