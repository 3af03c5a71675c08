#include <core.p4>
#include <v1model.p4>
// An ingress-to-egress clone is the packet as received, parsed again (BMv2 simple_switch.cpp,
// ingress_thread, INGRESS CLONING): the re-parse sees the packet's real
// standard_metadata.ingress_port (a parser may branch on it: here the tag header is only
// extracted for packets from port 3), then copy_field_list_and_set_type resets all metadata
// -- what the parser wrote, and standard_metadata.ingress_port too -- and copies back only the
// @field_list fields (their values at the end of ingress), with instance_type 1.
header h_t { bit<8> port_seen; bit<8> parser_meta; bit<8> inst; bit<8> kind; bit<8> keep; }
header tag_t { bit<8> t; }
struct H { h_t h; tag_t tag; }
struct M { bit<8> pm; @field_list(1) bit<8> keep; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.h);
        m.pm = 0x55;
        transition select(sm.ingress_port) { 3: parse_tag; default: accept; }
    }
    state parse_tag { p.extract(h.tag); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        h.h.kind = 0xAA;              // not seen by the clone: it is the packet as received
        m.keep = 0x77;
        clone_preserving_field_list(CloneType.I2E, 5, 1);
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        h.h.port_seen = (bit<8>)sm.ingress_port;
        h.h.parser_meta = m.pm;
        h.h.inst = (bit<8>)sm.instance_type;
        h.h.keep = m.keep;
        if (h.tag.isValid()) { h.tag.t = 0xEE; }
    }
}
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); p.emit(h.tag); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
