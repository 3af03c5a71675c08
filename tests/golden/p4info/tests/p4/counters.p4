// Indexed counters and a direct counter.  A direct counter counts every hit of
// its table, whether or not the action calls count().  count() with an index
// out of range does nothing.  Byte counts use the length of the packet as it
// was received, also in egress after the packet grew.  (Values are checked
// through the control-plane API by tests/test_p4_corpus.py.)
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header c_t {
    bit<8> idx;
}

header extra_t {
    bit<16> v;
}

struct headers_t {
    ethernet_t ethernet;
    c_t        c;
    extra_t    extra;
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
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    counter<bit<32>>(8, CounterType.packets_and_bytes) idx_counter;
    counter<bit<32>>(4, CounterType.packets) small_counter;

    action fwd(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action fwd_counted(bit<9> port) {
        standard_metadata.egress_spec = port;
        fwd_counter.count();
    }
    table fwd_table {
        key = { hdr.ethernet.etherType: exact; }
        actions = { fwd; fwd_counted; NoAction; }
        default_action = NoAction();
        counters = fwd_counter;
    }

    apply {
        standard_metadata.egress_spec = 1;
        fwd_table.apply();
        if (hdr.c.isValid()) {
            idx_counter.count((bit<32>)hdr.c.idx);
            small_counter.count((bit<32>)hdr.c.idx);
            if (hdr.c.idx == 3) {
                hdr.extra.setValid();
                hdr.extra.v = 0xABCD;
            }
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    counter<bit<32>>(2, CounterType.bytes) egress_bytes;
    apply {
        egress_bytes.count(1);
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.c);
        pkt.emit(hdr.extra);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
