#include <core.p4>
#include <v1model.p4>
// parser: extracting past the end of a header stack gives parser_error StackOutOfBounds
// (the stack keeps the elements extracted so far, the rest stays payload); select on
// lookahead<bit<8>>
header t_t { bit<8> t; }
header e_t { bit<8> v; }
header r_t { bit<8> err; bit<8> n; }
struct H { t_t t; e_t[2] s; r_t r; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.t);
        transition select(h.t.t) { 0xEE: loop; default: peek; }
    }
    state peek {
        transition select(p.lookahead<bit<8>>()) { 0x55: loop; default: accept; }
    }
    state loop { p.extract(h.s.next); transition loop; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 0;
        h.r.setValid();
        h.r.err = (sm.parser_error == error.StackOutOfBounds) ? 8w3 :
                  (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        h.r.n = (bit<8>)(h.s[0].isValid() ? 1w1 : 1w0) + (bit<8>)(h.s[1].isValid() ? 1w1 : 1w0);
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
