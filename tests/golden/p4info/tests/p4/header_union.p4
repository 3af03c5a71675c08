// header_union: extracting one member makes the union valid; isValid() on the
// union and its members; setValid() on one member invalidates the others;
// setInvalid() on the valid member empties the union; emit writes the valid
// member only.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ctl_t {
    bit<8> kind;
    bit<8> op;
    bit<8> res;
}

header v4_t {
    bit<8>  ver;
    bit<8>  ttl;
    bit<16> a;
}

header v6_t {
    bit<8>  ver;
    bit<8>  hop;
    bit<32> a;
}

header_union ip_u {
    v4_t v4;
    v6_t v6;
}

struct headers_t {
    ethernet_t ethernet;
    ctl_t      ctl;
    ip_u       ip;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ctl);
        transition select(hdr.ctl.kind) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.ip.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 2;
        if (hdr.ctl.op == 1 && hdr.ip.v4.isValid()) {
            bit<8> t = hdr.ip.v4.ttl;
            bit<16> a = hdr.ip.v4.a;
            hdr.ip.v6.setValid();
            hdr.ip.v6.ver = 6;
            hdr.ip.v6.hop = t;
            hdr.ip.v6.a = (bit<32>)a;
        } else if (hdr.ctl.op == 2 && hdr.ip.v4.isValid()) {
            hdr.ip.v4.setInvalid();
        }
        bit<8> res = 0;
        if (hdr.ip.isValid()) { res = res | 1; }
        if (hdr.ip.v4.isValid()) { res = res | 2; }
        if (hdr.ip.v6.isValid()) { res = res | 4; }
        hdr.ctl.res = res;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.ip);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
