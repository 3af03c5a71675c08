// hash() with crc16, crc32, csum16 and identity; result = base + (H % max),
// max 0 gives base; the data fields are concatenated bit-wise, MSB first, and
// zero-padded at the end to a whole byte (a 12-bit input c hashes the bytes of c << 4).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header h_t {
    bit<16> a;
    bit<8>  b;
    bit<12> c;
    bit<4>  d;
    bit<16> r_crc16;
    bit<32> r_crc32;
    bit<16> r_csum;
    bit<16> r_ident;
    bit<16> r_mod;
    bit<16> r_crc16b;
    bit<16> r_zero;
    bit<16> r_pad;
}

struct headers_t {
    ethernet_t ethernet;
    h_t h;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_h;
            default: accept;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.h.isValid()) {
            hash(hdr.h.r_crc16, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w65536);
            hash(hdr.h.r_crc32, HashAlgorithm.crc32, 32w0, { hdr.h.b, hdr.h.c, hdr.h.d }, 64w0x100000000);
            hash(hdr.h.r_csum, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c, hdr.h.d }, 32w65536);
            hash(hdr.h.r_ident, HashAlgorithm.identity, 16w0, { hdr.h.a }, 32w65536);
            hash(hdr.h.r_mod, HashAlgorithm.crc16, 16w100, { hdr.h.a, hdr.h.b }, 16w7);
            hash(hdr.h.r_crc16b, HashAlgorithm.crc16, 16w0, { hdr.h.d, hdr.h.c }, 32w65536);
            hash(hdr.h.r_zero, HashAlgorithm.crc16, 16w42, { hdr.h.a }, 16w0);
            hash(hdr.h.r_pad, HashAlgorithm.crc16, 16w0, { hdr.h.c }, 32w65536);
        }
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
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
