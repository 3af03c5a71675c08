// Header stacks in the parser: .next, .last, .lastIndex in a loop; overflowing
// the stack is error.StackOutOfBounds, which does not drop the packet: ingress
// sees standard_metadata.parser_error and the unparsed bytes stay payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header label_t {
    bit<7> val;
    bit<1> bos;
}

header tail_t {
    bit<8> count;
    bit<8> lastval;
    bit<8> sum;
}

struct headers_t {
    ethernet_t ethernet;
    label_t[4] labels;
    tail_t     tail;
}

struct metadata_t {
    bit<8> last_index;
    bit<8> last_val;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x8847: parse_label;
            default: accept;
        }
    }
    state parse_label {
        pkt.extract(hdr.labels.next);
        transition select(hdr.labels.last.bos) {
            1: parse_tail;
            default: parse_label;
        }
    }
    state parse_tail {
        meta.last_index = (bit<8>)hdr.labels.lastIndex;
        meta.last_val = (bit<8>)hdr.labels.last.val;
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error == error.StackOutOfBounds) {
            standard_metadata.egress_spec = 2;
            hdr.labels[0].val = 0x7F;
            return;
        }
        standard_metadata.egress_spec = 1;
        if (hdr.tail.isValid()) {
            hdr.tail.count = meta.last_index + 1;
            hdr.tail.lastval = meta.last_val;
            bit<8> sum = 0;
            if (hdr.labels[0].isValid()) { sum = sum + (bit<8>)hdr.labels[0].val; }
            if (hdr.labels[1].isValid()) { sum = sum + (bit<8>)hdr.labels[1].val; }
            if (hdr.labels[2].isValid()) { sum = sum + (bit<8>)hdr.labels[2].val; }
            if (hdr.labels[3].isValid()) { sum = sum + (bit<8>)hdr.labels[3].val; }
            hdr.tail.sum = sum;
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
        pkt.emit(hdr.labels);
        pkt.emit(hdr.tail);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
