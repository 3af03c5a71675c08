// A register of a serializable enum (p4c accepts register<E> for enum bit<W> E): its cells
// hold the enum's bit<16> values. Each packet stores its type in cell 0 and gets, in its
// 'prev' field, the value the previous packet stored (0 for the first one).
#include <core.p4>
#include <v1model.p4>

enum bit<16> ptype_t { DATA = 0x0800, CTRL = 0x0806 }
header h_t { ptype_t t; bit<16> prev; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<ptype_t>(1) last;
    apply {
        ptype_t p;
        last.read(p, 0);
        hdr.h.prev = (bit<16>) p;
        last.write(0, hdr.h.t);
        sm.egress_spec = 1;
    }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
