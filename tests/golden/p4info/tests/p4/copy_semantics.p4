// Copy-in/copy-out: an `in` argument is a copy taken at the call, inout
// arguments are copied out left to right (the same field passed twice ends
// with the last value), side effects of calls happen left to right, and a
// sub-control sees copies of its scalar arguments.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


bit<8> inc_ret(inout bit<8> x) {
    x = x + 1;
    return x;
}

void two(inout bit<8> x, inout bit<8> y) {
    x = 1;
    y = 2;
}

control AddInto(inout bit<8> x, in bit<8> y) {
    apply {
        x = 9;
        x = x + y;
    }
}

header s_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
    bit<8> f;
}

struct headers_t {
    ethernet_t ethernet;
    s_t s;
}

struct metadata_t { }

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
    AddInto() add_into;

    action set_from(in bit<8> v) {
        hdr.s.a = 0x55;
        hdr.s.b = v;
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.s.isValid()) {
            set_from(hdr.s.a);
            two(hdr.s.c, hdr.s.c);
            hdr.s.d = inc_ret(hdr.s.d) + inc_ret(hdr.s.d) * 2;
            add_into.apply(hdr.s.e, hdr.s.e);
            hdr.s.f = inc_ret(hdr.s.f);
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
        pkt.emit(hdr.s);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
