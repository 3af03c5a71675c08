#include <core.p4>
#include <v1model.p4>
// The deprecated v1model extern Checksum16 (p4c's sample issue270-bmv2 uses it): get(data) is
// the 16-bit ones' complement checksum (RFC 1071) of the data's fields concatenated, an odd
// byte count padded with a zero byte. Expected values computed with a separate RFC 1071 sum.
// Embedded target only: p4c 1.2.4.8's BMv2 back end has no conversion for Checksum16
// ("Checksum16: unknown extern instance"; simpleSwitch.cpp registers none), and so does the
// embedded target report it unless --allow-target-extensions.
header h_t { bit<16> a; bit<16> b; bit<8> z; bit<16> c1; bit<16> c2; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    Checksum16() ck;
    apply {
        hdr.h.c1 = ck.get({ hdr.h.a, hdr.h.b });
        hdr.h.c2 = ck.get({ hdr.h.a, hdr.h.z });
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
