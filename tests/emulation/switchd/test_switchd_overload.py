"""The switch process under overload: batched event loop, drops counted per port and reason.

An in-process accounting test (memory and UDP ports), and a soak test (marked slow) that
floods the switch process through a UDP-tunnel port for a bounded time and checks it is
still alive, answers P4Runtime, forwards correctly, and that its counters add up.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from emulation.switchd import BusyPoll, SwitchDaemon, UsageError, parse_args
from host_agent.free_ports import free_tcp_port, free_udp_ports
from emulation.v1model.hashes import csum16
from emulation.v1model.load import load_switch
from host_agent.channels import MemoryPort, UdpTunnelPort
from host_agent.match import Lpm
from host_agent.p4runtime.client import P4RuntimeClient
from testsupport import paths

REPO = paths.REPO
ROUTER = REPO / "p4src" / "basic_router.p4"
SOAK_SECONDS = 20.0


def ipv4_frame(dst_ip: bytes, ttl: int = 64, payload: bytes = b"x" * 18) -> bytes:
    ip = bytearray(20)
    ip[0] = 0x45
    ip[2:4] = (20 + 8 + len(payload)).to_bytes(2, "big")
    ip[8], ip[9] = ttl, 17
    ip[12:16], ip[16:20] = bytes([10, 0, 1, 1]), dst_ip
    ip[10:12] = csum16(bytes(ip)).to_bytes(2, "big")
    udp = (4000).to_bytes(2, "big") + (9).to_bytes(2, "big") + (8 + len(payload)).to_bytes(2, "big") + b"\0\0"
    return b"\x02\0\0\0\0\xfe" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + bytes(ip) + udp + payload


ROUTED = ipv4_frame(bytes([10, 0, 2, 7]))          # 10.0.2.0/24 -> port 2
UNROUTED = ipv4_frame(bytes([10, 9, 9, 9]))        # no route: the table's default drop()
NEXT_HOP = 0x020000000202


def routed_switch():
    sw = load_switch(str(ROUTER))
    sw.table_add("ipv4_lpm", "ipv4_forward", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, [NEXT_HOP, 2])
    return sw


def check_accounting(stats: dict) -> None:
    for num, row in stats["ports"].items():
        assert row["rx"] == row["forwarded"] + row["pipeline"] + row["error"] + row["no_program"], (num, row)


def test_command_line_stats_options():
    a = parse_args(["--no-p4", "--stats-interval", "2.5", "--rx-batch", "16"])
    assert a.stats_interval == 2.5 and a.rx_batch == 16
    assert parse_args(["--no-p4"]).rx_batch == 64


def test_busy_poll_option():
    assert parse_args(["--no-p4"]).busy_poll_us == 200.0
    assert parse_args(["--no-p4", "--busy-poll-us", "0"]).busy_poll_us == 0.0
    with pytest.raises(UsageError, match="--busy-poll-us"):
        parse_args(["--no-p4", "--busy-poll-us", "-5"])


def test_busy_poll_engages_only_under_load():
    """Busy polling starts when frames come faster than one per span/4 on average and stops
    span seconds after the last batch; a trickle never starts it."""
    span = 200e-6
    slow = BusyPoll(span)
    for i in range(50):                 # 1,000 frames/s: a gap of 1 ms
        slow.arrived(i * 1e-3, 1)
    assert slow.until == 0.0
    fast = BusyPoll(span)
    t = 0.0
    for i in range(200):                # 100,000 frames/s, in batches of 4
        t += 40e-6
        fast.arrived(t, 4)
    assert fast.gap < span / 4 and fast.until == pytest.approx(t + span)
    for _ in range(40):                 # the load stops: one frame every 10 ms
        t += 10e-3
        before = fast.until
        fast.arrived(t, 1)
    assert fast.until == before        # no longer extended
    off = BusyPoll(0.0)
    off.arrived(1.0, 64)
    off.arrived(1.0 + 1e-6, 64)
    assert off.until == 0.0


def test_busy_polling_switch_forwards_and_goes_idle():
    """A burst above the busy-polling rate is forwarded whole; afterwards the loop sleeps again
    (its thread uses next to no CPU while no frame comes)."""
    a, host_a = MemoryPort.pair("sw1", "h1")
    b, host_b = MemoryPort.pair("sw2", "h2")
    d = SwitchDaemon({1: a, 2: b}, routed_switch(), grpc_addr=None, busy_poll_us=2000).start()
    try:
        for _ in range(400):
            host_a.send(ROUTED)
        got = 0
        end = time.monotonic() + 20
        while got < 400 and time.monotonic() < end:
            if host_b.recv(0.5) is not None:
                got += 1
        assert got == 400
        loop = next(t for t in threading.enumerate() if t.name == "switch-io")
        clock = time.pthread_getcpuclockid(loop.ident)
        time.sleep(0.1)                 # the last busy-poll span ends
        c0 = time.clock_gettime(clock)
        time.sleep(0.5)
        assert time.clock_gettime(clock) - c0 < 0.2
    finally:
        d.stop()


def test_memory_ports_batched_and_counted():
    a, host_a = MemoryPort.pair("sw1", "h1")
    b, host_b = MemoryPort.pair("sw2", "h2")
    d = SwitchDaemon({1: a, 2: b}, routed_switch(), grpc_addr=None, rx_batch=8).start()
    try:
        for i in range(50):
            host_a.send(ROUTED if i % 5 else UNROUTED)   # 40 routed, 10 dropped by the table
        got = []
        end = time.monotonic() + 10
        while len(got) < 40 and time.monotonic() < end:
            f = host_b.recv(0.5)
            if f is not None:
                got.append(f)
        assert len(got) == 40
        assert all(g[:6] == NEXT_HOP.to_bytes(6, "big") and g[22] == 63 for g in got)
        end = time.monotonic() + 5
        while d.stats.counts[1]["rx"] < 50 and time.monotonic() < end:
            time.sleep(0.01)
        st = d.stats.snapshot()
        assert st["ports"]["1"]["rx"] == 50
        assert st["ports"]["1"]["forwarded"] == 40 and st["ports"]["1"]["pipeline"] == 10
        assert st["ports"]["2"]["tx"] == 40 and st["ports"]["2"]["tx_failed"] == 0
        check_accounting(st)
    finally:
        d.stop()


def test_target_errors_are_counted_and_the_switch_goes_on():
    p = free_udp_ports(4)
    sw_ports = {1: UdpTunnelPort(p[0], "127.0.0.1", p[1]), 2: UdpTunnelPort(p[2], "127.0.0.1", p[3])}
    h1, h2 = UdpTunnelPort(p[1], "127.0.0.1", p[0]), UdpTunnelPort(p[3], "127.0.0.1", p[2])

    class Failing:
        """A pipeline that fails on every frame shorter than 20 bytes (a target bug)."""
        def __init__(self, inner):
            self.inner = inner
            self.program = inner.program

        def process(self, port, frame):
            if len(frame) < 20:
                raise RuntimeError("short frame")
            return self.inner.process(port, frame)

    d = SwitchDaemon(sw_ports, Failing(routed_switch()), grpc_addr=None).start()
    try:
        for i in range(30):
            h1.send(b"\x01" * 10 if i % 3 == 0 else ROUTED)
        got = [h2.recv(5) for _ in range(20)]
        assert all(g is not None and g[22] == 63 for g in got)
        end = time.monotonic() + 5
        while d.stats.counts[1]["rx"] < 30 and time.monotonic() < end:
            time.sleep(0.01)
        st = d.stats.snapshot()
        assert st["ports"]["1"]["error"] == 10 and st["ports"]["1"]["forwarded"] == 20
        check_accounting(st)
        assert not d.stop_event.is_set()
    finally:
        d.stop()
        h1.close()
        h2.close()


def _stats_line(text: str) -> dict:
    lines = [ln for ln in text.splitlines() if ln.startswith("saatp switch: stats ")]
    assert lines, text[-2000:]
    return json.loads(lines[-1][len("saatp switch: stats "):])


@pytest.mark.slow
def test_soak_flood_over_udp_tunnels_degrades_and_counts():
    """Flood port 1 far past the switch's rate for SOAK_SECONDS; the process keeps running,
    P4Runtime answers during and after, forwarding is still right, and
    offered = received + kernel overflow, received = forwarded + dropped by reason."""
    s1, h1p, s2, h2p = free_udp_ports(4)
    gport = free_tcp_port()
    proc = subprocess.Popen([sys.executable, "-m", "emulation.switchd", str(ROUTER), "-L", "warn",
                             "-i", f"1@udp:{s1}:127.0.0.1:{h1p}", "-i", f"2@udp:{s2}:127.0.0.1:{h2p}",
                             "--stats-interval", "5", "--", "--grpc-server-addr", f"127.0.0.1:{gport}"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", h1p))
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", h2p))
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    rx.settimeout(0.2)
    try:
        line = ""
        end = time.time() + 60
        while time.time() < end and "P4Runtime on" not in line and proc.poll() is None:
            line = proc.stdout.readline()
        assert "P4Runtime on" in line, proc.stderr.read()
        with P4RuntimeClient(f"127.0.0.1:{gport}", device_id=0, election_id=1) as c:
            c.load_p4info()
            c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0A000200, 24)}, "MyIngress.ipv4_forward",
                     {"dstAddr": NEXT_HOP, "port": 2})

            received = [0]
            stop = threading.Event()

            def receive():
                while not stop.is_set():
                    try:
                        rx.recv(4096)
                        received[0] += 1
                    except socket.timeout:
                        continue
            rth = threading.Thread(target=receive, daemon=True)
            rth.start()
            flood = [ROUTED, ROUTED, ROUTED, UNROUTED, b"\x02\0\0\0\0\xfe\x02\0\0\0\0\x01\x08\x00\x45"]
            sent = 0
            writes_during_flood = 0
            t_end = time.monotonic() + SOAK_SECONDS
            next_write = time.monotonic() + 2
            while time.monotonic() < t_end:
                for f in flood * 40:
                    tx.sendto(f, ("127.0.0.1", s1))
                sent += 200
                if time.monotonic() >= next_write:     # the control plane keeps working under load
                    next_write += 2
                    c.insert("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": Lpm(0x0B000000 + writes_during_flood, 32)},
                             "MyIngress.drop", {})
                    writes_during_flood += 1
            assert proc.poll() is None, proc.stderr.read()
            assert writes_during_flood >= 5
            assert len(c.read_table("MyIngress.ipv4_lpm")) == 1 + writes_during_flood
            # let the backlog drain, then forwarding must be right, frame by frame
            time.sleep(1.0)
            stop.set()
            rth.join()
            rx.settimeout(5)
            while True:
                try:
                    rx.settimeout(0.5)
                    rx.recv(4096)
                    received[0] += 1
                except socket.timeout:
                    break
            rx.settimeout(5)
            for i in range(20):
                f = ipv4_frame(bytes([10, 0, 2, 9]), payload=bytes([i]) * 18)
                tx.sendto(f, ("127.0.0.1", s1))
                sent += 1
                g = rx.recv(4096)
                received[0] += 1
                assert g[:6] == NEXT_HOP.to_bytes(6, "big") and g[22] == 63 and g[42:] == f[42:]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 0, err
        assert out.count("saatp switch: stats ") >= 3          # periodic lines and the final one
        st = _stats_line(out)
        p1, p2 = st["ports"]["1"], st["ports"]["2"]
        print(f"soak: offered {sent}, switch stats {st}, delivered to the host {received[0]}")
        check_accounting(st)
        # every datagram offered was either read by the switch or dropped by the kernel (and counted)
        assert p1["rx"] + p1["rx_overflow"] == sent, (st, sent)
        assert p1["rx_overflow"] > 0                           # it was really overloaded
        assert p1["pipeline"] > 0 and p1["forwarded"] > 0
        # one copy per forwarded frame: it left on port 2, or on port 0 (no interface) when the
        # truncated frames' parser error left egress_spec at 0
        assert p2["tx"] + p2["tx_failed"] + st["no_egress_port"] == p1["forwarded"]
        assert received[0] <= p2["tx"]
    finally:
        tx.close()
        rx.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
