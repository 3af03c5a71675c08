"""P4_16 1.2.5 forms added for issue #14 that the STF corpus (compound_arrays, parser_forms)
does not show one by one: compound assignment in a for loop and on a run-time array cell,
``_`` for out arguments, named arguments of extern methods, arrays' misuse, header fields
of struct type (wire layout, copy semantics), priorities of non-const entries, and the
checks that refuse what p4c refuses."""
from __future__ import annotations

import pytest
from testsupport.v1model_skeleton import v1model_program

from emulation.p4.errors import P4Error
from emulation.v1model.load import compile_source, switch_from_source


def prog(body: str, top: str = "") -> str:
    return v1model_program(body, top)      # top "" leaves a blank line after the includes


def run(body: str, data: bytes, top: str = "") -> list:
    sw = switch_from_source(prog(body, top), "t.p4", allow_target_extensions=True)
    return sw.process(0, data)


def refused(text: str) -> P4Error:
    with pytest.raises(P4Error) as ei:
        compile_source(text, "t.p4")
    assert ei.value.loc.file == "t.p4" and ei.value.loc.line > 0
    return ei.value


def test_compound_assignment_in_a_for_loop_update():
    # sum of 1..a with i += 1 and s += i (for loops run on the embedded target)
    body = """apply {
        bit<8> s = 0;
        for (bit<8> i = 1; i <= hdr.h.a; i += 1) { s += i; }
        hdr.h.b = s; sm.egress_spec = 1;
    }"""
    assert run(body, bytes([10, 0])) == [(1, bytes([10, 55]))]


def test_compound_assignment_evaluates_a_run_time_array_cell_once():
    body = """bit<8>[4] arr;
    apply {
        arr[0] = 1; arr[1] = 2; arr[2] = 3; arr[3] = 4;
        arr[hdr.h.a[1:0]] *= 10;
        hdr.h.b = arr[0] + arr[1] + arr[2] + arr[3]; sm.egress_spec = 1;
    }"""
    assert run(body, bytes([2, 0])) == [(1, bytes([2, 1 + 2 + 30 + 4]))]


def test_dontcare_out_argument_of_a_generic_extern_needs_its_type():
    top = "header skip_t { bit<8> x; }"
    text = prog("apply { }", top).replace("pkt.extract(hdr.h);", "pkt.extract(_); pkt.extract(hdr.h);")
    e = refused(text)
    assert "type of '_'" in e.message


def test_named_arguments_of_an_extern_method_in_any_order():
    body = """register<bit<8>>(4) r;
    apply {
        r.write(value = hdr.h.a, index = 1);
        r.read(index = 1, result = hdr.h.b);
        sm.egress_spec = 1;
    }"""
    assert run(body, bytes([7, 0])) == [(1, bytes([7, 7]))]


@pytest.mark.parametrize("body,msg", [
    ("bit<8>[2] arr; apply { hdr.h.a = arr.next; }", "header stacks"),
    ("bit<8>[2] arr; apply { arr.push_front(1); }", "no method push_front"),
    ("bit<8>[2] arr; apply { hdr.h.a = arr[2]; }", "out of bounds"),
    ("apply { bit<8> x = 1; x += true; }", "bool"),
])
def test_array_and_compound_misuse_is_located(body, msg):
    e = refused(prog(body))
    assert msg in e.message


def test_header_field_of_struct_type_is_laid_out_in_order_and_copied_by_value():
    top = "struct pair_t { bit<4> hi; bit<4> lo; }\nheader p_h { pair_t p; bit<8> z; }"
    text = prog("""apply {
        p_h x = { { 1, 2 }, 3 };
        p_h y = x;
        y.p.lo = 15;
        hdr.h.a = x.p.hi ++ x.p.lo;
        hdr.h.b = y.p.hi ++ y.p.lo;
        sm.egress_spec = 1;
    }""", top)
    sw = switch_from_source(text, "t.p4")
    assert sw.process(0, bytes([0, 0])) == [(1, bytes([0x12, 0x1F]))]
    # a union member of struct type is not a flat struct: refused with its location
    e = refused(prog("apply { }", "header x_t { bit<8> v; }\nheader_union u_t { x_t a; }\nheader bad_h { u_t u; }"))
    assert "header field u" in e.message


def test_non_const_entry_priorities_follow_p4c():
    # the second entry gets priority 10 - 1 = 9 (largest wins): both match 0x12, the first wins
    body = """action set(bit<8> v) { hdr.h.b = v; }
    table t {
        key = { hdr.h.a: ternary; }
        actions = { set; }
        entries = {
            priority=10: 0x10 &&& 0xF0 : set(1);
            0x12 &&& 0xFF : set(2);
        }
    }
    apply { t.apply(); sm.egress_spec = 1; }"""
    assert run(body, bytes([0x12, 0])) == [(1, bytes([0x12, 1]))]
    # largest_priority_wins = false: priorities go up from 10 and the smaller one wins
    body2 = body.replace("key = {", "largest_priority_wins = false;\n        key = {")
    assert run(body2, bytes([0x12, 0])) == [(1, bytes([0x12, 1]))]
    body3 = body2.replace("priority=10: 0x10", "priority=10: 0x12 &&& 0xFF : set(3);\n            0x10")
    assert run(body3, bytes([0x12, 0])) == [(1, bytes([0x12, 3]))]


def test_select_on_a_value_set_of_bit_still_works_with_bool_keys_nearby():
    text = prog("apply { sm.egress_spec = hdr.h.b == 1 ? 9w2 : 9w3; }").replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "state start { pkt.extract(hdr.h); transition select(hdr.h.a == 5, hdr.h.a) "
        "{ (true, _): yes; (false, 7): yes; default: accept; } }\n"
        "    state yes { hdr.h.b = 1; transition accept; }")
    sw = switch_from_source(text, "t.p4")
    assert sw.process(0, bytes([5, 0])) == [(2, bytes([5, 1]))]
    assert sw.process(0, bytes([7, 0])) == [(2, bytes([7, 1]))]
    assert sw.process(0, bytes([6, 0])) == [(3, bytes([6, 0]))]


def test_a_table_may_be_applied_in_exclusive_branches_only():
    # BMv2 runs a control as a graph of tables; p4c refuses a path from a table back to itself
    body = """action set(bit<8> v) { hdr.h.b = v; }
    table t { key = { hdr.h.a: exact; } actions = { set; NoAction; } const entries = { 1 : set(10); 2 : set(20); } }
    apply {
        if (hdr.h.b == 0) { t.apply(); } else { switch (hdr.h.b) { 1: { t.apply(); } default: { } } }
        sm.egress_spec = 1;
    }"""
    assert run(body, bytes([1, 0])) == [(1, bytes([1, 10]))]
    assert run(body, bytes([2, 1])) == [(1, bytes([2, 20]))]
    assert run(body, bytes([2, 5])) == [(1, bytes([2, 5]))]
    e = refused(prog(body.replace("sm.egress_spec = 1;", "t.apply(); sm.egress_spec = 1;")))
    assert "applied more than once on one path" in e.message


def test_value_set_of_a_struct_matches_several_select_keys():
    top = "struct vk_t { bit<8> a; bit<8> b; }"
    text = prog("apply { sm.egress_spec = hdr.h.isValid() ? 9w2 : 9w3; }", top).replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "value_set<vk_t>(4) pvs;\n"
        "    state start { transition select(pkt.lookahead<bit<16>>()[15:8], pkt.lookahead<bit<16>>()[7:0]) "
        "{ pvs: take; default: accept; } }\n"
        "    state take { pkt.extract(hdr.h); transition accept; }")
    sw = switch_from_source(text, "t.p4")
    assert sw.process(0, bytes([1, 2])) == [(3, bytes([1, 2]))]      # empty set: no match
    sw.value_set_add("P.pvs", 0x0102)                                  # a=1, b=2
    sw.value_set_add("P.pvs", 0x0500, 0xFF00)                          # a=5, any b
    assert sw.process(0, bytes([1, 2])) == [(2, bytes([1, 2]))]
    assert sw.process(0, bytes([5, 9])) == [(2, bytes([5, 9]))]
    assert sw.process(0, bytes([2, 1])) == [(3, bytes([2, 1]))]


@pytest.mark.parametrize("ann", [
    '@pragma stage 1 "x" (\n',                       # p4c's PRAGMA: the rest of the line
    '@my_ann[key = "v", n = 3 + 4, flag = true] ',   # structured key-value
    '@my_ann[1, "two", 3] ',                         # structured expression list
    '@my_ann(any tokens [ { ; : , ) ',               # unstructured, balanced on its own bracket
])
def test_free_form_annotations_are_accepted(ann):
    compile_source(prog("apply { sm.egress_spec = 1; }", ann + "const bit<8> K = 1;"), "t.p4")


def test_a_declaration_is_located_after_its_annotations():
    # p4c points at the declaration, not at annotations written on lines of their own
    body = """@name(".same")
    action a1() { }
    @name(".same")
    @other[k = 1]
    action a2() { }
    table t { key = { hdr.h.a: exact; } actions = { a1; a2; } }
    apply { t.apply(); }"""
    e = refused(prog(body))
    assert "conflicting control plane name" in e.message
    text = prog(body).split("\n")
    assert text[e.loc.line - 1].strip().startswith("action a2") and text[e.loc.line - 1][e.loc.col - 1:].startswith("action")


def test_a_generic_function_is_compiled_per_type_argument():
    # P4_16 spec 6.8.1: widen<bit<4>> and widen(bit<8>) are two specialisations of one body
    top = "bit<8> widen<T>(in T x) { return (bit<8>)x + 1; }"
    body = """apply {
        hdr.h.b = widen<bit<4>>(hdr.h.a[3:0]) + widen(hdr.h.a); sm.egress_spec = 1;
    }"""
    assert run(body, bytes([0x35, 0]), top) == [(1, bytes([0x35, (0x5 + 1) + (0x35 + 1)]))]


def test_a_generic_function_argument_must_fit_the_type_argument():
    top = "bit<8> widen<T>(in T x) { return (bit<8>)x; }"
    e = refused(prog("apply { hdr.h.b = widen<bit<4>>(true); }", top))
    assert "type mismatch" in e.message and "bit<4>" in e.message


def test_a_control_main_never_instantiates_is_still_type_checked():
    top = "control Unused(inout bit<8> x) { apply { x = true; } }"
    e = refused(prog("apply { }", top))
    assert "bool" in e.message
    # ... and one without errors changes nothing
    ok = "control Unused(inout bit<8> x) { apply { x = x + 1; } }"
    assert run("apply { sm.egress_spec = 1; }", bytes([1, 2]), ok) == [(1, bytes([1, 2]))]
