// Control-plane tables with mixed keys: lpm + exact (an LPM table, longest
// prefix among entries with the same exact part), ternary entries written with
// '*' wildcard nibbles in STF, and a table in egress keyed on
// standard_metadata.egress_port.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header k_t {
    bit<8>  vrf;
    bit<32> addr;
    bit<16> tk;
    bit<8>  port;
    bit<8>  r_lpm;
    bit<8>  r_tern;
    bit<8>  r_eg;
}

struct headers_t {
    ethernet_t ethernet;
    k_t k;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_k;
            default: accept;
        }
    }
    state parse_k {
        pkt.extract(hdr.k);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_lpm(bit<8> v) { hdr.k.r_lpm = v; }
    action set_tern(bit<8> v) { hdr.k.r_tern = v; }

    table t_vrf {
        key = {
            hdr.k.addr: lpm;
            hdr.k.vrf: exact;
        }
        actions = { set_lpm; NoAction; }
        default_action = NoAction();
    }
    table t_tern {
        key = { hdr.k.tk: ternary; }
        actions = { set_tern; NoAction; }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = (bit<9>)hdr.k.port;
        if (hdr.k.isValid()) {
            t_vrf.apply();
            t_tern.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    action set_eg(bit<8> v) { hdr.k.r_eg = v; }
    table t_eg {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_eg; NoAction; }
        default_action = set_eg(0xEE);
    }
    apply {
        if (hdr.k.isValid()) {
            t_eg.apply();
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.k);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
