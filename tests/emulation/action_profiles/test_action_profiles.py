"""Action profiles and selectors on the embedded target (emulation/v1model/action_profiles.py).

Expected member choices come from a model written here from BMv2's rule (not from the
target's code): crc16 (CRC-16/ARC, bit by bit) of srcAddr ++ dstAddr ++ protocol, then
member number ``hash % n`` of the group's member handles in increasing order.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from scapy.all import IP, TCP, UDP, Ether, raw

from emulation.stf.parser import StfError
from emulation.stf.runner import run_stf, run_stf_text
from emulation.v1model.action_profiles import ActionProfileError
from emulation.v1model.load import load_switch
from host_agent.match import Exact, Lpm
from testsupport.crc_reference import crc16_arc

HERE = Path(__file__).parent
PROG = HERE / "ecmp_selector.p4"


def ip_int(s: str) -> int:
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def expected_member(src: str, dst: str, proto: int, members: list[int]) -> int:
    data = ip_int(src).to_bytes(4, "big") + ip_int(dst).to_bytes(4, "big") + bytes([proto])
    ordered = sorted(members)
    return ordered[crc16_arc(data) % len(ordered)]


def flows(n: int):
    for i in range(n):
        proto = (6, 17)[i % 2]
        yield f"192.168.{i // 200}.{i % 200 + 1}", f"10.{i % 7}.{i % 5}.{i % 250 + 1}", proto


def frame(src: str, dst: str, proto: int, ttl: int = 64) -> bytes:
    l4 = TCP(sport=1000, dport=80) if proto == 6 else UDP(sport=1000, dport=53)
    return raw(Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02") / IP(src=src, dst=dst, ttl=ttl) / l4)


@pytest.fixture
def sw():
    return load_switch(str(PROG))


def nhop_port(member: int) -> int:
    return member + 1


def make_group(sw, n: int) -> tuple[list[int], int]:
    ms = [sw.act_prof_create_member("ecmp", "set_nhop", [nhop_port(i), 0x0A0000000000 + i]) for i in range(n)]
    g = sw.act_prof_create_group("ecmp")
    for m in ms:
        sw.act_prof_add_member_to_group("ecmp", m, g)
    return ms, g


def out_port(sw, src, dst, proto) -> int | None:
    out = sw.process(0, frame(src, dst, proto))
    assert len(out) <= 1
    return out[0][0] if out else None


def test_selector_picks_the_member_bmv2_picks(sw):
    ms, g = make_group(sw, 4)
    assert ms == [0, 1, 2, 3] and g == 0
    sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    seen = set()
    for src, dst, proto in flows(300):
        want = nhop_port(expected_member(src, dst, proto, ms))
        assert out_port(sw, src, dst, proto) == want, (src, dst, proto)
        seen.add(want)
    assert seen == {1, 2, 3, 4}          # the flows spread over every member


def test_output_frame_is_rewritten_by_the_chosen_member(sw):
    ms, g = make_group(sw, 3)
    sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    src, dst, proto = "192.168.7.9", "10.3.2.1", 17
    m = expected_member(src, dst, proto, ms)
    (port, data), = sw.process(0, frame(src, dst, proto, ttl=9))
    want = Ether(frame(src, dst, proto, ttl=8))
    want.dst = f"0a:00:00:00:00:{m:02x}"
    del want[IP].chksum                 # the program does not update the checksum: keep the old one
    want[IP].chksum = Ether(frame(src, dst, proto, ttl=9))[IP].chksum
    assert port == nhop_port(m) and data == raw(want)


def test_group_changes_follow_the_member_order(sw):
    ms, g = make_group(sw, 4)
    sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    sw.act_prof_remove_member_from_group("ecmp", ms[1], g)
    live = [ms[0], ms[2], ms[3]]
    for src, dst, proto in flows(60):
        assert out_port(sw, src, dst, proto) == nhop_port(expected_member(src, dst, proto, live))
    # a member deleted and re-created takes the lowest free handle (BMv2's handle manager)
    sw.act_prof_delete_member("ecmp", ms[1])
    again = sw.act_prof_create_member("ecmp", "set_nhop", [9, 0x0A0000000009])
    assert again == ms[1]
    sw.act_prof_add_member_to_group("ecmp", again, g)
    for src, dst, proto in flows(60):
        m = expected_member(src, dst, proto, ms)
        assert out_port(sw, src, dst, proto) == (9 if m == again else nhop_port(m))


def test_member_entries_and_default_member(sw):
    ms, g = make_group(sw, 2)
    sw.table_indirect_add("ecmp", [Lpm(ip_int("10.9.0.0"), 16)], ms[1])
    sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    for src, dst, proto in flows(20):
        dst = "10.9.1." + dst.rsplit(".", 1)[1]
        assert out_port(sw, src, dst, proto) == nhop_port(ms[1])
    # a miss runs the default action (drop) until a default member is set
    assert out_port(sw, "1.1.1.1", "20.0.0.1", 6) is None
    sw.table_indirect_set_default("ecmp", ms[0])
    assert out_port(sw, "1.1.1.1", "20.0.0.1", 6) == nhop_port(ms[0])


def test_refusals_as_bmv2(sw):
    ms, g = make_group(sw, 2)
    empty = sw.act_prof_create_group("ecmp")
    with pytest.raises(ActionProfileError, match="empty"):
        sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], empty)
    assert sw.table_entries("ecmp") == []
    with pytest.raises(ActionProfileError, match="still used"):
        sw.act_prof_delete_member("ecmp", ms[0])          # in a group
    h = sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    with pytest.raises(ActionProfileError, match="still used"):
        sw.act_prof_delete_group("ecmp", g)               # used by an entry
    with pytest.raises(ActionProfileError, match="already in group"):
        sw.act_prof_add_member_to_group("ecmp", ms[0], g)
    with pytest.raises(ActionProfileError, match="no member"):
        sw.act_prof_add_member_to_group("ecmp", 99, g)
    with pytest.raises(ActionProfileError, match="no selector"):
        sw.act_prof_create_group("smac_profile")
    with pytest.raises(ValueError, match="takes 2 argument"):
        sw.act_prof_create_member("ecmp", "set_nhop", [1])
    # emptying a group in use: the lookup runs no action (BMv2: "empty group"), the packet
    # leaves on port 0 unchanged
    for m in ms:
        sw.act_prof_remove_member_from_group("ecmp", m, g)
    f = frame("1.2.3.4", "10.1.1.1", 6)
    assert sw.process(0, f) == [(0, f)]
    sw.table_delete("ecmp", h)
    sw.act_prof_delete_group("ecmp", g)
    sw.act_prof_delete_member("ecmp", ms[0])


def test_action_profile_without_selector_shares_members(sw):
    ms, g = make_group(sw, 1)
    sw.table_indirect_add_with_group("ecmp", [Lpm(ip_int("10.0.0.0"), 8)], g)
    m = sw.act_prof_create_member("smac_profile", "set_smac", [0x02AABBCCDDEE])
    sw.table_indirect_add("smac_rewrite", [Exact(1)], m)
    (port, data), = sw.process(0, frame("1.2.3.4", "10.1.1.1", 6))
    assert port == 1 and Ether(data).src == "02:aa:bb:cc:dd:ee"
    # a direct action on an indirect table (STF/Python form) creates a member for the entry
    h = sw.table_add("smac_rewrite", "set_smac", [Exact(2)], [0x02000000002])
    assert len(sw.action_profile("smac_profile").members) == 2
    sw.table_delete("smac_rewrite", h)
    assert list(sw.action_profile("smac_profile").members) == [m]


STF_HEAD = """\
# saatp: lenient-stf  (act_prof_* commands and $member/$group targets are saatp extensions: p4c's STF runner has no action-profile commands)
act_prof_create_member ecmp set_nhop(port:1, dmac:0x0a0000000000)
act_prof_create_member ecmp set_nhop(port:2, dmac:0x0a0000000001)
act_prof_create_member ecmp set_nhop(port:3, dmac:0x0a0000000002)
act_prof_create_group ecmp
act_prof_add_member_to_group ecmp 0 0
act_prof_add_member_to_group ecmp 1 0
act_prof_add_member_to_group ecmp 2 0
add ecmp hdr.ipv4.dstAddr:10.0.0.0/8 $group(0)
act_prof_create_member smac_profile set_smac(smac:0x02aabbccddee)
add smac_rewrite sm.egress_spec:2 $member(0)
"""


def stf_for_flows(n: int) -> str:
    lines = [STF_HEAD]
    for src, dst, proto in flows(n):
        m = expected_member(src, dst, proto, [0, 1, 2])
        f = frame(src, dst, proto, ttl=64)
        e = Ether(f)
        e.dst = f"0a:00:00:00:00:{m:02x}"
        e[IP].ttl = 63
        e[IP].chksum = Ether(f)[IP].chksum
        if m == 1:
            e.src = "02:aa:bb:cc:dd:ee"
        lines.append(f"packet 0 {raw(Ether(f)).hex()}")
        lines.append(f"expect {m + 1} {raw(e).hex()}$")
    return "\n".join(lines) + "\n"


def test_stf_commands(sw):
    res = run_stf_text(sw, stf_for_flows(40), "ecmp.stf")
    assert res.ok, res.messages


def test_stf_file_beside_the_program():
    # the documented example; its expected packets were made by stf_for_flows(12)
    stf = PROG.with_suffix(".stf")
    assert stf.read_text() == stf_for_flows(12)
    res = run_stf(str(PROG), str(stf), lenient=True)   # act_prof_*: not in p4c's STF runner
    assert res.ok, res.messages


def test_stf_errors_name_the_line(sw):
    with pytest.raises(StfError, match=r"x.stf:2: .*no member"):
        run_stf_text(sw, "act_prof_create_group ecmp\nact_prof_add_member_to_group ecmp 5 0\n", "x.stf")
    with pytest.raises(StfError, match=r"x.stf:1: usage: act_prof_delete_group"):
        run_stf_text(sw, "act_prof_delete_group ecmp\n", "x.stf")


INVALID_KEY_PROG = """
#include <core.p4>
#include <v1model.p4>
header a_t { bit<8> x; }
header b_t { bit<8> y; }
struct h_t { a_t a; b_t b; }
struct m_t { }
parser P(packet_in pkt, out h_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.a); transition select(hdr.a.x) { 0: accept; default: more; } }
    state more { pkt.extract(hdr.b); transition accept; }
}
control VC(inout h_t hdr, inout m_t m) { apply { } }
control I(inout h_t hdr, inout m_t m, inout standard_metadata_t sm) {
    action fwd(bit<9> p) { sm.egress_spec = p; }
    table t {
        key = { hdr.a.x : ternary; hdr.b.y : selector; hdr.a.x : selector; }
        actions = { fwd; }
        implementation = action_selector(HashAlgorithm.identity, 32w16, 32w16);
    }
    apply { t.apply(); }
}
control E(inout h_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout h_t hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in h_t hdr) { apply { pkt.emit(hdr.a); pkt.emit(hdr.b); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_selector_key_of_an_invalid_header_adds_no_bits(tmp_path):
    # identity hash: the input bytes as a number.  With b valid the input is y ++ x (16 bits);
    # with b invalid it is x alone (8 bits), as BMv2's field-list builder skips invalid headers
    p = tmp_path / "inv.p4"
    p.write_text(INVALID_KEY_PROG)
    sw = load_switch(str(p))
    ms = [sw.act_prof_create_member("t", "fwd", [i + 1]) for i in range(7)]
    g = sw.act_prof_create_group("t")
    for m in ms:
        sw.act_prof_add_member_to_group("t", m, g)
    from host_agent.match import Ternary
    sw.table_indirect_add_with_group("t", [Ternary(0, 0)], g, priority=1)
    for x, y in ((5, 200), (9, 3), (0x11, 0x22)):
        out = sw.process(0, bytes([x, y]))          # x != 0: b parsed
        assert out[0][0] == ((y << 8 | x) % 7) + 1
    assert ((78 << 8) % 7) + 1 != 1                 # what hashing y too would give
    out = sw.process(0, bytes([0, 78]))              # x == 0: b invalid, input is x = 0
    assert out[0][0] == (0 % 7) + 1
