// expect: 19:13: type mismatch
// a value of a tuple type passed for a struct parameter (only a list expression converts to a struct)
#include <core.p4>
#include <v1model.p4>

struct pair_t { bit<8> x; bit<8> y; }
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action sum(in pair_t p) { hdr.h.b = p.x + p.y; }
    apply {
        tuple<bit<8>, bit<8>> t = { 1, 2 };
        sum({ 3, 4 });
        sum(t);
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
