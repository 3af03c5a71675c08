"""Back-pressure from a slow link: a port whose interface refuses frames holds its egress queue.

Unit tests of the queues' hold/release run everywhere.  The end-to-end test (root only)
creates one network namespace with two veth pairs, shapes the switch's port 4 with
``tc ... htb rate 1mbit`` (as Mininet's ``TCLink(bw=1)`` does), runs ``saatp switch`` on
``ecn_queue.p4`` in that namespace with *no* queue option, sends a burst towards port 4
and, meanwhile, frames the other way.  The egress queue of port 4 must fill up
(``enq_qdepth`` written into the IPv4 identification, ECN marked past 10 packets,
tail drops beyond the depth, counted), and port 1 must keep being served.
The test deletes the namespace (and with it the veths) it created.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from testsupport import paths
from emulation.v1model.queues import EgressQueues

REPO = paths.REPO
ECN_P4 = Path(__file__).parents[1] / "v1model" / "programs" / "ecn_queue.p4"


# ------------------------------------------------------------------ the queues' holds
def test_held_port_keeps_packets_and_others_leave():
    q = EgressQueues(depth=4)
    q.hold(4)
    for i in range(6):
        q.push(4, 0, f"a{i}", now=0.0)
    q.push(2, 0, "b0", now=0.0)
    assert q.size(4) == 4 and q.tail_drops[4] == 2          # depth 4, two tail drops
    assert q.next_departure() == 0.0                          # port 2's packet, not port 4's
    assert q.pop(1.0) == (2, 0, "b0")
    assert q.pop(1.0) is None and q.next_departure() is None  # port 4 is held
    assert len(q) == 4 and q.size(4) == 4
    q.push(2, 0, "b1", now=1.0)
    assert q.pop(1.0) == (2, 0, "b1")
    q.release(4)
    assert [q.pop(2.0)[2] for _ in range(4)] == ["a0", "a1", "a2", "a3"]   # order kept
    assert q.pop(2.0) is None and len(q) == 0
    st = q.stats()["ports"]["4"]
    assert st["holds"] == 1 and st["held"] is False and st["tail_drops"] == 2 and st["dequeued"] == 4


def test_hold_keeps_priority_and_rate_order():
    q = EgressQueues(priorities=2, rate=10.0)              # one packet per 0.1 s per queue
    q.hold(1)
    q.push(1, 0, "lo0", now=0.0)
    q.push(1, 1, "hi0", now=0.0)
    q.push(1, 1, "hi1", now=0.0)
    assert q.pop(5.0) is None
    q.hold(1)                                              # holding twice is one hold
    q.release(1)
    assert q.next_departure() == 0.0
    assert [q.pop(0.05)[2], q.pop(0.05)[2]] == ["hi0", "lo0"]     # hi1 is not due before 0.1
    assert q.pop(0.05) is None and q.pop(0.1)[2] == "hi1"
    assert q.holds == {1: 1}


def test_flush_forgets_held_packets():
    q = EgressQueues()
    q.hold(3)
    q.push(3, 0, "x", now=0.0)
    q.pop(0.0)                                             # parks it
    assert q.flush() == 1 and len(q) == 0
    q.release(3)
    assert q.pop(1.0) is None


# ------------------------------------------------------------------ a shaped veth (root)
def _need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (ip netns, tc, raw packet sockets)")
    for tool in ("ip", "tc", "ethtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs the {tool} tool")


def _sh(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=30, cwd=REPO)


BURST = 300            # frames of 1000 bytes towards port 4: 2.4 s at 1 Mbit/s
REVERSE = 20           # frames from port 4's host back to port 1 meanwhile

# Runs in the namespace: raw sockets on the hosts' ends of the veths.  Sends the burst on
# h1 (-> switch port 1 -> port 4 -> h4) and then frames on h4 (-> port 4 -> port 1 -> h1),
# and reports every frame received, with its arrival order over both interfaces.
TRAFFIC = r"""
import json, select, socket, struct, sys, time
burst, reverse = int(sys.argv[1]), int(sys.argv[2])
socks = {}
for name in ("h1", "h4"):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((name, 0))
    socks[name] = s
def frame(tag, seq, ecn):
    eth = bytes.fromhex("020000000004020000000001") + b"\x08\x00"
    payload = b"SAATPBP" + tag + struct.pack("!I", seq) + bytes(1000 - 14 - 20 - 12)
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20 + len(payload), 0, 0, 64, 17, 0,
                     bytes([10, 0, 1, 1]), bytes([10, 0, 4, 4]))
    return eth + ip + payload
for i in range(burst):
    socks["h1"].send(frame(b"F", i, 1))
for i in range(reverse):
    socks["h4"].send(frame(b"R", i, 0))
got, order, last = [], 0, time.monotonic()
while time.monotonic() - last < 1.5:
    r, _, _ = select.select(list(socks.values()), [], [], 0.2)
    for name, s in socks.items():
        if s not in r:
            continue
        while True:
            try:
                data, addr = s.recvfrom(4096, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            if addr[2] == 4 or data[12:14] != b"\x08\x00" or data[34:41] != b"SAATPBP":
                continue
            tag, seq = data[41:42].decode(), struct.unpack("!I", data[42:46])[0]
            got.append({"at": name, "tag": tag, "seq": seq, "ecn": data[15] & 3,
                        "qdepth": struct.unpack("!H", data[18:20])[0], "order": order})
            order += 1
            last = time.monotonic()
print(json.dumps(got))
"""


class ShapedNamespace:
    """One namespace: h1 -- s1 (switch port 1) and h4 -- s4 (port 4, htb 1mbit)."""

    def __init__(self):
        self.ns = f"saatp-bp-{uuid.uuid4().hex[:6]}"
        self.created = False

    def up(self):
        ns = self.ns
        _sh("ip", "netns", "add", ns)
        self.created = True
        _sh("ip", "link", "set", "lo", "up", ns=ns)
        for i in (1, 4):
            _sh("ip", "link", "add", f"s{i}", "type", "veth", "peer", "name", f"h{i}", ns=ns)
            for dev in (f"s{i}", f"h{i}"):
                _sh("sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", ns=ns, check=False)
                _sh("ethtool", "-K", dev, "rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off",
                    "gro", "off", ns=ns, check=False)
                _sh("ip", "link", "set", dev, "up", ns=ns)
        _sh("tc", "qdisc", "add", "dev", "s4", "root", "handle", "1:", "htb", "default", "10", ns=ns)
        _sh("tc", "class", "add", "dev", "s4", "parent", "1:", "classid", "1:10", "htb", "rate", "1mbit",
            ns=ns)
        return self

    def down(self):
        if self.created:
            _sh("ip", "netns", "del", self.ns, check=False)
            self.created = False


@pytest.fixture
def shaped():
    _need_root()
    t = ShapedNamespace()
    try:
        yield t.up()
    finally:
        t.down()
        assert not os.path.exists(f"/run/netns/{t.ns}")


@pytest.mark.root
@pytest.mark.parametrize("ring", ["1", "0"], ids=["packet-ring", "plain-socket"])
def test_shaped_link_fills_the_egress_queue(shaped, ring):
    ns = shaped.ns
    env = dict(os.environ, SAATP_PACKET_RING=ring)
    sw = subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-m", "emulation.switchd",
                           "-i", "1@s1", "-i", "4@s4", str(ECN_P4), "--", "--grpc-server-addr", "127.0.0.1:0"],
                          cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = sw.stdout.readline()
        assert "saatp switch: device" in line, line + sw.stderr.read() if sw.poll() is not None else line
        r = _sh(sys.executable, "-c", TRAFFIC, str(BURST), str(REVERSE), ns=ns)
        got = json.loads(r.stdout)
    finally:
        sw.send_signal(signal.SIGTERM)
        out, err = sw.communicate(timeout=30)
    assert sw.returncode == 0, err
    stats = json.loads([ln for ln in (line + out).splitlines() if ln.startswith("saatp switch: stats ")][-1]
                       .split(" ", 3)[3])
    fwd = [g for g in got if g["at"] == "h4" and g["tag"] == "F"]
    rev = [g for g in got if g["at"] == "h1" and g["tag"] == "R"]
    depths = [g["qdepth"] for g in fwd]
    print(f"{'ring' if ring == '1' else 'plain'}: burst {BURST}: {len(fwd)} delivered at 1 Mbit/s, enq_qdepth max {max(depths)}, "
          f"ECN-marked {sum(g['ecn'] == 3 for g in fwd)}; stats {json.dumps(stats)}")
    q4 = stats["queues"]["ports"]["4"]
    p1, p4 = stats["ports"]["1"], stats["ports"]["4"]
    # the link refused frames, so port 4 was held and its queue filled: enq_qdepth up to
    # the depth (64), marked from 10 on, tail drops beyond, all with no queue rate set
    assert q4["holds"] >= 1 and q4["held"] is False and q4["queued"] == 0
    assert stats["queues"]["default"]["rate"] == 0.0
    assert max(depths) >= 10 and max(depths) <= 64
    assert all(g["ecn"] == 3 for g in fwd if g["qdepth"] >= 10)
    assert any(g["ecn"] == 1 for g in fwd)                      # the first ones went straight out
    assert q4["tail_drops"] > 0 and p4["queue_drops"] == q4["tail_drops"]
    # every frame of the burst was delivered or tail-dropped (nothing lost in between)
    assert p1["rx"] == BURST and p1["forwarded"] == BURST
    assert len(fwd) + q4["tail_drops"] == BURST
    assert p4["tx"] == len(fwd) + len([g for g in got if g["at"] == "h4" and g["tag"] != "F"])
    assert p4["tx_failed"] == 0
    assert [g["seq"] for g in fwd] == sorted(g["seq"] for g in fwd)   # in order
    # port 1 was served while port 4 waited for its link: every reverse frame arrived before
    # the burst had finished draining
    assert len(rev) == REVERSE
    assert max(g["order"] for g in rev) < max(g["order"] for g in fwd)


# Runs in the namespace: the switch's port on the shaped veth, offered more than the link
# holds; the rest goes out as POLLOUT comes.  Reports what the port did and what arrived.
PORT_CHECK = r"""
import json, select, socket, struct, sys
from host_agent.channels.packet_ring import PacketRingPort
from host_agent.channels.raw import RawSocketPort
n = int(sys.argv[2])
rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
rx.bind(("h4", 0))
p = (PacketRingPort if sys.argv[1] == "ring" else RawSocketPort)("s4")
frames = [bytes.fromhex("020000000004020000000001") + b"\x88\xb5" + struct.pack("!I", i) + bytes(982)
          for i in range(n)]
first = p.send_some(frames)
rest = frames[first:]
again = p.send_some(rest)
rest = rest[again:]
wakeups = 0
while rest or p.tx_stalled():
    _, w, _ = select.select([], [p.fileno()], [], 10)
    if not w:
        break
    wakeups += 1
    k = p.send_some(rest)
    rest = rest[k:]
seqs = []
rx.settimeout(3)
try:
    while len(seqs) < n:
        data, addr = rx.recvfrom(4096)
        if data[12:14] == b"\x88\xb5":
            seqs.append(struct.unpack("!I", data[14:18])[0])
except socket.timeout:
    pass
print(json.dumps({"first": first, "again": again, "left": len(rest), "stalled": p.tx_stalled(),
                  "wakeups": wakeups, "seqs": seqs, "stats": p.stats}))
p.close()
"""


@pytest.mark.root
@pytest.mark.parametrize("kind", ["ring", "plain"])
def test_port_send_some_stops_at_a_full_link_and_resumes_on_pollout(shaped, kind):
    n = 250
    r = _sh(sys.executable, "-c", PORT_CHECK, kind, str(n), ns=shaped.ns)
    got = json.loads(r.stdout)
    print(kind, {k: v for k, v in got.items() if k != "seqs"})
    assert 0 < got["first"] < n                      # the link (htb 1mbit) took some, not all
    assert got["again"] < n - got["first"]           # and still refuses right after
    assert got["left"] == 0 and got["stalled"] is False
    assert got["seqs"] == list(range(n))             # every frame, once, in order
    assert got["stats"]["tx_frames"] == n and got["stats"]["tx_dropped"] == 0
    # POLLOUT means "room in the send buffer", not "ring slot free": few wake-ups, no spinning
    assert 1 <= got["wakeups"] <= n // 10
