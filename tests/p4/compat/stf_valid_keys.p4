#include <core.p4>
#include <v1model.p4>
// Table keys on header validity, named as p4c's P4_14 converter names them
// (@name("data.$valid$")), and the STF spellings p4c's runner (bmv2stf.py,
// TableKeyInstance.set) accepts for them: "data" (tries data.$valid$), "data.$valid"
// (tries data.$valid$) and "data2.valid" (as data2.$valid$).  data2 is parsed only when the
// top bit of data.f2 is set.
header data_t { bit<32> f1; bit<32> f2; bit<8> b1; bit<8> b2; }
struct H { data_t data; data_t data2; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start {
        p.extract(h.data);
        transition select(h.data.f2[31:31]) { 1: parse_data2; default: accept; }
    }
    state parse_data2 { p.extract(h.data2); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action setb1(bit<8> val, bit<9> port) { h.data.b1 = val; sm.egress_spec = port; }
    action setb2(bit<8> val) { h.data.b2 = val; }
    table both {
        key = {
            h.data.isValid(): exact @name("data.$valid$");
            h.data2.isValid(): exact @name("data2.$valid$");
        }
        actions = { setb1; NoAction; }
        default_action = NoAction();
    }
    table tern {
        key = {
            h.data.isValid(): ternary @name("data.$valid$");
            h.data.f1: ternary @name("data.f1");
        }
        actions = { setb2; NoAction; }
        default_action = NoAction();
    }
    apply { both.apply(); tern.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.data); p.emit(h.data2); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
