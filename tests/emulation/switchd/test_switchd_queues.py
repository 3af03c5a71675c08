"""Egress queues in the switch process: command-line options, the event loop's drain, the
control socket (saatp switch-cli) and queue drops in the statistics.  UDP tunnel ports, no root."""
from __future__ import annotations

import json
import socket
import struct
from pathlib import Path

import pytest

from emulation.switch_control import ControlError, ControlServer, SwitchCommands, main as cli_main, parse_addr
from emulation.switchd import SwitchDaemon, UsageError, build_queues, parse_args
from host_agent.free_ports import free_udp_ports
from emulation.v1model.load import load_switch
from emulation.v1model.queues import EgressQueues
from host_agent.channels import UdpTunnelPort

ECN_P4 = Path(__file__).parents[1] / "v1model" / "programs" / "ecn_queue.p4"


def ipv4_frame(ecn: int = 1) -> bytes:
    eth = bytes.fromhex("0000000000020000000000010800")
    return eth + struct.pack("!BBHHHBBH4s4s", 0x45, ecn, 20, 0xFFFF, 0, 64, 17, 0, bytes(4), bytes(4))


def test_queue_options_parse():
    a = parse_args(["--queue-rate", "1000", "--queue-rate", "2:50", "--queue-depth", "3:8", "--no-p4",
                    "--", "--priority-queues", "4"])
    q = a.queues
    assert q.priorities == 4 and q.default_rate == 1000
    assert q.config(2) == {"depth": 64, "rate": 50.0}
    assert q.config(3) == {"depth": 8, "rate": 1000.0}
    assert parse_args(["--no-p4"]).queues is None
    assert parse_args(["--no-p4", "--control-addr", "127.0.0.1:0"]).queues.shaping() is False
    for bad in (["--queue-rate", "-3"], ["--queue-depth", "x"], ["--queue-rate", "700:5"],
                ["--priority-queues", "9"], ["--control-addr", "10.0.0.1:9091"]):
        with pytest.raises(UsageError):
            parse_args(bad + ["--no-p4"])


def test_control_commands():
    q = EgressQueues()
    import threading
    changed = []
    cmds = SwitchCommands(q, threading.Lock(), changed=lambda: changed.append(1), stats=lambda: {"x": 1})
    assert cmds.execute("set_queue_rate 500 3") == "" and q.config(3)["rate"] == 500
    assert cmds.execute("set_queue_depth 7") == "" and q.config(9)["depth"] == 7
    assert len(changed) == 2 and q.shaping()
    assert json.loads(cmds.execute("show_queues"))["default"] == {"depth": 7, "rate": 0.0}
    assert json.loads(cmds.execute("stats")) == {"x": 1}
    for bad, msg in (("set_queue_rate", "usage"), ("set_queue_rate x", "rate_pps"),
                     ("set_queue_depth 4 1 2", "priority"), ("frobnicate", "unknown command")):
        with pytest.raises(ControlError, match=msg):
            cmds.execute(bad)
    with pytest.raises(ControlError, match="loopback"):
        parse_addr("0.0.0.0:9091")


def test_switch_process_shapes_marks_and_counts_drops(capsys):
    """A burst into a rate-limited port: the queue fills (ECN marks past the threshold), the
    event loop lets packets out at the rate, a full queue drops and counts; over the control
    socket, lifting the rate empties the queue and stops the marking."""
    p1, p1_peer, p4, p4_peer = free_udp_ports(4)
    ports = {1: UdpTunnelPort(p1, "127.0.0.1", p1_peer), 4: UdpTunnelPort(p4, "127.0.0.1", p4_peer)}
    q = build_queues(parse_args(["--queue-rate", "4:200", "--queue-depth", "4:30", "--no-p4"]))
    d = SwitchDaemon(ports, load_switch(ECN_P4), grpc_addr=None, queues=q).start()
    ctl = ControlServer("127.0.0.1:0", SwitchCommands(q, d.device.lock, changed=d.sync_queues,
                                                      stats=d.stats.snapshot)).start()
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx.bind(("127.0.0.1", p1_peer))
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind(("127.0.0.1", p4_peer))
    rx.settimeout(3.0)
    try:
        for _ in range(60):
            tx.sendto(ipv4_frame(), ("127.0.0.1", p1))
        got = []
        while True:
            try:
                got.append(rx.recv(2048))
            except socket.timeout:
                break
            if len(got) + q.tail_drops.get(4, 0) >= 60 and len(q) == 0:
                break
        snap = d.stats.snapshot()
        drops = snap["ports"]["4"]["queue_drops"]
        assert drops > 0 and drops == q.tail_drops[4]
        assert len(got) + drops == 60
        assert snap["ports"]["1"]["rx"] == 60 == snap["ports"]["1"]["forwarded"]
        depths = [struct.unpack("!H", f[18:20])[0] for f in got]
        assert 10 <= max(depths) < 30              # enq_qdepth: the queue holds at most 30
        marks = [f[15] & 3 for f in got]
        assert marks == [3 if dq >= 10 else 1 for dq in depths]
        assert 3 in marks
        assert snap["queues"]["ports"]["4"]["high_water"] <= 30

        # lift the limit over the control socket: the same burst passes unmarked
        assert cli_main(["--control-addr", ctl.address, "set_queue_rate", "0", "4"]) == 0
        for _ in range(20):
            tx.sendto(ipv4_frame(), ("127.0.0.1", p1))
        later = [rx.recv(2048) for _ in range(20)]
        assert all(f[15] & 3 == 1 for f in later)
        assert cli_main(["--control-addr", ctl.address, "show_queues"]) == 0
        shown = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert shown["ports"]["4"]["tail_drops"] == drops and shown["ports"]["4"]["queues"]["0"]["rate"] == 0
        assert cli_main(["--control-addr", ctl.address, "set_queue_rate", "-1"]) == 1
    finally:
        ctl.stop()
        d.stop()
        tx.close()
        rx.close()
