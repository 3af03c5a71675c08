// Tables with const entries: range keys, ternary without priorities (earlier
// entry wins), @priority annotations (BMv2 order: smaller number wins),
// (priority= entries need a newer p4c: see embedded_only/), optional keys,
// lpm const entries (longest prefix wins regardless of order), const default_action, size.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header c_t {
    bit<8>  x;
    bit<8>  o;
    bit<16> t;
    bit<32> addr;
    bit<8>  r_range;
    bit<8>  r_tern;
    bit<8>  r_annot;
    bit<8>  r_prio;
    bit<8>  r_opt;
    bit<8>  r_exact;
    bit<8>  r_lpm;
}

struct headers_t {
    ethernet_t ethernet;
    c_t c;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_c;
            default: accept;
        }
    }
    state parse_c {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action set_range(bit<8> v) { hdr.c.r_range = v; }
    action set_tern(bit<8> v) { hdr.c.r_tern = v; }
    action set_annot(bit<8> v) { hdr.c.r_annot = v; }
    action set_prio(bit<8> v) { hdr.c.r_prio = v; }
    action set_opt(bit<8> v) { hdr.c.r_opt = v; }
    action set_exact(bit<8> v) { hdr.c.r_exact = v; }
    action set_lpm(bit<8> v) { hdr.c.r_lpm = v; }

    table t_range {
        key = { hdr.c.x: range; }
        actions = { set_range; }
        const entries = {
            0 .. 9: set_range(1);
            5 .. 20: set_range(2);
            21 .. 254: set_range(3);
        }
        const default_action = set_range(0xEE);
    }

    table t_tern {
        key = { hdr.c.t: ternary; }
        actions = { set_tern; NoAction; }
        const entries = {
            0x1200 &&& 0xFF00: set_tern(1);
            0x1234: set_tern(2);
            0x0030 &&& 0x00F0: set_tern(3);
        }
        default_action = NoAction();
    }

    table t_annot {
        key = { hdr.c.t: ternary; }
        actions = { set_annot; NoAction; }
        const entries = {
            0x1111 &&& 0x000F: set_annot(1) @priority(3);
            0x1181 &&& 0xF00F: set_annot(3) @priority(1);
        }
        default_action = NoAction();
    }

    table t_prio {
        key = { hdr.c.t: ternary; }
        actions = { set_prio; NoAction; }
        // `priority=` entries need a newer p4c than 1.2.4.8 ("Table with 'const' entries
        // cannot have priorities"): tests/p4/embedded_only/entries_priority_kw.p4 has them;
        // here the entry that must win comes first (without priorities, the earlier wins)
        const entries = {
            0x1001 &&& 0xF00F: set_prio(20);
            0x0001 &&& 0x000F: set_prio(10);
        }
        default_action = NoAction();
    }

    table t_opt {
        key = {
            hdr.c.x: exact;
            hdr.c.o: optional;
        }
        actions = { set_opt; NoAction; }
        const entries = {
            (1, 5): set_opt(0x15);
            (1, _): set_opt(0x10);
            (2, 7): set_opt(0x27);
        }
        default_action = NoAction();
    }

    table t_exact {
        key = {
            hdr.c.x: exact;
            hdr.c.o: exact;
        }
        actions = { set_exact; }
        const entries = {
            (1, 2): set_exact(0x12);
            (0x10, 0x20): set_exact(0x55);
        }
        default_action = set_exact(0x00);
        size = 64;
    }

    table t_lpm {
        key = { hdr.c.addr: lpm; }
        actions = { set_lpm; NoAction; }
        const entries = {
            32w0x0A000000 &&& 32w0xFF000000: set_lpm(8);
            32w0x0A010000 &&& 32w0xFFFF0000: set_lpm(16);
            32w0x0A010203 &&& 32w0xFFFFFFFF: set_lpm(32);
        }
        default_action = NoAction();
    }

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.c.isValid()) {
            t_range.apply();
            t_tern.apply();
            t_annot.apply();
            t_prio.apply();
            t_opt.apply();
            t_exact.apply();
            t_lpm.apply();
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
        pkt.emit(hdr.c);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
