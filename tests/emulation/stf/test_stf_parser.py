"""The STF parser (emulation/stf/parser.py): commands, values, errors with file:line."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from emulation.stf.parser import (Add, CounterRead, CounterWrite, Expect, Masked, McGroupCreate,
                                  McNodeAssociate, McNodeCreate, MirroringAdd, NoPacket, Num,
                                  Packet, Pattern, Prefix, RangeV, RegisterRead, RegisterWrite,
                                  Remove, SetDefault, StfError, Wait, parse_match_value,
                                  parse_number, parse_stf)


def one(text):
    cmds = parse_stf(text, "t.stf")
    assert len(cmds) == 1
    return cmds[0]


def test_add_exact_with_args():
    c = one("add MyIngress.dmac hdr.ethernet.dstAddr:0x000000000001 MyIngress.forward(port:2)")
    assert isinstance(c, Add)
    assert c.table == "MyIngress.dmac" and c.priority is None and c.handle_id is None
    assert c.matches == [("hdr.ethernet.dstAddr", Num(1, 12, 4))]
    assert c.action == "MyIngress.forward" and c.args == [("port", 2)]


def test_add_priority_multiple_keys_spaces_in_args_and_id():
    c = one("ADD acl 100 h.a:0x0a&&&0xff  h.b:0b1*0* act( x : 1 , y:0x10 ) = A  # comment")
    assert c.priority == 100
    assert c.matches == [("h.a", Masked(0x0A, 0xFF)), ("h.b", Pattern(0b1000, 0b1010, 4, 1, 2))]
    assert c.action == "act" and c.args == [("x", 1), ("y", 16)]
    assert c.handle_id == "A"


def test_add_misc_value_forms():
    c = one("add t k1:10.0.0.0/8 k2:1..5 k3:0x**0A k4:aa:bb:cc:dd:ee:ff k5:10.1.2.3 "
            "hdr.h.isValid():1 f[7:0]:3 a()")
    m = dict(c.matches)
    assert m["k1"] == Prefix(0x0A000000, 8)
    assert m["k2"] == RangeV(1, 5)
    assert m["k3"] == Pattern(0x000A, 0x00FF, 4, 4, 2)
    assert m["k4"] == Num(0xAABBCCDDEEFF)
    assert m["k5"] == Num(0x0A010203)
    assert m["hdr.h.isValid()"] == Num(1, 1, 0)
    assert m["f[7:0]"] == Num(3, 1, 0)
    assert c.action == "a" and c.args == []


def test_add_key_colon_with_spaces_and_id_glued():
    c = one("add t k : 5 act(p:1)=B")
    assert c.matches == [("k", Num(5, 1, 0))] and c.handle_id == "B"


def test_add_action_args_mac_and_ip():
    c = one("add t k:1 set(dmac:00:00:00:00:00:01, ip:10.0.0.1)")
    assert c.args == [("dmac", 1), ("ip", 0x0A000001)]


def test_setdefault_and_positional_args():
    c = one("setdefault MyIngress.t MyIngress.a(1, 0x2)")
    assert isinstance(c, SetDefault) and c.table == "MyIngress.t" and c.action == "MyIngress.a"
    assert c.args == [(None, 1), (None, 2)]
    c = one("setdefault t NoAction()")
    assert c.args == []


def test_packet_and_expect():
    p = one("packet 1 0000 0000 00aa  ffff")
    assert isinstance(p, Packet) and p.port == 1 and p.data == bytes.fromhex("00000000 00aa ffff")
    e = one("expect 2 00** 00aa $")
    assert isinstance(e, Expect) and e.port == 2 and e.pattern == "00**00AA" and e.exact
    e = one("expect 3 0a0b")
    assert e.pattern == "0A0B" and not e.exact
    e = one("expect 4")
    assert e.pattern is None


def test_multicast_mirroring_registers_counters():
    cmds = parse_stf("""
# a comment line

mc_mgrp_create 1
mc_node_create 0 1 2 3
mc_node_create 5 4 | 1
mc_node_associate 1 0
mirroring_add 5 3
mirroring_add_mc 6 1
register_write r 2 0x10
register_read r 2 16
register_read MyIngress.r 3
counter_read c 1 packets 2 bytes == 120
check_counter c(3) bytes >= 64
check_counter ctr($A)
counter_write c 1 5 500
wait
no_packet
remove all
remove $A
""", "x.stf")
    kinds = [type(c) for c in cmds]
    assert kinds[:4] == [McGroupCreate, McNodeCreate, McNodeCreate, McNodeAssociate]
    assert cmds[0].line == 4
    assert cmds[1].rid == 0 and cmds[1].ports == [1, 2, 3]
    assert cmds[2].rid == 5 and cmds[2].ports == [4]          # lag list ignored
    assert cmds[4] == MirroringAdd(8, 5, port=3)
    assert cmds[5] == MirroringAdd(9, 6, mgid=1)
    assert cmds[6] == RegisterWrite(10, "r", 2, 16)
    assert cmds[7] == RegisterRead(11, "r", 2, 16)
    assert cmds[8] == RegisterRead(12, "MyIngress.r", 3, None)
    assert cmds[9] == CounterRead(13, "c", 1, None, [("packets", "==", 2), ("bytes", "==", 120)])
    assert cmds[10] == CounterRead(14, "c", 3, None, [("bytes", ">=", 64)])
    assert cmds[11] == CounterRead(15, "ctr", None, "A", [])
    assert cmds[12] == CounterWrite(16, "c", 1, 5, 500)
    assert isinstance(cmds[13], Wait) and isinstance(cmds[14], NoPacket)
    assert cmds[15] == Remove(19, all=True)
    assert cmds[16] == Remove(20, handle_id="A")


def test_odd_hex_digit_count_ends_in_a_low_nibble_byte():
    # as p4c's runner: digits are taken two at a time, a lone last digit X is the byte 0x0X
    assert one("packet 1 0a0").data == bytes([0x0A, 0x00])
    assert one("packet 2 12 3").data == bytes([0x12, 0x03])


def test_check_counter_default_kind_is_packets():
    c = one("check_counter cnt(1) == 2")
    assert c.checks == [("packets", "==", 2)]


@pytest.mark.parametrize("text,needle", [
    ("frobnicate 1 2", "unknown STF command 'frobnicate'"),
    ("packet 1 0g", "unexpected 'g'"),
    ("packet x 00", "port"),
    ("expect 1 00zz", "unexpected 'z'"),
    ("add t k:1", "missing action"),
    ("add t k:0xZZ a()", "key k"),
    ("add t k a()", "expected KEY:VALUE"),
    ("add t k:1 a(x:1", "unbalanced"),
    ("mc_node_associate 1", "usage: mc_node_associate"),
    ("register_write r 1", "usage: register_write"),
    ("check_counter c 1", "usage: check_counter"),
    ("check_counter c(1) packets", "missing value"),
    ("add t k:1/x a()", "prefix length"),
    ("add t k:300.1.1.1 a()", "bad IPv4"),
    ("add t k:5 a(x:0x*1)", "wildcard"),
])
def test_errors_have_file_and_line(text, needle):
    with pytest.raises(StfError) as ei:
        parse_stf("# first line\n\n" + text, "bad.stf")
    msg = str(ei.value)
    assert msg.startswith("bad.stf:3: "), msg
    assert needle in msg, msg
    assert ei.value.line == 3


def test_parse_number_forms():
    assert parse_number("0x1F") == Num(31, 2, 4)
    assert parse_number("0b101") == Num(5, 3, 1)
    assert parse_number("0o17") == Num(15, 2, 3)
    assert parse_number("42") == Num(42, 2, 0)
    assert parse_number("-3").value == -3
    assert parse_number("::1").value == 1
    assert parse_number("2001:db8::1").value == 0x20010DB8000000000000000000000001
    with pytest.raises(ValueError):
        parse_number("0x")
    with pytest.raises(ValueError):
        parse_number("abc")
    assert parse_match_value("0x0a&&&0xff") == Masked(10, 255)
    assert parse_match_value("0x0A000000/8") == Prefix(0x0A000000, 8)


@given(st.integers(0, 2**64), st.sampled_from(["x", "b", "o", ""]))
def test_parse_number_roundtrip(v, base):
    text = {"x": hex(v), "b": bin(v), "o": oct(v), "": str(v)}[base]
    assert parse_number(text).value == v


@given(st.lists(st.sampled_from("0123456789abcdef*"), min_size=1, max_size=16))
def test_nibble_pattern_value_and_mask(digits):
    p = parse_match_value("0x" + "".join(digits))
    n = len(digits)
    if "*" not in digits:
        assert isinstance(p, Num) and p.value == int("".join(digits), 16) and p.digits == n
        return
    assert isinstance(p, Pattern) and p.wild_digits == digits.count("*")
    for i, d in enumerate(digits):
        sh = 4 * (n - 1 - i)
        if d == "*":
            assert (p.mask >> sh) & 0xF == 0 and (p.value >> sh) & 0xF == 0
        else:
            assert (p.mask >> sh) & 0xF == 0xF and (p.value >> sh) & 0xF == int(d, 16)


_WORDS = ["add", "setdefault", "packet", "expect", "mc_node_create", "check_counter", "register_read",
          "counter_read", "remove", "mirroring_add", "t", "k:1", "a(x:1)", "0x**", "(", ")", ":", "=",
          "$", "&&&", "..", "/", "1", "0xzz", "#", "==", "packets", "bytes", "|", ",", "a(", "b)"]


@given(st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map(" ".join), max_size=5).map("\n".join))
def test_fuzz_only_stf_errors(text):
    # bad input must give an StfError (file:line: message), never another exception
    try:
        parse_stf(text, "f.stf")
    except StfError as e:
        assert str(e).startswith("f.stf:")


@given(st.text(max_size=60))
def test_fuzz_random_text(text):
    try:
        parse_stf(text, "f.stf")
    except StfError as e:
        assert str(e).startswith("f.stf:")
