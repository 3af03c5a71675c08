#include <core.p4>
#include <v1model.p4>
// Deprecated v1model forms resubmit(data) / recirculate(data) / clone3(type, session, data):
// p4c turns the data argument ({meta.m}, a list of metadata fields) into a field list,
// so exactly those fields keep their values in the resubmitted / recirculated / cloned
// packet (here a pass counter).  Resubmit 3 times, then send to port 1 with the count.
// Embedded target only: p4c 1.2.4.8's BMv2 back end no longer knows these forms
// ("resubmit: unknown extern function"; use resubmit_preserving_field_list), and the
// target reports them unless --allow-target-extensions.
header h_t { bit<8> count; bit<8> other; }
struct mm_t { bit<8> n; }
struct H { h_t h; }
struct M { mm_t m; bit<8> other; }
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        h.h.count = m.m.n;
        h.h.other = m.other;
        if (m.m.n < 3) {
            m.m.n = m.m.n + 1;
            m.other = 0x77;
            resubmit({ m.m });
        }
    }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
