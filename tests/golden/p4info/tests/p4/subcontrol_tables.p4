// A control holding a table, instantiated twice: each instance has its own
// table (MyIngress.lookup_src.t and MyIngress.lookup_dst.t) filled separately
// by the control plane; the sub-control's inout argument is copied back.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<8> src_class;
    bit<8> dst_class;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t      tag;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.tag);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control Classify(in bit<48> addr, inout bit<8> cls) {
    action set_class(bit<8> c) {
        cls = c;
    }
    action unknown() {
        cls = 0xFF;
    }
    table t {
        key = { addr: exact; }
        actions = { set_class; unknown; }
        default_action = unknown();
    }
    apply {
        t.apply();
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    Classify() lookup_src;
    Classify() lookup_dst;
    apply {
        lookup_src.apply(hdr.ethernet.srcAddr, hdr.tag.src_class);
        lookup_dst.apply(hdr.ethernet.dstAddr, hdr.tag.dst_class);
        standard_metadata.egress_spec = (bit<9>)hdr.tag.dst_class;
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
        pkt.emit(hdr.tag);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
