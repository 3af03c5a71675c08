// Parser and header forms of P4_16 1.2.5: select on a bool expression and on serializable-enum
// labels; a state without a transition statement (it goes to reject, spec 13.5; v1model does
// not drop, ingress still runs and the header extracted in that state stays valid);
// extract<H>(_) skipping a header; a header with a struct-typed field (its fields are laid out
// in order on the wire, spec 7.2.2); a stack of header_unions filled by constant index;
// update_checksum called with named arguments in another order than declared.
// Ingress reports what the parser saw in the tag header: the packet goes to port 1 + path.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

enum bit<8> Kind {
    PAIRS = 1,
    UNIONS = 2,
    NOTRANS = 3
}

header tag_t {
    bit<8> kind;
    bit<8> flag;    // 1: skip one skip_t header before the pair header
    bit<8> path;    // written by ingress
    bit<8> err;     // parser_error == NoError ? 0 : 1 (paths 0..2)
}

header skip_t {
    bit<16> junk;
}

struct pair_t {
    bit<4>  hi;
    bit<4>  lo;
    bit<8>  mid;
}

header pair_h {
    pair_t  p;
    bit<8>  z;
    bit<16> csum;   // update_checksum over p and z
}

header a_t {
    bit<8> v;
}

header b_t {
    bit<16> w;
}

header_union u_t {
    a_t a;
    b_t b;
}

header last_t {
    bit<8> v;
}

struct headers_t {
    ethernet_t ethernet;
    tag_t tag;
    skip_t skip;
    pair_h pair;
    u_t[2] us;
    last_t last;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType == 0x1234) {
            true: parse_tag;
            false: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition select((Kind)hdr.tag.kind) {
            Kind.PAIRS: maybe_skip;
            Kind.UNIONS: parse_unions;
            Kind.NOTRANS: parse_no_transition;
            default: accept;
        }
    }
    state maybe_skip {
        transition select(hdr.tag.flag == 1) {
            true: skip_one;
            default: parse_pair;
        }
    }
    state skip_one {
        pkt.extract<skip_t>(_);
        transition parse_pair;
    }
    state parse_pair {
        pkt.extract(hdr.pair);
        transition accept;
    }
    state parse_unions {
        pkt.extract(hdr.us[0].a);
        pkt.extract(hdr.us[1].b);
        transition accept;
    }
    state parse_no_transition {
        pkt.extract(hdr.last);
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        bit<8> path = 0;
        if (hdr.pair.isValid()) {
            path = 1;
            hdr.pair.p.mid = hdr.pair.p.mid + (bit<8>)hdr.pair.p.lo;
            hdr.pair.p.hi = hdr.pair.p.lo;
        } else if (hdr.us[0].a.isValid() && hdr.us[1].b.isValid() && !hdr.us[0].b.isValid()) {
            path = 2;
            hdr.us[1].b.w = hdr.us[1].b.w + (bit<16>)hdr.us[0].a.v;
            hdr.us[0].b.setValid();     // makes us[0].a invalid: not emitted
            hdr.us[0].b.w = 0xBEEF;
        } else if (hdr.last.isValid()) {
            path = 3;
        }
        if (hdr.tag.isValid()) {
            hdr.tag.path = path;
            if (path != 3) {    // after a reject without an error, parser_error is not checked
                hdr.tag.err = standard_metadata.parser_error == error.NoError ? 8w0 : 8w1;
            }
        }
        standard_metadata.egress_spec = 1 + (bit<9>)path;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(checksum = hdr.pair.csum, algo = HashAlgorithm.csum16,
                        condition = hdr.pair.isValid(), data = { hdr.pair.p, hdr.pair.z });
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
