#include <core.p4>
#include <v1model.p4>
// clone to a session that was never configured: no clone, the original still goes out;
// mcast_grp naming a group that was never created: no copies (packet gone)
header h_t { bit<8> op; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.op == 1) { clone(CloneType.I2E, 32w77); }
        if (h.h.op == 2) { sm.mcast_grp = 99; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { h.h.v = (bit<8>)sm.instance_type; }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
