// expect: 20:32: type mismatch
// a bit<2> default action argument for a serializable enum parameter (no implicit cast to the enum)
#include <core.p4>
#include <v1model.p4>

enum bit<2> color_t { RED = 0, GREEN = 1, BLUE = 2 }

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action paint(color_t c) { hdr.h.b = (bit<8>)(bit<2>)c; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { paint; }
        default_action = paint(2w1);
    }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
