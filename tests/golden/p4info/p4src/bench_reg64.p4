/* bench_reg64.p4: a register-heavy v1model program for benchmarking.
 *
 * Each packet carries a slot index and 64 32-bit values (an in-network
 * aggregation payload, as in SwitchML/ATP).  Ingress does 64 register
 * read-add-write sequences, one per value, adding the packet's values into
 * slot `idx` of 64 register arrays and writing the running sums back into the
 * packet, which then goes to port 1.  Packets with another EtherType are
 * dropped.
 */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

const bit<16> TYPE_AGG = 0x88B5;
const bit<32> SLOTS = 1024;

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header agg_t {
    bit<32> idx;
    bit<32> v00;
    bit<32> v01;
    bit<32> v02;
    bit<32> v03;
    bit<32> v04;
    bit<32> v05;
    bit<32> v06;
    bit<32> v07;
    bit<32> v08;
    bit<32> v09;
    bit<32> v10;
    bit<32> v11;
    bit<32> v12;
    bit<32> v13;
    bit<32> v14;
    bit<32> v15;
    bit<32> v16;
    bit<32> v17;
    bit<32> v18;
    bit<32> v19;
    bit<32> v20;
    bit<32> v21;
    bit<32> v22;
    bit<32> v23;
    bit<32> v24;
    bit<32> v25;
    bit<32> v26;
    bit<32> v27;
    bit<32> v28;
    bit<32> v29;
    bit<32> v30;
    bit<32> v31;
    bit<32> v32;
    bit<32> v33;
    bit<32> v34;
    bit<32> v35;
    bit<32> v36;
    bit<32> v37;
    bit<32> v38;
    bit<32> v39;
    bit<32> v40;
    bit<32> v41;
    bit<32> v42;
    bit<32> v43;
    bit<32> v44;
    bit<32> v45;
    bit<32> v46;
    bit<32> v47;
    bit<32> v48;
    bit<32> v49;
    bit<32> v50;
    bit<32> v51;
    bit<32> v52;
    bit<32> v53;
    bit<32> v54;
    bit<32> v55;
    bit<32> v56;
    bit<32> v57;
    bit<32> v58;
    bit<32> v59;
    bit<32> v60;
    bit<32> v61;
    bit<32> v62;
    bit<32> v63;
}

struct headers_t {
    ethernet_t ethernet;
    agg_t      agg;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_AGG: parse_agg;
            default: accept;
        }
    }
    state parse_agg {
        pkt.extract(hdr.agg);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>, bit<32>>(SLOTS) agg00;
    register<bit<32>, bit<32>>(SLOTS) agg01;
    register<bit<32>, bit<32>>(SLOTS) agg02;
    register<bit<32>, bit<32>>(SLOTS) agg03;
    register<bit<32>, bit<32>>(SLOTS) agg04;
    register<bit<32>, bit<32>>(SLOTS) agg05;
    register<bit<32>, bit<32>>(SLOTS) agg06;
    register<bit<32>, bit<32>>(SLOTS) agg07;
    register<bit<32>, bit<32>>(SLOTS) agg08;
    register<bit<32>, bit<32>>(SLOTS) agg09;
    register<bit<32>, bit<32>>(SLOTS) agg10;
    register<bit<32>, bit<32>>(SLOTS) agg11;
    register<bit<32>, bit<32>>(SLOTS) agg12;
    register<bit<32>, bit<32>>(SLOTS) agg13;
    register<bit<32>, bit<32>>(SLOTS) agg14;
    register<bit<32>, bit<32>>(SLOTS) agg15;
    register<bit<32>, bit<32>>(SLOTS) agg16;
    register<bit<32>, bit<32>>(SLOTS) agg17;
    register<bit<32>, bit<32>>(SLOTS) agg18;
    register<bit<32>, bit<32>>(SLOTS) agg19;
    register<bit<32>, bit<32>>(SLOTS) agg20;
    register<bit<32>, bit<32>>(SLOTS) agg21;
    register<bit<32>, bit<32>>(SLOTS) agg22;
    register<bit<32>, bit<32>>(SLOTS) agg23;
    register<bit<32>, bit<32>>(SLOTS) agg24;
    register<bit<32>, bit<32>>(SLOTS) agg25;
    register<bit<32>, bit<32>>(SLOTS) agg26;
    register<bit<32>, bit<32>>(SLOTS) agg27;
    register<bit<32>, bit<32>>(SLOTS) agg28;
    register<bit<32>, bit<32>>(SLOTS) agg29;
    register<bit<32>, bit<32>>(SLOTS) agg30;
    register<bit<32>, bit<32>>(SLOTS) agg31;
    register<bit<32>, bit<32>>(SLOTS) agg32;
    register<bit<32>, bit<32>>(SLOTS) agg33;
    register<bit<32>, bit<32>>(SLOTS) agg34;
    register<bit<32>, bit<32>>(SLOTS) agg35;
    register<bit<32>, bit<32>>(SLOTS) agg36;
    register<bit<32>, bit<32>>(SLOTS) agg37;
    register<bit<32>, bit<32>>(SLOTS) agg38;
    register<bit<32>, bit<32>>(SLOTS) agg39;
    register<bit<32>, bit<32>>(SLOTS) agg40;
    register<bit<32>, bit<32>>(SLOTS) agg41;
    register<bit<32>, bit<32>>(SLOTS) agg42;
    register<bit<32>, bit<32>>(SLOTS) agg43;
    register<bit<32>, bit<32>>(SLOTS) agg44;
    register<bit<32>, bit<32>>(SLOTS) agg45;
    register<bit<32>, bit<32>>(SLOTS) agg46;
    register<bit<32>, bit<32>>(SLOTS) agg47;
    register<bit<32>, bit<32>>(SLOTS) agg48;
    register<bit<32>, bit<32>>(SLOTS) agg49;
    register<bit<32>, bit<32>>(SLOTS) agg50;
    register<bit<32>, bit<32>>(SLOTS) agg51;
    register<bit<32>, bit<32>>(SLOTS) agg52;
    register<bit<32>, bit<32>>(SLOTS) agg53;
    register<bit<32>, bit<32>>(SLOTS) agg54;
    register<bit<32>, bit<32>>(SLOTS) agg55;
    register<bit<32>, bit<32>>(SLOTS) agg56;
    register<bit<32>, bit<32>>(SLOTS) agg57;
    register<bit<32>, bit<32>>(SLOTS) agg58;
    register<bit<32>, bit<32>>(SLOTS) agg59;
    register<bit<32>, bit<32>>(SLOTS) agg60;
    register<bit<32>, bit<32>>(SLOTS) agg61;
    register<bit<32>, bit<32>>(SLOTS) agg62;
    register<bit<32>, bit<32>>(SLOTS) agg63;

    action aggregate() {
        bit<32> slot = hdr.agg.idx & (SLOTS - 1);
        bit<32> tmp;
        agg00.read(tmp, slot);
        tmp = tmp + hdr.agg.v00;
        agg00.write(slot, tmp);
        hdr.agg.v00 = tmp;
        agg01.read(tmp, slot);
        tmp = tmp + hdr.agg.v01;
        agg01.write(slot, tmp);
        hdr.agg.v01 = tmp;
        agg02.read(tmp, slot);
        tmp = tmp + hdr.agg.v02;
        agg02.write(slot, tmp);
        hdr.agg.v02 = tmp;
        agg03.read(tmp, slot);
        tmp = tmp + hdr.agg.v03;
        agg03.write(slot, tmp);
        hdr.agg.v03 = tmp;
        agg04.read(tmp, slot);
        tmp = tmp + hdr.agg.v04;
        agg04.write(slot, tmp);
        hdr.agg.v04 = tmp;
        agg05.read(tmp, slot);
        tmp = tmp + hdr.agg.v05;
        agg05.write(slot, tmp);
        hdr.agg.v05 = tmp;
        agg06.read(tmp, slot);
        tmp = tmp + hdr.agg.v06;
        agg06.write(slot, tmp);
        hdr.agg.v06 = tmp;
        agg07.read(tmp, slot);
        tmp = tmp + hdr.agg.v07;
        agg07.write(slot, tmp);
        hdr.agg.v07 = tmp;
        agg08.read(tmp, slot);
        tmp = tmp + hdr.agg.v08;
        agg08.write(slot, tmp);
        hdr.agg.v08 = tmp;
        agg09.read(tmp, slot);
        tmp = tmp + hdr.agg.v09;
        agg09.write(slot, tmp);
        hdr.agg.v09 = tmp;
        agg10.read(tmp, slot);
        tmp = tmp + hdr.agg.v10;
        agg10.write(slot, tmp);
        hdr.agg.v10 = tmp;
        agg11.read(tmp, slot);
        tmp = tmp + hdr.agg.v11;
        agg11.write(slot, tmp);
        hdr.agg.v11 = tmp;
        agg12.read(tmp, slot);
        tmp = tmp + hdr.agg.v12;
        agg12.write(slot, tmp);
        hdr.agg.v12 = tmp;
        agg13.read(tmp, slot);
        tmp = tmp + hdr.agg.v13;
        agg13.write(slot, tmp);
        hdr.agg.v13 = tmp;
        agg14.read(tmp, slot);
        tmp = tmp + hdr.agg.v14;
        agg14.write(slot, tmp);
        hdr.agg.v14 = tmp;
        agg15.read(tmp, slot);
        tmp = tmp + hdr.agg.v15;
        agg15.write(slot, tmp);
        hdr.agg.v15 = tmp;
        agg16.read(tmp, slot);
        tmp = tmp + hdr.agg.v16;
        agg16.write(slot, tmp);
        hdr.agg.v16 = tmp;
        agg17.read(tmp, slot);
        tmp = tmp + hdr.agg.v17;
        agg17.write(slot, tmp);
        hdr.agg.v17 = tmp;
        agg18.read(tmp, slot);
        tmp = tmp + hdr.agg.v18;
        agg18.write(slot, tmp);
        hdr.agg.v18 = tmp;
        agg19.read(tmp, slot);
        tmp = tmp + hdr.agg.v19;
        agg19.write(slot, tmp);
        hdr.agg.v19 = tmp;
        agg20.read(tmp, slot);
        tmp = tmp + hdr.agg.v20;
        agg20.write(slot, tmp);
        hdr.agg.v20 = tmp;
        agg21.read(tmp, slot);
        tmp = tmp + hdr.agg.v21;
        agg21.write(slot, tmp);
        hdr.agg.v21 = tmp;
        agg22.read(tmp, slot);
        tmp = tmp + hdr.agg.v22;
        agg22.write(slot, tmp);
        hdr.agg.v22 = tmp;
        agg23.read(tmp, slot);
        tmp = tmp + hdr.agg.v23;
        agg23.write(slot, tmp);
        hdr.agg.v23 = tmp;
        agg24.read(tmp, slot);
        tmp = tmp + hdr.agg.v24;
        agg24.write(slot, tmp);
        hdr.agg.v24 = tmp;
        agg25.read(tmp, slot);
        tmp = tmp + hdr.agg.v25;
        agg25.write(slot, tmp);
        hdr.agg.v25 = tmp;
        agg26.read(tmp, slot);
        tmp = tmp + hdr.agg.v26;
        agg26.write(slot, tmp);
        hdr.agg.v26 = tmp;
        agg27.read(tmp, slot);
        tmp = tmp + hdr.agg.v27;
        agg27.write(slot, tmp);
        hdr.agg.v27 = tmp;
        agg28.read(tmp, slot);
        tmp = tmp + hdr.agg.v28;
        agg28.write(slot, tmp);
        hdr.agg.v28 = tmp;
        agg29.read(tmp, slot);
        tmp = tmp + hdr.agg.v29;
        agg29.write(slot, tmp);
        hdr.agg.v29 = tmp;
        agg30.read(tmp, slot);
        tmp = tmp + hdr.agg.v30;
        agg30.write(slot, tmp);
        hdr.agg.v30 = tmp;
        agg31.read(tmp, slot);
        tmp = tmp + hdr.agg.v31;
        agg31.write(slot, tmp);
        hdr.agg.v31 = tmp;
        agg32.read(tmp, slot);
        tmp = tmp + hdr.agg.v32;
        agg32.write(slot, tmp);
        hdr.agg.v32 = tmp;
        agg33.read(tmp, slot);
        tmp = tmp + hdr.agg.v33;
        agg33.write(slot, tmp);
        hdr.agg.v33 = tmp;
        agg34.read(tmp, slot);
        tmp = tmp + hdr.agg.v34;
        agg34.write(slot, tmp);
        hdr.agg.v34 = tmp;
        agg35.read(tmp, slot);
        tmp = tmp + hdr.agg.v35;
        agg35.write(slot, tmp);
        hdr.agg.v35 = tmp;
        agg36.read(tmp, slot);
        tmp = tmp + hdr.agg.v36;
        agg36.write(slot, tmp);
        hdr.agg.v36 = tmp;
        agg37.read(tmp, slot);
        tmp = tmp + hdr.agg.v37;
        agg37.write(slot, tmp);
        hdr.agg.v37 = tmp;
        agg38.read(tmp, slot);
        tmp = tmp + hdr.agg.v38;
        agg38.write(slot, tmp);
        hdr.agg.v38 = tmp;
        agg39.read(tmp, slot);
        tmp = tmp + hdr.agg.v39;
        agg39.write(slot, tmp);
        hdr.agg.v39 = tmp;
        agg40.read(tmp, slot);
        tmp = tmp + hdr.agg.v40;
        agg40.write(slot, tmp);
        hdr.agg.v40 = tmp;
        agg41.read(tmp, slot);
        tmp = tmp + hdr.agg.v41;
        agg41.write(slot, tmp);
        hdr.agg.v41 = tmp;
        agg42.read(tmp, slot);
        tmp = tmp + hdr.agg.v42;
        agg42.write(slot, tmp);
        hdr.agg.v42 = tmp;
        agg43.read(tmp, slot);
        tmp = tmp + hdr.agg.v43;
        agg43.write(slot, tmp);
        hdr.agg.v43 = tmp;
        agg44.read(tmp, slot);
        tmp = tmp + hdr.agg.v44;
        agg44.write(slot, tmp);
        hdr.agg.v44 = tmp;
        agg45.read(tmp, slot);
        tmp = tmp + hdr.agg.v45;
        agg45.write(slot, tmp);
        hdr.agg.v45 = tmp;
        agg46.read(tmp, slot);
        tmp = tmp + hdr.agg.v46;
        agg46.write(slot, tmp);
        hdr.agg.v46 = tmp;
        agg47.read(tmp, slot);
        tmp = tmp + hdr.agg.v47;
        agg47.write(slot, tmp);
        hdr.agg.v47 = tmp;
        agg48.read(tmp, slot);
        tmp = tmp + hdr.agg.v48;
        agg48.write(slot, tmp);
        hdr.agg.v48 = tmp;
        agg49.read(tmp, slot);
        tmp = tmp + hdr.agg.v49;
        agg49.write(slot, tmp);
        hdr.agg.v49 = tmp;
        agg50.read(tmp, slot);
        tmp = tmp + hdr.agg.v50;
        agg50.write(slot, tmp);
        hdr.agg.v50 = tmp;
        agg51.read(tmp, slot);
        tmp = tmp + hdr.agg.v51;
        agg51.write(slot, tmp);
        hdr.agg.v51 = tmp;
        agg52.read(tmp, slot);
        tmp = tmp + hdr.agg.v52;
        agg52.write(slot, tmp);
        hdr.agg.v52 = tmp;
        agg53.read(tmp, slot);
        tmp = tmp + hdr.agg.v53;
        agg53.write(slot, tmp);
        hdr.agg.v53 = tmp;
        agg54.read(tmp, slot);
        tmp = tmp + hdr.agg.v54;
        agg54.write(slot, tmp);
        hdr.agg.v54 = tmp;
        agg55.read(tmp, slot);
        tmp = tmp + hdr.agg.v55;
        agg55.write(slot, tmp);
        hdr.agg.v55 = tmp;
        agg56.read(tmp, slot);
        tmp = tmp + hdr.agg.v56;
        agg56.write(slot, tmp);
        hdr.agg.v56 = tmp;
        agg57.read(tmp, slot);
        tmp = tmp + hdr.agg.v57;
        agg57.write(slot, tmp);
        hdr.agg.v57 = tmp;
        agg58.read(tmp, slot);
        tmp = tmp + hdr.agg.v58;
        agg58.write(slot, tmp);
        hdr.agg.v58 = tmp;
        agg59.read(tmp, slot);
        tmp = tmp + hdr.agg.v59;
        agg59.write(slot, tmp);
        hdr.agg.v59 = tmp;
        agg60.read(tmp, slot);
        tmp = tmp + hdr.agg.v60;
        agg60.write(slot, tmp);
        hdr.agg.v60 = tmp;
        agg61.read(tmp, slot);
        tmp = tmp + hdr.agg.v61;
        agg61.write(slot, tmp);
        hdr.agg.v61 = tmp;
        agg62.read(tmp, slot);
        tmp = tmp + hdr.agg.v62;
        agg62.write(slot, tmp);
        hdr.agg.v62 = tmp;
        agg63.read(tmp, slot);
        tmp = tmp + hdr.agg.v63;
        agg63.write(slot, tmp);
        hdr.agg.v63 = tmp;
    }

    apply {
        if (hdr.agg.isValid()) {
            aggregate();
            standard_metadata.egress_spec = 1;
        } else {
            mark_to_drop(standard_metadata);
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
        pkt.emit(hdr.agg);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
