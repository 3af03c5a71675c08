"""Front-end behaviour that the corpus does not show: preprocessing, error positions through
includes, the control-plane description of a compiled program, and the CLI."""
from __future__ import annotations

import subprocess
import sys

import pytest
from testsupport.p4paths import REPO as ROOT
from testsupport.v1model_skeleton import SKELETON, v1model_program as prog

from emulation.p4.errors import P4Error
from emulation.v1model.load import compile_source, load_program, load_switch, switch_from_source


def test_error_in_an_included_file_points_into_that_file(tmp_path):
    inc = tmp_path / "lib.p4"
    inc.write_text("// helper\nconst bit<8> K = 8w1 +;\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "lib.p4"\n' + prog("apply { }"))
    with pytest.raises(P4Error) as ei:
        load_program(main)
    assert ei.value.loc.file.endswith("lib.p4")
    assert (ei.value.loc.line, ei.value.loc.col) == (2, 23)
    assert "syntax error" in str(ei.value)


def test_defines_and_conditionals_select_code(tmp_path):
    src = prog("""
        apply {
    #if defined(USE_B)
            hdr.h.a = hdr.h.b;
    #else
            hdr.h.a = VALUE;
    #endif
            sm.egress_spec = 1;
        }""")
    p = tmp_path / "d.p4"
    p.write_text(src)
    sw = load_switch(str(p), defines={"VALUE": "8w7"})
    assert sw.process(0, b"\x01\x02") == [(1, b"\x07\x02")]
    sw = load_switch(str(p), defines={"USE_B": "1", "VALUE": "8w7"})
    assert sw.process(0, b"\x01\x02") == [(1, b"\x02\x02")]


def test_missing_include_is_an_error_with_position(tmp_path):
    p = tmp_path / "m.p4"
    p.write_text('#include <core.p4>\n#include "nothere.p4"\n')
    with pytest.raises(P4Error) as ei:
        load_program(p)
    assert "nothere.p4" in str(ei.value)
    assert ei.value.loc.line == 2


@pytest.mark.parametrize("body,msg", [
    ("apply { hdr.h.a = hdr.h.a + 16w1; }", "type mismatch"),
    ("apply { hdr.h.c = 1; }", "no field c"),
    ("apply { bit<8> x = y; }", "undeclared"),
    ("action a(in bit<8> v) { v = 1; } apply { a(1); }", "read-only"),
    ("apply { if (hdr.h.a) { } }", "must be bool"),
    ("table t { key = { hdr.h.a: fuzzy; } actions = { NoAction; } } apply { t.apply(); }", "match kind"),
])
def test_type_errors_name_the_problem(body, msg):
    with pytest.raises(P4Error) as ei:
        parse_and_compile(prog(body))
    assert msg in str(ei.value)
    assert ei.value.loc.line > 0 and ei.value.loc.col > 0


def parse_and_compile(text: str):
    return compile_source(text, "t.p4")


def test_program_info_names_tables_actions_and_externs():
    p = load_program(ROOT / "p4src" / "basic_router.p4")
    tables = {t.name: t for t in p.info.tables}
    assert "MyIngress.ipv4_lpm" in tables
    t = tables["MyIngress.ipv4_lpm"]
    assert [(k.name, k.match_kind, k.width) for k in t.keys] == [("hdr.ipv4.dstAddr", "lpm", 32)]
    acts = {a.name: a for a in p.info.actions}
    assert [(x.name, x.width) for x in acts["MyIngress.ipv4_forward"].params] == [("dstAddr", 48), ("port", 9)]


def test_header_with_odd_width_is_padded_like_p4c():
    src = SKELETON.replace("header h_t { bit<8> a; bit<8> b; }", "header h_t { bit<8> a; bit<3> b; }") \
        .replace("BODY", "apply { hdr.h.b = hdr.h.b + 1; sm.egress_spec = 2; }")
    sw = switch_from_source(src, "odd.p4", allow_target_extensions=True)   # BMv2 refuses it
    # 11 bits of fields + 5 bits of padding kept from the packet: a=0x10, b=0b101, pad=0b10101
    (port, out), = sw.process(0, bytes([0x10, 0b10110101, 0xEE]))
    assert port == 2
    assert out == bytes([0x10, 0b11010101, 0xEE])


def test_cli_check_prints_file_line_col_and_exits_1(tmp_path):
    p = tmp_path / "bad.p4"
    p.write_text(prog("apply { hdr.h.a = ; }"))
    r = subprocess.run([sys.executable, "-m", "emulation.cli", "p4", "check", str(p)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert f"{p}:12:" in r.stderr or "bad.p4:12:" in r.stderr
    assert "expected" in r.stderr


def test_error_directive_and_binary_file_are_reported_with_positions(tmp_path):
    p = tmp_path / "e.p4"
    p.write_text("#include <core.p4>\n#error not for this target\n")
    with pytest.raises(P4Error) as ei:
        load_program(p)
    assert "#error not for this target" in str(ei.value) and ei.value.loc.line == 2
    b = tmp_path / "b.p4"
    b.write_bytes(b"header h {\n\xff}")
    with pytest.raises(P4Error) as ei:
        load_program(b)
    assert "UTF-8" in str(ei.value) and (ei.value.loc.line, ei.value.loc.col) == (2, 1)


def test_cli_run_rejects_bad_packet_hex():
    r = subprocess.run([sys.executable, "-m", "emulation.cli", "p4", "run", str(ROOT / "p4src" / "basic_router.p4"),
                        "--packet", "0", "zz"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "bad --packet" in r.stderr


def test_generic_control_specialised_by_explicit_type_arguments():
    src = SKELETON.replace("control VC(", "control Inc<T>(inout T x) { apply { x = x + 1; } }\ncontrol VC(") \
        .replace("BODY", "Inc<bit<8>>() inc;\n    apply { inc.apply(hdr.h.b); sm.egress_spec = 3; }")
    sw = switch_from_source(src, "generic.p4")
    assert sw.process(0, b"\x01\x09") == [(3, b"\x01\x0a")]
    # without type arguments the instance is refused by name, not miscompiled
    bad = src.replace("Inc<bit<8>>() inc;", "Inc() inc;")
    with pytest.raises(P4Error) as ei:
        parse_and_compile(bad)
    assert "generic" in str(ei.value)


def test_for_in_range_loop_with_break():
    src = prog("""apply {
        bit<8> acc = 0;
        for (bit<8> i in 1 .. 10) {
            if (i == hdr.h.b) { break; }
            acc = acc + i;
        }
        hdr.h.a = acc;
        sm.egress_spec = 1;
    }""")
    sw = switch_from_source(src, "forin.p4", allow_target_extensions=True)   # BMv2: no loops
    assert sw.process(0, bytes([0, 4])) == [(1, bytes([1 + 2 + 3, 4]))]
    assert sw.process(0, bytes([0, 99])) == [(1, bytes([55, 99]))]


def test_parser_value_set_matches_members_added_by_the_control_plane():
    src = SKELETON.replace(
        "state start { pkt.extract(hdr.h); transition accept; }",
        "value_set<bit<8>>(4) pvs;\n"
        "    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { pvs: mark; default: accept; } }\n"
        "    state mark { hdr.h.b = 0xEE; transition accept; }").replace(
        "BODY", "apply { sm.egress_spec = 1; }")
    sw = switch_from_source(src, "pvs.p4")
    assert sw.process(0, b"\x07\x00") == [(1, b"\x07\x00")]        # empty set: no member matches
    sw.value_set_add("pvs", 0x07)
    assert sw.process(0, b"\x07\x00") == [(1, b"\x07\xee")]
    sw.value_set_add("P.pvs", 0x40, 0xF0)                            # masked member
    assert sw.process(0, b"\x4a\x00") == [(1, b"\x4a\xee")]
    assert sw.process(0, b"\x5a\x00") == [(1, b"\x5a\x00")]
    assert any(e.kind == "value_set" and e.name == "P.pvs" for e in sw.program.info.externs)


def test_action_profile_and_selector_tables_load_and_take_direct_entries():
    body = """
    action fwd(bit<9> p) { sm.egress_spec = p; }
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) sel;
    table ecmp {
        key = { hdr.h.a : exact; hdr.h.b : selector; }
        actions = { fwd; NoAction; }
        implementation = sel;
        default_action = fwd(7);
    }
    table prof { key = { hdr.h.a : exact; } actions = { fwd; } implementation = action_profile(32w16); }
    apply { if (hdr.h.a == 1) { ecmp.apply(); } else { prof.apply(); } }"""
    sw = switch_from_source(prog(body), "ap.p4")
    assert sw.process(0, bytes([1, 5])) == [(7, bytes([1, 5]))]        # default action runs
    sw.table_add("ecmp", "fwd", {"hdr.h.a": 1}, [3])                   # the selector key takes no part
    assert sw.process(0, bytes([1, 9])) == [(3, bytes([1, 9]))]
    sw.table_add("prof", "fwd", {"hdr.h.a": 2}, [4])
    assert sw.process(0, bytes([2, 0])) == [(4, bytes([2, 0]))]
    assert [k.name for k in sw.program.info.table("I.ecmp").keys] == ["hdr.h.a"]
