"""tests/p4runtime/programs/router_cpu.p4 on the embedded v1model target, packet by packet.

The P4Runtime server and switch-process tests use this program; here each of its
behaviours is checked directly against ``Switch.process`` with what BMv2 would emit.
"""
from __future__ import annotations


import pytest

from emulation.v1model.hashes import csum16
from host_agent.match import Lpm, Ternary
from emulation.v1model.load import load_switch
from testsupport import p4rt_paths

ROUTER = p4rt_paths.PROGRAMS / "router_cpu.p4"
CPU = 64
SW_MAC = bytes.fromhex("0200000000fe")
H1_MAC = bytes.fromhex("020000000001")


def ipv4(dst: bytes, src: bytes = bytes([10, 0, 1, 1]), ttl: int = 64, proto: int = 17,
         dst_mac: bytes = SW_MAC, payload: bytes = bytes(8)) -> bytes:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[2:4] = (20 + len(payload)).to_bytes(2, "big")
    ip[8], ip[9] = ttl, proto
    ip[12:16], ip[16:20] = src, dst
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    return dst_mac + H1_MAC + b"\x08\x00" + bytes(ip) + payload


@pytest.fixture
def sw():
    s = load_switch(str(ROUTER), cpu_port=CPU)
    s.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)},
                {"dstAddr": 0x020000000002, "port": 2})
    s.mc_set_group(1, [(1, 0), (2, 0), (3, 0)])
    return s


def test_routed_frame_rewritten_ttl_and_checksum(sw):
    f = ipv4(bytes([10, 0, 2, 9]), payload=b"abcdefgh")
    ((port, out),) = sw.process(1, f)
    assert port == 2
    assert out[:6] == bytes.fromhex("020000000002") and out[6:12] == SW_MAC     # new dst, old dst as src
    assert out[22] == 63 and csum16(out[14:34]) == 0                            # TTL - 1, valid checksum
    assert out[34:] == b"abcdefgh" and len(out) == len(f)
    assert sw.register_read("last_ttl", 1) == 64
    assert sw.counter_read("port_counter", 1) == (1, len(f))


@pytest.mark.parametrize("ttl", [0, 1])
def test_expiring_ttl_is_dropped_but_still_recorded(sw, ttl):
    assert sw.process(3, ipv4(bytes([10, 0, 2, 9]), ttl=ttl)) == []
    assert sw.register_read("last_ttl", 3) == ttl


def test_miss_and_noaction_entry_drop(sw):
    assert sw.process(1, ipv4(bytes([10, 9, 9, 9]))) == []                    # default drop
    sw.table_add("ipv4_lpm", "NoAction", {"hdr.ipv4.dstAddr": Lpm(0x0A090000, 16)})
    assert sw.process(1, ipv4(bytes([10, 9, 9, 9]))) == []                    # NoAction does not forward


def test_broadcast_and_arp_flood_except_ingress(sw):
    arp = b"\xff" * 6 + H1_MAC + b"\x08\x06" + bytes(28)
    assert sorted(p for p, _ in sw.process(2, arp)) == [1, 3]
    assert all(f == arp for _, f in sw.process(2, arp))
    unicast_arp = SW_MAC + H1_MAC + b"\x08\x06" + bytes(28)
    assert sorted(p for p, _ in sw.process(1, unicast_arp)) == [2, 3]
    # an IPv4 broadcast is flooded unchanged (no TTL decrement, no lookup)
    bc = ipv4(bytes([10, 0, 2, 255]), dst_mac=b"\xff" * 6)
    out = sw.process(3, bc)
    assert sorted(p for p, _ in out) == [1, 2] and all(f == bc for _, f in out)
    assert sw.register_read("last_ttl", 3) == 0


def test_cpu_port_packet_out_and_packet_in(sw):
    # packet_out{egress_port=5}: whatever follows leaves unchanged, even if it is no Ethernet frame
    assert sw.process(CPU, (5 << 7).to_bytes(2, "big") + b"xyz") == [(5, b"xyz")]
    assert sw.process(CPU, b"\x01") == []                                      # no whole packet_out header
    f = SW_MAC + H1_MAC + b"\x88\xb5" + b"to the controller"
    assert sw.process(7, f) == [(CPU, ((7 << 7)).to_bytes(2, "big") + f)]
    assert sw.counter_read("port_counter", 7) == (1, len(f))


def test_learn_digest(sw):
    f = b"\xff" * 6 + bytes.fromhex("020000000042") + b"\x88\xb6" + bytes(20)
    assert sw.process(4, f) == []
    assert [(d[0], d[2]) for d in sw.digests] == [("learn_t", {"srcAddr": 0x020000000042, "ingress_port": 4})]


def test_short_and_unknown_frames_dropped(sw):
    assert sw.process(1, b"\x00" * 10) == []
    assert sw.counter_read("port_counter", 1) == (0, 0)                      # not even an Ethernet header
    truncated = ipv4(bytes([10, 0, 2, 9]))[:30]
    assert sw.process(1, truncated) == []
    assert sw.counter_read("port_counter", 1) == (1, 30)
    assert sw.process(1, SW_MAC + H1_MAC + b"\x86\xdd" + bytes(40)) == []    # IPv6: not routed


def test_acl_counts_ipv4_only_by_priority(sw):
    hi = sw.table_add("acl", "set_mark", {"hdr.ipv4.srcAddr": Ternary(0x0A000100, 0xFFFFFF00),
                                          "hdr.ipv4.protocol": 17}, {"mark": 1}, priority=5)
    lo = sw.table_add("acl", "set_mark", {"hdr.ipv4.srcAddr": Ternary(0, 0), "hdr.ipv4.protocol": 6},
                      {"mark": 2}, priority=1)
    f = ipv4(bytes([10, 0, 2, 9]))
    sw.process(1, f)
    sw.process(1, ipv4(bytes([10, 0, 2, 9]), src=bytes([192, 168, 0, 1]), proto=6))
    sw.process(1, b"\xff" * 6 + H1_MAC + b"\x08\x06" + bytes(28))            # ARP: no ACL lookup
    assert sw.direct_counter_read("acl", hi) == (1, len(f))
    assert sw.direct_counter_read("acl", lo)[0] == 1
