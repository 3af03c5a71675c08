"""``@field_list`` ids: integer literals, ``const`` declarations and serializable enum members
(the p4lang tutorials' flowcache names its list ``FL_PACKET_IN``); nested struct fields join
the list they are annotated with.  Behaviour end to end: ``tests/p4/field_list_names.stf``."""
from __future__ import annotations

import pytest

from emulation.p4.errors import P4Error
from emulation.v1model.load import compile_source

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
enum bit<8> FieldLists { none = 0, a = 4 }
const bit<8> FL_NAMED = 7;
struct N { @field_list(FieldLists.a) bit<8> x; bit<8> y; }
struct M { @field_list(FL_NAMED, 2, FieldLists.a) bit<8> f; @field_list(0x9) bit<8> g; N n; }
struct H {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) { state start { transition accept; } }
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    apply { resubmit_preserving_field_list(FL_NAMED); clone_preserving_field_list(CloneType.I2E, 1, FieldLists.a); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply {} }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def _paths(prog, fl):
    return sorted(prog.field_lists.get(fl, ()))


def test_named_ids_resolve_to_their_values():
    prog = compile_source(PROGRAM, "fl.p4")
    assert set(prog.field_lists) == {2, 4, 7, 9}
    assert [p[-1] for p in _paths(prog, 7)] == [_paths(prog, 2)[0][-1]]      # only f
    assert len(_paths(prog, 4)) == 2                                        # f and n.x
    assert any(len(p) == 2 for p in _paths(prog, 4))                        # n.x: a nested path
    assert len(_paths(prog, 9)) == 1


@pytest.mark.parametrize("body, why", [
    ("UNDECLARED", "UNDECLARED is not a compile-time integer constant"),
    ("FieldLists.nope", "FieldLists.nope is not a compile-time integer constant"),
    ("1 + 2", "expected integer constants"),
])
def test_bad_ids_are_errors_at_the_field(body, why):
    text = PROGRAM.replace("@field_list(0x9)", f"@field_list({body})")
    with pytest.raises(P4Error) as ei:
        compile_source(text, "fl.p4")
    msg = str(ei.value)
    assert why in msg
    assert msg.startswith("fl.p4:7:")
