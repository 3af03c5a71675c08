"""A PTF test of p4src/basic_router.p4 on ``saatp switch`` (example; see docs/packet-testing.md).

Run it (ports 0..3 of the switch; the switch's P4Runtime address arrives as the test
parameter ``grpc_addr``)::

    # no root: UDP-tunnel ports and our PTF platform
    python -m emulation.testing.ptf_runner p4src/basic_router.p4 --test-dir tests/ptf --ports 4
    # root: veth pairs in a network namespace, PTF's standard raw-socket ports
    python -m emulation.testing.ptf_runner p4src/basic_router.p4 --test-dir tests/ptf --ports 4 --mode veth

Expected packets are built with scapy from what the program does (TTL - 1, new MACs,
IPv4 checksum recomputed).
"""
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from ptf.mask import Mask
from scapy.all import IP, UDP, Ether

from host_agent.p4runtime.client import P4RuntimeClient

ROUTER_MAC = "00:00:00:00:01:00"


def ip_int(s):
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


class RouterTest(BaseTest):
    def setUp(self):
        BaseTest.setUp(self)
        self.dataplane = __import__("ptf").dataplane_instance
        self.dataplane.flush()
        self.client = P4RuntimeClient(tu.test_param_get("grpc_addr"), device_id=0, election_id=1)
        self.client.load_p4info()
        routes = [("10.0.1.0", 24, 0x080000000111, 1), ("10.0.2.0", 24, 0x080000000222, 2),
                  ("10.0.0.0", 8, 0x080000000333, 3)]
        for prefix, plen, mac, port in routes:
            self.client.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_int(prefix), plen)}, "ipv4_forward",
                               {"dstAddr": mac, "port": port})

    def tearDown(self):
        for prefix, plen in (("10.0.1.0", 24), ("10.0.2.0", 24), ("10.0.0.0", 8)):
            self.client.delete("ipv4_lpm", {"hdr.ipv4.dstAddr": (ip_int(prefix), plen)})
        self.client.close()
        BaseTest.tearDown(self)

    def routed(self, pkt, dmac):
        exp = pkt.copy()
        exp[Ether].src = ROUTER_MAC
        exp[Ether].dst = dmac
        exp[IP].ttl -= 1
        del exp[IP].chksum
        return Ether(bytes(exp))

    def runTest(self):
        for dst, port, dmac in (("10.0.1.5", 1, "08:00:00:00:01:11"), ("10.0.2.9", 2, "08:00:00:00:02:22"),
                                ("10.9.9.9", 3, "08:00:00:00:03:33")):
            pkt = Ether(dst=ROUTER_MAC, src="00:00:00:00:00:aa") / IP(src="10.0.1.1", dst=dst, ttl=64) / \
                UDP(sport=1000, dport=2000) / b"payload!"
            tu.send_packet(self, 0, pkt)
            tu.verify_packet(self, self.routed(pkt, dmac), port)
            tu.verify_no_other_packets(self)
        # no route: dropped
        tu.send_packet(self, 0, Ether(dst=ROUTER_MAC) / IP(dst="11.0.0.1") / UDP())
        tu.verify_no_other_packets(self)
        # TTL is not checked by this program; a masked expectation ignores the TTL and checksum
        pkt = Ether(dst=ROUTER_MAC) / IP(src="10.0.1.1", dst="10.0.2.7", ttl=3) / UDP()
        m = Mask(self.routed(pkt, "08:00:00:00:02:22"))
        m.set_do_not_care_scapy(IP, "ttl")
        m.set_do_not_care_scapy(IP, "chksum")
        tu.send_packet(self, 0, pkt)
        tu.verify_packet(self, m, 2)
