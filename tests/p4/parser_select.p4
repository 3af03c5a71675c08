// select on tuples with exact values, masks (&&&), ranges (..), `_` and `default`;
// first match wins. When no case matches, P4_16 says the parser rejects with
// error.NoMatch, but BMv2 1.15.5 with p4c 1.2.4.8 accepts: parsing ends there and
// parser_error stays NoError (the real BMv2 sent those packets to port 1, not 2), so the
// NoMatch branch in ingress is never taken on BMv2 nor on the embedded target.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header sel_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
}

header res_t {
    bit<8> path;
    bit<8> cpath;
}

struct headers_t {
    ethernet_t ethernet;
    sel_t      sel;
    res_t      res;
}

struct metadata_t {
    bit<8> path;
    bit<8> cpath;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_sel;
            default: accept;
        }
    }
    state parse_sel {
        pkt.extract(hdr.sel);
        transition select(hdr.sel.a, hdr.sel.b) {
            (0x01, 0x02): s1;
            (0x10 &&& 0xF0, _): s2;
            (0x20 .. 0x2F, 0x00 .. 0x7F): s3;
            (_, 0xFF): s4;
            (0x30, default): s5;
        }
    }
    state s1 { meta.path = 1; transition parse_c; }
    state s2 { meta.path = 2; transition parse_c; }
    state s3 { meta.path = 3; transition parse_c; }
    state s4 { meta.path = 4; transition parse_c; }
    state s5 { meta.path = 5; transition parse_c; }
    state parse_c {
        transition select(hdr.sel.c) {
            0x0800 &&& 0xFF00: c_a;
            16w0x1000 .. 16w0x1FFF: c_b;
            0x2000: c_c;
            default: c_d;
        }
    }
    state c_a { meta.cpath = 0xA; transition parse_res; }
    state c_b { meta.cpath = 0xB; transition parse_res; }
    state c_c { meta.cpath = 0xC; transition parse_res; }
    state c_d { meta.cpath = 0xD; transition parse_res; }
    state parse_res {
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
        if (standard_metadata.parser_error == error.NoMatch) {
            standard_metadata.egress_spec = 2;
            hdr.sel.c = 0xEEEE;
        } else if (standard_metadata.parser_error == error.NoError) {
            standard_metadata.egress_spec = 1;
            if (hdr.res.isValid()) {
                hdr.res.path = meta.path;
                hdr.res.cpath = meta.cpath;
            }
        } else {
            standard_metadata.egress_spec = 3;
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
        pkt.emit(hdr.sel);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
