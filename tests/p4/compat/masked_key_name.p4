#include <core.p4>
#include <v1model.p4>
// A table key `field & mask`: BMv2 keys the table on the field with a mask, and the entry
// value is compared with field & mask. Without @name, p4c 1.2.4.8 names such a key
// "h.h.f & 0xff00ff" (P4Info and BMv2 JSON), which an STF line cannot spell, so the key
// carries @name("h.f") here; tests/golden/p4info/ checks the un-annotated naming.
header h_t { bit<32> f; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action setv(bit<8> v, bit<9> port) { h.h.v = v; sm.egress_spec = port; }
    table t {
        key = { h.h.f & 32w0xff00ff : exact @name("h.f"); }
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
