"""Two network namespaces exchange ping and UDP through the switch (root only).

Each test creates uniquely named namespaces and veth pairs, turns offloads and IPv6
off, and deletes exactly what it created.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from testsupport import paths
from host_agent.channels import RawSocketPort, read_pcap

REPO = paths.REPO

pytestmark = [pytest.mark.root]


def _need_root():
    if os.geteuid() != 0:
        pytest.skip("needs root (ip netns, raw packet sockets)")
    for tool in ("ip", "ethtool", "ping"):
        if shutil.which(tool) is None:
            pytest.skip(f"needs the {tool} tool")


def sh(*args, check=True, ns=None):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + list(args)
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=30)


SWITCH_MAC = "02:00:00:00:00:fe"
HOSTS = {1: ("10.0.1.1", "02:00:00:00:01:01", "10.0.1.254"),
         2: ("10.0.2.2", "02:00:00:00:02:02", "10.0.2.254")}


class Topo:
    """h1 -- s (port 1) ... s (port 2) -- h2, hosts in namespaces, switch ports in the root ns."""

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.ns = {i: f"saatp-{tag}-h{i}" for i in HOSTS}
        self.sw_if = {i: f"sa{tag}p{i}" for i in HOSTS}
        self.created_ns: list[str] = []
        self.created_links: list[str] = []

    def up(self):
        for i, (ip, mac, gw) in HOSTS.items():
            ns, swif, hif = self.ns[i], self.sw_if[i], f"sa{self.sw_if[i][2:8]}h{i}"
            sh("ip", "netns", "add", ns)
            self.created_ns.append(ns)
            sh("ip", "link", "add", swif, "type", "veth", "peer", "name", hif)
            self.created_links.append(swif)
            sh("ip", "link", "set", hif, "netns", ns)
            sh("sysctl", "-qw", f"net.ipv6.conf.{swif}.disable_ipv6=1", check=False)
            sh("ip", "link", "set", swif, "up")
            sh("ethtool", "-K", swif, "rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off",
               "gro", "off", check=False)
            sh("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", ns=ns, check=False)
            sh("ip", "link", "set", hif, "name", "eth0", ns=ns)
            sh("ip", "link", "set", "eth0", "address", mac, ns=ns)
            sh("ethtool", "-K", "eth0", "rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off",
               "gro", "off", ns=ns, check=False)
            sh("ip", "addr", "add", f"{ip}/24", "dev", "eth0", ns=ns)
            sh("ip", "link", "set", "lo", "up", ns=ns)
            sh("ip", "link", "set", "eth0", "up", ns=ns)
            sh("ip", "route", "add", "default", "via", gw, ns=ns)
            sh("ip", "neigh", "add", gw, "lladdr", SWITCH_MAC, "dev", "eth0", "nud", "permanent", ns=ns)
        return self

    def down(self):
        for ns in self.created_ns:
            sh("ip", "netns", "del", ns, check=False)
        for link in self.created_links:
            if os.path.exists(f"/sys/class/net/{link}"):
                sh("ip", "link", "del", link, check=False)


@pytest.fixture
def topo():
    _need_root()
    t = Topo()
    try:
        yield t.up()
    finally:
        t.down()
    for ns in t.created_ns:
        assert not os.path.exists(f"/run/netns/{ns}")


def program_routes(c, table="MyIngress.ipv4_lpm", action="MyIngress.ipv4_forward"):
    from host_agent.match import Lpm
    for port, (ip, mac, _) in HOSTS.items():
        c.insert(table, {"hdr.ipv4.dstAddr": Lpm(int.from_bytes(socket.inet_aton(ip), "big"), 32)}, action,
                 {"dstAddr": int(mac.replace(":", ""), 16), "port": port})


UDP_ECHO = ("import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.bind(('0.0.0.0',7777));"
            "s.settimeout(10); d,a=s.recvfrom(2048); s.sendto(d[::-1],a)")
UDP_CLIENT = ("import socket,sys; s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM); s.settimeout(5);"
              "s.sendto(b'hello-saatp',('10.0.2.2',7777)); print(s.recvfrom(2048)[0].decode())")


def exchange(topo):
    """Ping both ways and one UDP echo; returns the ping outputs."""
    r = sh("ping", "-c", "3", "-i", "0.2", "-W", "2", HOSTS[2][0], ns=topo.ns[1], check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    r2 = sh("ping", "-c", "2", "-i", "0.2", "-W", "2", HOSTS[1][0], ns=topo.ns[2], check=False)
    assert r2.returncode == 0, r2.stdout + r2.stderr
    srv = subprocess.Popen(["ip", "netns", "exec", topo.ns[2], sys.executable, "-c", UDP_ECHO],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)
        cl = sh(sys.executable, "-c", UDP_CLIENT, ns=topo.ns[1], check=False)
        assert cl.stdout.strip() == "ptaas-olleh", cl.stderr
    finally:
        srv.wait(10)
    return r.stdout


def check_pcaps(pcap_dir: Path, topo):
    in1 = [f for _, f in read_pcap(pcap_dir / f"{topo.sw_if[1]}_in.pcap")]
    out2 = [f for _, f in read_pcap(pcap_dir / f"{topo.sw_if[2]}_out.pcap")]
    icmp_in = [f for f in in1 if f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] == 8]
    icmp_out = [f for f in out2 if f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] == 8]
    assert len(icmp_in) >= 3 and len(icmp_out) >= 3
    # what left on port 2 is what came in on port 1, routed: new MACs, TTL - 1
    assert icmp_out[0][:6] == bytes.fromhex(HOSTS[2][1].replace(":", ""))
    assert icmp_out[0][22] == icmp_in[0][22] - 1
    assert icmp_out[0][26:34] == icmp_in[0][26:34]                     # same addresses
    udp_out = [f for f in out2 if f[12:14] == b"\x08\x00" and f[23] == 17]
    assert any(b"hello-saatp" in f for f in udp_out)


def test_router_in_process_over_veths(topo, tmp_path):
    """The switch machinery (raw ports, pcap, P4Runtime) in-process, running router_cpu.p4."""
    from host_agent.p4runtime.client import P4RuntimeClient
    from host_agent.channels import PcapTap, PcapWriter
    from emulation.switchd import SwitchDaemon
    from emulation.v1model.load import load_switch
    ports = {}
    for i, ifname in topo.sw_if.items():
        ports[i] = PcapTap(RawSocketPort(ifname), PcapWriter(tmp_path / f"{ifname}_in.pcap"),
                           PcapWriter(tmp_path / f"{ifname}_out.pcap"))
    sw = load_switch(str(REPO / "tests" / "p4runtime" / "programs" / "router_cpu.p4"))
    d = SwitchDaemon(ports, sw, grpc_addr="127.0.0.1:0").start()
    try:
        with P4RuntimeClient(d.grpc_address, device_id=0, election_id=1) as c:
            c.load_p4info()
            program_routes(c)
            exchange(topo)
        # deleting an interface stops the switch cleanly
        sh("ip", "netns", "del", topo.ns[2])
        topo.created_ns.remove(topo.ns[2])
        assert d.wait(5), "the switch did not notice the interface going away"
        assert topo.sw_if[2] in d.stop_reason
    finally:
        d.stop()
    check_pcaps(tmp_path, topo)


@pytest.fixture
def router_ready():
    _need_root()
    from emulation.v1model.load import load_switch
    load_switch(str(REPO / "p4src" / "basic_router.p4"))    # a front-end failure fails the test


@pytest.mark.slow
def test_basic_router_process_over_veths(router_ready, topo, tmp_path):
    """`saatp switch p4src/basic_router.p4` as a process; a controller programs it over P4Runtime."""
    from host_agent.p4runtime.client import P4RuntimeClient
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    gport = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([sys.executable, "-m", "emulation.switchd", "p4src/basic_router.p4",
                             "-i", f"1@{topo.sw_if[1]}", "-i", f"2@{topo.sw_if[2]}", "--pcap", str(tmp_path),
                             "--", "--grpc-server-addr", f"127.0.0.1:{gport}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = ""
        end = time.time() + 60
        while time.time() < end and "P4Runtime on" not in line and proc.poll() is None:
            line = proc.stdout.readline()
        assert "P4Runtime on" in line, proc.stderr.read()
        with P4RuntimeClient(f"127.0.0.1:{gport}", device_id=0, election_id=1) as c:
            c.load_p4info()
            program_routes(c)
            exchange(topo)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    check_pcaps(tmp_path, topo)


def test_no_p4_process_exits_when_interface_disappears(topo):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    gport = s.getsockname()[1]
    s.close()
    proc = subprocess.Popen([sys.executable, "-m", "emulation.switchd", "--no-p4", "-i", f"1@{topo.sw_if[1]}",
                             "--", "--grpc-server-addr", f"127.0.0.1:{gport}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = proc.stdout.readline()
        assert "P4Runtime on" in line, proc.stderr.read()
        sh("ip", "link", "del", topo.sw_if[1])
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "went away" in out
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
