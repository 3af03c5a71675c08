// Registers: read-modify-write across packets, bit<8> and bit<32> cells,
// out-of-bounds read leaves the destination unchanged and out-of-bounds write
// does nothing (BMv2's behaviour), control-plane register_write.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header r_t {
    bit<8>  op;
    bit<8>  idx;
    bit<32> val;
    bit<32> old;
    bit<8>  sv;
}

struct headers_t {
    ethernet_t ethernet;
    r_t r;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_r;
            default: accept;
        }
    }
    state parse_r {
        pkt.extract(hdr.r);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>, bit<32>>(16) acc;
    register<bit<8>, bit<32>>(4) small;

    action accumulate(bit<32> i) {
        acc.read(hdr.r.old, i);
        acc.write(i, hdr.r.old + hdr.r.val);
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.r.isValid()) {
            bit<32> i = (bit<32>)hdr.r.idx;
            if (hdr.r.op == 1) {
                accumulate(i);
            } else if (hdr.r.op == 2) {
                acc.read(hdr.r.old, i);
            } else if (hdr.r.op == 3) {
                small.read(hdr.r.sv, i);
                small.write(i, hdr.r.sv + 1);
            }
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
        pkt.emit(hdr.r);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
