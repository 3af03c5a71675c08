// if/else, switch on a value with fall-through label groups and default,
// switch on table.apply().action_run with a label group, exit (also inside an
// action: ends ingress, egress still runs) and return.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}


header cf_t {
    bit<8> sel;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

struct headers_t {
    ethernet_t ethernet;
    cf_t cf;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_cf;
            default: accept;
        }
    }
    state parse_cf {
        pkt.extract(hdr.cf);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action a1() { hdr.cf.r2 = 1; }
    action a2() { hdr.cf.r2 = 2; }
    action a3() { hdr.cf.r2 = 3; exit; }
    table t {
        key = { hdr.cf.sel: exact; }
        actions = { a1; a2; a3; NoAction; }
        const entries = {
            1: a1();
            2: a2();
            3: a3();
        }
        default_action = NoAction();
    }
    apply {
        standard_metadata.egress_spec = 1;
        if (!hdr.cf.isValid()) {
            exit;
        }
        switch (hdr.cf.sel) {
            0:
            1: { hdr.cf.r1 = 0x01; }
            2:
            3:
            4: { hdr.cf.r1 = 0x34; }
            8w10: { hdr.cf.r1 = 0x0A; }
            default: { hdr.cf.r1 = 0xFF; }
        }
        switch (t.apply().action_run) {
            a1: { hdr.cf.r3 = 0xA1; }
            a2:
            NoAction: { hdr.cf.r3 = 0xB0; }
        }
        if (hdr.cf.sel == 5) {
            standard_metadata.egress_spec = 2;
            exit;
        } else if (hdr.cf.sel == 6) {
            return;
        }
        hdr.cf.r1 = hdr.cf.r1 + 1;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.cf.isValid()) {
            hdr.cf.r4 = hdr.cf.r4 + 0x11;
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.cf);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
