// Multicast whose replicas ask for more in egress: replica rid 1 is cloned E2E (session 5),
// replica rid 2 is truncated to 20 bytes, replica rid 3 is recirculated once (its second
// ingress pass sends it to port 7), replica rid 4 is dropped in egress.  Used by
// tests/emulation/v1model/test_fast_path.py to compare the multicast fast path with the
// traffic manager's work queue.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> tag; bit<8> seen; bit<16> pad; }
struct headers_t { h_t h; }
struct meta_t { @field_list(1) bit<8> recirculated; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        if (m.recirculated == 1) {
            sm.egress_spec = 7;
            hdr.h.seen = 0xEE;
        } else {
            sm.mcast_grp = 1;
        }
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen = (bit<8>) sm.egress_rid;
        if (sm.instance_type == 2) {           // the E2E clone
            hdr.h.seen = 0xC0;
        } else if (sm.egress_rid == 1) {
            clone(CloneType.E2E, 5);
        } else if (sm.egress_rid == 2) {
            truncate(20);
        } else if (sm.egress_rid == 3 && m.recirculated == 0) {
            m.recirculated = 1;
            recirculate_preserving_field_list(1);
        } else if (sm.egress_rid == 4) {
            mark_to_drop(sm);
        }
    }
}
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
