// Multicast through the packet replication engine: mcast_grp selects a group
// made with mc_mgrp_create / mc_node_create / mc_node_associate; every copy
// sees egress_rid and instance_type REPLICATION (5) in egress; mark_to_drop
// clears mcast_grp; an unconfigured group replicates to nobody; each replica
// runs egress on its own (group 3: the copy to port 7 is dropped in egress).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header m_t {
    bit<8>  grp;
    bit<8>  drop;
    bit<16> rid;
    bit<8>  port;
    bit<8>  inst;
}

struct headers_t {
    ethernet_t ethernet;
    m_t m;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_m;
            default: accept;
        }
    }
    state parse_m {
        pkt.extract(hdr.m);
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
        if (hdr.m.isValid() && hdr.m.grp != 0) {
            standard_metadata.mcast_grp = (bit<16>)hdr.m.grp;
            if (hdr.m.drop == 1) {
                mark_to_drop(standard_metadata);
            }
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.m.isValid()) {
            hdr.m.rid = standard_metadata.egress_rid;
            hdr.m.port = (bit<8>)standard_metadata.egress_port;
            hdr.m.inst = (bit<8>)standard_metadata.instance_type;
            if (hdr.m.grp == 3 && standard_metadata.egress_port == 7) {
                mark_to_drop(standard_metadata);
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
        pkt.emit(hdr.m);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
