// Dropping and default ports: egress_spec starts at 0 (port 0), mark_to_drop()
// and egress_spec = 511 drop, a later assignment overrides mark_to_drop,
// mark_to_drop() in egress drops, egress_port is visible in egress.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header d_t {
    bit<8> cmd;
    bit<8> port_seen;
}

struct headers_t {
    ethernet_t ethernet;
    d_t d;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_d;
            default: accept;
        }
    }
    state parse_d {
        pkt.extract(hdr.d);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (!hdr.d.isValid()) {
            return;
        }
        if (hdr.d.cmd == 1) {
            mark_to_drop(standard_metadata);
        } else if (hdr.d.cmd == 2) {
            standard_metadata.egress_spec = 511;
        } else if (hdr.d.cmd == 3) {
            mark_to_drop(standard_metadata);
            standard_metadata.egress_spec = 3;
        } else if (hdr.d.cmd == 4) {
            standard_metadata.egress_spec = 5;
        } else if (hdr.d.cmd == 5) {
            standard_metadata.egress_spec = 6;
        } else if (hdr.d.cmd == 6) {
            standard_metadata.egress_spec = 510;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.d.isValid()) {
            hdr.d.port_seen = (bit<8>)standard_metadata.egress_port;
            if (hdr.d.cmd == 4) {
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
        pkt.emit(hdr.d);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
