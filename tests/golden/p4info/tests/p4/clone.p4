// clone / clone_preserving_field_list, ingress-to-egress and egress-to-egress,
// with mirroring sessions.  An I2E clone is the packet as received (re-parsed,
// ingress changes not applied) with instance_type 1; an E2E clone is the
// post-egress header state with instance_type 2.  Only @field_list metadata
// survives into the clone.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header cl_t {
    bit<8> cmd;
    bit<8> inst;
    bit<8> port;
    bit<8> keep;
    bit<8> lose;
    bit<8> mark;
}

struct headers_t {
    ethernet_t ethernet;
    cl_t       cl;
}

struct metadata_t {
    @field_list(1)
    bit<8> keep;
    bit<8> lose;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_cl;
            default: accept;
        }
    }
    state parse_cl {
        pkt.extract(hdr.cl);
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
        if (!hdr.cl.isValid()) {
            return;
        }
        meta.keep = 0xAA;
        meta.lose = 0xBB;
        hdr.cl.mark = 0x11;
        if (hdr.cl.cmd == 1) {
            clone(CloneType.I2E, 5);
        } else if (hdr.cl.cmd == 2) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
        } else if (hdr.cl.cmd == 4) {
            clone_preserving_field_list(CloneType.I2E, 5, 1);
            mark_to_drop(standard_metadata);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.cl.isValid()) {
            hdr.cl.inst = (bit<8>)standard_metadata.instance_type;
            hdr.cl.port = (bit<8>)standard_metadata.egress_port;
            hdr.cl.keep = meta.keep;
            hdr.cl.lose = meta.lose;
            if (hdr.cl.cmd == 3 && standard_metadata.instance_type == 0) {
                clone_preserving_field_list(CloneType.E2E, 6, 1);
            }
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.cl);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
