// Compound assignment (P4_16 spec 1.2.5, 11.1: "a op= b" is "a = a op b", a evaluated once)
// with every operator p4c accepts on bit<W> (+= -= *= &= |= ^= <<= >>= |+|= |-|=), on a
// local, on a header field and on an array element; arrays of values (bit<8>[4] indexed at
// run time, an array of structs): reads, writes, copies (value semantics), .size; a sum over
// the array through a run-time index updated with +=.  Results go into the ops header, the
// packet to port 1.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ops_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  s;      // shift amount
    bit<8>  idx;    // array index (low 2 bits used)
    bit<8>  r_add;
    bit<8>  r_sub;
    bit<8>  r_mul;
    bit<8>  r_and;
    bit<8>  r_or;
    bit<8>  r_xor;
    bit<8>  r_shl;
    bit<8>  r_shr;
    bit<8>  r_sadd;
    bit<8>  r_ssub;
    bit<16> acc;    // header field updated in place: acc += a; acc <<= 1
    bit<8>  arr_at;     // arr[idx] before the update
    bit<8>  arr_upd;    // arr[idx] after arr[idx] |+|= 200
    bit<8>  arr_copy0;  // arr[0] after its copy was changed (unchanged: value semantics)
    bit<8>  arr_size;
    bit<8>  pair_lo;    // via an array of structs
    bit<8>  loop_sum;   // sum of arr[] through a run-time index k += 1
}

struct pair_t {
    bit<8> lo;
    bit<8> hi;
}

struct headers_t {
    ethernet_t ethernet;
    ops_t ops;
}

struct metadata_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_ops;
            default: accept;
        }
    }
    state parse_ops {
        pkt.extract(hdr.ops);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    bit<8>[4] arr;

    apply {
        standard_metadata.egress_spec = 1;
        if (hdr.ops.isValid()) {
            bit<8> a = hdr.ops.a;
            bit<8> b = hdr.ops.b;
            bit<8> x;
            x = a; x += b;   hdr.ops.r_add = x;
            x = a; x -= b;   hdr.ops.r_sub = x;
            x = a; x *= b;   hdr.ops.r_mul = x;
            x = a; x &= b;   hdr.ops.r_and = x;
            x = a; x |= b;   hdr.ops.r_or = x;
            x = a; x ^= b;   hdr.ops.r_xor = x;
            x = a; x <<= hdr.ops.s; hdr.ops.r_shl = x;
            x = a; x >>= hdr.ops.s; hdr.ops.r_shr = x;
            x = a; x |+|= b; hdr.ops.r_sadd = x;
            x = a; x |-|= b; hdr.ops.r_ssub = x;
            hdr.ops.acc += (bit<16>)a;
            hdr.ops.acc <<= 1;

            arr[0] = a;
            arr[1] = b;
            arr[2] = hdr.ops.s;
            arr[3] = 0x10;
            bit<2> i = hdr.ops.idx[1:0];
            hdr.ops.arr_at = arr[i];
            arr[i] |+|= 200;
            hdr.ops.arr_upd = arr[i];
            bit<8>[4] copy = arr;
            copy[0] = 0xEE;
            hdr.ops.arr_copy0 = arr[0];
            hdr.ops.arr_size = (bit<8>)arr.size;

            pair_t[2] ps;
            ps[1].lo = a ^ 0xFF;
            ps[1].hi = b;
            ps[0] = ps[1];
            ps[1].lo = 0;
            hdr.ops.pair_lo = ps[0].lo;

            bit<8> sum = 0;
            bit<2> k = 0;
            sum += arr[k]; k += 1;
            sum += arr[k]; k += 1;
            sum += arr[k]; k += 1;
            sum += arr[k];
            hdr.ops.loop_sum = sum;
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
        pkt.emit(hdr.ops);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
