// Externs written as the p4lang tutorials write them, with v1model.p4's default
// V1MODEL_VERSION (no #define): register<bit<32>>(N) with a bit<32> index and
// counter(N, CounterType.packets) without a type argument.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header x_t {
    bit<32> idx;
    bit<32> add;
    bit<32> total;
}

struct headers_t {
    ethernet_t ethernet;
    x_t x;
}

struct metadata_t { }

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
    register<bit<32>>(8) totals;
    counter(8, CounterType.packets) pkts;

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.x.isValid()) {
            bit<32> v;
            totals.read(v, hdr.x.idx);
            v = v + hdr.x.add;
            totals.write(hdr.x.idx, v);
            hdr.x.total = v;
            pkts.count(hdr.x.idx);
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
