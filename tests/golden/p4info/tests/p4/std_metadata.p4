// standard_metadata as ingress and egress see it (ingress_port, packet_length,
// instance_type, egress_port; in egress egress_spec reads 0 and packet_length
// follows headers removed in ingress), and a deparser that emits headers in a
// different order than the parser extracted them.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header sm_t {
    bit<16> in_port;
    bit<32> pkt_len;
    bit<32> inst;
    bit<16> eg_port;
    bit<8>  err;
    bit<16> eg_spec;
    bit<32> eg_len;
}

header b_t {
    bit<8> v;
}

struct headers_t {
    ethernet_t ethernet;
    sm_t       sm;
    b_t        b;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_sm;
            default: accept;
        }
    }
    state parse_sm {
        pkt.extract(hdr.sm);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = standard_metadata.ingress_port + 1;
        if (hdr.sm.isValid()) {
            hdr.sm.in_port = (bit<16>)standard_metadata.ingress_port;
            hdr.sm.pkt_len = standard_metadata.packet_length;
            hdr.sm.inst = standard_metadata.instance_type;
            hdr.sm.err = (bit<8>)standard_metadata.checksum_error;
            if (standard_metadata.parser_error != error.NoError) {
                hdr.sm.err = 0xEE;
            }
        }
        if (standard_metadata.ingress_port == 7) {
            hdr.b.setInvalid();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.sm.isValid()) {
            hdr.sm.eg_port = (bit<16>)standard_metadata.egress_port;
            hdr.sm.eg_spec = (bit<16>)standard_metadata.egress_spec;
            hdr.sm.eg_len = standard_metadata.packet_length;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.b);
        pkt.emit(hdr.sm);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
