"""The switch process: command line, in-process daemon over UDP tunnels, subprocess lifecycle."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from host_agent.p4runtime.client import P4RuntimeClient
from testsupport import paths
from host_agent.channels import ImpairedPort, Impairment, PcapTap, PcapWriter, UdpTunnelPort, read_pcap
from emulation.switchd import SwitchDaemon, UsageError, main, parse_args
from host_agent.free_ports import free_tcp_port, free_udp_ports
from emulation.v1model.hashes import csum16
from host_agent.match import Lpm
from emulation.v1model.load import load_switch
from emulation.v1model.switch import Switch

REPO = paths.REPO
# an IPv4 router with a CPU port (64), flooding to group 1, a digest, counters and a register
ROUTER = REPO / "tests" / "p4runtime" / "programs" / "router_cpu.p4"


def router(cpu_port: int | None = None) -> Switch:
    return load_switch(str(ROUTER), cpu_port=cpu_port)


def ipv4_frame(dst_ip: bytes, src_ip: bytes, ttl: int = 64, payload: bytes = b"x" * 8,
               dst_mac: bytes = b"\x02\0\0\0\0\xfe", src_mac: bytes = b"\x02\0\0\0\0\x01") -> bytes:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[2:4] = (20 + 8 + len(payload)).to_bytes(2, "big")
    ip[8], ip[9] = ttl, 17
    ip[12:16], ip[16:20] = src_ip, dst_ip
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    udp = (4000).to_bytes(2, "big") + (5000).to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") + b"\0\0"
    return dst_mac + src_mac + b"\x08\x00" + bytes(ip) + udp + payload


# ----------------------------------------------------------------- command line
def test_parse_args_shapes():
    a = parse_args(["-i", "1@veth0", "-i", "2@udp:9000:127.0.0.1:9001", "--device-id", "3", "--pcap", "/tmp/x",
                    "--log-console", "prog.p4", "--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255"])
    assert a.interface == ["1@veth0", "2@udp:9000:127.0.0.1:9001"] and a.device_id == 3
    assert a.grpc_server_addr == "127.0.0.1:50001" and a.cpu_port == 255 and a.pcap == "/tmp/x"
    a = parse_args(["--no-p4"])
    assert a.grpc_server_addr == "127.0.0.1:9559" and a.cpu_port is None and a.device_id == 0
    assert parse_args(["--pcap", "--no-p4"]).pcap == "."
    a = parse_args(["--pcap", "prog.p4"])
    assert (a.pcap, a.program) == (".", "prog.p4")


def test_tutorial_command_line_is_accepted(tmp_path, capsys):
    """The p4lang tutorials' P4RuntimeSwitch passes --thrift-port, --nanolog and build/NAME.json:
    the first two are ignored with a warning, the JSON is replaced by the NAME.p4 beside it."""
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "basic.json").write_text("{}")
    (tmp_path / "basic.p4").write_text("// source\n")
    a = parse_args(["-i", "1@veth0", "--thrift-port", "9090", "--nanolog", "ipc:///tmp/bm-0-log.ipc",
                    "--device-id", "0", str(tmp_path / "build" / "basic.json"), "--log-console",
                    "--", "--grpc-server-addr", "127.0.0.1:50051"])
    assert a.program == str(tmp_path / "basic.p4") and a.grpc_server_addr == "127.0.0.1:50051"
    err = capsys.readouterr().err
    assert "--thrift-port ignored" in err and "--nanolog ignored" in err


@pytest.mark.parametrize("argv,msg", [
    (["--no-p4", "--", "--dp-grpc-server-addr", "x:1"], "not supported"),
    (["p.p4", "--no-p4"], "not both"),
    ([], "--no-p4"),
    (["/nonexistent/prog.json"], "BMv2 JSON"),
    (["--no-p4", "--cpu-port", "0"], "0 is not valid"),
    (["--no-p4", "--bogus"], "unrecognized"),
])
def test_bad_command_lines(argv, msg, capsys):
    with pytest.raises(UsageError, match=msg):
        parse_args(argv)
    assert main(argv) == 2
    assert msg.split()[0] in capsys.readouterr().err


def test_bad_ports_exit_2(capsys):
    assert main(["--no-p4", "-i", "1@saatpnx0"]) == 2
    assert "no network interface" in capsys.readouterr().err
    assert main(["--no-p4", "-i", "1@udp:1:2"]) == 2
    assert main(["--no-p4", "-i", "1@udp:0:127.0.0.1:9", "--impair", "3:loss=1%"]) == 2
    assert "not attached" in capsys.readouterr().err


def test_grpc_address_in_use_exit_2(capsys):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    try:
        port = s.getsockname()[1]
        assert main(["--no-p4", "--", "--grpc-server-addr", f"127.0.0.1:{port}"]) == 2
        assert f"127.0.0.1:{port}" in capsys.readouterr().err
    finally:
        s.close()


# ---------------------------------------------------- in-process over UDP tunnels
class Host:
    """A 'host' at the far end of a UDP tunnel port."""

    def __init__(self, local: int, remote: int):
        self.port = UdpTunnelPort(local, "127.0.0.1", remote)

    def frames(self, expect: int | None = None, quiet: float = 0.3, limit: float = 10.0) -> list[bytes]:
        """Frames until ``expect`` arrived (or, without it, none for ``quiet`` s), then ``quiet`` s more."""
        out: list[bytes] = []
        end = time.monotonic() + limit
        while time.monotonic() < end:
            waiting_for_more = expect is not None and len(out) < expect
            f = self.port.recv(min(1.0, end - time.monotonic()) if waiting_for_more else quiet)
            if f is None:
                if not waiting_for_more:
                    break
                continue
            out.append(f)
        return out


@pytest.fixture
def udp_switch(tmp_path):
    p = free_udp_ports(6)
    ports = {}
    for i, (sw_side, host_side) in enumerate([(p[0], p[1]), (p[2], p[3]), (p[4], p[5])], start=1):
        port = UdpTunnelPort(sw_side, "127.0.0.1", host_side)
        ports[i] = PcapTap(port, PcapWriter(tmp_path / f"{port.name}_in.pcap"),
                           PcapWriter(tmp_path / f"{port.name}_out.pcap"))
    ports[3] = ImpairedPort(ports[3], Impairment(loss=50, seed=11))
    hosts = {1: Host(p[1], p[0]), 2: Host(p[3], p[2]), 3: Host(p[5], p[4])}
    d = SwitchDaemon(ports, router(cpu_port=64), cpu_port=64, grpc_addr="127.0.0.1:0").start()
    yield d, hosts, tmp_path
    d.stop()
    for h in hosts.values():
        h.port.close()


def test_router_over_udp_tunnels_with_controller_and_pcap(udp_switch):
    d, hosts, tmp = udp_switch
    with P4RuntimeClient(d.grpc_address, device_id=0, election_id=1) as c:
        c.load_p4info()
        c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000002, 32)}, "MyIngress.ipv4_forward",
                 {"dstAddr": 0x0A0A0A0A0A02, "port": 2})
        c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000001, 32)}, "MyIngress.ipv4_forward",
                 {"dstAddr": 0x0A0A0A0A0A01, "port": 1})
        c.multicast_group(1, [(1, 0), (2, 0), (3, 0)])
        f = ipv4_frame(bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1]))
        hosts[1].port.send(f)
        (got,) = hosts[2].frames(1)
        assert got[:6] == bytes.fromhex("0a0a0a0a0a02") and got[22] == 63     # routed, TTL-1
        hosts[2].port.send(ipv4_frame(bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
        (back,) = hosts[1].frames(1)
        assert back[:6] == bytes.fromhex("0a0a0a0a0a01")
        # broadcast: replicated to 2 and (impaired, 50 % loss) 3, never back to 1
        bc = b"\xff" * 6 + b"\x02\0\0\0\0\x01\x08\x06" + bytes(28)
        for _ in range(40):
            hosts[1].port.send(bc)
        assert len(hosts[2].frames(40)) == 40
        n3 = len(hosts[3].frames(quiet=1.0))
        assert 8 < n3 < 32
        assert hosts[1].frames(quiet=0.2) == []
        assert c.read_counter("port_counter", 1)[1][0] == 41
        # packet-out through the CPU port and packet-in back
        c.packet_out(b"\x02\0\0\0\0\x07" * 2 + b"\x88\xb5" + b"ctl", egress_port=2)
        (po,) = hosts[2].frames(1)
        assert po.endswith(b"ctl")
        hosts[2].port.send(po)
        payload, meta = c.packet_in(3)
        assert payload == po and meta["ingress_port"] == 2
    d.stop()
    names = {p.name: n for n, p in d.ports.items()}
    name1 = next(k for k, v in names.items() if v == 1)
    name2 = next(k for k, v in names.items() if v == 2)
    in1 = [fr for _, fr in read_pcap(tmp / f"{name1}_in.pcap")]
    out2 = [fr for _, fr in read_pcap(tmp / f"{name2}_out.pcap")]
    assert in1[0] == f and len(in1) == 1 + 40       # 1 routed + 40 broadcasts
    assert out2[0] == got and len(out2) == 1 + 40 + 1
    name3 = next(k for k, v in names.items() if v == 3)
    assert len(read_pcap(tmp / f"{name3}_out.pcap")) == n3   # the pcap holds what crossed the wire


def test_port_failure_stops_daemon():
    p = free_udp_ports(2)
    port = UdpTunnelPort(p[0], "127.0.0.1", p[1])
    d = SwitchDaemon({1: port}, router(), grpc_addr=None).start()
    port.close()                           # the link goes away
    assert d.wait(3)
    assert "went away" in d.stop_reason
    d.stop()


# ------------------------------------------------------------- as a process
def _spawn(args, **kw):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "emulation.switchd", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def _wait_started(proc, timeout=30):
    end = time.time() + timeout
    line = ""
    while time.time() < end:
        line = proc.stdout.readline()
        if "P4Runtime on" in line or proc.poll() is not None:
            break
    return line


def test_process_lifecycle_sigterm_and_sigint():
    for sig in (signal.SIGTERM, signal.SIGINT):
        gport = free_tcp_port()
        up = free_udp_ports(2)
        proc = _spawn(["--no-p4", "--device-id", "4", "-i", f"1@udp:{up[0]}:127.0.0.1:{up[1]}", "--",
                       "--grpc-server-addr", f"127.0.0.1:{gport}", "--cpu-port", "100"])
        try:
            line = _wait_started(proc)
            assert f"P4Runtime on 127.0.0.1:{gport}" in line, proc.stderr.read() if proc.poll() is not None else line
            with P4RuntimeClient(f"127.0.0.1:{gport}", device_id=4, election_id=1) as c:
                assert c.capabilities() == "1.4.1"
                with pytest.raises(grpc.RpcError) as e:
                    c.get_pipeline()
                assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=15)
            assert proc.returncode == 0, err
            assert f"stopped (received {sig.name})" in out
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_saatp_switch_console_script_help():
    exe = Path(sys.executable).with_name("saatp-switch")
    if not exe.exists():
        pytest.skip("saatp-switch console script is not installed in this environment")
    r = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "--grpc-server-addr" not in r.stdout and "-i PORT@IFACE" in r.stdout
