#include <core.p4>
#include <v1model.p4>
// non-const `entries` (P4_16 1.2.4: the control plane may add more); STF ternary with
// an explicit &&& mask and lpm with /len
header h_t { bit<8> k; bit<32> ip; bit<8> v; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action setv(bit<8> v) { h.h.v = v; }
    table t {
        key = { h.h.k : ternary; }
        actions = { fwd; }
        default_action = fwd(0);
        entries = {
            0x01 &&& 0xFF : fwd(1);
        }
    }
    table l {
        key = { h.h.ip : lpm; }
        actions = { setv; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); l.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
