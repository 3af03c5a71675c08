#include <core.p4>
#include <v1model.p4>
// resubmit_preserving_field_list: only @field_list(1) fields survive; the packet is
// re-parsed from the original bytes (ingress header changes are discarded).
header h_t { bit<8> a; bit<8> b; bit<8> c; }
struct H { h_t h; }
struct M { @field_list(1) bit<8> keep; bit<8> lose; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.instance_type == 0) {
            m.keep = 0x42; m.lose = 0x43;
            h.h.a = 0xff;
            resubmit_preserving_field_list(1);
        } else {
            h.h.b = m.keep;
            h.h.c = m.lose;
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
