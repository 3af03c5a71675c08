// Header validity: setValid() on an invalid header zeroes it, setValid() on a
// valid header changes nothing, setInvalid() removes a header from the output,
// header assignment copies validity and fields.  Unparsed bytes stay payload.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header a_t {
    bit<8> v1;
    bit<8> cmd;
}

header b_t {
    bit<16> w;
}

header c_t {
    bit<8> z;
}

struct headers_t {
    ethernet_t ethernet;
    a_t        a;
    b_t        b;
    c_t        c;
    a_t        a2;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_a;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition select(hdr.a.v1) {
            1: parse_b;
            default: accept;
        }
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 4;
        if (!hdr.a.isValid()) {
            return;
        }
        if (hdr.a.cmd == 1) {
            hdr.b.setValid();
        } else if (hdr.a.cmd == 2) {
            hdr.b.setInvalid();
            hdr.b.setValid();
        } else if (hdr.a.cmd == 3) {
            hdr.b.setInvalid();
        } else if (hdr.a.cmd == 4) {
            hdr.c.setValid();
            hdr.c.z = hdr.c.z + 5;
        } else if (hdr.a.cmd == 5) {
            hdr.b.setValid();
            hdr.b.w = hdr.b.w + 1;
        } else if (hdr.a.cmd == 6) {
            hdr.a2 = hdr.a;
            hdr.a2.cmd = 0x66;
        } else if (hdr.a.cmd == 7) {
            hdr.c.setValid();
            hdr.c.z = 9;
            hdr.c.setInvalid();
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
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.c);
        pkt.emit(hdr.a2);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
