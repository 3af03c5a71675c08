// An ingress-to-egress clone whose mirroring session points at a multicast
// group (mirroring_add_mc): every copy is an I2E clone (instance_type 1) that
// carries the replica's egress_rid; the original is unicast (instance_type 0).
// Also: timestamps, egress_global_timestamp >= ingress_global_timestamp
// (carried to egress in user metadata).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header cm_t {
    bit<8>  inst;
    bit<16> rid;
    bit<8>  port;
    bit<8>  ts_ok;
}

struct headers_t {
    ethernet_t ethernet;
    cm_t       cm;
}

struct metadata_t {
    bit<48> t_in;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_cm;
            default: accept;
        }
    }
    state parse_cm {
        pkt.extract(hdr.cm);
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
        meta.t_in = standard_metadata.ingress_global_timestamp;
        if (hdr.cm.isValid()) {
            clone(CloneType.I2E, 7);
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.cm.isValid()) {
            hdr.cm.inst = (bit<8>)standard_metadata.instance_type;
            hdr.cm.rid = standard_metadata.egress_rid;
            hdr.cm.port = (bit<8>)standard_metadata.egress_port;
            hdr.cm.ts_ok = 0;
            if (standard_metadata.instance_type == 0 &&
                standard_metadata.egress_global_timestamp >= meta.t_in) {
                hdr.cm.ts_ok = 1;
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
        pkt.emit(hdr.cm);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
