#include <core.p4>
#include <v1model.p4>
// STF packet data with an odd number of hex digits: p4c 1.2.4.8's runner refuses it
// ("Invalid packet data 123") and sends nothing, so STF files write whole bytes (a lone
// trailing digit N is written 0N); the program just forwards the header.
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
