// Parser-local variables and arithmetic in parser states: a counted loop over
// a header stack, select on a parser variable and on a signed int<8> field.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header cnt_t {
    bit<8> n;
    int<8> sgn;
}

header item_t {
    bit<8> v;
}

header res_t {
    bit<8> sum;
    bit<8> neg;
}

struct headers_t {
    ethernet_t ethernet;
    cnt_t      cnt;
    item_t[5]  items;
    res_t      res;
}

struct metadata_t {
    bit<8> sum;
    bit<8> neg;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    bit<8> remaining;

    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_cnt;
            default: accept;
        }
    }
    state parse_cnt {
        pkt.extract(hdr.cnt);
        remaining = hdr.cnt.n;
        transition select(hdr.cnt.sgn) {
            -1: negative;
            default: loop;
        }
    }
    state negative {
        meta.neg = 1;
        transition loop;
    }
    state loop {
        transition select(remaining) {
            0: done;
            default: parse_item;
        }
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        remaining = remaining - 1;
        meta.sum = meta.sum + hdr.items.last.v;
        transition loop;
    }
    state done {
        pkt.extract(hdr.res);
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
        if (standard_metadata.parser_error == error.StackOutOfBounds) {
            standard_metadata.egress_spec = 2;
        }
        if (hdr.res.isValid()) {
            hdr.res.sum = meta.sum;
            hdr.res.neg = meta.neg;
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
        pkt.emit(hdr.cnt);
        pkt.emit(hdr.items);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
