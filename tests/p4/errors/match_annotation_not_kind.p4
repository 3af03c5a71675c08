// expect: 8:*: must be a match_kind
// @match on a value set field names something that is not a match kind
#include <core.p4>
#include <v1model.p4>

struct vs_t {
    @match(exact) bit<8> a;
    @match(ternary + 1) bit<8> b;
}

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    value_set<vs_t>(4) vs;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a, hdr.h.b) { vs: accept; default: accept; }
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
