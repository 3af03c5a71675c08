// log_msg (with and without data), assert/assume that hold, random() checked
// only through its range, digest() (the packet flow is unaffected).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


struct digest_t {
    bit<48> src;
    bit<8>  v;
}

header x_t {
    bit<8>  v;
    bit<8>  r_fixed;
    bit<16> r_fixed16;
    bit<8>  in_range;
}

struct headers_t {
    ethernet_t ethernet;
    x_t x;
}

struct metadata_t {
    digest_t dg;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_x;
            default: accept;
        }
    }
    state parse_x {
        pkt.extract(hdr.x);
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
        log_msg("plain message");
        log_msg("ingress_port={}, length={}", {standard_metadata.ingress_port, standard_metadata.packet_length});
        assume(hdr.ethernet.isValid());
        assert(standard_metadata.ingress_port != 511);
        if (hdr.x.isValid()) {
            bit<8> r;
            random(r, 8w7, 8w7);
            hdr.x.r_fixed = r;
            bit<16> r16;
            random(r16, 16w1000, 16w1000);
            hdr.x.r_fixed16 = r16;
            bit<8> r3;
            random(r3, 8w10, 8w12);
            if (r3 >= 10 && r3 <= 12) {
                hdr.x.in_range = 1;
            } else {
                hdr.x.in_range = 0xFF;
            }
            assert(hdr.x.r_fixed == 7);
            meta.dg.src = hdr.ethernet.srcAddr;
            meta.dg.v = hdr.x.v;
            digest<digest_t>(1, meta.dg);
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
        pkt.emit(hdr.x);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
