#include <core.p4>
#include <v1model.p4>
// digest, random (range of one value), assert/assume(true), hash with crc32 & identity,
// counter/meter/register in one program
header h_t { bit<8> a; bit<8> r; bit<32> c; bit<16> id; }
struct H { h_t h; }
struct D_t { bit<8> a; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    counter(4, CounterType.packets_and_bytes) cnt;
    register<bit<8>>(4) reg;
    apply {
        sm.egress_spec = 0;
        digest<D_t>(1, { h.h.a });
        random(h.h.r, 8w7, 8w7);
        assert(h.h.a == h.h.a);
        assume(true);
        hash(h.h.c, HashAlgorithm.crc32, 32w0, { h.h.a }, 64w4294967296);
        hash(h.h.id, HashAlgorithm.identity, 16w0, { h.h.a }, 32w65536);
        cnt.count(1);
        reg.write(2, h.h.a);
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
