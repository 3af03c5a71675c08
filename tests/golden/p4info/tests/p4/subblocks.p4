// Sub-parsers and sub-controls with constructor parameters and local instances,
// top-level functions with return, actions with in/out/inout parameters.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> c;
    bit<8> d;
    bit<8> e;
    bit<8> f;
    bit<8> g;
}

header opt_t {
    bit<8> x;
}

struct headers_t {
    ethernet_t ethernet;
    h_t        h;
    opt_t      opt;
}

struct metadata_t {
    bit<8> depth;
}

bit<8> max8(in bit<8> x, in bit<8> y) {
    if (x > y) {
        return x;
    }
    return y;
}

void swap8(inout bit<8> x, inout bit<8> y) {
    bit<8> t = x;
    x = y;
    y = t;
}

parser OptParser(packet_in pkt, out opt_t o, inout bit<8> depth)(bit<8> inc) {
    state start {
        pkt.extract(o);
        depth = depth + inc;
        transition accept;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    OptParser(8w2) opt_parser;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_h;
            default: accept;
        }
    }
    state parse_h {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        opt_parser.apply(pkt, hdr.opt, meta.depth);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control Adder(inout bit<8> v)(bit<8> amount) {
    apply {
        v = v + amount;
    }
}

control Twice(inout bit<8> v)(bit<8> k) {
    Adder(k) first;
    Adder(k + 1) second;
    apply {
        first.apply(v);
        second.apply(v);
    }
}

control Const42(out bit<8> r) {
    apply {
        r = 42;
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    Adder(8w10) add10;
    Twice(8w3) twice;
    Const42() c42;

    action set_out(out bit<8> r, in bit<8> v) {
        r = v ^ 0xFF;
    }
    action incr(inout bit<8> v, bit<8> step) {
        v = v + step;
    }

    apply {
        standard_metadata.egress_spec = 5;
        if (hdr.h.isValid()) {
            add10.apply(hdr.h.b);
            twice.apply(hdr.h.c);
            hdr.h.d = max8(hdr.h.a, hdr.h.d);
            swap8(hdr.h.e, hdr.h.f);
            set_out(hdr.h.g, hdr.h.a);
            incr(hdr.h.g, 2);
        }
        if (hdr.opt.isValid()) {
            c42.apply(hdr.opt.x);
            hdr.opt.x = hdr.opt.x + meta.depth;
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
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
