// expect: 14:9: action calls are not allowed within parsers
// a parser state calls an action (p4c: "Action calls are not allowed within parsers"; spec 13.4 lists what a state holds)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta_t { bit<8> x; }

action set_x(out bit<8> x) { x = 1; }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        set_x(m.x);
        pkt.extract(hdr.h);
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
