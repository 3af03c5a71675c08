"""STF files must use forms p4c's own runner (bmv2stf.py, p4c 1.2.4.8) reads too, unless run
leniently (``--lenient`` / ``lenient=True`` / a ``# saatp: lenient-stf`` comment): see
emulation/stf/p4c_forms.py for what that runner does with each refused form."""
from __future__ import annotations

from pathlib import Path

import pytest

from emulation.stf.p4c_forms import check_p4c_forms, p4c_form_problem
from emulation.stf.parser import StfError, parse_line
from emulation.stf.runner import main, run_stf

ROOT = Path(__file__).resolve().parents[3]
TABLES = ROOT / "tests" / "p4" / "tables_mixed_keys.p4"     # lpm + exact, ternary, egress exact

ACCEPTED = [
    "add t_vrf hdr.k.vrf:1 hdr.k.addr:0x0A****** set_lpm(v:1)",
    "add t_tern 10 hdr.k.tk:0x12** set_tern(v:0x0A)",
    "add t k:0b1*01 f(x:0b1)",
    "setdefault t_tern set_tern(v:3)",
    "packet 0 0000 0A0B",
    "expect 2 00 ** 0A $",
    "expect 3",
    "mirroring_add 5 3",
    "mc_mgrp_create 1",
    "mc_node_create 0 1 2",
    "mc_node_associate 1 0",
    "register_write r 0 0x2a",
    "register_read r 0",
    "counter_read c 1",
    "check_counter c(1) packets == 2",
    # an entry named for check_counter (stf_parser.py: ADD ... action EQUAL ID), as p4c's
    # p4_14_samples/counter1.stf writes it
    "add tab1 ethernet.dstAddr:0xa1a2a3a4a5a6 act(port:2) = A",
    "add tab1 600 dstAddr:0xa1a2a3a4a5a6 act(port:2) = A",
    "check_counter cnt($A) packets == 1",
    "remove all",
    "no_packet",
    "wait",
    "# a comment",
]

REFUSED = [
    ("add t k:10.0.0.0/8 a(x:1)", "V/LEN crashes its makeLpm"),
    ("add t k:0x0a000000/8 a(x:1)", "V/LEN crashes its makeLpm"),
    ("add t 1 k:0x0a&&&0xff a(x:1)", "V&&&M mask"),
    ("add t 1 k:1..5 a(x:1)", "no range keys"),
    ("add t k:10.0.0.1 a(x:1)", "decimal, 0x or 0b only"),
    ("add t k:0o17 a(x:1)", "decimal, 0x or 0b only"),
    ("add t k:1 a(x:00:00:00:00:01:02)", "numbers are decimal"),
    ("add t k:1 a(x:0x0a_00)", "numbers are decimal"),
    ("add t k:1 a(1)", "arguments are named"),
    ("add t k:1 a", "with parentheses"),
    ("add t k:1 a = A", "with parentheses"),
    ("setdefault t a", "with parentheses"),
    ("packet 0 123", "odd number of hex digits (3)"),
    ("remove $e1", "only 'remove all'"),
    ("register_read r 0 0x41", "NAME INDEX only"),
    ("counter_read c 0 packets == 1", "NAME INDEX only"),
    ("mc_node_create 0 1 | 2", "LAG"),
    ("mc_mgrp_destroy 1", "no command 'mc_mgrp_destroy'"),
    ("counter_reset c", "no command 'counter_reset'"),
    ("act_prof_create_group ecmp", "no command 'act_prof_create_group'"),
]


@pytest.mark.parametrize("line", ACCEPTED)
def test_forms_p4c_reads(line):
    assert p4c_form_problem(line, parse_line(line, 1)) is None


@pytest.mark.parametrize("line, why", REFUSED)
def test_forms_p4c_refuses_name_the_line(line, why):
    assert why in (p4c_form_problem(line, parse_line(line, 1)) or "")
    with pytest.raises(StfError) as ei:
        check_p4c_forms(f"# header\n\n{line}\n", "t.stf")
    assert str(ei.value).startswith("t.stf:3: p4c's STF runner does not accept this")
    assert "--lenient" in str(ei.value)


def _stf(tmp_path, text: str) -> Path:
    p = tmp_path / "t.stf"
    p.write_text(text)
    return p


def test_run_stf_refuses_unless_lenient(tmp_path, capsys):
    body = ("add t_vrf hdr.k.vrf:1 hdr.k.addr:0x0A000000/8 set_lpm(v:1)\n"
            "packet 0 0000000000020000000000011234010A010203123402000000\n"
            "expect 2 0000000000020000000000011234010A010203123402*****\n")
    stf = _stf(tmp_path, body)
    with pytest.raises(StfError, match=r"t\.stf:1: .*V/LEN"):
        run_stf(str(TABLES), str(stf))
    assert main([str(TABLES), str(stf)]) == 2
    assert f"{stf}:1: p4c's STF runner does not accept this" in capsys.readouterr().err
    assert run_stf(str(TABLES), str(stf), lenient=True).ok
    assert main([str(TABLES), str(stf), "--lenient"]) == 0
    # the same entry in the form both runners read
    stf.write_text(body.replace("0x0A000000/8", "0x0A******"))
    assert run_stf(str(TABLES), str(stf)).ok
    # a file may ask for the extensions itself
    stf.write_text("# saatp: lenient-stf (V/LEN prefixes)\n" + body)
    assert run_stf(str(TABLES), str(stf)).ok


def test_decimal_ternary_and_lpm_values_are_refused_by_key_kind(tmp_path):
    stf = _stf(tmp_path, "add t_tern 10 hdr.k.tk:4660 set_tern(v:0x0A)\n")
    with pytest.raises(StfError, match=r"t\.stf:1: .*decimal value for a ternary key"):
        run_stf(str(TABLES), str(stf))
    stf.write_text("add t_vrf hdr.k.vrf:1 hdr.k.addr:167772160 set_lpm(v:1)\n")
    with pytest.raises(StfError, match=r"t\.stf:1: .*decimal value for an lpm key"):
        run_stf(str(TABLES), str(stf))
    stf.write_text("add t_vrf hdr.k.vrf:1 hdr.k.addr:167772160 set_lpm(v:1)\n")
    assert run_stf(str(TABLES), str(stf), lenient=True).ok      # exact keys take decimals either way


def test_entry_handles_and_check_counter_in_p4c_form(tmp_path):
    """``add ... = A`` then ``check_counter NAME($A)``, as p4c's p4_14_samples/counter1.stf
    writes them: accepted without --lenient; the direct counter counts each packet as
    received (20 bytes here)."""
    counters = ROOT / "tests" / "p4" / "counters.p4"
    pkt = "0000000000020000000000011234000000000000"
    stf = _stf(tmp_path, f"add fwd_table hdr.ethernet.etherType:0x1234 fwd(port:2) = A\n"
                         f"packet 0 {pkt}\npacket 0 {pkt}\n"
                         f"expect 2 {pkt} $\nexpect 2 {pkt} $\n"
                         f"check_counter fwd_counter($A) packets == 2\n"
                         f"check_counter fwd_counter($A) bytes == 40\n")
    res = run_stf(str(counters), str(stf))
    assert res.ok, res.messages
    assert res.counts["checks"] == 2
    stf.write_text(stf.read_text().replace("packets == 2", "packets == 3"))
    res = run_stf(str(counters), str(stf))
    assert not res.ok
    assert any(m.startswith(f"{stf}:6: counter fwd_counter($A) packets is 2, expected == 3")
               for m in res.messages), res.messages
