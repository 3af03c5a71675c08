// Signed int<W> arithmetic: two's-complement wrap, saturation at [-2^(W-1), 2^(W-1)-1],
// arithmetic right shift, signed comparisons, bit<->int casts of the same width.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header ops_t {
    int<8>  x;
    int<8>  y;
    bit<8>  s;
    int<16> w;
    int<8>  r_add;
    int<8>  r_sub;
    int<8>  r_neg;
    int<8>  r_satadd;
    int<8>  r_satsub;
    int<8>  r_shr;
    int<8>  r_shl;
    int<8>  r_shr2;
    int<16> r_wsat;
    bit<8>  r_bits;
    bit<8>  r_cmp;
}

struct headers_t {
    ethernet_t ethernet;
    ops_t ops;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_ops;
            default: accept;
        }
    }
    state parse_ops {
        pkt.extract(hdr.ops);
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
        if (hdr.ops.isValid()) {
            int<8> x = hdr.ops.x;
            int<8> y = hdr.ops.y;
            hdr.ops.r_add = x + y;
            hdr.ops.r_sub = x - y;
            hdr.ops.r_neg = -x;
            hdr.ops.r_satadd = x |+| y;
            hdr.ops.r_satsub = x |-| y;
            hdr.ops.r_shr = x >> hdr.ops.s;
            hdr.ops.r_shl = x << hdr.ops.s;
            hdr.ops.r_shr2 = x >> 2;
            hdr.ops.r_wsat = hdr.ops.w |+| (int<16>)x;
            hdr.ops.r_bits = (bit<8>)x + 8w1;
            bit<8> cmp = 0;
            if (x < y)  { cmp = cmp | 1; }
            if (x <= y) { cmp = cmp | 2; }
            if (x > y)  { cmp = cmp | 4; }
            if (x >= y) { cmp = cmp | 8; }
            if (x == y) { cmp = cmp | 16; }
            if (x < 0)  { cmp = cmp | 32; }
            if ((bit<8>)x > (bit<8>)y) { cmp = cmp | 64; }
            hdr.ops.r_cmp = cmp;
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
        pkt.emit(hdr.ops);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
