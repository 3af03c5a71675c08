// expect: 16:20: values of type int cannot be implicitly cast to type
// an integer initialises a serializable enum variable: no implicit conversion from int to the enum (spec 8.11.2; only the other way round)
#include <core.p4>
#include <v1model.p4>

enum bit<8> kind_t { A = 1, B = 2 }
header h_t { bit<8> a; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        kind_t k = 2;
        hdr.h.a = k;
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
