// recirculate_preserving_field_list: the deparsed output of egress (including
// egress changes and an added header) is parsed again with instance_type
// RECIRC (4) and packet_length = the new size; @field_list metadata keeps its
// value from the end of egress, other metadata is reset.  Egress decides to
// recirculate from a mark in the packet, not from instance_type: a unicast
// packet reaches egress with instance_type NORMAL (0) in BMv2 even after a
// recirculation (simple_switch.cpp, ingress_thread), recorded in eg_inst.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header rc_t {
    bit<8> inst;
    bit<8> keep;
    bit<8> lost;
    bit<8> len;
    bit<8> mark;
    bit<8> eg_inst;
}

header extra_t {
    bit<16> v;
}

struct headers_t {
    ethernet_t ethernet;
    rc_t       rc;
    extra_t    extra;
}

struct metadata_t {
    @field_list(1)
    bit<8> keep;
    bit<8> lost;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_rc;
            default: accept;
        }
    }
    state parse_rc {
        pkt.extract(hdr.rc);
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
        if (!hdr.rc.isValid()) {
            return;
        }
        if (standard_metadata.instance_type == 4) {
            standard_metadata.egress_spec = 3;
            hdr.rc.inst = (bit<8>)standard_metadata.instance_type;
            hdr.rc.keep = meta.keep;
            hdr.rc.lost = meta.lost;
            hdr.rc.len = (bit<8>)standard_metadata.packet_length;
        } else {
            meta.lost = 0x66;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (!hdr.rc.isValid()) {
            return;
        }
        hdr.rc.eg_inst = (bit<8>)standard_metadata.instance_type;
        if (hdr.rc.mark != 0x22) {
            recirculate_preserving_field_list(1);
            meta.keep = 0x5A;
            hdr.rc.mark = 0x22;
            hdr.extra.setValid();
            hdr.extra.v = 0xC0DE;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.rc);
        pkt.emit(hdr.extra);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
