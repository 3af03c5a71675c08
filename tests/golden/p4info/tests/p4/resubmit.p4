// resubmit_preserving_field_list: the original packet runs ingress again with
// instance_type RESUBMIT (6) and packet_length the received size; only
// @field_list(1) metadata survives, with its value at the end of ingress;
// resubmit wins over unicast.  Three passes in all.  When the last pass is
// unicast, BMv2 sets instance_type back to NORMAL (0) before egress
// (simple_switch.cpp, ingress_thread), which egress records in eg_inst.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header rs_t {
    bit<8> passes;
    bit<8> inst;
    bit<8> count;
    bit<8> lost;
    bit<8> len;
    bit<8> eg_inst;
}

struct headers_t {
    ethernet_t ethernet;
    rs_t       rs;
}

struct metadata_t {
    @field_list(1)
    bit<8> count;
    bit<8> lost;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_rs;
            default: accept;
        }
    }
    state parse_rs {
        pkt.extract(hdr.rs);
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
        if (!hdr.rs.isValid()) {
            return;
        }
        if (standard_metadata.instance_type == 0) {
            resubmit_preserving_field_list(1);
            meta.count = 1;
            meta.lost = 0x55;
            hdr.rs.passes = 0x99;
        } else if (meta.count < 2) {
            meta.count = meta.count + 1;
            resubmit_preserving_field_list(1);
        } else {
            standard_metadata.egress_spec = 2;
            hdr.rs.inst = (bit<8>)standard_metadata.instance_type;
            hdr.rs.count = meta.count + 1;
            hdr.rs.lost = meta.lost;
            hdr.rs.len = (bit<8>)standard_metadata.packet_length;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.rs.isValid()) {
            hdr.rs.eg_inst = (bit<8>)standard_metadata.instance_type;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.rs);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
