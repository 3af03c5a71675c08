"""PACKET_MMAP ring ports (host_agent/channels/packet_ring.py) on a veth pair (root only).

The checks run in a child process inside a network namespace this test creates (and
deletes): frames and their order survive the rings, our own transmissions stay out of the
receive ring, a batch larger than the transmit ring goes out whole, a frame longer than a
receive slot is counted and dropped, and ``SAATP_PACKET_RING=0`` gives the plain port.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid

import pytest

from testsupport import paths

pytestmark = [pytest.mark.root]

CHILD = textwrap.dedent("""
    import json, os, sys, time
    sys.path.insert(0, sys.argv[1])
    from host_agent.channels import PacketRingPort, RawSocketPort, open_port

    def drain(port, want, timeout=5.0):
        got, end = [], time.time() + timeout
        while len(got) < want and time.time() < end:
            batch = port.recv_batch(64)
            if not batch:
                time.sleep(0.01)
            got += batch
        return got

    a, b = open_port("va"), open_port("vb")
    res = {"kind": type(a).__name__, "slot": a.slot}
    frames = [bytes([i % 256]) * (60 + (i * 37) % 1400) for i in range(300)]
    a.send_batch(frames)
    got = drain(b, 300)
    res["same"] = got == frames
    time.sleep(0.1)
    res["own_seen"] = len(a.recv_batch(64))
    many = [i.to_bytes(4, "big") * 15 for i in range(3 * a._tx_n)]   # more than the TX ring holds
    a.send_batch(many)
    got = drain(b, len(many))
    res["many_same"] = got == many
    res["tx_dropped"] = a.stats["tx_dropped"]
    os.system("ip link set va mtu 4000; ip link set vb mtu 4000")
    big = open_port("va")                 # opened at MTU 4000: its slots are larger
    big.send(b"\\x05" * 3000)              # b's slots were sized for MTU 1500
    time.sleep(0.2)
    res["big_received"] = len(b.recv_batch(64))
    res["rx_truncated"] = b.stats["rx_truncated"]
    os.environ["SAATP_PACKET_RING"] = "0"
    res["plain"] = type(open_port("va")).__name__
    print(json.dumps(res))
""")


def test_packet_ring_ports():
    if os.geteuid() != 0:
        pytest.skip("needs root (ip netns, packet sockets)")
    if shutil.which("ip") is None:
        pytest.skip("needs the ip tool (iproute2)")
    ns = f"saatp-ring-{uuid.uuid4().hex[:6]}"

    def sh(*args):
        subprocess.run(args, check=True, capture_output=True, timeout=30)
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
        for i in ("va", "vb"):
            sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1")
            sh("ip", "-n", ns, "link", "set", i, "up")
        r = subprocess.run(["ip", "netns", "exec", ns, sys.executable, "-c", CHILD, str(paths.REPO)],
                           capture_output=True, text=True, timeout=120, check=False)
        assert r.returncode == 0, r.stderr
        res = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
    assert res["kind"] == "PacketRingPort"
    assert res["slot"] == 2048
    assert res["same"], "frames changed or reordered through the rings"
    assert res["own_seen"] == 0
    assert res["many_same"] and res["tx_dropped"] == 0
    assert res["big_received"] == 0 and res["rx_truncated"] == 1
    assert res["plain"] == "RawSocketPort"
