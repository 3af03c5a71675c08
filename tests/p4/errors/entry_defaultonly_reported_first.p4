// expect: 20:13: defaultonly
// an entry with a @defaultonly action and a @tableonly default action: p4c reports the entry first
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action a1() { hdr.h.b = 1; }
    action a2() { hdr.h.b = 2; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { @tableonly a1; @defaultonly a2; }
        const entries = {
            1 : a2();
        }
        default_action = a1;
    }
    apply { t.apply(); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
