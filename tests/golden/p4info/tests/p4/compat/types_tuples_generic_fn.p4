#include <core.p4>
#include <v1model.p4>
// `type` (new type) values cast to/from bit, a generic function pick<T>,
// a constant-width expression in a type, tuple-typed local
type bit<16> Port_t;
const bit<8> W = 4;
struct Pair { bit<8> a; bit<8> b; }
header h_t { bit<16> p; bit<8> x; bit<8> y; bit<(W*2)> z; }
struct H { h_t h; }
struct M {}
T pick<T>(in bool first, in T a, in T b) { return first ? a : b; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        Port_t pt = (Port_t)h.h.p;
        h.h.p = (bit<16>)pt + 1;
        Pair pr = { a = h.h.x, b = h.h.y };
        h.h.z = pick<bit<8>>(pr.a > pr.b, pr.a, pr.b);
        tuple<bit<8>, bool> tp = { 8w3, true };
        if (tp[1]) { h.h.x = tp[0]; }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
