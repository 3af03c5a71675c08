// lookahead<T> of a struct of headers, one of them a header stack: the headers come valid
// from the bytes at the current offset, one after the other, and the packet does not advance
// (P4_16 spec 12.8.4). A packet too short for T ends parsing with PacketTooShort.
#include <core.p4>
#include <v1model.p4>

header b_t { bit<8> v; }
header w_t { bit<16> x; }
struct peek_t { b_t[2] s; w_t w; }
header out_t { bit<8> first; bit<8> second; bit<16> word; bit<8> valid; }
struct headers { out_t o; b_t a; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        peek_t l = pkt.lookahead<peek_t>();
        hdr.o.setValid();
        hdr.o.first = l.s[0].v;
        hdr.o.second = l.s[1].v;
        hdr.o.word = l.w.x;
        hdr.o.valid = 0;
        if (l.s[1].isValid() && l.w.isValid()) {
            hdr.o.valid = 1;
        }
        pkt.extract(hdr.a);
        transition accept;
    }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.o); pkt.emit(hdr.a); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
