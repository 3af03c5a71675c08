"""The packet-test API (emulation.testing) against a real ``saatp switch`` process."""
from __future__ import annotations

import pytest
from scapy.all import IP, UDP, Ether
from testsupport import paths

from emulation.testing.packets import Masked
from emulation.testing.pytest_plugin import p4_switch  # noqa: F401  (the fixture)
from emulation.testing.switch_under_test import start_switch

ROUTER = paths.REPO / "p4src" / "basic_router.p4"
ROUTER_MAC = "00:00:00:00:01:00"


def routed(pkt, dmac):
    exp = pkt.copy()
    exp[Ether].src, exp[Ether].dst = ROUTER_MAC, dmac
    exp[IP].ttl -= 1
    del exp[IP].chksum
    return Ether(bytes(exp))


def pkt_to(dst, ttl=64):
    return Ether(dst=ROUTER_MAC, src="00:00:00:00:00:aa") / IP(src="10.0.1.1", dst=dst, ttl=ttl) / UDP() / (b"x" * 20)


def test_send_expect_and_no_packet(p4_switch):  # noqa: F811
    sw = p4_switch(ROUTER, {"h0": 0, "h1": 1, "h2": 2})
    c = sw.p4runtime()
    c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000100, 24)}, "ipv4_forward", {"dstAddr": 0x080000000111, "port": 1})
    p = pkt_to("10.0.1.5")
    sw.send("h0", p)
    got = sw.expect("h1", routed(p, "08:00:00:00:01:11"))
    assert Ether(got)[IP].ttl == 63
    sw.expect_no_packet("h2")
    sw.send("h0", pkt_to("11.1.1.1"))          # no route: dropped
    sw.expect_no_packet("h1")
    # a masked expectation ignores the fields it is told to
    p = pkt_to("10.0.1.9", ttl=7)
    sw.send("h0", p)
    sw.expect("h1", Masked(pkt_to("10.0.1.9", ttl=99)).ignore(IP, "ttl", "chksum").ignore_bytes(0, 12))
    st = sw.stats()["ports"]
    assert st["0"]["rx"] == 3 and st["0"]["forwarded"] == 2 and st["0"]["pipeline"] == 1
    assert st["1"]["tx"] == 2


def test_failed_expectations_say_what_differs():
    with start_switch(ROUTER, ["a", "b"]) as sw:
        c = sw.p4runtime()
        c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)}, "ipv4_forward", {"dstAddr": 2, "port": 1})
        p = pkt_to("10.2.3.4")
        sw.send("a", p)
        with pytest.raises(AssertionError, match="first difference at byte"):
            sw.expect("b", p)                                  # not rewritten as the program does
        sw.send("a", p)
        with pytest.raises(AssertionError, match=r"unexpected packet of \d+ bytes on b \(switch port 1\)"):
            sw.expect_no_packet("b", timeout=2)
        with pytest.raises(AssertionError, match=r"no packet on a \(switch port 0\) within 0.2 s"):
            sw.expect("a", p, timeout=0.2)
        with pytest.raises(KeyError, match="no port named 'c'"):
            sw.send("c", p)
        assert sw.packets.unexpected() == {"b": 1}
