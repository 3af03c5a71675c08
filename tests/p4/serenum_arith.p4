// A serializable enum converts implicitly to its underlying type (P4_16 spec 8.11.2) in
// arithmetic and comparisons: kind_t.A + x is a bit<8>; and "x < kind_t.B" is a comparison
// (a type name after '<' followed by '.member' is not the start of type arguments).
#include <core.p4>
#include <v1model.p4>

enum bit<8> kind_t { A = 3, B = 7 }
header h_t { bit<8> k; bit<8> sum; bit<8> lt; bit<8> band; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        kind_t e = (kind_t) hdr.h.k;
        hdr.h.sum = kind_t.A + hdr.h.k;
        if (hdr.h.k < kind_t.B) {
            hdr.h.lt = 1;
        } else {
            hdr.h.lt = 0;
        }
        if (e == kind_t.B) {
            hdr.h.lt = hdr.h.lt + 2;
        }
        hdr.h.band = kind_t.B & 8w0x5;
        if (kind_t.A + 1 == 4) {
            hdr.h.band = hdr.h.band + 16;
        }
        sm.egress_spec = 2;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
