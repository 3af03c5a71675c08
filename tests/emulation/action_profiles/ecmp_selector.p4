// ECMP with an action selector (v1model), and an action profile without a selector.
// ecmp: lpm on the destination; the selector hashes (srcAddr, dstAddr, protocol) with
// crc16 to pick one member (next hop) of the group the entry points at.
// smac_rewrite: a table sharing members through a named action_profile.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

struct meta_t { }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_nhop(bit<9> port, bit<48> dmac) {
        sm.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    table ecmp {
        key = {
            hdr.ipv4.dstAddr  : lpm;
            hdr.ipv4.srcAddr  : selector;
            hdr.ipv4.dstAddr  : selector;
            hdr.ipv4.protocol : selector;
        }
        actions = { set_nhop; drop; }
        implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w14);
        default_action = drop();
    }

    action set_smac(bit<48> smac) { hdr.ethernet.srcAddr = smac; }
    action_profile(32w16) smac_profile;
    table smac_rewrite {
        key = { sm.egress_spec : exact; }
        actions = { set_smac; NoAction; }
        implementation = smac_profile;
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ecmp.apply();
            smac_rewrite.apply();
        } else {
            drop();
        }
    }
}

control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control Dep(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), Dep()) main;
