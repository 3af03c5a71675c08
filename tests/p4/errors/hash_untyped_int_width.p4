// expect: 15:63: could not infer a width
// hash(): its type variable M (the max argument) is bound only by an integer without a width
#include <core.p4>
#include <v1model.p4>

header h_t { bit<16> a; bit<16> b; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hash(hdr.h.b, HashAlgorithm.crc16, 16w0, { hdr.h.a }, 1024);
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
