#include <core.p4>
#include <v1model.p4>
// STF input with an odd number of hex digits (see odd_nibble.stf): p4c's runner turns
// the trailing lone digit N into byte 0x0N; the program just forwards the header.
header h_t { bit<8> a; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 0; } }
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
