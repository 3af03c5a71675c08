#include <core.p4>
#include <v1model.p4>
// control-plane names from @name (relative and absolute ".x") used by STF `add`,
// a direct_counter attached to a table
header h_t { bit<8> k; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) dc;
    @name("setv") action set_v(bit<8> v) { h.h.v = v; dc.count(); }
    @name(".global_tbl") table t1 {
        key = { h.h.k : exact @name("key_k"); }
        actions = { set_v; NoAction; }
        default_action = NoAction();
        counters = dc;
    }
    @name("renamed") table t2 {
        key = { h.h.k : exact; }
        actions = { set_v; NoAction; }
        default_action = NoAction();
    }
    apply { sm.egress_spec = 0; t1.apply(); t2.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
