/* router_cpu.p4: an IPv4 LPM router with a CPU port, an ACL with a direct
 * counter, a per-port counter, a register, flooding and a learning digest,
 * for the P4Runtime server and switch-process tests (written for this project).
 *
 * - from the CPU port (CPU_PORT): packet_out{egress_port, _pad} precedes the
 *   frame; the rest leaves unchanged on egress_port;
 * - every other frame with a whole Ethernet header is counted per ingress port
 *   in port_counter (ports 0..15);
 * - EtherType 0x88B5: to the CPU, with packet_in{ingress_port, _pad} in front;
 * - EtherType 0x88B6: a learn_t{srcAddr, ingress_port} digest, then dropped;
 * - ARP or a broadcast destination MAC: multicast group 1; egress drops the
 *   replica that would go back out of the ingress port;
 * - IPv4: last_ttl[ingress_port] = ttl; the acl table is applied (it only
 *   counts and marks); ipv4_lpm picks the next hop; ipv4_forward rewrites the
 *   MACs, decrements the TTL (the checksum is recomputed) and forwards, unless
 *   the TTL was already 0 or 1; any other outcome drops;
 * - anything else (or a frame the parser could not read) is dropped.
 */
#include <core.p4>
#include <v1model.p4>

const bit<9>  CPU_PORT        = 64;
const bit<16> TYPE_IPV4       = 0x0800;
const bit<16> TYPE_ARP        = 0x0806;
const bit<16> TYPE_TO_CPU     = 0x88B5;
const bit<16> TYPE_LEARN      = 0x88B6;
const bit<16> FLOOD_GROUP     = 1;
const bit<48> BROADCAST_MAC   = 0xFFFFFFFFFFFF;

typedef bit<9>  egressSpec_t;
typedef bit<48> macAddr_t;
typedef bit<32> ip4Addr_t;

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

header ipv4_t {
    bit<4>    version;
    bit<4>    ihl;
    bit<8>    diffserv;
    bit<16>   totalLen;
    bit<16>   identification;
    bit<3>    flags;
    bit<13>   fragOffset;
    bit<8>    ttl;
    bit<8>    protocol;
    bit<16>   hdrChecksum;
    ip4Addr_t srcAddr;
    ip4Addr_t dstAddr;
}

struct learn_t {
    macAddr_t srcAddr;
    bit<9>    ingress_port;
}

struct metadata {
    learn_t learn;
    bit<9>  ingress_port;   // kept for egress: replicas never go back out of it
    bit<1>  flooded;
    bit<1>  routed;         // the TTL was decremented: recompute the checksum
    bit<8>  mark;
}

struct headers {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
}

parser MyParser(packet_in packet,
                out headers hdr,
                inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition accept;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr,
                  inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter(16, CounterType.packets_and_bytes) port_counter;
    register<bit<8>>(16) last_ttl;
    direct_counter(CounterType.packets_and_bytes) acl_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(macAddr_t dstAddr, egressSpec_t port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.routed = 1;
    }

    action set_mark(bit<8> mark) {
        meta.mark = mark;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
            NoAction;
        }
        size = 1024;
        default_action = drop();
    }

    table acl {
        key = {
            hdr.ipv4.srcAddr:  ternary;
            hdr.ipv4.protocol: exact;
        }
        actions = {
            set_mark;
            @defaultonly NoAction;
        }
        counters = acl_counter;
        size = 64;
        default_action = NoAction();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            // from the controller: out of the port it names, nothing else
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else if (!hdr.ethernet.isValid()) {
            drop();                                   // shorter than an Ethernet header
        } else {
            meta.ingress_port = standard_metadata.ingress_port;
            if (standard_metadata.ingress_port < 16) {
                port_counter.count((bit<32>) standard_metadata.ingress_port);
            }
            if (hdr.ethernet.etherType == TYPE_TO_CPU) {
                standard_metadata.egress_spec = CPU_PORT;
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = standard_metadata.ingress_port;
                hdr.packet_in._pad = 0;
            } else if (hdr.ethernet.etherType == TYPE_LEARN) {
                meta.learn.srcAddr = hdr.ethernet.srcAddr;
                meta.learn.ingress_port = standard_metadata.ingress_port;
                digest<learn_t>(1, meta.learn);
                drop();
            } else if (hdr.ethernet.etherType == TYPE_ARP || hdr.ethernet.dstAddr == BROADCAST_MAC) {
                standard_metadata.mcast_grp = FLOOD_GROUP;
                meta.flooded = 1;
            } else if (hdr.ipv4.isValid()) {
                bit<8> ttl = hdr.ipv4.ttl;
                if (standard_metadata.ingress_port < 16) {
                    last_ttl.write((bit<32>) standard_metadata.ingress_port, ttl);
                }
                acl.apply();
                switch (ipv4_lpm.apply().action_run) {
                    ipv4_forward: {
                        if (ttl <= 1) {
                            meta.routed = 0;
                            drop();
                        }
                    }
                    default: {
                        drop();                       // drop, or a NoAction entry
                    }
                }
            } else {
                drop();                               // not IPv4, or a truncated IPv4 header
            }
        }
    }
}

control MyEgress(inout headers hdr,
                 inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.flooded == 1 && standard_metadata.egress_port == meta.ingress_port) {
            mark_to_drop(standard_metadata);
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid() && meta.routed == 1,
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.diffserv,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
