// expect: 15:16: has a type which is not bit<>, int<>, bool, type or serializable enum
// a table action whose control-plane parameter is a struct: action data are bit strings (p4c, P4Info: "has a type which is not bit<>, int<>, bool, type or serializable enum")
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct pair_t { bit<8> x; bit<8> y; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action set(pair_t p) { hdr.h.a = p.x; hdr.h.b = p.y; }
    table t {
        key = { hdr.h.a : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
