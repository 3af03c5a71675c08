// Unsigned arithmetic: wrap-around, unary minus, bitwise ops, shifts by a
// run-time amount (>= width gives 0), saturating |+| and |-|, comparisons.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ops_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  s;
    bit<16> c;
    bit<8>  r_add;
    bit<8>  r_sub;
    bit<16> r_mul;
    bit<8>  r_neg;
    bit<8>  r_and;
    bit<8>  r_or;
    bit<8>  r_xor;
    bit<8>  r_not;
    bit<8>  r_shl;
    bit<8>  r_shr;
    bit<8>  r_satadd;
    bit<8>  r_satsub;
    bit<16> r_shl16;
    bit<8>  r_cmp;
}

struct headers_t {
    ethernet_t ethernet;
    ops_t      ops;
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
        standard_metadata.egress_spec = 1;
        if (hdr.ops.isValid()) {
            bit<8> a = hdr.ops.a;
            bit<8> b = hdr.ops.b;
            hdr.ops.r_add = a + b;
            hdr.ops.r_sub = a - b;
            hdr.ops.r_mul = hdr.ops.c * (bit<16>)a;
            hdr.ops.r_neg = -a;
            hdr.ops.r_and = a & b;
            hdr.ops.r_or = a | b;
            hdr.ops.r_xor = a ^ b;
            hdr.ops.r_not = ~a;
            hdr.ops.r_shl = a << hdr.ops.s;
            hdr.ops.r_shr = a >> hdr.ops.s;
            hdr.ops.r_satadd = a |+| b;
            hdr.ops.r_satsub = a |-| b;
            hdr.ops.r_shl16 = hdr.ops.c << 4;
            bit<8> cmp = 0;
            if (a < b)  { cmp = cmp | 8w0x01; }
            if (a <= b) { cmp = cmp | 8w0x02; }
            if (a > b)  { cmp = cmp | 8w0x04; }
            if (a >= b) { cmp = cmp | 8w0x08; }
            if (a == b) { cmp = cmp | 8w0x10; }
            if (a != b) { cmp = cmp | 8w0x20; }
            if (a > b && a > 8w100) { cmp = cmp | 8w0x40; }
            if (!(a == 0) || b == 0) { cmp = cmp | 8w0x80; }
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
