// Casts (widening/narrowing, bit<->int, bool<->bit<1>), width-prefixed and
// based literals, constants, slices (r-value and l-value) and concatenation.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


const bit<8> K = 0x2A;
const int<8> NEG = -8s3;

header cv_t {
    bit<8>  a;
    int<8>  n;
    bit<16> w;
    bit<1>  flag;
    bit<7>  pad;
    bit<16> r_zext;
    int<16> r_sext;
    bit<16> r_sext_bits;
    bit<8>  r_trunc;
    bit<8>  r_i2b;
    int<8>  r_b2i;
    bit<8>  r_bool;
    bit<16> r_concat;
    bit<4>  r_hi;
    bit<4>  r_lo;
    bit<8>  r_sl;
    bit<8>  r_lit1;
    bit<8>  r_lit2;
    bit<16> r_lit3;
    bit<8>  r_lit4;
    bit<8>  r_lit5;
    bit<8>  r_lit6;
    bit<8>  r_lit7;
    bit<32> r_cat3;
}

struct headers_t {
    ethernet_t ethernet;
    cv_t cv;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_cv;
            default: accept;
        }
    }
    state parse_cv {
        pkt.extract(hdr.cv);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 3;
        if (hdr.cv.isValid()) {
            hdr.cv.r_zext = (bit<16>)hdr.cv.a;
            hdr.cv.r_sext = (int<16>)hdr.cv.n;
            hdr.cv.r_sext_bits = (bit<16>)(int<16>)hdr.cv.n;
            hdr.cv.r_trunc = (bit<8>)hdr.cv.w;
            hdr.cv.r_i2b = (bit<8>)hdr.cv.n;
            hdr.cv.r_b2i = (int<8>)hdr.cv.a;
            bool f = (bool)hdr.cv.flag;
            bool g = hdr.cv.a > 8w127;
            hdr.cv.r_bool = 0;
            hdr.cv.r_bool[0:0] = (bit<1>)f;
            hdr.cv.r_bool[1:1] = (bit<1>)g;
            hdr.cv.r_bool[2:2] = (bit<1>)(f && g);
            hdr.cv.r_bool[7:7] = (bit<1>)!f;
            hdr.cv.r_concat = hdr.cv.a ++ (bit<8>)hdr.cv.n;
            hdr.cv.r_hi = hdr.cv.w[15:12];
            hdr.cv.r_lo = hdr.cv.w[3:0];
            hdr.cv.r_sl = 8w0xFF;
            hdr.cv.r_sl[7:4] = hdr.cv.a[3:0];
            hdr.cv.r_sl[1:0] = 2w0;
            hdr.cv.r_lit1 = 8w255 + 8w1;
            hdr.cv.r_lit2 = 8w0b1010_1010;
            hdr.cv.r_lit3 = 16w0x0F0F ^ 16w0xFFFF;
            hdr.cv.r_lit4 = (bit<8>)(-8s1);
            hdr.cv.r_lit5 = (bit<8>)NEG;
            hdr.cv.r_lit6 = K + 8w0o17 + 8w0d10;
            hdr.cv.r_lit7 = (bit<8>)(300 - 290);
            hdr.cv.r_cat3 = hdr.cv.flag ++ hdr.cv.pad ++ 8w0xC3 ++ hdr.cv.w;
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
        pkt.emit(hdr.cv);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
