// expect: 9:6: only bit<> and int<>
// a serializable enum over a 'type' (p4c: Illegal type for enum; only bit<> and int<> are allowed)
#include <core.p4>
#include <v1model.p4>

typedef bit<16> base_t;
type base_t eth_t;

enum eth_t EtherType {
    IPv4 = 0x0800,
    ARP  = 0x0806
}

header h_t { bit<16> t; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
