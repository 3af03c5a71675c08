// Wide values: 48-, 64- and 128-bit arithmetic (wrap-around multiplication,
// shifts by run-time amounts across 64 bits, saturation), concatenation into
// 128 bits, slices of wide fields, negation of int<64>.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header w_t {
    bit<64>  a;
    bit<64>  b;
    bit<48>  m;
    bit<8>   s;
    bit<64>  r_add;
    bit<64>  r_mul;
    bit<64>  r_shl;
    bit<64>  r_shr;
    bit<48>  r_m;
    bit<128> r_cat;
    bit<32>  r_hi;
    int<64>  r_neg;
    bit<64>  r_sat;
}

struct headers_t {
    ethernet_t ethernet;
    w_t w;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_w;
            default: accept;
        }
    }
    state parse_w {
        pkt.extract(hdr.w);
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
        if (hdr.w.isValid()) {
            hdr.w.r_add = hdr.w.a + hdr.w.b;
            hdr.w.r_mul = hdr.w.a * hdr.w.b;
            hdr.w.r_shl = hdr.w.a << hdr.w.s;
            hdr.w.r_shr = hdr.w.a >> hdr.w.s;
            hdr.w.r_m = hdr.w.m + 48w1;
            hdr.w.r_cat = hdr.w.a ++ hdr.w.b;
            hdr.w.r_hi = hdr.w.a[63:32];
            hdr.w.r_neg = -((int<64>)hdr.w.a);
            hdr.w.r_sat = hdr.w.a |+| hdr.w.b;
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
        pkt.emit(hdr.w);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
