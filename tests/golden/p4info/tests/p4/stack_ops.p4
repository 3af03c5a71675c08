// Header stacks in controls: push_front, pop_front, constant indexing, element
// assignment, setValid/setInvalid on elements, .size; emit skips invalid elements.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ctl_t {
    bit<8> op;
    bit<8> info;
}

header elem_t {
    bit<7> v;
    bit<1> more;
}

struct headers_t {
    ethernet_t ethernet;
    ctl_t      ctl;
    elem_t[4]  st;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_ctl;
            default: accept;
        }
    }
    state parse_ctl {
        pkt.extract(hdr.ctl);
        transition parse_elem;
    }
    state parse_elem {
        pkt.extract(hdr.st.next);
        transition select(hdr.st.last.more) {
            1: parse_elem;
            0: accept;
        }
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action count_valid() {
        bit<8> n = 0;
        if (hdr.st[0].isValid()) { n = n + 1; }
        if (hdr.st[1].isValid()) { n = n + 1; }
        if (hdr.st[2].isValid()) { n = n + 1; }
        if (hdr.st[3].isValid()) { n = n + 1; }
        hdr.ctl.info = ((bit<8>)hdr.st.size << 4) | n;
    }
    apply {
        standard_metadata.egress_spec = 1;
        if (!hdr.ctl.isValid()) {
            return;
        }
        if (hdr.ctl.op == 1) {
            hdr.st.push_front(1);
            hdr.st[0].setValid();
            hdr.st[0].v = 0x55;
            hdr.st[0].more = 1;
        } else if (hdr.ctl.op == 2) {
            hdr.st.pop_front(1);
        } else if (hdr.ctl.op == 3) {
            hdr.st[2] = hdr.st[0];
        } else if (hdr.ctl.op == 4) {
            count_valid();
        } else if (hdr.ctl.op == 5) {
            hdr.st.push_front(2);
            hdr.st.pop_front(1);
            count_valid();
        } else if (hdr.ctl.op == 6) {
            hdr.st[1].setInvalid();
            count_valid();
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
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.st);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
