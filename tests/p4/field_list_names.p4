#include <core.p4>
#include <v1model.p4>
// @field_list with named ids, as the p4lang tutorials' flowcache writes them: a const
// (FL_PACKET_IN), serializable enum members (FieldLists.*), several ids on one field, and
// annotations on the fields of a nested struct (p4c flattens metadata).  Each of
// resubmit / recirculate / clone preserves exactly the fields of the list it names.
enum bit<8> FieldLists { none = 0, resub = 1, recirc = 2 }
const bit<8> FL_PACKET_IN = 3;

header h_t { bit<8> pass; bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct inner_t { @field_list(FieldLists.recirc) bit<8> r; bit<8> lost; }
struct M {
    @field_list(FieldLists.resub, FL_PACKET_IN) bit<8> both;
    @field_list(FL_PACKET_IN) bit<8> cl;
    @field_list(FieldLists.resub) bit<8> rs;
    inner_t nest;
}
struct H { h_t h; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (h.h.pass == 1 && sm.instance_type == 0) {
            m.both = 0x11; m.cl = 0x12; m.rs = 0x13; m.nest.r = 0x14; m.nest.lost = 0x15;
            resubmit_preserving_field_list(FieldLists.resub);
        } else if (h.h.pass == 2 && sm.instance_type == 0) {
            // first pass through egress recirculates with FieldLists.recirc
        } else if (h.h.pass == 3 && sm.instance_type == 0) {
            m.both = 0x31; m.cl = 0x32; m.rs = 0x33; m.nest.r = 0x34;
            clone_preserving_field_list(CloneType.I2E, 5, FL_PACKET_IN);
        }
        if (sm.instance_type != 0) {
            h.h.a = m.both; h.h.b = m.cl; h.h.c = m.rs; h.h.d = m.nest.r;
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        if (h.h.pass == 2 && sm.instance_type == 0 && h.h.d == 0) {
            m.both = 0x21; m.cl = 0x22; m.rs = 0x23; m.nest.r = 0x24; m.nest.lost = 0x25;
            recirculate_preserving_field_list(FieldLists.recirc);
        }
        if (sm.instance_type == 1) {      // the I2E clone: metadata of FL_PACKET_IN only
            h.h.a = m.both; h.h.b = m.cl; h.h.c = m.rs; h.h.d = m.nest.r;
        }
    }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
