#include <core.p4>
#include <v1model.p4>
// switch on a bit<8> expression (P4_16 1.2), fallthrough labels, default
header h_t { bit<8> x; bit<8> y; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        switch (h.h.x) {
            1:
            2: { h.h.y = 0x12; }
            3: { h.h.y = 0x33; }
            default: { h.h.y = 0xdd; }
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
