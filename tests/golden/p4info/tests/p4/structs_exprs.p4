// Nested structs, struct assignment and initializers, header-typed locals,
// header equality, the conditional operator ?:, and evaluation order of && / ||
// (short-circuit).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


bool bump(inout bit<8> calls) {
    calls = calls + 1;
    return true;
}

struct pair_t {
    bit<8> lo;
    bit<8> hi;
}

struct nest_t {
    pair_t  p;
    bit<16> w;
    bool    flag;
}

header s_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> w;
    bit<8>  r_max;
    bit<8>  r_swap_lo;
    bit<8>  r_swap_hi;
    bit<16> r_w;
    bit<8>  r_eq;
    bit<8>  r_sc;
}

struct headers_t {
    ethernet_t ethernet;
    s_t s;
}

struct metadata_t {
    nest_t copy;
    bit<8> calls;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_s;
            default: accept;
        }
    }
    state parse_s {
        pkt.extract(hdr.s);
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
        if (!hdr.s.isValid()) {
            return;
        }
        nest_t n = { p = { lo = hdr.s.a, hi = hdr.s.b }, w = hdr.s.w, flag = hdr.s.a > hdr.s.b };
        nest_t m;
        m = n;
        m.p.lo = n.p.hi;
        m.p.hi = n.p.lo;
        hdr.s.r_swap_lo = m.p.lo;
        hdr.s.r_swap_hi = m.p.hi;
        hdr.s.r_max = n.flag ? n.p.lo : n.p.hi;
        meta.copy = n;
        meta.copy.w = meta.copy.w + 1;
        hdr.s.r_w = meta.copy.w;
        s_t other = hdr.s;
        hdr.s.r_eq = 0;
        if (other == hdr.s) {
            hdr.s.r_eq = 1;
        }
        other.a = other.a + 1;
        if (other != hdr.s) {
            hdr.s.r_eq = hdr.s.r_eq | 2;
        }
        hdr.s.r_sc = 0;
        if (hdr.s.a == 0 || bump(meta.calls)) {
            hdr.s.r_sc = hdr.s.r_sc | 0x10;
        }
        if (hdr.s.a != 0 && bump(meta.calls)) {
            hdr.s.r_sc = hdr.s.r_sc | 0x20;
        }
        hdr.s.r_sc = hdr.s.r_sc + meta.calls;
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
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
