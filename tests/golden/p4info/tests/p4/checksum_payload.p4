// verify_checksum_with_payload / update_checksum_with_payload over a custom
// header plus the unparsed payload (the field bytes, then the payload, padded
// with a zero byte at the end).  A mismatch sets checksum_error, nothing more.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header c_t {
    bit<16> len;
    bit<8>  pad;
    bit<8>  err;
    bit<16> csum;
}

struct headers_t {
    ethernet_t ethernet;
    c_t c;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_c;
            default: accept;
        }
    }
    state parse_c {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum_with_payload(hdr.c.isValid(), { hdr.c.len, hdr.c.pad },
                                     hdr.c.csum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.c.isValid()) {
            hdr.c.err = (bit<8>)standard_metadata.checksum_error;
            if (standard_metadata.checksum_error == 0) {
                hdr.c.pad = hdr.c.pad + 1;
            }
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum_with_payload(hdr.c.isValid(), { hdr.c.len, hdr.c.pad },
                                     hdr.c.csum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.c);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
