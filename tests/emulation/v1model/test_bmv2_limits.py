"""The embedded target reports what p4c's BMv2 back end refuses, as p4c 1.2.4.8 words it;
and the repository's STF files use the forms p4c's own STF runner reads.

``tests/golden/p4c_rejects/`` holds p4c's own messages (``p4c-rejects.txt``) and the programs
it refused, as they were; the limits found there must be reported at the same line with the
same text. Programs for the embedded target only (``tests/p4/embedded_only/``) still run with
``allow_target_extensions``.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from testsupport.p4paths import P4_COMPAT, P4_TESTS, P4SRC, REPO

from emulation.cli import main as saatp_main
from emulation.p4.errors import P4Error
from emulation.p4.pyrt import P4RuntimeError
from emulation.stf.runner import run_stf
from emulation.v1model.bmv2_limits import BMv2LimitError
from emulation.v1model.load import compile_file, compile_source, load_switch

GOLDEN = REPO / "tests" / "golden" / "p4c_rejects"
EMBEDDED_ONLY = P4_TESTS / "embedded_only"

HEADERS = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> w; bit<8> n; }
struct H { h_t h; h_t[2] s; }
struct M {}
"""
PARSER = """parser P(packet_in p, out H h, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(h.h); transition accept; }
}
"""
REST = """control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }
control V(inout H h, inout M m) { apply {} }
control C(inout H h, inout M m) { apply {} }
control D(packet_out p, in H h) { apply { p.emit(h.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def _program(ingress_body: str, *, headers: str = HEADERS, locals_: str = "") -> str:
    return (headers + PARSER + "control I(inout H h, inout M m, inout standard_metadata_t sm) {\n"
            + locals_ + "    apply {\n" + ingress_body + "\n    }\n}\n" + REST)


def _refusal(text: str) -> BMv2LimitError:
    with pytest.raises(BMv2LimitError) as ei:
        compile_source(text, "prog.p4")
    compile_source(text, "prog.p4", allow_target_extensions=True)     # the target itself runs it
    return ei.value


# ------------------------------------------------------------------ each limit
def test_non_constant_shift_wider_than_8_bits():
    e = _refusal(_program("        h.h.w = h.h.w >> h.h.w;"))
    assert str(e.errors[0]) == ("prog.p4:11:17: [--Werror=overlimit] error: h.h.w >> h.h.w: "
                                "shift amount limited to 8 bits on this target")


def test_shifts_bmv2_takes():
    # an 8-bit amount, a cast down to 8 bits, a literal: all fine
    compile_source(_program("        h.h.w = h.h.w << h.h.n; h.h.w = h.h.w >> (bit<8>)h.h.w; "
                            "h.h.w = h.h.w << 16w3; h.h.w = h.h.w << 3;"), "prog.p4")


def test_constant_shift_over_256():
    e = _refusal(_program("        h.h.w = h.h.w << 300;"))
    assert "shift amount limited to 256 on this target" in str(e)


def test_header_not_a_whole_number_of_bytes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("prog.p4").write_text(_program("", headers=HEADERS.replace("bit<8> n; }", "bit<8> n; }\nheader odd_t { bit<3> x; }")
                                        .replace("h_t[2] s; }", "h_t[2] s; odd_t o; }")))
    with pytest.raises(BMv2LimitError) as ei:
        compile_file("prog.p4")
    e = ei.value
    # p4c points at the header's name
    assert str(e.errors[0]) == ("prog.p4:4:8: [--Werror=target-error] error: header odd_t: Found header "
                                "with fields totaling 3 bits.  BMv2 target only supports headers with "
                                "fields totaling a multiple of 8 bits.")


@pytest.mark.parametrize("member,words", [("last", "'last', and 'next'"), ("lastIndex", "'lastIndex'")])
def test_stack_last_outside_a_parser(member, words):
    body = "        h.h.n = h.s.last.n;" if member == "last" else "        h.h.n = (bit<8>)h.s.lastIndex;"
    e = _refusal(_program(body))
    assert f"h.s.{member}: {words} for stacks can only be used in a parser" in str(e)
    assert "[--Werror=type-error]" in str(e)


def test_stack_next_inside_a_parser_is_fine():
    text = _program("        sm.egress_spec = 1;").replace(
        "p.extract(h.h); transition accept;", "p.extract(h.h); p.extract(h.s.next); transition accept;")
    compile_source(text, "prog.p4")


def test_priority_in_const_entries_reported_once_per_table():
    locals_ = """    action set(bit<8> v) { h.h.n = v; }
    table t {
        key = { h.h.a : ternary; }
        actions = { set; }
        const entries = {
            priority=10: 0x01 &&& 0x0F : set(1);
            priority=20: 0x02 &&& 0x0F : set(2);
        }
    }
"""
    e = _refusal(_program("        t.apply();", locals_=locals_))
    assert [str(x) for x in e.errors] == [
        "prog.p4:15:26: [--Werror=invalid] error: Entry: Table with 'const' entries cannot have priorities"]


def test_priority_annotation_is_fine():
    locals_ = """    action set(bit<8> v) { h.h.n = v; }
    table t {
        key = { h.h.a : ternary; }
        actions = { set; }
        const entries = { 0x01 &&& 0x0F : set(1) @priority(2); 0x02 &&& 0x0F : set(2) @priority(1); }
    }
"""
    compile_source(_program("        t.apply();", locals_=locals_), "prog.p4")


def test_resubmit_with_data():
    e = _refusal(_program("        resubmit({ h.h.a });"))
    assert "resubmit: unknown extern function" in str(e) and "resubmit_preserving_field_list" in str(e)


def test_every_problem_is_listed_with_a_hint():
    e = _refusal(_program("        h.h.w = h.h.w >> h.h.w; h.h.n = h.s.last.n;"))
    assert len(e.errors) == 2
    lines = str(e).splitlines()
    assert lines[0].startswith("prog.p4:11:") and lines[1].startswith("prog.p4:11:")
    assert "--allow-target-extensions" in lines[-1]


# ------------------------------------------------------------------ p4c's own verdicts
def _p4c_rejects() -> dict[str, list[tuple[int, str]]]:
    """program -> [(line, message)] of p4c's errors in p4c-rejects.txt."""
    out: dict[str, list[tuple[int, str]]] = {}
    prog = None
    for line in (GOLDEN / "p4c-rejects.txt").read_text().splitlines():
        if line.startswith("== "):
            prog = line[3:].strip()
            out[prog] = []
            continue
        m = re.match(r"^(\S+)\((\d+)\): (\[--Werror=[a-z-]+\] error: .*)$", line)
        if m and m.group(1) == prog:
            out[prog].append((int(m.group(2)), m.group(3)))
    return out


# p4c refused these for a BMv2 back-end limit; the others in p4c-rejects.txt are p4c being
# older than the syntax or its own type checking ({#}, a nested ?:) or an unknown extern
LIMITS = ["p4src/saatp.p4", "tests/p4/compat/entries_priority_kw.p4", "tests/p4/compat/header_41bits.p4",
          "tests/p4/compat/stack_props_miss_drop.p4", "tests/p4/tables_const.p4"]


@pytest.mark.parametrize("program", LIMITS)
def test_same_verdict_as_p4c(program):
    theirs = _p4c_rejects()[program]
    assert theirs, "p4c-rejects.txt lists this program"
    with pytest.raises(BMv2LimitError) as ei:
        compile_file(GOLDEN / program)
    ours = [(e.loc.line, e.message) for e in ei.value.errors]
    assert ours == theirs


def test_resubmit_data_verdict_as_p4c():
    text = (GOLDEN / "p4c-rejects.txt").read_text()
    assert "resubmit: unknown extern function" in text
    with pytest.raises(BMv2LimitError, match="resubmit: unknown extern function"):
        compile_file(GOLDEN / "tests/p4/compat/resubmit_data_arg.p4")


def _programs_p4c_accepts() -> list[Path]:
    return sorted(list(P4_TESTS.glob("*.p4")) + list(P4_COMPAT.glob("*.p4")) + list(P4SRC.glob("*.p4"))
                  + list((REPO / "tests" / "p4runtime" / "programs").glob("*.p4")))


@pytest.mark.parametrize("program", _programs_p4c_accepts(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_repository_programs_are_within_the_limits(program):
    """The BMv2-compatible corpus, p4src/ and the P4Runtime programs: nothing to report."""
    compile_file(program)


# ------------------------------------------------------------------ embedded-only programs
EMBEDDED = sorted(EMBEDDED_ONLY.glob("*.p4"))


def test_embedded_only_programs_present():
    assert len(EMBEDDED) >= 4 and all(p.with_suffix(".stf").is_file() for p in EMBEDDED)


@pytest.mark.parametrize("program", EMBEDDED, ids=lambda p: p.stem)
def test_embedded_only_refused_by_default_run_when_allowed(program):
    with pytest.raises(BMv2LimitError):
        compile_file(program)
    res = run_stf(str(program), str(program.with_suffix(".stf")), allow_target_extensions=True)
    assert res.ok, "\n".join(res.messages)
    assert res.counts.get("expects", 0) >= 1


def test_command_line_flag(capsys):
    prog = str(EMBEDDED_ONLY / "header_41bits.p4")
    assert saatp_main(["p4", "check", prog]) == 1
    err = capsys.readouterr().err
    assert re.search(r"header_41bits\.p4:\d+:8: \[--Werror=target-error\] error: header h_t: Found header "
                     r"with fields totaling 41 bits\.", err)
    assert saatp_main(["p4", "check", "--allow-target-extensions", prog]) == 0
    stf = str(EMBEDDED_ONLY / "header_41bits.stf")
    assert saatp_main(["p4", "stf", prog, stf]) == 2
    assert saatp_main(["p4", "stf", "--allow-target-extensions", prog, stf]) == 0


# ------------------------------------------------------------------ run time: what BMv2 aborts on
def test_out_of_range_stack_index_aborts_like_bmv2():
    """BMv2 1.15.5 dies (std::out_of_range) on tests/p4/compat/oob_index_lvalue.p4 with i = 2."""
    sw = load_switch(P4_COMPAT / "oob_index_lvalue.p4")
    assert sw.process(0, bytes([1, 0x10, 0x20])) == [(0, bytes([1, 0x10, 7]))]
    with pytest.raises(P4RuntimeError, match="header stack index 2 out of range 0..1"):
        sw.process(0, bytes([2, 0x10, 0x20]))


# ------------------------------------------------------------------ v1model versions
PORTID_PROGRAM = _program("        PortId_t p = sm.ingress_port; sm.egress_spec = p;").replace(
    "#include <core.p4>\n", "#include <core.p4>\n{define}")


def test_v1model_defaults_to_20180101_without_portid():
    text = PORTID_PROGRAM.replace("{define}", "")
    with pytest.raises(P4Error, match="prog.p4:11:18: syntax error"):   # PortId_t is no type there
        compile_source(text, "prog.p4")
    # so a program may declare its own PortId_t, as the p4lang tutorials' flowcache does
    compile_source(text.replace("struct M {}", "typedef bit<9> PortId_t;\nstruct M {}"), "prog.p4")


def test_v1model_20200408_declares_portid():
    compile_source(PORTID_PROGRAM.replace("{define}", "#define V1MODEL_VERSION 20200408\n"), "prog.p4")


def test_unknown_v1model_version_is_a_located_error():
    text = PORTID_PROGRAM.replace("{define}", "#define V1MODEL_VERSION 20190101\n")
    with pytest.raises(P4Error) as ei:
        compile_source(text, "prog.p4")
    assert "unknown V1MODEL_VERSION" in str(ei.value)
    # reported at the program's own #define (v1model.p4's #error names the macro)
    assert (ei.value.loc.file, ei.value.loc.line, ei.value.loc.col) == ("prog.p4", 2, 9)


def test_v1model_versions_declare_the_externs_as_p4c_does():
    """20180101: counter/meter/register take a bit<32> index and register one type argument;
    20200408: the index type is a type parameter (register<T, I>, counter<I>, meter<I>)."""
    two_args = _program("        r.write(0, 1);", locals_="    register<bit<8>, bit<32>>(4) r;\n").replace(
        "#include <core.p4>\n", "#include <core.p4>\n{define}")
    with pytest.raises(P4Error, match="register takes 1 type argument"):
        compile_source(two_args.replace("{define}", ""), "prog.p4")
    compile_source(two_args.replace("{define}", "#define V1MODEL_VERSION 20200408\n"), "prog.p4")


def test_switch_refuses_a_program_beyond_the_limits(capsys):
    """``saatp switch PROGRAM`` stops before opening any port (``--allow-target-extensions``
    would run it)."""
    prog = str(EMBEDDED_ONLY / "stack_props_miss_drop.p4")
    assert saatp_main(["switch", prog]) == 1
    assert "'lastIndex' for stacks can only be used in a parser" in capsys.readouterr().err


def test_if_in_the_deparser():
    text = _program("        sm.egress_spec = 1;").replace(
        "apply { p.emit(h.h); }", "apply { if (h.h.isValid()) { p.emit(h.h); } }")
    e = _refusal(text)
    assert [x.message for x in e.errors] == [
        "[--Werror=unsupported] error: IfStatement: not supported within a deparser on this target"]
    assert e.errors[0].loc.line == text.splitlines().index(
        "control D(packet_out p, in H h) { apply { if (h.h.isValid()) { p.emit(h.h); } } }") + 1


# ------------------------------------------------------------------ STF forms p4c's runner reads
STF_FILES = sorted(list(P4_TESTS.rglob("*.stf")) + list(P4SRC.glob("*.stf")))


@pytest.mark.parametrize("stf", STF_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_stf_uses_forms_p4c_runner_reads(stf):
    """p4c 1.2.4.8's runner cannot lex ``&&&``, fails on ``value/len`` (lpm), has no command
    that compares a register, and refuses packet data with an odd number of hex digits."""
    problems = []
    for n, line in enumerate(stf.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        cmd = words[0].lower()
        if cmd in ("add", "setdefault"):
            if "&&&" in line or re.search(r":(0[xXbBoO])?[0-9a-fA-F*]+/[0-9]+", line):
                problems.append(f"{n}: use * digits for ternary and lpm values")
        elif cmd in ("packet", "expect"):
            digits = "".join(w for w in words[2:] if w != "$").replace("*", "0")
            if len(digits) % 2:
                problems.append(f"{n}: odd number of hex digits")
        elif cmd == "register_read" and len(words) > 3:
            problems.append(f"{n}: register_read cannot compare a value in p4c's runner")
    assert not problems, problems


# ------------------------------------------------------------------ conditional execution in actions
# p4c 1.2.4's BMv2 midend (midend/predication.h) turns an ``if`` in an action into ``?:``
# assignments; a call, an ``exit`` or code after a conditional ``return`` cannot be, and is
# refused.  Action and function calls are inlined first.
ACTIONS = """    counter(4, CounterType.packets) c;
    action drop_it() { mark_to_drop(sm); }
    action set_a() { h.h.a = 1; }
    action act(bit<8> v) {
{body}
    }
    table t { key = { h.h.a : exact; } actions = { act; } }
"""


@pytest.mark.parametrize("body, col, what", [
    ("        if (v == 1) { c.count(1); }", 23, "c.count"),
    ("        if (v == 1) { mark_to_drop(sm); } else { h.h.a = 2; }", 23, "mark_to_drop"),
    ("        if (v == 1) { h.h.setInvalid(); }", 23, "h.h.setInvalid"),
    ("        if (v == 1) { exit; }", 23, "exit"),
    ("        if (v == 1) { return; }\n        h.h.setValid();", 9, "h.h.setValid"),
])
def test_conditional_execution_in_actions(body, col, what):
    text = _program("        t.apply();", locals_=ACTIONS.replace("{body}", body))
    e = _refusal(text)
    line = text.splitlines().index(body.splitlines()[-1]) + 1
    assert str(e.errors[0]) == (f"prog.p4:{line}:{col}: [--Werror=target-error] error: {what}: "
                                "Conditional execution in actions unsupported on this target")


def test_conditional_call_of_an_action_is_inlined():
    # the call of drop_it is inlined: its mark_to_drop is what p4c reports, where it is written
    text = _program("        t.apply();", locals_=ACTIONS.replace("{body}", "        if (v == 1) { drop_it(); }"))
    e = _refusal(text)
    assert str(e.errors[0]).startswith(f"prog.p4:{text.splitlines().index(ACTIONS.splitlines()[1]) + 1}:24: ")
    assert "mark_to_drop: Conditional execution in actions" in str(e.errors[0])


@pytest.mark.parametrize("body", [
    "        if (v == 1) { h.h.a = 2; } else { h.h.n = 3; }\n        c.count(0);",   # assignments only
    "        if (v == 1) { set_a(); }",                  # an inlined action of assignments
    "        c.count(0);\n        drop_it();",           # unconditional calls
])
def test_what_predication_takes(body):
    compile_source(_program("        t.apply();", locals_=ACTIONS.replace("{body}", body)), "prog.p4")


# ------------------------------------------------------------------ externs, checksum controls, clone placement
def test_extern_without_bmv2_conversion():
    # v1model's deprecated Checksum16: p4c-bm2-ss registers no converter for it
    e = _refusal(_program("        h.h.w = ck.get({ h.h.a, h.h.n });", locals_="    Checksum16() ck;\n"))
    assert str(e.errors[0]) == ("prog.p4:10:5: [--Werror=unknown] error: Checksum16: unknown extern instance "
                                "(p4c's BMv2 back end has no conversion for it)")


def _with_compute(body: str) -> str:
    return _program("        sm.egress_spec = 1;").replace(
        "control C(inout H h, inout M m) { apply {} }", "control C(inout H h, inout M m) {\n    apply {\n"
        + body + "\n    }\n}")


@pytest.mark.parametrize("body, where, text", [
    ("        if (h.h.isValid()) { update_checksum(true, { h.h.a }, h.h.w, HashAlgorithm.csum16); }",
     (18, 9), "IfStatement: Only calls to update_checksum or update_checksum_with_payload allowed"),
    ("        h.h.n = 1;", (18, 9), "h.h.n = 1: Only calls to update_checksum or update_checksum_with_payload allowed"),
    ("        update_checksum(true, { h.h.a, h.h.n + 1 }, h.h.w, HashAlgorithm.csum16);",
     (18, 40), "h.h.n + 1: Computations are not supported in update_checksum"),
])
def test_checksum_control_takes_only_checksum_calls(body, where, text):
    src = _with_compute(body)
    e = _refusal(src)
    assert str(e.errors[0]) == f"prog.p4:{where[0]}:{where[1]}: [--Werror=unsupported] error: {text}"


def test_checksum_control_as_bmv2_takes_it():
    compile_source(_with_compute(
        "        update_checksum(h.h.isValid(), { h.h.a, 8w0, (bit<8>)1, h.s[0].a }, h.h.w, HashAlgorithm.csum16);"),
        "prog.p4")


@pytest.mark.parametrize("call, block, text", [
    ("clone(CloneType.I2E, 5);", "egress", "'clone(I2E, ...) not invoked in ingress clone"),
    ("clone_preserving_field_list(CloneType.E2E, 5, 1);", "ingress",
     "'clone_preserving_field_list(E2E, ...) not invoked in egress clone_preserving_field_list"),
    ("resubmit_preserving_field_list(1);", "egress",
     "'resubmit' can only be invoked in ingress resubmit_preserving_field_list"),
    ("recirculate_preserving_field_list(1);", "ingress",
     "'resubmit' can only be invoked in egress recirculate_preserving_field_list"),
])
def test_clone_resubmit_recirculate_only_where_simple_switch_runs_them(call, block, text):
    src = _program("        " + (call if block == "ingress" else "sm.egress_spec = 1;"))
    if block == "egress":
        src = src.replace("control E(inout H h, inout M m, inout standard_metadata_t sm) { apply {} }",
                          "control E(inout H h, inout M m, inout standard_metadata_t sm) { apply { " + call + " } }")
    e = _refusal(src)
    assert str(e.errors[0]).endswith(f"[--Werror=target-error] error: {text}")
