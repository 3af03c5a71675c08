"""The P4Runtime server and the switch process with the real front end and p4src/basic_router.p4."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import grpc
import pytest
from google.rpc import code_pb2

from emulation.p4runtime.device import Device
from emulation.p4runtime.p4info import p4info_from_program, read_p4info
from emulation.p4runtime.server import P4RuntimeServer
from emulation.v1model.load import load_switch
from host_agent.match import Lpm
from host_agent.p4runtime import p4runtime_pb2 as pb
from host_agent.p4runtime.client import P4RuntimeClient, WriteError
from testsupport import p4rt_paths

REPO = p4rt_paths.REPO
ROUTER = REPO / "p4src" / "basic_router.p4"


def _switch_or_skip():
    return load_switch(str(ROUTER))


def _csum(b: bytes) -> int:
    s = sum(int.from_bytes(b[i:i + 2], "big") for i in range(0, len(b), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ipv4(dst: str, src: str, ttl: int = 64, payload: bytes = b"payload!") -> bytes:
    ip = bytearray(20)
    ip[0], ip[8], ip[9] = 0x45, ttl, 17
    ip[2:4] = (28 + len(payload)).to_bytes(2, "big")
    ip[12:16], ip[16:20] = socket.inet_aton(src), socket.inet_aton(dst)
    ip[10:12] = _csum(bytes(ip)).to_bytes(2, "big")
    udp = (1234).to_bytes(2, "big") + (4321).to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") + b"\0\0"
    return bytes.fromhex("0200000000fe0200000000aa0800") + bytes(ip) + udp + payload


@pytest.fixture
def server():
    _switch_or_skip()
    dev = Device(device_id=1)
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    yield dev, srv
    srv.stop(0)


def test_controller_pushes_p4_source_and_programs_router(server):
    dev, srv = server
    p4info = p4info_from_program(_switch_or_skip())
    with P4RuntimeClient(srv.address, device_id=1, election_id=10) as c:
        c.set_pipeline(p4info, ROUTER.read_bytes())
        assert c.get_pipeline("P4INFO_AND_COOKIE").p4info == p4info
        c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, "MyIngress.ipv4_forward",
                 {"dstAddr": 0x020000000001, "port": 1})
        c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000202, 32)}, "ipv4_forward",
                 {"dstAddr": 0x020000000002, "port": 2})
        c.multicast_group(7, [(1, 0), (2, 0), (3, 5)])
        assert c.read_multicast_groups() == {7: [(1, 0), (2, 0), (3, 5)]}
        out = dev.process(5, ipv4("10.0.2.2", "10.0.1.1"))
        assert [p for p, _ in out] == [2]
        f = out[0][1]
        assert f[:6] == bytes.fromhex("020000000002") and f[6:12] == bytes.fromhex("0200000000fe")
        assert f[22] == 63 and _csum(f[14:34]) == 0              # TTL-1, checksum recomputed
        assert [p for p, _ in dev.process(5, ipv4("10.9.9.9", "10.0.1.1"))] == [1]
        assert dev.process(5, ipv4("192.168.0.1", "10.0.1.1")) == []   # default action: drop
        assert {e.match[0].lpm.prefix_len for e in c.read_table("MyIngress.ipv4_lpm")} == {8, 32}
        with pytest.raises(WriteError) as e:
            c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000203, 31)}, "ipv4_forward",
                     {"dstAddr": 1, "port": 2})
        assert e.value.codes == [code_pb2.INVALID_ARGUMENT]
        # a broken program is refused and the running one stays
        with pytest.raises(grpc.RpcError) as e:
            c.set_pipeline(p4info, b"control X(")
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert [p for p, _ in dev.process(5, ipv4("10.0.2.2", "10.0.1.1"))] == [2]


def test_switch_process_over_udp_tunnels_without_root(tmp_path):
    _switch_or_skip()
    socks = []
    for _ in range(5):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    sw1, sw2, h1, h2 = (s.getsockname()[1] for s in socks[:4])
    for s in socks[:4]:
        s.close()
    gsock = socket.socket()
    gsock.bind(("127.0.0.1", 0))
    gport = gsock.getsockname()[1]
    gsock.close()
    socks[4].close()
    from host_agent.channels import UdpTunnelPort, read_pcap
    host1 = UdpTunnelPort(h1, "127.0.0.1", sw1)
    host2 = UdpTunnelPort(h2, "127.0.0.1", sw2)
    proc = subprocess.Popen([sys.executable, "-m", "emulation.switchd", str(ROUTER), "--log-console",
                             "-i", f"1@udp:{sw1}:127.0.0.1:{h1}", "-i", f"2@udp:{sw2}:127.0.0.1:{h2}",
                             "--pcap", str(tmp_path), "--", "--grpc-server-addr", f"127.0.0.1:{gport}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        line = ""
        end = time.time() + 60
        while time.time() < end and "P4Runtime on" not in line and proc.poll() is None:
            line = proc.stdout.readline()
        assert "P4Runtime on" in line, proc.stderr.read()
        with P4RuntimeClient(f"127.0.0.1:{gport}", device_id=0, election_id=1) as c:
            p4info = c.load_p4info()
            assert p4info.tables[0].preamble.name == "MyIngress.ipv4_lpm"
            c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000202, 32)}, "ipv4_forward",
                     {"dstAddr": 0x020000000202, "port": 2})
            c.insert("ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000101, 32)}, "ipv4_forward",
                     {"dstAddr": 0x020000000101, "port": 1})
            sent = [ipv4("10.0.2.2", "10.0.1.1", payload=bytes([i]) * 20) for i in range(10)]
            for f in sent:
                host1.send(f)
            got = [host2.recv(5) for _ in range(10)]
            assert all(g is not None for g in got)
            assert [g[42:] for g in got] == [f[42:] for f in sent]         # payload intact, in order
            assert all(g[22] == 63 for g in got)
            host2.send(ipv4("10.0.1.1", "10.0.2.2"))
            back = host1.recv(5)
            assert back is not None and back[:6] == bytes.fromhex("020000000101")
        proc.terminate()
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        # --log-console: BMv2-style per-packet lines (emulation/v1model/trace.py)
        assert "[bmv2] [D]" in out and "Processing packet received on port 1" in out
        assert "Applying table 'MyIngress.ipv4_lpm'" in out and "hit with handle" in out
        assert "out of port 2" in out
        assert [f for _, f in read_pcap(tmp_path / f"udp{sw1}_in.pcap")] == sent
        assert [f for _, f in read_pcap(tmp_path / f"udp{sw2}_out.pcap")] == got
    finally:
        host1.close()
        host2.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_p4_check_writes_p4runtime_files(tmp_path):
    _switch_or_skip()
    from emulation.cli import main
    for ext in ("txtpb", "bin", "json"):
        out = tmp_path / f"r.p4info.{ext}"
        assert main(["p4", "check", str(ROUTER), "--p4runtime-files", str(out)]) == 0
        p = read_p4info(out)
        assert p.tables[0].preamble.id == 37375156


CPU_L2 = p4rt_paths.PROGRAMS / "cpu_l2.p4"


def test_packet_io_counters_registers_digests_with_compiled_program():
    """Controller packet metadata, counters, registers and digests from a compiled program."""
    _switch_or_skip()
    sent = []
    dev = Device(device_id=1, cpu_port=64, transmit=lambda p, f: sent.append((p, f)))
    srv = P4RuntimeServer(dev, "127.0.0.1:0").start()
    try:
        p4info = p4info_from_program(load_switch(str(CPU_L2), cpu_port=64))
        assert [c.preamble.name for c in p4info.controller_packet_metadata] == ["packet_in", "packet_out"]
        with P4RuntimeClient(srv.address, device_id=1, election_id=1) as c:
            c.set_pipeline(p4info, CPU_L2.read_bytes())
            c.enable_digest("learn_t")
            frame = bytes.fromhex("020000000002" "020000000001" "88b6") + bytes(46)
            # unknown destination: default action to_cpu -> packet-in with the ingress port, and a digest
            assert dev.process(3, frame) == []
            payload, meta = c.packet_in(3)
            assert payload == frame and meta == {"ingress_port": 3, "_pad": 0}
            d = c.digests.get(timeout=3)
            assert [int.from_bytes(m.bitstring, "big") for m in d.data[0].struct.members] == [0x020000000001, 3]
            # packet-out to port 2 leaves on port 2 without the packet_out header
            c.packet_out(frame, egress_port=2)
            end = time.time() + 3
            while time.time() < end and not sent:
                time.sleep(0.01)
            assert sent == [(2, frame)]
            # table entries and the flood group
            c.insert("MyIngress.l2", {"hdr.ethernet.dstAddr": 0x020000000002}, "MyIngress.forward", {"port": 5})
            assert [p for p, _ in dev.process(3, frame)] == [5]
            c.multicast_group(1, [(1, 0), (2, 0), (3, 0)])
            c.modify("MyIngress.l2", {"hdr.ethernet.dstAddr": 0x020000000002}, "MyIngress.flood")
            assert sorted(p for p, _ in dev.process(3, frame)) == [1, 2]          # not back to 3
            assert c.read_counter("MyIngress.port_packets", 3) == {3: (3, 3 * len(frame))}
            assert c.read_register("MyIngress.last_seen", 3) == {3: 0x88B6}
            c.write_register("MyIngress.last_seen", 3, 42)
            assert dev.switch.register_read("MyIngress.last_seen", 3) == 42
            # a meter on port 4: 1 packet/s with bursts of 2 -> the third packet in a row is red (dropped)
            ent = pb.Entity()
            me = ent.meter_entry
            me.meter_id = c.index.id("meter", "MyIngress.port_meter")
            me.index.index = 4
            me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 1, 2, 1, 2
            c.write([c.update("MODIFY", ent)])
            outs = [len(dev.process(4, frame)) for _ in range(3)]
            assert outs == [3, 3, 0]                     # flooded to ports 1-3 while green
            rd = pb.Entity()
            rd.meter_entry.meter_id = me.meter_id
            rd.meter_entry.index.index = 4
            (got,) = c.read([rd])
            assert got.meter_entry.config.pburst == 2
            assert [len(dev.process(5, frame)) for _ in range(3)] == [3, 3, 3]   # port 5 is not metered
    finally:
        srv.stop(0)
