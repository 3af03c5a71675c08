"""Our P4Info equals what p4c 1.2.4.8 (``p4c-bm2-ss --p4runtime-files``) wrote, program by program.

``tests/golden/p4info/`` holds, for every program of the repository that p4c accepted, the
program as p4c compiled it (the repository at ``eefb8f5``) and p4c's P4Info text beside it
(``<program>.p4info.txtpb``). The programs are copies, so a later edit of a test program does
not silently change what is compared.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from google.protobuf import text_format

from emulation.p4runtime.p4info import p4info_from_program, read_p4info
from emulation.v1model.load import compile_file, compile_source
from host_agent.p4runtime import p4info_pb2 as p4i

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "p4info"
CASES = sorted(p.relative_to(GOLDEN).as_posix()[:-len(".p4info.txtpb")]
               for p in GOLDEN.rglob("*.p4info.txtpb"))


def test_the_golden_set_is_complete():
    # p4c accepted 67 of the repository's programs; each comes with the program it saw
    assert len(CASES) == 67
    assert all((GOLDEN / c).is_file() for c in CASES)


@pytest.mark.parametrize("program", CASES)
def test_p4info_equals_p4c(program):
    # P4Info is what p4c writes; a limit of BMv2 *loading* p4c's output (e.g. a negative select
    # case on a signed key, parser_counter.p4) does not stop p4c from writing it
    ours = p4info_from_program(compile_file(GOLDEN / program, allow_target_extensions=True))
    theirs = read_p4info(GOLDEN / f"{program}.p4info.txtpb")
    # compare as text, so a failure shows the first differing line
    assert text_format.MessageToString(ours) == text_format.MessageToString(theirs)


def _action_names(program: str) -> set[str]:
    return {a.preamble.name for a in read_p4info(GOLDEN / f"{program}.p4info.txtpb").actions}


def test_golden_facts_the_generator_relies_on():
    """The rules the golden files show, each on a program where it matters."""
    # NoAction is listed only where a table uses it
    assert "NoAction" not in _action_names("tests/p4/subblocks.p4")
    assert "NoAction" in _action_names("p4src/basic_router.p4")
    # an action only other actions call is left out; one an apply block calls is kept
    assert "MyIngress.answer" not in _action_names("tests/p4/lookahead_header.p4")
    assert {"MyIngress.set_out", "MyIngress.incr"} <= _action_names("tests/p4/subblocks.p4")
    # an unused top-level action is left out
    assert _action_names("tests/p4/compat/mark_to_drop_noarg.p4") == set()
    # a masked key is named by the whole expression, the constant without its width
    t = read_p4info(GOLDEN / "tests/p4/compat/masked_key_name.p4.p4info.txtpb").tables[0]
    assert [m.name for m in t.match_fields] == ["h.h.f & 0xff00ff"]


IDLE_PROGRAM = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M {}
parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
control I(inout H h, inout M m, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    table t { key = { h.h.a : exact; } actions = { fwd; NoAction; } support_timeout = true; }
    table u { key = { h.h.a : exact; } actions = { fwd; NoAction; } support_timeout = false; }
    apply { t.apply(); u.apply(); }
}
control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def test_support_timeout_asks_for_idle_notifications():
    # beyond the golden set (none of its programs ages entries): p4c writes NOTIFY_CONTROL
    tables = {t.preamble.name: t for t in p4info_from_program(compile_source(IDLE_PROGRAM, "idle.p4")).tables}
    assert tables["I.t"].idle_timeout_behavior == p4i.Table.NOTIFY_CONTROL
    assert tables["I.u"].idle_timeout_behavior == p4i.Table.NO_TIMEOUT
