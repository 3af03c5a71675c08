// expect: 13:34: type argument must be a fixed-width type
// lookahead<T> of a header holding a varbit field (spec 12.8.4: T must have a fixed width)
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> len; varbit<64> opts; }
header f_t { bit<8> a; }
struct headers { f_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        h_t peek = pkt.lookahead<h_t>();
        pkt.extract(hdr.h);
        transition accept;
    }
}
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control VC(inout headers hdr, inout meta_t m) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), C(), D()) main;
