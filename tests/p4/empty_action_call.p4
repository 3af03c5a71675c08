// A call of an action with an empty body does nothing, even with a run-time header-stack
// index out of range in its inout argument: p4c inlines the action and the copy-in/copy-out of
// the plain lvalue disappears, so BMv2 never evaluates the index (for an action that uses the
// parameter, BMv2 aborts on it: see tests/p4/compat/oob_index_lvalue.p4).
#include <core.p4>
#include <v1model.p4>

header i_t { bit<8> i; }
header e_t { bit<8> a; }
struct headers { i_t h; e_t[2] s; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    action nothing(inout bit<8> v) { }
    apply {
        nothing(hdr.s[hdr.h.i].a);
        hdr.s[0].a = hdr.s[0].a + 1;
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
