// expect: 15:22: must evaluate to a constant
// a run-time value as a select case mask (p4c: expression must evaluate to a constant)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    bit<8> mask = 0xF0;
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            0x10 &&& mask: reject;
            default: accept;
        }
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
