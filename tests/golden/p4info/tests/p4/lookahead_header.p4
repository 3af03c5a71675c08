// Selecting on fields of a header read with lookahead<H>() before extracting
// it (the pattern of the p4lang tutorials' calc exercise); lookahead does not
// consume bits.
#include <core.p4>
#include <v1model.p4>

const bit<8> P_CHAR = 0x50;   // 'P'
const bit<8> FOUR_CHAR = 0x34; // '4'
const bit<8> VER = 0x01;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header calc_t {
    bit<8>  p;
    bit<8>  four;
    bit<8>  ver;
    bit<8>  op;
    bit<32> a;
    bit<32> b;
    bit<32> res;
}

struct headers_t {
    ethernet_t ethernet;
    calc_t     calc;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: check_calc;
            default: accept;
        }
    }
    state check_calc {
        transition select(pkt.lookahead<calc_t>().p,
                          pkt.lookahead<calc_t>().four,
                          pkt.lookahead<calc_t>().ver) {
            (P_CHAR, FOUR_CHAR, VER): parse_calc;
            default: accept;
        }
    }
    state parse_calc {
        pkt.extract(hdr.calc);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action answer(bit<32> r) {
        hdr.calc.res = r;
        bit<48> tmp = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = tmp;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }
    action op_add() { answer(hdr.calc.a + hdr.calc.b); }
    action op_sub() { answer(hdr.calc.a - hdr.calc.b); }
    action op_and() { answer(hdr.calc.a & hdr.calc.b); }
    action op_drop() { mark_to_drop(standard_metadata); }
    table calculate {
        key = { hdr.calc.op: exact; }
        actions = { op_add; op_sub; op_and; op_drop; }
        const default_action = op_drop();
        const entries = {
            0x2b: op_add();
            0x2d: op_sub();
            0x26: op_and();
        }
    }
    apply {
        if (hdr.calc.isValid()) {
            calculate.apply();
        } else {
            standard_metadata.egress_spec = 9;
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
        pkt.emit(hdr.calc);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
