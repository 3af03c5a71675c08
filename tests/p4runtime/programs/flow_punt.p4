// A flow cache in the style of p4lang/tutorials' flowcache exercise (written for saatp's
// tests): a miss on `flows` sends an I2E clone to the CPU port, keeping the metadata named by
// the field list FL_TO_CPU (a named constant), and drops the original; the egress pipeline
// writes that metadata into the packet_in header.  Entries of `flows` may have idle timeouts.
// A packet from the CPU port carries a packet_out header naming the port to send it to.
#include <core.p4>
#include <v1model.p4>

typedef bit<9> PortId_t;            // clashes with v1model's PortId_t unless V1MODEL_VERSION < 20200408

const bit<16> ETH_IPV4 = 0x0800;
const bit<32> CLONE_TO_CPU = 57;
const bit<8> FL_TO_CPU = 2;         // the field list the clone keeps
const int FL_UNUSED = 5;            // a field list nobody clones with
#define CPU_PORT 192

enum bit<8> Reason_t {
    NEW_FLOW = 3,
    BAD_OPCODE = 4
}

@controller_header("packet_out")
header to_switch_h {
    bit<16> port;
    bit<16> reserved;
}

@controller_header("packet_in")
header to_cpu_h {
    bit<16>  in_port;
    Reason_t reason;
    bit<8>   not_kept;
}

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header ipv4_h {
    bit<8>  ver_ihl;
    bit<8>  tos;
    bit<16> len;
    bit<32> id_frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    to_cpu_h    to_cpu;
    to_switch_h to_switch;
    ethernet_h  eth;
    ipv4_h      ipv4;
}

struct meta_t {
    @field_list(FL_TO_CPU) PortId_t in_port;
    @field_list(FL_TO_CPU) Reason_t reason;
    @field_list(FL_UNUSED) bit<8>   not_kept;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: from_cpu;
            default: eth;
        }
    }
    state from_cpu {
        pkt.extract(hdr.to_switch);
        transition accept;
    }
    state eth {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            ETH_IPV4: ipv4;
            default: accept;
        }
    }
    state ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control NoCheck(inout headers_t hdr, inout meta_t meta) { apply { } }

control Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action forward(PortId_t port) {
        sm.egress_spec = port;
    }
    action punt_new_flow() {
        clone_preserving_field_list(CloneType.I2E, CLONE_TO_CPU, FL_TO_CPU);
        meta.in_port = sm.ingress_port;
        meta.reason = Reason_t.NEW_FLOW;
        meta.not_kept = 0xAB;
        mark_to_drop(sm);
    }
    table flows {
        key = {
            hdr.ipv4.src : exact;
            hdr.ipv4.dst : exact;
        }
        actions = { forward; punt_new_flow; }
        default_action = punt_new_flow();
        support_timeout = true;
        size = 1024;
    }
    apply {
        if (hdr.to_switch.isValid()) {
            sm.egress_spec = (PortId_t) hdr.to_switch.port;
            hdr.to_switch.setInvalid();
        } else if (hdr.ipv4.isValid()) {
            flows.apply();
        } else {
            mark_to_drop(sm);
        }
    }
}

control Egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.to_cpu.setValid();
            hdr.to_cpu.in_port = (bit<16>) meta.in_port;
            hdr.to_cpu.reason = meta.reason;
            hdr.to_cpu.not_kept = meta.not_kept;
        }
    }
}

control Deparse(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.to_cpu);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(P(), NoCheck(), Ingress(), Egress(), NoCheck(), Deparse()) main;
