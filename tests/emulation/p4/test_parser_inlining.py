"""Parser states that one transition leads to are generated inside that transition
(``emulation/p4/compiler/parsers.py``): fewer Python calls per packet, the same parse."""
from __future__ import annotations

from emulation.v1model.load import compile_source

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> tag; }
header b_t { bit<16> x; }
struct headers_t { a_t a; b_t b; b_t c; }
struct meta_t { bit<8> n; }
parser P(packet_in pkt, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(h.a); m.n = 1;
        transition select(h.a.tag) { 1: one; 2: both; 3: shared; default: accept; } }
    state one { pkt.extract(h.b); transition accept; }
    state both { pkt.extract(h.b); m.n = 2; transition shared; }
    state shared { pkt.extract(h.c); m.n = m.n + 10; transition select(h.c.x) { 0: reject; default: accept; } }
}
control V(inout headers_t h, inout meta_t m) { apply { } }
control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (sm.parser_error != error.NoError) { h.a.tag = 0xee; }
        h.a.tag = h.a.tag + m.n;
    }
}
control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t h, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t h) { apply { pkt.emit(h.a); pkt.emit(h.b); pkt.emit(h.c); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def _switch():
    from emulation.v1model.switch import Switch
    prog = compile_source(PROGRAM, "inline.p4")
    return prog, Switch(prog)


def test_single_entry_states_are_inlined_shared_ones_are_not():
    prog, _ = _switch()
    defs = [ln.strip() for ln in prog.source.splitlines() if ln.strip().startswith("def _st_")]
    names = sorted(d.split("(")[0][len("def _st_"):].rstrip("0123456789") for d in defs)
    # start has its own function; one and both are reached from one case each; shared from two
    assert names == ["shared", "start"], defs


def test_inlined_parser_parses_as_the_state_machine_says():
    _, sw = _switch()
    cases = {
        bytes([1]) + b"\x12\x34": bytes([1 + 1]) + b"\x12\x34",          # one
        bytes([2]) + b"\x00\x05\x00\x07": bytes([2 + 12]) + b"\x00\x05\x00\x07",   # both -> shared
        bytes([3]) + b"\x00\x09": bytes([3 + 11]) + b"\x00\x09",          # shared
        bytes([9]) + b"\xaa\xbb": bytes([9 + 1]) + b"\xaa\xbb",           # accept, rest is payload
    }
    for frame, want in cases.items():
        assert sw.process(1, frame) == [(2, want)], frame.hex()
    # shared with x == 0: an explicit reject; v1model goes on to ingress and parser_error
    # stays NoError (the code the state functions raise as well)
    out = sw.process(1, bytes([3]) + b"\x00\x00")
    assert out == [(2, bytes([3 + 11]) + b"\x00\x00")], out
    # too short for b in state one: PacketTooShort
    out = sw.process(1, bytes([1]) + b"\x12")
    assert out and out[0][1][0] == (0xee + 1) & 0xff, out


def test_a_state_whose_one_transition_is_never_generated_is_still_checked():
    """``dead`` is named once, in a case after the default: it is never inlined, yet its
    body is compiled (and its error reported) as for any state."""
    import pytest

    from emulation.p4.errors import P4Error
    bad = PROGRAM.replace("3: shared; default: accept; }", "3: shared; default: accept; 4: dead; }")
    bad = bad.replace("    state shared {", "    state dead { m.n = h.a; transition accept; }\n    state shared {")
    with pytest.raises(P4Error) as e:
        compile_source(bad, "dead.p4")
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "state dead" in ln)
    assert e.value.loc is not None and e.value.loc.line == line, (e.value, line)
    # and the same program without the error compiles, with a function for dead
    good = bad.replace("m.n = h.a;", "m.n = 7;")
    src = compile_source(good, "dead.p4").source
    assert "def _st_dead" in src


def test_states_are_still_compiled_in_source_order():
    """Two states with errors: the first in the source is reported (p4c's order), although
    the transition to the later one is generated first."""
    import pytest

    from emulation.p4.errors import P4Error
    bad = PROGRAM.replace("1: one; 2: both; 3: shared;", "1: both; 2: one; 3: shared;")
    bad = bad.replace("state one { pkt.extract(h.b);", "state one { m.n = h.a; pkt.extract(h.b);")
    bad = bad.replace("state both { pkt.extract(h.b);", "state both { m.n = h.b; pkt.extract(h.b);")
    with pytest.raises(P4Error) as e:
        compile_source(bad, "order.p4")
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "state one" in ln)
    assert e.value.loc.line == line, (e.value, line)
