// expect: 13:27: a case label does not match the key
// a select case label of another width than its key: p4c reports it at the select expression, the label
// second (its issue1986.p4: "SelectExpression ... Originating from: 'match' case label")
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        transition select(hdr.h.a) {
            4w3: accept;
            default: reject;
        }
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
