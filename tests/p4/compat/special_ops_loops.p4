#include <core.p4>
#include <v1model.p4>
// Bounded resubmit / recirculate / egress-to-egress clone loops, as p4c's P4_14-derived
// p414-special-ops*.p4 write them: field-list ids are serializable enum members passed as
// (bit<8>)FieldLists.x, and each loop counter is incremented *after* the call, so the loop
// ends only if the value kept is the one at the end of ingress (resubmit) or egress
// (recirculate, E2E clone), as BMv2 copies the field list then.  (A target that kept
// nothing would loop until its limit: 511 packets in place of 3.)
enum bit<8> FieldLists { e2e = 0, recirc = 1, resub = 2 }
header h_t { bit<8> op; bit<8> rs; bit<8> rc; bit<8> ce; bit<8> inst; }
struct H { h_t h; }
struct M {
    @field_list(FieldLists.resub) bit<8> rs;
    @field_list(FieldLists.recirc) bit<8> rc;
    @field_list(FieldLists.e2e) bit<8> ce;
}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.op == 1 && m.rs < 2) {
            resubmit_preserving_field_list((bit<8>)FieldLists.resub);
            m.rs = m.rs + 1;
        }
        h.h.rs = m.rs;
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (h.h.op == 2 && m.rc < 2) {
            recirculate_preserving_field_list((bit<8>)FieldLists.recirc);
            m.rc = m.rc + 1;
        }
        if (h.h.op == 3 && m.ce < 2) {
            clone_preserving_field_list(CloneType.E2E, 5, (bit<8>)FieldLists.e2e);
            m.ce = m.ce + 1;
        }
        h.h.rc = m.rc;
        h.h.ce = m.ce;
        h.h.inst = (bit<8>)sm.instance_type;
    }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
