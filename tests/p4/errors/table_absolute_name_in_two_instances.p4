// expect: 16:5: multiple table objects
// a table with an absolute @name in a control instantiated twice: two tables, one P4Info name
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control Sub(inout headers hdr) {
    action set(bit<8> v) { hdr.h.b = v; }
    @name(".shared")
    table t {
        key = { hdr.h.a : exact; }
        actions = { set; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    Sub() first;
    Sub() second;
    apply { first.apply(hdr); second.apply(hdr); }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
