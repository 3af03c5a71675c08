// typedef, `type` (new types need explicit casts), plain enums and serializable
// enums (enum bit<8> with explicit values): casts, comparisons, select and switch on them.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


typedef bit<8> opcode_t;
type bit<16> Tag_t;

enum Color { Red, Green, Blue }

enum bit<8> Op {
    ADD = 1,
    SUB = 2,
    XOR = 0x10
}

header en_t {
    Op      op;
    bit<8>  x;
    bit<8>  y;
    bit<16> tag;
    bit<8>  r;
    bit<8>  color;
    opcode_t raw;
}

struct headers_t {
    ethernet_t ethernet;
    en_t en;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_en;
            default: accept;
        }
    }
    state parse_en {
        pkt.extract(hdr.en);
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
        if (hdr.en.isValid()) {
            Color c = Color.Red;
            switch (hdr.en.op) {
                Op.ADD: { hdr.en.r = hdr.en.x + hdr.en.y; c = Color.Green; }
                Op.SUB: { hdr.en.r = hdr.en.x - hdr.en.y; c = Color.Blue; }
                Op.XOR: { hdr.en.r = hdr.en.x ^ hdr.en.y; }
                default: { hdr.en.r = 0xEE; }
            }
            if (c == Color.Green) {
                hdr.en.color = 1;
            } else if (c == Color.Blue) {
                hdr.en.color = 2;
            } else {
                hdr.en.color = 3;
            }
            Tag_t t = (Tag_t)hdr.en.tag;
            if (t == (Tag_t)16w0xBEEF) {
                t = (Tag_t)16w0xCAFE;
            }
            hdr.en.tag = (bit<16>)t;
            opcode_t raw = (opcode_t)hdr.en.op;
            if (hdr.en.op == Op.SUB) {
                raw = raw + (bit<8>)Op.XOR;
            }
            hdr.en.raw = raw;
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
        pkt.emit(hdr.en);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
