// Tables filled by the control plane (STF add/setdefault): exact, lpm, and a
// ternary+exact table with entry priorities; action data; .hit / .miss;
// default_action changed at run time; a packet that misses keeps the port it had;
// a table without default_action runs NoAction on a miss.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header t_t {
    bit<8>  k8;
    bit<32> addr;
    bit<16> tk;
    bit<8>  r_exact;
    bit<8>  r_lpm;
    bit<8>  r_tern;
    bit<8>  flags;
}

struct headers_t {
    ethernet_t ethernet;
    t_t t;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_t;
            default: accept;
        }
    }
    state parse_t {
        pkt.extract(hdr.t);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_exact(bit<8> v, bit<9> port) {
        hdr.t.r_exact = v;
        standard_metadata.egress_spec = port;
    }
    action set_lpm(bit<8> v) { hdr.t.r_lpm = v; }
    action miss_lpm() { hdr.t.r_lpm = 0xEE; }
    action set_tern(bit<8> v) { hdr.t.r_tern = v; }

    table t_exact {
        key = { hdr.t.k8: exact; }
        actions = { set_exact; NoAction; }
        default_action = NoAction();
        size = 16;
    }
    table t_lpm {
        key = { hdr.t.addr: lpm; }
        actions = { set_lpm; miss_lpm; }
        default_action = miss_lpm();
        size = 1024;
    }
    table t_tern {
        key = {
            hdr.t.tk: ternary;
            hdr.t.k8: exact;
        }
        actions = { set_tern; NoAction; }
    }

    apply {
        standard_metadata.egress_spec = 9;
        if (hdr.t.isValid()) {
            if (t_exact.apply().hit) {
                hdr.t.flags = hdr.t.flags | 1;
            }
            if (t_lpm.apply().miss) {
                hdr.t.flags = hdr.t.flags | 2;
            }
            t_tern.apply();
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
        pkt.emit(hdr.t);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
