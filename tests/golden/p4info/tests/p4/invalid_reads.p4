// BMv2 specifics the P4 spec leaves undefined: reading a field of a header
// that was never valid gives 0, reading after setInvalid() gives the old
// value, uninitialized locals and metadata read as 0, and writes to a field
// of an invalid header are kept (a later setValid() zeroes them).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header a_t {
    bit<8> v;
    bit<8> r_never;
    bit<8> r_after_invalid;
    bit<8> r_local;
    bit<8> r_meta;
    bit<8> r_written_invalid;
}

header b_t {
    bit<8> w;
}

struct headers_t {
    ethernet_t ethernet;
    a_t        a;
    b_t        b;
    b_t        never;
    b_t        scratch;
}

struct metadata_t {
    bit<8> unset;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
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
        bit<8> local;
        hdr.a.r_never = hdr.never.w;
        hdr.b.setInvalid();
        hdr.a.r_after_invalid = hdr.b.w;
        hdr.a.r_local = local;
        hdr.a.r_meta = meta.unset;
        hdr.scratch.w = 0x77;
        hdr.a.r_written_invalid = hdr.scratch.w;
        if (hdr.a.v == 1) {
            hdr.scratch.setValid();
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
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.scratch);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
