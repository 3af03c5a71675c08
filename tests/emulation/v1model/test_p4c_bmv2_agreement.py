"""Two constructs p4c 1.2.4.8 and BMv2 1.15.5 take otherwise than the embedded target would
(emulation/v1model/bmv2_limits.py), so the target refuses them unless allow_target_extensions.

``a ? b : c ? d : e`` without parentheses: p4c 1.2.4.8 groups it ``(a ? b : c) ? d : e``
(``p4parser.ypp``: QUESTION has a lower precedence than COLON), which the golden record shows as
a type error on tests/p4/compat/parser_stack_overflow.p4; the embedded target groups it the C
way, so it refuses the unparenthesized form.  A negative case value of a signed select key:
p4c writes "-0x01" into the JSON and BMv2 aborts loading it."""
from __future__ import annotations

import re

import pytest

from emulation.p4.errors import P4Error
from emulation.v1model.load import compile_file, switch_from_source

BODY = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; }}
struct H {{ h_t h; }}
struct M {{}}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {{
    state start {{ p.extract(h.h); transition accept; }}
}}
control I(inout H h, inout M m, inout standard_metadata_t sm) {{
    apply {{
        h.h.b = {expr};
    }}
}}
control E(inout H h, inout M m, inout standard_metadata_t sm) {{ apply {{}} }}
control V(inout H h, inout M m) {{ apply {{}} }}
control C(inout H h, inout M m) {{ apply {{}} }}
control D(packet_out p, in H h) {{ apply {{ p.emit(h.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
NESTED = "h.h.a == 1 ? 8w3 :\n                h.h.a == 2 ? 8w1 : 8w0"


def _write(tmp_path, expr):
    p = tmp_path / "t.p4"
    p.write_text(BODY.format(expr=expr))
    return p


def test_unparenthesized_else_branch_is_refused_at_the_first_operand(tmp_path):
    p = _write(tmp_path, NESTED)
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    msg = str(ei.value)
    assert msg.startswith(f"{p}:12:17: [--Werror=type-error] error: '?:': p4c groups")
    assert "(h.h.a == 1 ? 8w3 : h.h.a == 2) ? ..." in msg and "parentheses" in msg


@pytest.mark.parametrize("expr", [
    "h.h.a == 1 ? 8w3 : (h.h.a == 2 ? 8w1 : 8w0)",        # the else branch in parentheses
    "h.h.a == 1 ? (h.h.a == 2 ? 8w1 : 8w0) : 8w3",        # a then branch needs none
    "h.h.a == 1 ? 8w3 : ( // a comment\n h.h.a == 2 ? 8w1 : 8w0)",
])
def test_forms_p4c_reads_the_same_way_are_accepted(tmp_path, expr):
    compile_file(_write(tmp_path, expr))


def test_target_extensions_keep_the_c_grouping(tmp_path):
    p = _write(tmp_path, NESTED)
    sw = switch_from_source(p.read_text(), str(p), allow_target_extensions=True)
    assert [b for _, b in sw.process(0, bytes([1, 0]))] == [bytes([1, 3])]
    assert [b for _, b in sw.process(0, bytes([2, 0]))] == [bytes([2, 1])]
    assert [b for _, b in sw.process(0, bytes([5, 0]))] == [bytes([5, 0])]


def test_same_place_and_kind_as_p4c_on_the_golden_program():
    from pathlib import Path
    golden = Path(__file__).resolve().parents[2] / "golden" / "p4c_rejects"
    program = "tests/p4/compat/parser_stack_overflow.p4"
    theirs = (golden / "p4c-rejects.txt").read_text().split(f"== {program}\n", 1)[1]
    head = theirs.splitlines()[0]          # program(25): [--Werror=type-error] error: '?:'
    caret = theirs.splitlines()[2].index("^") + 1
    with pytest.raises(P4Error) as ei:
        compile_file(golden / program)
    e = ei.value.errors[0] if hasattr(ei.value, "errors") else ei.value
    m = re.match(rf"{re.escape(program)}\((\d+)\): (.*)$", head)
    assert m and int(m.group(1)) == e.loc.line and e.loc.col == caret
    assert e.message.startswith(m.group(2))            # [--Werror=type-error] error: '?:'



# ------------------------------------------------------------------ negative select cases
SELECT = """
#include <core.p4>
#include <v1model.p4>
header h_t {{ int<8> s; bit<8> u; }}
struct H {{ h_t h; }}
struct M {{}}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {{
    state start {{ p.extract(h.h); transition select({key}) {{ {case}: neg; default: accept; }} }}
    state neg {{ transition accept; }}
}}
control I(inout H h, inout M m, inout standard_metadata_t sm) {{ apply {{}} }}
control E(inout H h, inout M m, inout standard_metadata_t sm) {{ apply {{}} }}
control V(inout H h, inout M m) {{ apply {{}} }}
control C(inout H h, inout M m) {{ apply {{}} }}
control D(packet_out p, in H h) {{ apply {{ p.emit(h.h); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_negative_case_of_a_signed_select_key_is_refused(tmp_path):
    """The golden record of tests/p4/parser_counter.p4 (before it selected on the bits): BMv2
    1.15.5 aborted loading p4c's "-0x01" (bytecontainer.h assertion)."""
    p = tmp_path / "s.p4"
    p.write_text(SELECT.format(key="h.h.s", case="-1"))
    with pytest.raises(P4Error) as ei:
        compile_file(p)
    assert str(ei.value).startswith(f"{p}:8:") and "select case -1" in str(ei.value)
    assert "BMv2 cannot load" in str(ei.value)
    compile_file(p, allow_target_extensions=True)


@pytest.mark.parametrize("key, case", [("(bit<8>)h.h.s", "0xFF"), ("h.h.s", "1"), ("h.h.u", "0x80"),
                                       ("h.h.s", "(int<8>)5")])
def test_select_cases_bmv2_loads(tmp_path, key, case):
    p = tmp_path / "s.p4"
    p.write_text(SELECT.format(key=key, case=case))
    compile_file(p)
