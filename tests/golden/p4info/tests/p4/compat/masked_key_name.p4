#include <core.p4>
#include <v1model.p4>
// A table key `field & mask` without @name: p4c's BMv2 backend emits it as a masked key on
// the field, so STF (and the BMv2 CLI) address it by the field's name ("h.f"); the
// entry value is compared with field & mask.
header h_t { bit<32> f; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action setv(bit<8> v, bit<9> port) { h.h.v = v; sm.egress_spec = port; }
    table t {
        key = { h.h.f & 32w0xff00ff : exact; }
        actions = { setv; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
