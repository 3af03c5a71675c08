/* ecn_queue.p4: ECN marking on egress queue depth, in the manner of the p4lang tutorials'
 * ecn exercise (written for this project's tests).
 *
 * Ingress sends what arrives on ports 1..3 to port 4 and what arrives on port 4 to port 1,
 * and takes the queue priority from the top three DSCP bits.  Egress marks ECN-capable
 * packets (ECN 1 or 2) Congestion Experienced (3) when the queue held ECN_THRESHOLD or more
 * packets as they were queued, writes enq_qdepth into the IPv4 identification field and
 * records deq_timedelta and deq_qdepth in registers.
 */
#include <core.p4>
#include <v1model.p4>

const bit<19> ECN_THRESHOLD = 10;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
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

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.ingress_port == 4) {
            standard_metadata.egress_spec = 1;
        } else {
            standard_metadata.egress_spec = 4;
        }
        if (hdr.ipv4.isValid()) {
            standard_metadata.priority = hdr.ipv4.dscp[5:3];
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1) last_deq_timedelta;
    register<bit<32>>(1) last_deq_qdepth;
    apply {
        last_deq_timedelta.write(0, standard_metadata.deq_timedelta);
        last_deq_qdepth.write(0, (bit<32>) standard_metadata.deq_qdepth);
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.identification = (bit<16>) standard_metadata.enq_qdepth;
            if ((hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2) &&
                standard_metadata.enq_qdepth >= ECN_THRESHOLD) {
                hdr.ipv4.ecn = 3;
            }
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
