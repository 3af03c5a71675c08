"""Forms found in p4c's own test programs (issue #14), written here from the P4_16 spec:
each test compiles a few lines of our own and checks what the front end or the target does.
"""
from __future__ import annotations

import subprocess
import sys

import pytest
from testsupport.p4paths import REPO
from testsupport.v1model_skeleton import INCLUDES, v1model_program

from emulation.p4.errors import P4Error, P4NotRunnable
from emulation.v1model.load import compile_source, switch_from_source

V1_BLOCKS = """
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
"""


def _check(tmp_path, text: str) -> subprocess.CompletedProcess:
    f = tmp_path / "prog.p4"
    f.write_text(text)
    return subprocess.run([sys.executable, "-m", "emulation.cli", "p4", "check", str(f)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


@pytest.mark.parametrize("main", [
    # a package given to another package (p4c's front end accepts it)
    "V1Switch(P(), VC(), I(), E(), C(), D()) sw;\npackage Wrap<H, M>(V1Switch<H, M> s);\nWrap(sw) main;",
    # a package of the program's own
    "control Ctl(inout bit<8> x);\npackage Top(Ctl c);\ncontrol K(inout bit<8> x) { apply { x = x + 1; } }\n"
    "Top(K()) main;",
    # no main at all
    "",
])
def test_a_program_without_a_v1switch_main_passes_check_but_cannot_run(tmp_path, main):
    text = INCLUDES + V1_BLOCKS + main + "\n"
    r = _check(tmp_path, text)
    assert r.returncode == 0, r.stderr
    assert "warning" in r.stderr and "prog.p4:" in r.stderr
    with pytest.raises(P4NotRunnable):
        compile_source(text, "prog.p4")
    with pytest.raises(P4NotRunnable):
        switch_from_source(text, "prog.p4")


def test_errors_inside_a_program_without_a_v1switch_main_are_still_reported(tmp_path):
    text = INCLUDES + "control Ctl(inout bit<8> x);\npackage Top(Ctl c);\n" \
        "control K(inout bit<8> x) {\n    apply { x = true; }\n}\nTop(K()) main;\n"
    r = _check(tmp_path, text)
    assert r.returncode == 1
    line = text.splitlines().index("    apply { x = true; }") + 1
    assert f"prog.p4:{line}:" in r.stderr and "warning" not in r.stderr


def test_a_v1switch_program_still_runs():
    sw = switch_from_source(v1model_program("apply { sm.egress_spec = 2; }"), "prog.p4")
    assert sw.process(0, bytes([1, 2])) == [(2, bytes([1, 2]))]


def test_not_runnable_is_a_located_p4_error():
    with pytest.raises(P4Error) as ei:
        compile_source(INCLUDES + V1_BLOCKS, "prog.p4")
    assert str(ei.value).startswith("prog.p4:")


def test_a_parameter_named_like_its_parser_hides_the_parser_type():
    # P4_16 spec 6.3: the innermost declaration wins; `p.extract` is the packet_in parameter p
    text = INCLUDES + """
header h_t { bit<8> a; bit<8> b; }
struct headers { h_t h; }
struct meta_t { }
parser p(packet_in p, out headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t m) { apply { } }
control I(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { hdr.h.b = hdr.h.a + 1; sm.egress_spec = 3; }
}
control E(inout headers hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(p(), VC(), I(), E(), C(), D()) main;
"""
    sw = switch_from_source(text, "prog.p4")
    assert sw.process(0, bytes([0x41, 0, 9])) == [(3, bytes([0x41, 0x42, 9]))]


def test_a_control_may_take_the_name_of_an_extern_function():
    # p4c accepts a control named like v1model's verify_checksum (its issue1653-complex-bmv2.p4):
    # the package argument is the control.  (A call of that name after the declaration does not
    # parse, in p4c either: the lexer takes the name as a type from there on.)
    text = (v1model_program("apply { sm.egress_spec = 2; }")
            .replace("control VC(", "control verify_checksum(")
            .replace("V1Switch(P(), VC(),", "V1Switch(P(), verify_checksum(),")
            .replace("control C(inout headers hdr, inout meta_t m) { apply { } }",
                     "control C(inout headers hdr, inout meta_t m) {\n"
                     "    apply { update_checksum(true, { hdr.h.a }, hdr.h.b, HashAlgorithm.identity); }\n}"))
    assert "control verify_checksum(" in text and "verify_checksum()," in text and "update_checksum" in text
    sw = switch_from_source(text, "prog.p4")
    assert sw.process(0, bytes([0x41, 0, 9])) == [(2, bytes([0x41, 0x41, 9]))]


def test_a_control_still_may_not_reuse_another_controls_name(tmp_path):
    text = INCLUDES + V1_BLOCKS + "control I(inout headers hdr) { apply { } }\n"
    with pytest.raises(P4Error, match="I is already declared"):
        compile_source(text, "prog.p4")


SERENUM_TOP = "enum bit<8> kind_t { A = 0x0A, B = 0x0B }"


def test_a_serializable_enum_converts_implicitly_to_its_bit_type():
    # P4_16 spec 8.11.2: an enum with an underlying type casts implicitly to that type
    body = """
    action put(in bit<8> v) { hdr.h.b = v; }
    apply {
        kind_t k = kind_t.B;
        if (hdr.h.a == 1) { k = kind_t.A; }
        bit<8> x = k;
        put(k);
        hdr.h.a = x + 1;
        sm.egress_spec = 1;
    }"""
    sw = switch_from_source(v1model_program(body, SERENUM_TOP), "prog.p4")
    assert sw.process(0, bytes([1, 0])) == [(1, bytes([0x0B, 0x0A]))]
    assert sw.process(0, bytes([7, 0])) == [(1, bytes([0x0C, 0x0B]))]


def test_bits_do_not_convert_implicitly_to_a_serializable_enum():
    body = "apply { kind_t k = hdr.h.a; }"
    with pytest.raises(P4Error) as ei:
        compile_source(v1model_program(body, SERENUM_TOP), "prog.p4")
    assert "type mismatch" in ei.value.message and "kind_t" in ei.value.message


def test_a_function_returning_one_constant_counts_as_that_constant():
    # p4c inlines the function and propagates its constant return value: a division by it, or
    # a shift by it, is then computable (p4c-bm2-ss accepts); the call still runs (side effect)
    top = """
bit<8> two(inout bit<8> seen) { seen = seen + 1; return 8w2; }
bit<16> four() { return 16w4; }"""
    body = """
    apply {
        bit<8> n = 0;
        hdr.h.b = hdr.h.a / two(n);
        bit<16> w = 16w0x0100 >> four();
        hdr.h.a = (bit<8>)w + n;
        sm.egress_spec = 1;
    }"""
    sw = switch_from_source(v1model_program(body, top), "prog.p4")
    assert sw.process(0, bytes([9, 0])) == [(1, bytes([0x10 + 1, 4]))]


def test_a_division_by_a_function_that_may_return_other_values_is_still_refused():
    top = "bit<8> pick(in bit<8> x) { if (x == 0) { return 8w2; } return 8w3; }"
    with pytest.raises(P4Error) as ei:
        compile_source(v1model_program("apply { hdr.h.b = hdr.h.a / pick(hdr.h.a); }", top), "prog.p4")
    assert "could not evaluate" in ei.value.message


@pytest.mark.parametrize("init", ["1", "8w1", "hdr.h.a + 1"])
def test_an_integer_does_not_initialise_a_serializable_enum(init):
    # only the enum converts to its type, not the other way (p4c: "values of type 'int' cannot
    # be implicitly cast"); an expression over the enum is of the underlying type too
    body = f"apply {{ kind_t k = {init}; hdr.h.b = k; }}"
    with pytest.raises(P4Error) as ei:
        compile_source(v1model_program(body, SERENUM_TOP), "prog.p4")
    assert "kind_t" in ei.value.message
    assert ei.value.loc.line == v1model_program(body, SERENUM_TOP).splitlines().index(
        next(l for l in v1model_program(body, SERENUM_TOP).splitlines() if "kind_t k =" in l)) + 1


def test_a_serializable_enum_compares_with_an_integer_and_a_comparison_may_name_a_type_after_less_than():
    body = """
    apply {
        if (hdr.h.a < kind_t.B && kind_t.A == hdr.h.a) { hdr.h.b = 1; }
        else if (kind_t.A + 2 < hdr.h.a) { hdr.h.b = 2; }
        else { hdr.h.b = 3; }
        sm.egress_spec = 1;
    }"""
    sw = switch_from_source(v1model_program(body, SERENUM_TOP), "prog.p4")
    assert sw.process(0, bytes([10, 0])) == [(1, bytes([10, 1]))]
    assert sw.process(0, bytes([11, 0])) == [(1, bytes([11, 3]))]     # 11 < 11 false, 12 < 11 false
    assert sw.process(0, bytes([13, 0])) == [(1, bytes([13, 2]))]


def test_generic_extern_arguments_need_a_width_only_where_nothing_else_gives_one():
    # random<T>(out T, in T lo, in T hi): T comes from the result, the literals take its width
    ok = "apply { random(hdr.h.b, 0, 3); sm.egress_spec = 1; }"
    sw = switch_from_source(v1model_program(ok), "prog.p4")
    out = sw.process(0, bytes([5, 0xFF]))
    assert out[0][1][0] == 5 and out[0][1][1] <= 3
    # hash's base (T) and max (M) are only bound by the literals: p4c cannot infer a width
    bad = "apply { hash(hdr.h.b, HashAlgorithm.crc16, 8w0, { hdr.h.a }, 16); }"
    with pytest.raises(P4Error) as ei:
        compile_source(v1model_program(bad), "prog.p4")
    assert "could not infer a width" in ei.value.message
    assert ei.value.loc.col == v1model_program(bad).splitlines()[ei.value.loc.line - 1].index("16)") + 1


@pytest.mark.parametrize("ctype, width", [("32", 32), ("bit<32>", 32), ("bit < 12 >", 12), ("string", None)])
def test_p4runtime_translation_controller_type_forms(ctype, width):
    # @p4runtime_translation(uri, W) (legacy), (uri, bit<W>) and (uri, string) (P4Runtime spec)
    from emulation.p4.info import new_type_info
    info = new_type_info("Port_t", 16, False, {"p4runtime_translation": f'"p4.org/x/Port_t", {ctype}'})
    assert info.translation_uri == "p4.org/x/Port_t"
    assert info.sdn_bitwidth == width


def test_a_type_translated_to_bit_w_compiles():
    top = '@p4runtime_translation("p4.org/x/P_t", bit<32>)\ntype bit<8> P_t;'
    body = "apply { P_t p = (P_t) hdr.h.a; hdr.h.b = (bit<8>) p; sm.egress_spec = 1; }"
    sw = switch_from_source(v1model_program(body, top), "prog.p4")
    assert sw.process(0, bytes([7, 0])) == [(1, bytes([7, 7]))]


def test_a_constant_condition_in_an_action_is_folded_before_the_bmv2_predication_limit(tmp_path):
    # p4c folds if (!true) {...} else { return; } to an unconditional return: the code after
    # it is dead, not conditional (p4c sample gauntlet_exit_combination_20-bmv2 compiles)
    body = """
    action act() {
        if (!true) { } else { return; }
        hdr.h.a = 1;
        exit;
    }
    apply { act(); hdr.h.b = 2; sm.egress_spec = 1; }"""
    r = _check(tmp_path, v1model_program(body))
    assert r.returncode == 0, r.stderr
    sw = switch_from_source(v1model_program(body), "prog.p4")
    assert sw.process(0, bytes([9, 0])) == [(1, bytes([9, 2]))]
    # a condition known only at run time still makes the exit conditional (refused)
    bad = body.replace("if (!true)", "if (hdr.h.a == 0)")
    r = _check(tmp_path, v1model_program(bad))
    assert r.returncode != 0 and "Conditional execution in actions" in r.stderr
